"""The runner in a process of its own, for the tests that kill it or measure its memory.

Usage: python -m tests.workloads.batch.runner_process BUCKET SERVING_URL KUBERNETES_API_URL LEASE_SECONDS
Prints its peak resident memory (KiB) when it has run every waiting input.
"""

from __future__ import annotations

import resource
import sys

import google.cloud.storage as storage

from tests.workloads.batch.conftest import DEPLOYMENT, NAMESPACE
from workloads.batch.metrics import Progress
from workloads.batch.replicas import DeploymentApi
from workloads.batch.runner import RunnerSettings, run_waiting
from workloads.batch.serving import RetryPolicy


def main(bucket: str, serving_url: str, api_url: str, lease_seconds: str) -> None:
    settings = RunnerSettings(
        bucket=bucket,
        serving_url=serving_url,
        concurrency_per_replica=64,
        served_model="served-model",
        part_lines=500,
        lease_seconds=float(lease_seconds),
        poll_seconds=0.2,
        retry=RetryPolicy(attempts=8, first_backoff_seconds=0.01, max_backoff_seconds=0.2, request_timeout_seconds=10),
    )
    run_waiting(settings, storage.Client(), DeploymentApi(api_url, NAMESPACE, DEPLOYMENT), Progress())
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
