"""Timelines over days of use: several batches, same and different names, overwrites, restarts, SIGTERM to
the runner as PID 1 of its own PID namespace, a busy pod scaled down, a replica stopping as vLLM
stops, lost responses and errors from Cloud Storage. After each, the invariants hold:

- every line of every batch is answered exactly once, in ``output/`` or ``errors/``, never both;
- each report matches what was answered (and a replaced batch's, what was sent);
- nothing is left waiting (``input/`` and ``claims/`` empty);
- at most the global in-flight budget (Ready replicas x concurrency) was ever in flight at the server.

Which invariants each timeline checks, beside what it adds, is in its docstring. Each stops by itself within seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import google.cloud.storage as storage
import pytest

from tests.workloads.batch.conftest import (
    DEPLOYMENT,
    NAMESPACE,
    ROOT,
    KubernetesApi,
    StorageCall,
    StorageProxy,
    VllmLike,
    chat_line,
    read_jsonl,
    start_vllm_like,
    upload_lines,
)
from workloads.batch import layout

# Real processes over seconds: run after the README's test command (pyproject.toml, .ci/run).
pytestmark = pytest.mark.timeline

READY, CONCURRENCY = 2, 4  # the Kubernetes API's Ready replicas, and requests per Ready replica
BUDGET = READY * CONCURRENCY


def until(condition: Callable[[], object], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.05)


@dataclass
class Pod:
    """A runner pod: its entrypoint as PID 1 of a PID namespace of its own."""

    process: subprocess.Popen[bytes]

    @property
    def pid_one(self) -> int:
        """The host's id of the namespace's first process (unshare's child), which the runtime signals."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        until(lambda: children.read_text().split(), 5, "the pod's first process")
        return int(children.read_text().split()[0])

    def namespace_pid(self) -> int:
        status = Path(f"/proc/{self.pid_one}/status").read_text()
        return int(next(line for line in status.splitlines() if line.startswith("NSpid:")).split()[-1])

    def terminate(self) -> None:
        os.kill(self.pid_one, signal.SIGTERM)  # what the kubelet's runtime does at a pod's deletion

    def kill(self) -> None:
        os.kill(self.pid_one, signal.SIGKILL)  # the grace period ran out, or the node went

    def wait(self, seconds: float) -> int:
        return self.process.wait(timeout=seconds)


@pytest.fixture
def pods(bucket: storage.Bucket, kubernetes_api: KubernetesApi, tmp_path: Path) -> Iterator[Callable[..., Pod]]:
    """Starts runner pods; their logs are printed at the end (pytest shows them when a timeline fails)."""
    started: list[Pod] = []
    kubernetes_api.status = {"replicas": READY, "readyReplicas": READY}

    def start(serving_url: str, *, lease_seconds: float = 30.0, part_lines: int = 50, storage_url: str | None = None) -> Pod:
        environ = {
            **os.environ,
            layout.ENV_BUCKET: bucket.name,
            layout.ENV_SERVING_URL: serving_url,
            layout.ENV_SERVED_MODEL: "served-model",
            layout.ENV_CONCURRENCY_PER_REPLICA: str(CONCURRENCY),
            layout.ENV_NAMESPACE: NAMESPACE,
            layout.ENV_REPLICAS_DEPLOYMENT: DEPLOYMENT,
            layout.ENV_METRICS_PORT: "0",
            layout.ENV_DRAIN_SECONDS: "5",
            "HARNESS_KUBERNETES_URL": kubernetes_api.url,
            "HARNESS_LEASE_SECONDS": str(lease_seconds),
            "HARNESS_PART_LINES": str(part_lines),
        }
        if storage_url is not None:
            environ["STORAGE_EMULATOR_HOST"] = storage_url
        command = ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc", sys.executable, "-m", "tests.workloads.batch.pod", "run"]
        log = (tmp_path / f"pod-{len(started)}.log").open("wb")
        pod = Pod(subprocess.Popen(command, cwd=ROOT, env=environ, stdout=log, stderr=subprocess.STDOUT))
        started.append(pod)
        return pod

    yield start
    for index, pod in enumerate(started):
        if pod.process.poll() is None:
            pod.process.kill()
            pod.process.wait(timeout=10)
        print(f"--- pod {index} ---\n" + (tmp_path / f"pod-{index}.log").read_text(errors="replace"))


def reports(bucket: storage.Bucket) -> list[dict[str, Any]]:
    return [json.loads(blob.download_as_bytes()) for blob in bucket.list_blobs(prefix=layout.REPORTS)]


def check_invariants(bucket: storage.Bucket, server: VllmLike, batches: dict[str, list[str]]) -> None:
    """``batches``: each batch's custom ids by ``<input name>/<n>``, n counting the uploads under the name from 0."""
    most = server.stats()["most_in_flight"]
    assert most <= BUDGET, f"{most} in flight at once, more than the global budget of {BUDGET}"
    found = sorted(reports(bucket), key=lambda report: (report["input"], report["generation"]))
    names = sorted({key.rpartition("/")[0] for key in batches})
    by_name = {name: [report for report in found if report["input"] == name] for name in names}
    assert sorted(report["input"] for report in found) == sorted(key.rpartition("/")[0] for key in batches), "one report a batch"
    for key, ids in batches.items():
        name, _, upload = key.rpartition("/")
        report = by_name[name][int(upload)]
        prefix = f"{name}/{report['generation']}/"
        answers = read_jsonl(bucket, layout.OUTPUT + prefix)
        errors = read_jsonl(bucket, layout.ERRORS + prefix)
        answered = Counter(line["custom_id"] for line in answers + errors)
        # Exactly once, never in both; a replaced batch answers a prefix of its lines (what it read before the replacement).
        assert set(answered.values()) <= {1}, f"{key}: a line answered twice"
        assert set(answered) == set(ids) if not report["replaced"] else set(answered) <= set(ids), key
        assert all(answer["response"]["body"]["choices"][0]["finish_reason"] for answer in answers), f"{key}: a cut answer written"
        assert (report["lines"], report["succeeded"], report["failed"]) == (len(answers) + len(errors), len(answers), len(errors))
        assert report["not_sent"] == report["input_lines"] - report["lines"]
        assert report["not_sent"] == (0 if not report["replaced"] else len(ids) - report["lines"])
    assert not list(bucket.list_blobs(prefix=layout.INPUT)), "an input left waiting"
    assert not list(bucket.list_blobs(prefix=layout.CLAIMS)), "a claim left behind"


def lines(prefix: str, count: int) -> list[dict[str, Any]]:
    return [chat_line(f"{prefix}-{i}") for i in range(count)]


def ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(count)]


