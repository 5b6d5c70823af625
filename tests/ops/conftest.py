"""The operator CLIs run against the same local Cloud Storage emulator as the batch runner's tests."""

from tests.workloads.batch.conftest import bucket, emulator

__all__ = ["bucket", "emulator"]
