"""The batch section: OpenAI Batch API files in the stack's bucket, run by an in-cluster runner."""

from __future__ import annotations

from pydantic import Field, field_validator

from stacks.section import ConfigBool, Section, kubernetes_quantity, memory_quantity


class BatchSettings(Section):
    """OpenAI Batch API files in the stack's bucket, run by an in-cluster runner; an input wakes the stack from zero."""

    enabled: ConfigBool = False
    """Create the batch bucket and runner: a file under `input/` wakes the replicas (needs autoscaling.enabled)."""
    finished_retention_days: int = Field(default=7, ge=1, le=3650)
    """Days a finished input stays under `finished/` before the bucket's lifecycle rule deletes it; outputs and reports stay."""
    runner_cpu: str = "1"
    """CPU of one runner worker; a pod runs the workers that saturate the most replicas (requests = limits)."""
    runner_memory: str = "1Gi"
    """Memory of one runner worker; the runner streams its files, so this does not grow with a batch."""

    @field_validator("runner_cpu")
    @classmethod
    def _cpu(cls, value: str) -> str:
        return kubernetes_quantity(value)

    @field_validator("runner_memory")
    @classmethod
    def _memory(cls, value: str) -> str:
        return memory_quantity(value)