def report_count(bucket: storage.Bucket) -> int:
    return len(list(bucket.list_blobs(prefix=layout.REPORTS)))


def test_the_runner_is_pid_one_of_its_namespace_and_a_second_day_under_one_name_is_a_batch_of_its_own(
    bucket: storage.Bucket, pods: Callable[..., Pod], vllm_like: Callable[..., VllmLike]
) -> None:
    """Two days under one name, one long-running pod, then SIGTERM while idle: exits at once, code 0.
    Invariants: all four."""
    server = vllm_like()
    pod = pods(server.url)
    assert pod.namespace_pid() == 1
    upload_lines(bucket, "requests.jsonl", lines("day1", 60))
    # Until the first day is finished, not only reported: the emulator ignores a delete's generation
    # precondition, so a second day uploaded before the first day's input is removed went with it.
    until(lambda: report_count(bucket) == 1 and not list(bucket.list_blobs(prefix=layout.INPUT)), 20, "the first day finished")
    upload_lines(bucket, "requests.jsonl", lines("day2", 60))
    until(lambda: report_count(bucket) == 2, 20, "the second day's report")
    started = time.monotonic()
    pod.terminate()
    assert pod.wait(10) == 0 and time.monotonic() - started < 3  # not the grace period: handled
    check_invariants(bucket, server, {"requests.jsonl/0": ids("day1", 60), "requests.jsonl/1": ids("day2", 60)})


