"""The runner's pod entrypoint, ``workloads.batch.__main__.main(["run"])``, for the sequence harness.

The harness starts it as the first process of its own PID namespace (``unshare --pid --fork``), so
SIGTERM reaches it as the container runtime delivers it to a pod's PID 1. Two things differ from a
pod, both outside the signal path: the Kubernetes API is the harness's local server (a pod reads its
address and token from the service-account mount), and the timings are short so each timeline ends in
seconds. The harness's environment names both.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from workloads.batch import __main__ as entry
from workloads.batch.replicas import DeploymentApi
from workloads.batch.runner import RunnerSettings
from workloads.batch.serving import RetryPolicy


class LocalApi(DeploymentApi):
    @classmethod
    def in_cluster(cls, namespace: str, name: str) -> DeploymentApi:
        return DeploymentApi(os.environ["HARNESS_KUBERNETES_URL"], namespace, name)


def short_timings(environ: dict[str, str]) -> RunnerSettings:
    settings = from_env(environ)
    return replace(
        settings,
        part_lines=int(environ["HARNESS_PART_LINES"]),
        lease_seconds=float(environ["HARNESS_LEASE_SECONDS"]),
        poll_seconds=0.2,
        ready_timeout_seconds=20.0,
        # Attempts that span a replica's restart (seconds here).
        retry=RetryPolicy(attempts=12, first_backoff_seconds=0.05, max_backoff_seconds=1.0, request_timeout_seconds=10),
    )


from_env = entry.settings_from_env
entry.settings_from_env = short_timings
entry.DeploymentApi = LocalApi  # type: ignore[attr-defined]

if __name__ == "__main__":
    entry.main(sys.argv[1:])