def test_sigterm_mid_batch_finishes_the_open_parts_hands_the_claim_back_and_the_next_pod_goes_on_at_once(
    bucket: storage.Bucket, pods: Callable[..., Pod], vllm_like: Callable[..., VllmLike]
) -> None:
    """SIGTERM during a batch (a rollout, a scale-down): the pod exits within the drain, its claim's lease
    ends at once (not 30 s later), the next pod takes it over. Invariants: all four."""
    # Answers are held from the 120th request (past the first part's 50 lines and 64 in flight) until the
    # SIGTERM is sent: it lands mid-batch however fast this machine is, so answers need not be slow.
    server = vllm_like(answer_seconds=0.01, pause_after=120)
    upload_lines(bucket, "long.jsonl", lines("long", 400))
    first = pods(server.url)
    until(lambda: list(bucket.list_blobs(prefix=layout.OUTPUT)), 20, "a first part")
    first.terminate()
    server.resume()
    assert first.wait(6) == 0
    assert report_count(bucket) == 0  # it stopped with lines left
    (claim,) = bucket.list_blobs(prefix=layout.CLAIMS)
    assert json.loads(claim.download_as_bytes())["until"] == 0  # handed back
    started = time.monotonic()
    pods(server.url)
    until(lambda: report_count(bucket) == 1, 20, "the report")
    assert time.monotonic() - started < 15  # well within the 30 s lease: no wait for it to lapse
    check_invariants(bucket, server, {"long.jsonl/0": ids("long", 400)})


def test_a_busy_pod_removed_by_a_scale_down_hands_its_input_to_the_pod_that_stays(
    bucket: storage.Bucket, pods: Callable[..., Pod], vllm_like: Callable[..., VllmLike]
) -> None:
    """Two inputs, two pods; one pod is removed mid-batch. Invariants: all four (the budget shared by two claims)."""
    # Answers are held from the 240th request (past a first part of each input and the budget in flight)
    # until the scale-down: it lands mid-batch however fast this machine is, so answers need not be slow.
    server = vllm_like(answer_seconds=0.01, pause_after=240)
    upload_lines(bucket, "a.jsonl", lines("a", 300))
    upload_lines(bucket, "b.jsonl", lines("b", 300))
    stays, goes = pods(server.url), pods(server.url)
    until(lambda: len(list(bucket.list_blobs(prefix=layout.CLAIMS))) == 2, 20, "both inputs claimed")
    until(lambda: list(bucket.list_blobs(prefix=layout.OUTPUT)), 20, "a first part")
    assert report_count(bucket) == 0
    goes.terminate()
    server.resume()
    assert goes.wait(6) == 0
    until(lambda: report_count(bucket) == 2, 40, "both reports")
    stays.terminate()
    assert stays.wait(6) == 0
    check_invariants(bucket, server, {"a.jsonl/0": ids("a", 300), "b.jsonl/0": ids("b", 300)})


def test_three_inputs_on_three_pods_never_send_more_than_the_global_budget(
    bucket: storage.Bucket, pods: Callable[..., Pod], vllm_like: Callable[..., VllmLike]
) -> None:
    """Each pod alone would send Ready replicas x concurrency; together they share it. Invariants: all four."""
    # Nothing is answered until all three inputs are claimed: the three claims run at once however the
    # pods' starts are spread, and a pod that took more than its share would hold it in flight meanwhile.
    server = vllm_like(answer_seconds=0.02, pause_after=1)
    for name in ("x", "y", "z"):
        upload_lines(bucket, f"{name}.jsonl", lines(name, 150))
    for _ in range(3):
        pods(server.url)
    until(lambda: len(list(bucket.list_blobs(prefix=layout.CLAIMS))) == 3, 20, "three inputs claimed")
    server.resume()
    until(lambda: report_count(bucket) == 3, 60, "three reports")
    check_invariants(bucket, server, {f"{name}.jsonl/0": ids(name, 150) for name in ("x", "y", "z")})


def test_a_killed_pod_is_resumed_after_its_lease_and_an_input_replaced_mid_run_is_two_batches(
    bucket: storage.Bucket, pods: Callable[..., Pod], vllm_like: Callable[..., VllmLike]
) -> None:
    """SIGKILL (the grace ran out, the node went) mid-batch; the input is then replaced by a new upload under its
    name. Invariants: all four; the replaced batch reports what it answered and what it never sent."""
    # Nothing is answered from the 200th request until the kill: it lands mid-batch however fast this machine is.
    server = vllm_like(answer_seconds=0.02, pause_after=200)
    padded = [line | {"padding": "x" * 3000} for line in lines("old", 1200)]  # beyond one 1 MiB read range
    upload_lines(bucket, "nightly.jsonl", padded)
    first = pods(server.url, lease_seconds=1.0)  # nothing else runs the batch while it lives: no renewal race
    until(lambda: list(bucket.list_blobs(prefix=layout.OUTPUT)), 20, "a first part")
    first.kill()
    first.wait(5)
    server.resume()
    assert len(read_jsonl(bucket, layout.OUTPUT)) < 1200
    killed_parts = {blob.name for blob in bucket.list_blobs(prefix=layout.OUTPUT)}
    second = pods(server.url, lease_seconds=2.0)
    # A part the killed pod had not written: the second pod took the batch over (the killed pod may have
    # written three parts, and a replacement before the takeover would leave its batch unclaimed).
    until(lambda: {blob.name for blob in bucket.list_blobs(prefix=layout.OUTPUT)} - killed_parts, 20, "the second pod's parts")
    upload_lines(bucket, "nightly.jsonl", lines("new", 100))
    until(lambda: report_count(bucket) == 2, 30, "two reports")
    second.terminate()
    assert second.wait(6) == 0
    check_invariants(bucket, server, {"nightly.jsonl/0": ids("old", 1200), "nightly.jsonl/1": ids("new", 100)})


def test_a_replica_stopping_as_vllm_stops_loses_no_line_and_no_cut_answer_is_written(
    bucket: storage.Bucket, pods: Callable[..., Pod]
) -> None:
    """The replica gets SIGTERM mid-batch: port closed at once, in-flight drained until its shutdown timeout,
    the rest cut (no answer); its replacement answers slowly at first. Invariants: all four."""
    replica = start_vllm_like()
    replica.configure("served-model", {"answer_seconds": 0.2, "shutdown_timeout": 0.1, "teardown_seconds": 0.2})
    port = int(replica.url.rsplit(":", 1)[1].removesuffix("/v1"))
    upload_lines(bucket, "through.jsonl", lines("t", 200))
    pod = pods(replica.url)
    until(lambda: replica.stats()["requests"] >= 20, 20, "requests at the replica")
    replica.process.send_signal(signal.SIGTERM)
    replica.process.wait(10)
    replacement = start_vllm_like(port)
    try:
        replacement.configure("served-model", {"answer_seconds": 0.01, "warmup_requests": 4, "warmup_seconds": 0.2})
        until(lambda: report_count(bucket) == 1, 40, "the report")
        pod.terminate()
        assert pod.wait(6) == 0
        check_invariants(bucket, replacement, {"through.jsonl/0": ids("t", 200)})
    finally:
        replacement.process.kill()
        replacement.process.wait(10)


def test_lost_responses_and_refusals_from_cloud_storage_lose_no_batch(
    bucket: storage.Bucket, pods: Callable[..., Pod], vllm_like: Callable[..., VllmLike], storage_proxy: StorageProxy
) -> None:
    """Renewals' responses lost, a 403 on a renewal, the first output part's response lost, a 503 on
    the listing of input/ (what also makes KEDA's trigger fail). Invariants: all four."""
    seen = Counter[str]()

    def misbehave(call: StorageCall) -> str | int | None:
        if call.writes(layout.CLAIMS) and call.conditional:
            seen["renewal"] += 1
            faults: dict[int, str | int] = {2: "lose the response", 3: 403, 4: "lose the response", 6: "lose the response"}
            return faults.get(seen["renewal"])
        if call.writes(layout.OUTPUT):
            seen["part"] += 1
            return "lose the response" if seen["part"] == 1 else None
        if call.method == "GET" and call.path.endswith("/o") and call.query.get("prefix") == layout.INPUT:
            seen["list"] += 1
            return 503 if seen["list"] == 2 else None
        return None

    storage_proxy.rules.append(misbehave)
    # Answers are held from the 100th request (past the first part) until the first four renewals have met
    # their faults: the batch is still running at each, however fast this machine is.
    server = vllm_like(answer_seconds=0.01, pause_after=100)
    upload_lines(bucket, "flaky.jsonl", lines("f", 300))
    pod = pods(server.url, storage_url=storage_proxy.url)
    until(lambda: seen["renewal"] >= 4 and seen["part"] >= 1, 20, "the faults")
    server.resume()
    until(lambda: report_count(bucket) == 1, 40, "the report")
    pod.terminate()
    assert pod.wait(6) == 0
    check_invariants(bucket, server, {"flaky.jsonl/0": ids("f", 300)})
