"""The runner, one function at a time: hand-made inputs, short batches against the emulator and the vLLM-like server.

The replicas' Deployment is a stand-in (``Replicas``) whose counts the test scripts, so a drain, a wake or
an API server that fails can be placed exactly; the long timelines (killed pods, several runners) are in
test_runner.py, test_sequences.py and test_real_use.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any

import aiohttp
import google.cloud.storage as storage
import pytest
from google.api_core.exceptions import NotFound

from tests.http_stand_in import serving
from tests.workloads.batch.conftest import StorageCall, StorageProxy, VllmLike, chat_line, only_report, read_jsonl, upload_lines
from tests.workloads.cold_start import samples
from workloads.batch import bucket as objects
from workloads.batch import layout, lines, runner
from workloads.batch import report as report_module
from workloads.batch.metrics import Progress
from workloads.batch.replicas import ReplicaCount, ReplicaMeter
from workloads.batch.runner import RunnerSettings
from workloads.batch.serving import Limiter, Outcome, RetryPolicy
from workloads.cold_start import phases

# The runner over seconds of real time (leases, drains, answers held): run after the README's test command.
pytestmark = pytest.mark.timeline

FAST = RetryPolicy(attempts=3, first_backoff_seconds=0.01, max_backoff_seconds=0.05, request_timeout_seconds=10)


@dataclass
class Replicas:
    """The replicas' Deployment as the runner reads it: each count in turn (the last repeats); an exception is raised."""

    counts: list[ReplicaCount | Exception] = field(default_factory=lambda: [ReplicaCount(2, 2)])
    name: str = "vllm"
    events_list: dict[str, Any] | Exception = field(default_factory=lambda: samples.events_list())
    logs: dict[str, str] = field(default_factory=dict)
    reads: list[float] = field(default_factory=list)
    events_at: list[float] = field(default_factory=list)
    # Run at each read, with the read's index: a test's hook (a SIGTERM, another runner).
    on_read: Callable[[int], None] | None = None

    def count(self) -> ReplicaCount:
        index = len(self.reads)
        self.reads.append(time.monotonic())
        if self.on_read is not None:
            self.on_read(index)
        found = self.counts[min(index, len(self.counts) - 1)]
        if isinstance(found, Exception):
            raise found
        return found

    def events(self) -> dict[str, Any]:
        self.events_at.append(time.monotonic())
        if isinstance(self.events_list, Exception):
            raise self.events_list
        return self.events_list

    def log(self, pod: str) -> list[str]:
        return self.logs[pod].splitlines()


class Bounded:
    """The runner's functions, each called in a thread of its own that must return within ``SECONDS``: a mutant
    that never ends fails its test here, instead of running out mutmut's wall-clock limit (minutes each)."""

    SECONDS = 20.0

    def __getattr__(self, name: str) -> Callable[..., Any]:
        function = getattr(runner, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            results: list[Any] = []
            errors: list[BaseException] = []

            def run() -> None:
                try:
                    results.append(function(*args, **kwargs))
                except BaseException as error:
                    errors.append(error)

            thread = threading.Thread(target=run, daemon=True)
            thread.start()
            thread.join(self.SECONDS)
            assert not thread.is_alive(), f"{name} still running after {self.SECONDS} s"
            if errors:
                raise errors[0]
            return results[0]

        return call


bounded = Bounded()


def settings(bucket: str, url: str = "http://127.0.0.1:9/v1", **overrides: Any) -> RunnerSettings:
    values: dict[str, Any] = {
        "bucket": bucket,
        "serving_url": url,
        "concurrency_per_replica": 8,
        "served_model": "served-model",
        "part_lines": 100,
        "lease_seconds": 30.0,
        "poll_seconds": 0.05,
        "ready_timeout_seconds": 10.0,
        "retry": FAST,
        "runner_id": "runner-test",
    } | overrides
    return RunnerSettings(**values)


def lease(share: int) -> objects.Lease:
    return objects.Lease("other", 0.0, 0.0, 10, in_flight_share=share)


# --- pure parts


@pytest.mark.parametrize(
    ("ready", "per_replica", "others", "expected"),
    [
        (2, 32, [], 64),  # alone: the whole budget
        (2, 32, [10], 32),  # an even share of two
        (2, 32, [50], 14),  # what the other leaves free, less than an even share
        (3, 10, [0, 0], 10),  # three even shares
        (3, 10, [0, 25], 5),
        (1, 10, [8, 8], 0),  # the others hold more than the budget: wait
        (0, 32, [], 0),
    ],
)
def test_a_claims_in_flight_share_is_even_and_never_more_than_the_others_leave(
    ready: int, per_replica: int, others: list[int], expected: int
) -> None:
    assert runner.in_flight_share(ready, per_replica, [lease(share) for share in others]) == expected


@pytest.mark.parametrize(
    ("budget", "shards", "expected"), [(10, 3, [4, 3, 3]), (2, 3, [1, 1, 0]), (0, 2, [0, 0]), (7, 1, [7]), (8, 4, [2] * 4)]
)
def test_a_workers_share_of_the_pods_adds_up_to_it(budget: int, shards: int, expected: list[int]) -> None:
    assert [runner.shard_share(budget, shard, shards) for shard in range(shards)] == expected


def test_chunks_cut_the_lines_into_parts_and_skip_blank_lines() -> None:
    stream = [b"a", b"", b"b", b"  ", b"c", b"\t", b"d", b"e"]
    assert list(runner.chunks(iter(stream), 2)) == [[b"a", b"b"], [b"c", b"d"], [b"e"]]
    assert list(runner.chunks(iter(stream), 5)) == [[b"a", b"b", b"c", b"d", b"e"]]
    assert list(runner.chunks(iter([b"a", b"b"]), 1)) == [[b"a"], [b"b"]]
    assert list(runner.chunks(iter([b"", b" "]), 3)) == []


def test_an_http_answer_is_a_response_and_only_no_answer_is_an_error() -> None:
    body = {"id": "chatcmpl-1", "choices": []}
    line, kept = runner.answer_line("batch_req_1", "a", Outcome(200, body, None, 3, 4, request_id="req-9"))
    assert kept is True
    assert json.loads(line) == {
        "id": "batch_req_1",
        "custom_id": "a",
        "response": {"status_code": 200, "request_id": "req-9", "body": body},
        "error": None,
    }
    # No request id from the server: the answer's own id stands in.
    line, kept = runner.answer_line("batch_req_2", "b", Outcome(400, {"error": {}}, {"code": "request_failed", "message": "HTTP 400"}))
    assert kept is False
    assert json.loads(line)["response"] == {"status_code": 400, "request_id": "batch_req_2", "body": {"error": {}}}
    assert json.loads(line)["error"] is None
    failed = {"code": "connection_failed", "message": "refused"}
    line, kept = runner.answer_line("batch_req_3", "c", Outcome(None, None, failed))
    assert kept is False
    assert json.loads(line) == {"id": "batch_req_3", "custom_id": "c", "response": None, "error": failed}


# --- waiting for a Ready replica


def test_a_ready_replica_at_the_first_read_is_no_wake() -> None:
    replicas = Replicas([ReplicaCount(3, 1)])
    wake = ReplicaMeter(0.0, time.time(), ReplicaCount(0, 0))
    assert bounded.wait_for_ready({"": replicas}, settings("b"), wake, Progress()) == ({"": ReplicaCount(3, 1)}, False)
    assert len(replicas.reads) == 1 and wake.last == ReplicaCount(3, 1)


def test_replicas_read_with_none_ready_are_a_wake_metered_until_one_is(caplog: pytest.LogCaptureFixture) -> None:
    replicas = Replicas([ReplicaCount(2, 0), OSError("refused"), ReplicaCount(2, 0), ReplicaCount(2, 1)])
    started = time.time()
    wake = ReplicaMeter(0.0, started, ReplicaCount(0, 0))
    with caplog.at_level(logging.WARNING, logger="batch"):
        counts, woke = bounded.wait_for_ready({"": replicas}, settings("b", poll_seconds=0.1), wake, Progress())
    assert (counts, woke) == ({"": ReplicaCount(2, 1)}, True)
    # A read every poll (never more often), and not five seconds apart.
    gaps = [later - earlier for earlier, later in zip(replicas.reads, replicas.reads[1:], strict=False)]
    assert len(gaps) == 3 and all(0.1 <= gap < 1.0 for gap in gaps)
    # Two replicas held from the first read to the last, three polls at least.
    assert wake.replica_seconds >= 2 * 0.3
    assert wake.replica_seconds <= 2 * (wake.last_at - started)
    assert [record.getMessage() for record in caplog.records] == ["reading the replicas' Deployment failed: refused"]


def test_a_deployment_that_cannot_be_read_is_no_wake() -> None:
    replicas = Replicas([OSError("refused"), ReplicaCount(1, 1)])
    wake = ReplicaMeter(0.0, time.time(), ReplicaCount(0, 0))
    assert bounded.wait_for_ready({"": replicas}, settings("b"), wake, Progress()) == ({"": ReplicaCount(1, 1)}, False)


def test_no_ready_replica_by_the_timeout_is_an_error() -> None:
    replicas = Replicas([ReplicaCount(1, 0)])
    wake = ReplicaMeter(0.0, time.time(), ReplicaCount(0, 0))
    started = time.monotonic()
    with pytest.raises(runner.NoReadyReplicaError, match=r"^no Ready replica after 0 s$"):
        bounded.wait_for_ready({"": replicas}, settings("b", ready_timeout_seconds=0.3), wake, Progress())
    assert time.monotonic() - started >= 0.3


def test_sigterm_while_the_replicas_start_stops_the_wait() -> None:
    progress = Progress()

    def sigterm(index: int) -> None:
        if index == 1:
            progress.draining.value = 1

    replicas = Replicas([ReplicaCount(1, 0)], on_read=sigterm)
    wake = ReplicaMeter(0.0, time.time(), ReplicaCount(0, 0))
    with pytest.raises(runner.DrainingError, match=r"^told to stop while the replicas start$"):
        bounded.wait_for_ready({"": replicas}, settings("b", poll_seconds=0.05), wake, progress)
    assert len(replicas.reads) == 2


# --- how the last replica started


def test_the_cold_start_is_measured_from_the_last_started_pods_events_and_log() -> None:
    replicas = Replicas(events_list=samples.events_list(samples.wake_events()), logs={samples.POD: samples.COLD_LOG})
    measured = runner.last_cold_start(replicas)
    expected = phases.measure(replicas.events_list, samples.COLD_LOG.splitlines(), pod=samples.POD).as_output()  # type: ignore[arg-type]
    assert measured == expected and measured["pod"] == samples.POD
    assert "againstEstimate" not in measured


def test_the_cold_start_is_set_beside_the_stacks_estimate() -> None:
    replicas = Replicas(events_list=samples.events_list(samples.wake_events()), logs={samples.POD: samples.COLD_LOG})
    estimate = {"phases": {"nodeProvisioning": {"seconds": 330, "source": "node"}, "weights": {"seconds": 12, "source": "w"}}}
    measured = runner.last_cold_start(replicas, estimate)
    breakdown = phases.measure(replicas.events_list, samples.COLD_LOG.splitlines(), pod=samples.POD)  # type: ignore[arg-type]
    rows = phases.against_expected(breakdown, estimate)
    assert rows
    assert measured["againstEstimate"] == {name: {"measured": seconds, "expected": estimate} for name, seconds, estimate in rows}


def test_a_cold_start_that_cannot_be_told_says_why() -> None:
    assert runner.last_cold_start(Replicas()) == {"unavailable": "no Started event of a pod named vllm-... in the events"}
    assert runner.last_cold_start(Replicas(events_list=OSError("connection refused"))) == {"unavailable": "OSError: connection refused"}


# --- whole batches


@pytest.fixture
def server(vllm_like: Callable[..., VllmLike]) -> VllmLike:
    return vllm_like()


def claimed(
    bucket: storage.Bucket, name: str, part_lines: int = 100, lease_seconds: float = 30.0, runner_id: str = "runner-test"
) -> objects.Claim:
    source = bucket.get_blob(layout.INPUT + name)
    held = objects.claim(bucket, source, runner_id, lease_seconds, part_lines)
    assert held is not None
    return held


def test_a_batch_is_answered_line_by_line_in_parts_reported_and_moved_to_finished(
    bucket: storage.Bucket, server: VllmLike, caplog: pytest.LogCaptureFixture
) -> None:
    ids = ["a", "b", "c", "d", "e"]
    upload_lines(
        bucket,
        "small.jsonl",
        [chat_line(i, words=3, max_tokens=5) for i in ids[:2]] + ["", *[chat_line(i, words=3, max_tokens=5) for i in ids[2:]]],
    )
    progress = Progress()
    replicas = Replicas([ReplicaCount(2, 2)])
    config = settings(bucket.name, server.url, part_lines=2, price_per_replica_hour=36.0, estimated_usd_per_million_tokens=1.5)
    held = claimed(bucket, "small.jsonl", part_lines=2)
    before = time.time()
    with caplog.at_level(logging.INFO, logger="batch"):
        assert bounded.run_input(config, bucket, held, replicas, progress) is True
    # Three parts of two lines (the blank line is none), each line's answer id by its number among the lines.
    assert sorted(blob.name for blob in bucket.list_blobs(prefix=layout.OUTPUT)) == [
        objects.part_name(layout.OUTPUT, held.key, index) for index in range(3)
    ]
    answers = read_jsonl(bucket, layout.OUTPUT)
    assert [answer["custom_id"] for answer in answers] == ids
    assert [answer["id"] for answer in answers] == [lines.answer_id(held.key, number) for number in range(1, 6)]
    assert all(answer["response"]["body"]["model"] == "served-model" for answer in answers)
    assert Counter(server.stats()["answered"]) == Counter({f"{i} word word": 1 for i in ids})
    report = only_report(bucket, "small.jsonl")
    assert (report["input_lines"], report["lines"], report["succeeded"], report["failed"]) == (5, 5, 5, 0)
    assert (report["input_tokens"], report["output_tokens"]) == (15, 25)
    assert (report["price_per_replica_hour_usd"], report["estimated_usd_per_million_tokens"]) == (36.0, 1.5)
    assert report["replaced"] is False and report["cold_start"] is None
    assert before - 1 <= held.lease.started_at <= before
    assert 0 < report["wall_seconds"] <= time.time() - held.lease.started_at
    # Two replicas from the first Ready read to the last answer, within the batch's time.
    assert 0 < report["cost_parts"]["serving"]["replica_hours"] * 3600 <= 2 * report["wall_seconds"]
    assert report["cost_parts"]["wake"]["replica_hours"] == 0
    assert sorted(blob.name for blob in bucket.list_blobs(prefix=layout.INPUT)) == []
    assert [blob.name for blob in bucket.list_blobs(prefix=layout.FINISHED)] == [layout.FINISHED + held.key]
    assert list(bucket.list_blobs(prefix=layout.CLAIMS)) == []
    assert (progress.done.value, progress.failed.value, progress.backlog.value, progress.in_flight.value) == (5, 0, 0, 0)
    assert (progress.budget.value, progress.ready_replicas.value) == (0, 2)
    # The report's one line closes the batch's log.
    assert caplog.records[-1].getMessage() == report_module.summary(report)


def test_bad_lines_go_to_errors_by_line_number_and_count_as_failed(bucket: storage.Bucket, server: VllmLike) -> None:
    upload_lines(bucket, "bad.jsonl", [chat_line("a"), "not json", chat_line("a"), chat_line("b")])
    progress = Progress()
    held = claimed(bucket, "bad.jsonl")
    assert bounded.run_input(settings(bucket.name, server.url), bucket, held, Replicas(), progress) is True
    errors = read_jsonl(bucket, layout.ERRORS)
    assert [(error["id"], error["custom_id"], error["error"]["code"], error["response"]) for error in errors] == [
        (lines.answer_id(held.key, 2), None, "invalid_json", None),
        (lines.answer_id(held.key, 3), "a", "duplicate_custom_id", None),
    ]
    assert errors[1]["error"]["message"] == "line 3: custom_id 'a' was already used by an earlier line"
    assert [answer["custom_id"] for answer in read_jsonl(bucket, layout.OUTPUT)] == ["a", "b"]
    report = only_report(bucket, "bad.jsonl")
    assert (report["lines"], report["succeeded"], report["failed"], report["bad_lines"]) == (4, 2, 2, 2)
    assert (progress.done.value, progress.failed.value, progress.backlog.value) == (2, 2, 0)


def test_a_request_that_fails_for_good_is_an_error_line_and_the_model_goes_as_the_line_names_it(
    bucket: storage.Bucket, server: VllmLike
) -> None:
    # No served model set: the line's own model goes, which this server does not serve (404, answered for good).
    upload_lines(bucket, "own-model.jsonl", [chat_line("x"), chat_line("y")])
    progress = Progress()
    held = claimed(bucket, "own-model.jsonl")
    assert bounded.run_input(settings(bucket.name, server.url, served_model=None), bucket, held, Replicas(), progress) is True
    errors = read_jsonl(bucket, layout.ERRORS)
    assert sorted(error["custom_id"] for error in errors) == ["x", "y"]
    assert all(error["response"]["status_code"] == 404 and error["error"] is None for error in errors)
    assert all("gpt-4o-mini" in error["response"]["body"]["error"]["message"] for error in errors)
    assert read_jsonl(bucket, layout.OUTPUT) == []
    report = only_report(bucket, "own-model.jsonl")
    assert (report["succeeded"], report["failed"], report["bad_lines"]) == (0, 2, 0)
    assert (progress.done.value, progress.failed.value) == (0, 2)


def test_a_resumed_batch_sends_only_the_parts_not_yet_written(bucket: storage.Bucket, server: VllmLike) -> None:
    upload_lines(bucket, "resumed.jsonl", [chat_line(f"r{i}") for i in range(6)])
    held = claimed(bucket, "resumed.jsonl", part_lines=2)
    # The run before wrote part 1 (lines 3 and 4), with its counts.
    done = objects.PartSummary(lines=2, succeeded=1, failed=1, prompt_tokens=8, completion_tokens=8)
    objects.write_part(bucket, held.key, 1, b'{"custom_id": "r2"}\n', b'{"custom_id": "r3"}\n', done)
    progress = Progress()
    assert bounded.run_input(settings(bucket.name, server.url, part_lines=2), bucket, held, Replicas(), progress) is True
    assert sorted(server.stats()["answered"]) == ["r0 word word word", "r1 word word word", "r4 word word word", "r5 word word word"]
    answers = {answer["custom_id"]: answer["id"] for answer in read_jsonl(bucket, layout.OUTPUT) if "id" in answer}
    assert answers == {f"r{i}": lines.answer_id(held.key, i + 1) for i in (0, 1, 4, 5)}
    report = only_report(bucket, "resumed.jsonl")
    assert (report["lines"], report["succeeded"], report["failed"], report["input_tokens"]) == (6, 5, 1, 8 + 4 * 4)
    assert (progress.done.value, progress.backlog.value) == (4, 0)


@dataclass
class Engine:
    """A completions endpoint that records each request's headers and body and answers each with the next
    of ``statuses`` (then 200): the vLLM-like server ignores headers and does not answer 503 on demand."""

    url: str = ""
    statuses: list[int] = field(default_factory=list)
    seen: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)


@pytest.fixture
def engine() -> Iterator[Engine]:
    state = Engine()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.seen.append((dict(self.headers), body))
            state.arrivals.append(time.monotonic())
            status = state.statuses.pop(0) if state.statuses else 200
            choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
            answer = {"id": "x", "choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}
            raw = json.dumps(answer if status == 200 else {"error": {"code": status}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        state.url = f"{url}/v1"
        yield state


def test_the_runner_sends_the_api_key_the_served_model_and_a_new_connection_each_time(bucket: storage.Bucket, engine: Engine) -> None:
    upload_lines(bucket, "key.jsonl", [chat_line("k1"), chat_line("k2")])
    config = settings(bucket.name, engine.url, api_key="sk-batch", served_model="the/model")
    assert bounded.run_input(config, bucket, claimed(bucket, "key.jsonl"), Replicas(), Progress()) is True
    assert [headers.get("Authorization") for headers, _ in engine.seen] == ["Bearer sk-batch"] * 2
    # A ClusterIP Service balances connections: one per request reaches a replica that became Ready since.
    assert [headers.get("Connection") for headers, _ in engine.seen] == ["close"] * 2
    assert [body["model"] for _, body in engine.seen] == ["the/model"] * 2
    assert sorted(body["messages"][0]["content"].split()[0] for _, body in engine.seen) == ["k1", "k2"]


def answer_one_line(config: RunnerSettings, bucket: storage.Bucket, progress: Progress) -> None:
    """``_answer_part`` answers one line, in a thread of its own (asyncio.run there leaves this thread's
    event loop alone, which the render tests after this one in the worker use)."""
    request = lines.Request("w", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "w"}]})

    async def answer() -> None:
        async with aiohttp.ClientSession() as session:
            await runner._answer_part(config, bucket, "w.jsonl/1", 0, 1, [request], session, {"": Limiter(lambda: 8)}, progress)

    thread = threading.Thread(target=asyncio.run, args=(answer(),), daemon=True)
    thread.start()
    thread.join(Bounded.SECONDS)
    assert not thread.is_alive()
    assert read_jsonl(bucket, layout.OUTPUT + "w.jsonl/1/")[0]["custom_id"] == "w"


@pytest.mark.parametrize("ready", [0, 1])
def test_a_retry_waits_while_no_replica_is_ready(bucket: storage.Bucket, engine: Engine, ready: int) -> None:
    # The first answer is a 503; the retry waits up to ready_wait_seconds (looking each second) for a Ready replica.
    engine.statuses = [503]
    config = settings(bucket.name, engine.url, retry=replace(FAST, ready_wait_seconds=1.0))
    progress = Progress()
    progress.ready_replicas.value = ready
    answer_one_line(config, bucket, progress)
    assert len(engine.arrivals) == 2
    retry_after = engine.arrivals[1] - engine.arrivals[0]
    # A backoff of 5 to 10 ms with a replica Ready; a look each second while none is.
    assert retry_after < 0.9 if ready else retry_after >= 1.0
    assert (progress.done.value, progress.in_flight.value) == (1, 0)


def test_no_api_key_sends_no_authorization(bucket: storage.Bucket, engine: Engine) -> None:
    upload_lines(bucket, "nokey.jsonl", [chat_line("n")])
    assert bounded.run_input(settings(bucket.name, engine.url), bucket, claimed(bucket, "nokey.jsonl"), Replicas(), Progress()) is True
    ((headers, _),) = engine.seen
    assert "Authorization" not in headers


def test_a_request_slower_than_its_timeout_is_no_answer(bucket: storage.Bucket, vllm_like: Callable[..., VllmLike]) -> None:
    server = vllm_like(answer_seconds=1.0)
    upload_lines(bucket, "slow.jsonl", [chat_line("s")])
    config = settings(bucket.name, server.url, retry=replace(FAST, attempts=1, request_timeout_seconds=0.3))
    started = time.monotonic()
    assert bounded.run_input(config, bucket, claimed(bucket, "slow.jsonl"), Replicas(), Progress()) is True
    assert time.monotonic() - started < 1.0
    ((error,),) = [read_jsonl(bucket, layout.ERRORS)]
    assert (error["response"], error["error"]["code"]) == (None, "connection_failed")


def test_more_requests_at_once_than_aiohttps_default_pool_all_go(bucket: storage.Bucket, vllm_like: Callable[..., VllmLike]) -> None:
    # aiohttp's connector opens 100 connections at most unless told otherwise; a share may be larger. About 0.5 s.
    server = vllm_like(answer_seconds=0.3)
    upload_lines(bucket, "wide.jsonl", [chat_line(f"w{i}") for i in range(101)])
    config = settings(bucket.name, server.url, concurrency_per_replica=200, part_lines=200)
    assert (
        bounded.run_input(config, bucket, claimed(bucket, "wide.jsonl", part_lines=200), Replicas([ReplicaCount(1, 1)]), Progress()) is True
    )
    assert server.stats()["most_in_flight"] == 101


def test_a_woken_batch_reports_the_wake_and_how_the_last_replica_started(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike]
) -> None:
    server = vllm_like(answer_seconds=0.3)  # the keeper looks at the claim while the answer runs
    upload_lines(bucket, "woke.jsonl", [chat_line("w")])
    held = claimed(bucket, "woke.jsonl")
    wakes: list[float] = []

    def look(index: int) -> None:
        if index >= 3:  # the keeper's reads, after the three of the wait
            wakes.append(stored(bucket, held)[0].wake_replica_seconds)

    replicas = Replicas(
        [ReplicaCount(1, 0), ReplicaCount(1, 0), ReplicaCount(1, 1)],
        events_list=samples.events_list(samples.wake_events()),
        logs={samples.POD: samples.COLD_LOG},
        on_read=look,
    )
    estimate = {"phases": {"nodeProvisioning": {"seconds": 330, "source": "node"}}}
    assert bounded.run_input(settings(bucket.name, server.url, expected_cold_start=estimate), bucket, held, replicas, Progress()) is True
    report = only_report(bucket, "woke.jsonl")
    assert report["cold_start"]["pod"] == samples.POD
    assert report["cold_start"]["againstEstimate"]["node provisioned"]["expected"] == 330
    # Measured once, as soon as every woken replica was Ready (while the batch ran): the API server keeps events an hour.
    assert len(replicas.events_at) == 1 and replicas.events_at[0] < replicas.reads[-1]
    wake_seconds = report["cost_parts"]["wake"]["replica_hours"] * 3600
    assert wake_seconds >= 0.1  # one replica held over two polls
    # The claim carries the wake while the batch runs: a runner that takes over reports it.
    assert wakes and all(seconds == pytest.approx(wake_seconds) for seconds in wakes)


def test_an_empty_input_is_finished_with_nothing_to_answer(bucket: storage.Bucket, server: VllmLike) -> None:
    bucket.blob(layout.INPUT + "empty.jsonl").upload_from_string(b"\n\n")
    progress = Progress()
    assert bounded.run_input(settings(bucket.name, server.url), bucket, claimed(bucket, "empty.jsonl"), Replicas(), progress) is True
    report = only_report(bucket, "empty.jsonl")
    assert (report["input_lines"], report["lines"], report["not_sent"]) == (0, 0, 0)
    assert (progress.backlog.value, progress.done.value) == (0, 0)
    assert server.stats()["requests"] == 0


class Exited(BaseException):
    """Where os._exit would end the pod: ends the claim's keeper thread instead of the test process."""


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_requests_still_in_flight_at_the_drains_end_hand_the_claim_back_before_the_pod_exits(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # An answer (0.3 s) outlasts the drain (0.2 s). One request at a time: the four parts opened before the drain
    # are answered (1.2 s), the fifth and sixth are not.
    server = vllm_like(answer_seconds=0.3)
    upload_lines(bucket, "late.jsonl", [chat_line(f"l{i}") for i in range(6)])
    held = claimed(bucket, "late.jsonl", part_lines=1)
    progress = Progress()
    told: list[float] = []
    exits: list[tuple[object, float, objects.Lease]] = []

    def sigterm(index: int) -> None:
        if index == 1 and not told:  # the keeper's first look, the first part's request in flight
            progress.draining.value = 1
            told.append(time.monotonic())

    def exit_now(code: object) -> None:
        exits.append((code, time.monotonic(), stored(bucket, held)[0]))
        raise Exited

    monkeypatch.setattr(os, "_exit", exit_now)
    config = settings(bucket.name, server.url, part_lines=1, concurrency_per_replica=1, drain_seconds=0.2, poll_seconds=0.05)
    with caplog.at_level(logging.WARNING, logger="batch"):
        assert bounded.run_input(config, bucket, held, Replicas([ReplicaCount(1, 1)], on_read=sigterm), progress) is False
    ((code, at, lease_then),) = exits
    assert code == 0
    assert at - told[0] >= 0.2
    assert (lease_then.runner, lease_then.until) == ("runner-test", 0.0)
    warning = f"{held.key}: requests still in flight at the end of the drain; handing the claim back"
    assert warning in [record.getMessage() for record in caplog.records]


def test_a_batch_with_another_waiting_bears_no_idle_tail_and_the_last_one_does(bucket: storage.Bucket, server: VllmLike) -> None:
    upload_lines(bucket, "first.jsonl", [chat_line("f")])
    upload_lines(bucket, "second.jsonl", [chat_line("s")])
    config = settings(bucket.name, server.url, idle_tail_seconds=300.0)
    replicas = Replicas([ReplicaCount(3, 3)])
    assert bounded.run_input(config, bucket, claimed(bucket, "first.jsonl"), replicas, Progress()) is True
    assert bounded.run_input(config, bucket, claimed(bucket, "second.jsonl"), replicas, Progress()) is True
    assert only_report(bucket, "first.jsonl")["cost_parts"]["idle_tail"]["replica_hours"] == 0
    assert only_report(bucket, "second.jsonl")["cost_parts"]["idle_tail"]["replica_hours"] == pytest.approx(3 * 300 / 3600)


def test_sigterm_before_any_part_hands_the_batch_back_at_once(
    bucket: storage.Bucket, server: VllmLike, caplog: pytest.LogCaptureFixture
) -> None:
    upload_lines(bucket, "drained.jsonl", [chat_line("d1"), chat_line("d2")])
    progress = Progress()

    def sigterm(index: int) -> None:
        progress.draining.value = 1

    held = claimed(bucket, "drained.jsonl")
    with caplog.at_level(logging.INFO, logger="batch"):
        assert bounded.run_input(settings(bucket.name, server.url), bucket, held, Replicas(on_read=sigterm), progress) is False
    assert f"{held.key}: handed back with 0 of 2 lines answered" in [record.getMessage() for record in caplog.records]
    assert server.stats()["requests"] == 0
    lease_now, _ = stored(bucket, held)
    assert lease_now.until == 0.0 and lease_now.runner == "runner-test"
    assert [blob.name for blob in bucket.list_blobs(prefix=layout.INPUT)] == ["input/drained.jsonl"]
    assert list(bucket.list_blobs(prefix=layout.REPORTS)) == []


def test_sigterm_while_the_replicas_wake_hands_the_batch_back_with_the_wake_it_held(bucket: storage.Bucket, server: VllmLike) -> None:
    upload_lines(bucket, "waking.jsonl", [chat_line("w")])
    progress = Progress()

    def sigterm(index: int) -> None:
        if index == 2:
            progress.draining.value = 1

    held = claimed(bucket, "waking.jsonl")
    replicas = Replicas([ReplicaCount(2, 0)], on_read=sigterm)
    assert bounded.run_input(settings(bucket.name, server.url), bucket, held, replicas, progress) is False
    lease_now, _ = stored(bucket, held)
    assert lease_now.until == 0.0
    assert lease_now.wake_replica_seconds >= 2 * 0.1  # two replicas over at least two polls
    assert list(bucket.list_blobs(prefix=layout.REPORTS)) == []


def stored(bucket: storage.Bucket, held: objects.Claim) -> tuple[objects.Lease, int]:
    blob = bucket.get_blob(layout.CLAIMS + held.key)
    assert blob is not None
    return objects.Lease(**json.loads(blob.download_as_bytes())), int(blob.generation)


def test_the_claim_is_renewed_with_the_share_and_the_replica_time_while_the_batch_runs(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike]
) -> None:
    # A third of the lease (0.4 s) is sooner than a poll (30 s): renewed twice during a 0.9 s answer.
    server = vllm_like(answer_seconds=0.9)
    upload_lines(bucket, "renewed.jsonl", [chat_line("r1"), chat_line("r2")])
    held = claimed(bucket, "renewed.jsonl", lease_seconds=1.2)
    # Another live claim holds 20 of the 2 x 16 budget: this one may have 12.
    other = objects.Lease("other", time.time() + 60, 0.0, 10, in_flight_share=20)
    bucket.blob(layout.CLAIMS + "other.jsonl/1").upload_from_string(json.dumps(asdict(other)))
    seen: list[objects.Lease] = []

    def look(index: int) -> None:
        if index >= 1:  # the keeper's reads (the first is the wait for a Ready replica)
            seen.append(stored(bucket, held)[0])

    config = settings(bucket.name, server.url, concurrency_per_replica=16, lease_seconds=1.2, poll_seconds=30.0)
    progress = Progress()
    started = time.time()
    assert bounded.run_input(config, bucket, held, Replicas([ReplicaCount(2, 2)], on_read=look), progress) is True
    assert len(seen) >= 2
    assert {lease.in_flight_share for lease in seen} == {12}
    assert all(lease.runner == "runner-test" and lease.until >= started + 1.2 for lease in seen)
    assert seen[-1].replica_seconds > 0
    assert server.stats()["most_in_flight"] == 2
    assert only_report(bucket, "renewed.jsonl")["cold_start"] is None  # found Ready: no wake to measure


def test_a_claim_another_runner_took_over_stops_the_batch(bucket: storage.Bucket, vllm_like: Callable[..., VllmLike]) -> None:
    server = vllm_like(answer_seconds=0.2)
    upload_lines(bucket, "taken.jsonl", [chat_line(f"t{i}") for i in range(4)])
    held = claimed(bucket, "taken.jsonl", part_lines=1)

    def take_over(index: int) -> None:
        if index == 2:
            current, generation = stored(bucket, held)
            taken = replace(current, runner="other", until=time.time() + 60)
            bucket.blob(layout.CLAIMS + held.key).upload_from_string(json.dumps(asdict(taken)), if_generation_match=generation)

    config = settings(bucket.name, server.url, part_lines=1, concurrency_per_replica=1)
    with pytest.raises(objects.ClaimLostError, match="another runner took over the claim"):
        bounded.run_input(config, bucket, held, Replicas([ReplicaCount(1, 1)], on_read=take_over), Progress())
    assert list(bucket.list_blobs(prefix=layout.REPORTS)) == []
    assert stored(bucket, held)[0].runner == "other"


def test_a_claim_that_cannot_be_renewed_for_two_thirds_of_its_lease_is_given_up(
    bucket: storage.Bucket, storage_proxy: StorageProxy, vllm_like: Callable[..., VllmLike], caplog: pytest.LogCaptureFixture
) -> None:
    server = vllm_like(answer_seconds=1.0)  # still in flight when the lease is given up
    upload_lines(bucket, "refused.jsonl", [chat_line("x")])
    held = claimed(bucket, "refused.jsonl", lease_seconds=0.9)
    renewals: list[StorageCall] = []

    attempts: list[float] = []

    def refuse_after_the_first_two(call: StorageCall) -> int | None:
        # The renewal before any request and the keeper's first go through; every later one is refused (403).
        if call.writes(layout.CLAIMS):
            renewals.append(call)
            attempts.append(time.monotonic())
            return 403 if len(renewals) > 2 else None
        return None

    storage_proxy.rules.append(refuse_after_the_first_two)
    through = storage.Client().bucket(bucket.name)
    config = settings(bucket.name, server.url, lease_seconds=0.9)
    started = time.monotonic()
    with (
        caplog.at_level(logging.WARNING, logger="batch"),
        pytest.raises(objects.ClaimLostError, match=rf"^{re.escape(held.key)}: the lease could not be renewed \(403 "),
    ):
        bounded.run_input(config, through, held, Replicas(), Progress())
    assert time.monotonic() - started >= 0.6
    assert len(renewals) >= 3
    # Tried again until two thirds of the lease (0.6 s) had passed since the last renewal that went through.
    assert attempts[-1] - attempts[1] >= 0.45
    failed = [record.getMessage() for record in caplog.records if record.getMessage().startswith("renewing")]
    assert failed and all(message.startswith(f"renewing the claim of {held.key} failed: Forbidden: 403 ") for message in failed)


def test_an_input_replaced_before_its_run_is_reported_as_replaced_and_left_for_its_own_batch(
    bucket: storage.Bucket, server: VllmLike
) -> None:
    upload_lines(bucket, "replaced.jsonl", [chat_line("old")])
    held = claimed(bucket, "replaced.jsonl")
    upload_lines(bucket, "replaced.jsonl", [chat_line("new")])
    assert bounded.run_input(settings(bucket.name, server.url), bucket, held, Replicas(), Progress()) is False
    report = only_report(bucket, "replaced.jsonl")
    assert (report["replaced"], report["input_lines"], report["lines"]) == (True, None, 0)
    assert [blob.name for blob in bucket.list_blobs(prefix=layout.INPUT)] == ["input/replaced.jsonl"]
    assert list(bucket.list_blobs(prefix=layout.CLAIMS)) == []
    assert server.stats()["requests"] == 0


def test_run_waiting_runs_each_free_input_and_count_waiting_counts_the_unclaimed(
    bucket: storage.Bucket, server: VllmLike, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("one.jsonl", "two.jsonl", "three.jsonl"):
        upload_lines(bucket, name, [chat_line(name)])
    held = claimed(bucket, "two.jsonl", runner_id="other")  # another runner's, live
    config = settings(bucket.name, server.url)
    client = storage.Client()
    assert runner.count_waiting(config, client) == 2
    progress = Progress()
    holders: list[str] = []

    def look(index: int) -> None:
        holders.extend(objects.Lease(**json.loads(blob.download_as_bytes())).runner for blob in bucket.list_blobs(prefix=layout.CLAIMS))

    with caplog.at_level(logging.INFO, logger="batch"):
        finished = bounded.run_waiting(config, client, Replicas(on_read=look), progress)
    assert [key.rpartition("/")[0] for key in finished] == ["one.jsonl", "three.jsonl"]
    assert set(holders) == {"runner-test", "other"}
    assert [r.getMessage() for r in caplog.records if r.getMessage().startswith("claimed")] == [f"claimed {key}" for key in finished]
    assert [blob.name for blob in bucket.list_blobs(prefix=layout.INPUT)] == ["input/two.jsonl"]
    assert runner.count_waiting(config, client) == 0
    objects.release(bucket, held)
    assert runner.count_waiting(config, client) == 0  # a released claim is still a claim until it is taken over


def test_run_waiting_claims_nothing_once_told_to_drain(bucket: storage.Bucket) -> None:
    upload_lines(bucket, "later.jsonl", [chat_line("l")])
    progress = Progress()
    progress.draining.value = 1
    assert bounded.run_waiting(settings(bucket.name), storage.Client(), Replicas(), progress) == []
    assert list(bucket.list_blobs(prefix=layout.CLAIMS)) == []


def test_a_worker_that_fails_fails_the_run(bucket: storage.Bucket) -> None:
    held = objects.Claim("gone.jsonl", 1, 1, objects.Lease("r", 0.0, 0.0, 10))
    with pytest.raises(NotFound):  # raised in the worker's thread, raised again here
        bounded.run_workers(settings("no-such-bucket-here"), held, Progress(), threading.Event())


def test_the_reader_stops_when_nobody_reads_on(bucket: storage.Bucket) -> None:
    upload_lines(bucket, "read.jsonl", [chat_line(f"q{i}") for i in range(5)])
    held = claimed(bucket, "read.jsonl")
    feed: queue.Queue[list[bytes] | None] = queue.Queue(maxsize=10)
    reading = threading.Event()
    reading.set()
    bounded._read(bucket, held, 2, feed, reading)
    parts = []
    while (part := feed.get_nowait()) is not None:
        parts.append(len(part))
    assert parts == [2, 2, 1]
    # Stopped: nothing more is put, not even the end mark.
    reading.clear()
    bounded._read(bucket, held, 2, feed, reading)
    assert feed.empty()


def test_the_reader_of_a_replaced_input_ends_its_feed(bucket: storage.Bucket, caplog: pytest.LogCaptureFixture) -> None:
    upload_lines(bucket, "gone.jsonl", [chat_line("g")])
    held = claimed(bucket, "gone.jsonl")
    upload_lines(bucket, "gone.jsonl", [chat_line("h")])
    feed: queue.Queue[list[bytes] | None] = queue.Queue(maxsize=1)
    reading = threading.Event()
    reading.set()
    with caplog.at_level(logging.WARNING, logger="batch"):
        bounded._read(bucket, held, 2, feed, reading)
    assert feed.get_nowait() is None
    assert [record.getMessage() for record in caplog.records] == [
        f"{held.key}: the input was replaced while it ran; its generation is gone"
    ]


def test_worker_processes_answer_the_parts_between_them(bucket: storage.Bucket, server: VllmLike) -> None:
    # Two spawned processes (2 to 3 s: each imports the runner), the only way to reach the pod's process path.
    upload_lines(bucket, "split.jsonl", [chat_line(f"s{i}") for i in range(5)])
    held = claimed(bucket, "split.jsonl", part_lines=2)
    progress = Progress()
    progress.budget.value = 8
    progress.ready_replicas.value = 1
    config = settings(bucket.name, server.url, part_lines=2, workers=2)
    bounded.run_workers(config, held, progress, threading.Event())
    assert sorted(answer["custom_id"] for answer in read_jsonl(bucket, layout.OUTPUT)) == [f"s{i}" for i in range(5)]
    assert sorted(objects.finished_parts(bucket, held.key)) == [0, 1, 2]
    assert (progress.done.value, progress.in_flight.value) == (5, 0)


@pytest.mark.parametrize(
    ("per_replica", "ready", "shards", "part_lines", "lines_count", "at_once"),
    [
        # Parts open at once: 2 x (per-replica concurrency x Ready replicas / workers) / part lines, plus one, at least 2.
        (1, 1, 1, 1, 6, 3),  # 2 x 1 / 1 + 1
        (4, 2, 2, 2, 24, 10),  # 2 x 4 / 2 + 1 = 5 parts of 2 lines (this worker has every other part)
        (1, 1, 1, 2, 8, 4),  # ceil(2 x 1 / 2) + 1 = 2 parts of 2 lines
    ],
)
def test_a_worker_keeps_enough_parts_open_to_fill_its_share(
    bucket: storage.Bucket,
    vllm_like: Callable[..., VllmLike],
    per_replica: int,
    ready: int,
    shards: int,
    part_lines: int,
    lines_count: int,
    at_once: int,
) -> None:
    # Answers slow enough (0.3 s) that every open part's lines are in flight together: 0.6 to 0.9 s.
    server = vllm_like(answer_seconds=0.3)
    upload_lines(bucket, "open.jsonl", [chat_line(f"o{i}") for i in range(lines_count)])
    held = claimed(bucket, "open.jsonl", part_lines=part_lines)
    progress = Progress()
    progress.budget.value = 100  # never the bound here
    progress.ready_replicas.value = ready
    config = settings(bucket.name, server.url, concurrency_per_replica=per_replica, part_lines=part_lines)
    thread = threading.Thread(target=asyncio.run, args=(runner.run_shard(config, held, progress, 0, shards, lambda: False),), daemon=True)
    thread.start()
    thread.join(Bounded.SECONDS)
    assert not thread.is_alive()
    assert server.stats()["most_in_flight"] == at_once
    assert progress.done.value == lines_count // shards


def test_a_refused_renewal_before_any_request_is_logged_and_the_keeper_renews_later(
    bucket: storage.Bucket, storage_proxy: StorageProxy, server: VllmLike, caplog: pytest.LogCaptureFixture
) -> None:
    upload_lines(bucket, "first-refused.jsonl", [chat_line("f")])
    held = claimed(bucket, "first-refused.jsonl")
    refused: list[StorageCall] = []

    def refuse_the_first(call: StorageCall) -> int | None:
        if call.writes(layout.CLAIMS) and not refused:
            refused.append(call)
            return 403  # IAM still settling
        return None

    storage_proxy.rules.append(refuse_the_first)
    through = storage.Client().bucket(bucket.name)
    with caplog.at_level(logging.WARNING, logger="batch"):
        assert bounded.run_input(settings(bucket.name, server.url), through, held, Replicas(), Progress()) is True
    (message,) = [record.getMessage() for record in caplog.records if record.getMessage().startswith("renewing")]
    assert message.startswith(f"renewing the claim of {held.key} failed: Forbidden: 403 ")
    assert [answer["custom_id"] for answer in read_jsonl(bucket, layout.OUTPUT)] == ["f"]


def test_a_batch_that_ends_before_every_woken_replica_is_ready_measures_the_cold_start_at_its_end(
    bucket: storage.Bucket, server: VllmLike
) -> None:
    upload_lines(bucket, "partly.jsonl", [chat_line("p")])
    replicas = Replicas(
        [ReplicaCount(2, 0), ReplicaCount(2, 1)],  # the second replica is never Ready while the batch runs
        events_list=samples.events_list(samples.wake_events()),
        logs={samples.POD: samples.COLD_LOG},
    )
    estimate = {"phases": {"nodeProvisioning": {"seconds": 330, "source": "node"}}}
    config = settings(bucket.name, server.url, expected_cold_start=estimate)
    assert bounded.run_input(config, bucket, claimed(bucket, "partly.jsonl"), replicas, Progress()) is True
    cold_start = only_report(bucket, "partly.jsonl")["cold_start"]
    assert cold_start["pod"] == samples.POD and cold_start["againstEstimate"]["node provisioned"]["expected"] == 330
    assert len(replicas.events_at) == 1 and replicas.events_at[0] > replicas.reads[-1]


def test_each_models_share_is_of_its_own_budget_and_reads_what_the_others_hold_of_that_model() -> None:
    others = [
        objects.Lease("a", 0.0, 0.0, 10, in_flight_share=60, model_shares={"chat": 50, "embed": 10}),
        objects.Lease("b", 0.0, 0.0, 10, in_flight_share=5, model_shares={"embed": 5}),
    ]
    # chat: 2 Ready x 40 = 80, an even third is 26 and the others leave 30; embed: 12 with 15 held by others, then 48.
    assert runner.in_flight_share(2, 40, others, "chat") == 26
    assert runner.in_flight_share(1, 12, others, "embed") == 0
    assert runner.in_flight_share(4, 12, others, "embed") == 16
    # A claim of a one-model runner holds its one share; a model no claim holds is free.
    assert objects.Lease("c", 0.0, 0.0, 10, in_flight_share=7).share_of("") == 7
    assert others[1].share_of("chat") == 0


def test_each_models_backlog_counts_the_lines_it_is_still_to_be_sent() -> None:
    routes = (
        runner.ModelRoute("chat", "http://chat/v1", "generate", "chat", 4),
        runner.ModelRoute("embed", "http://embed/v1", "embed", "embed", 4),
    )
    config = RunnerSettings("b", "", 0, models=routes)

    def embedding(custom_id: str, model: str = "embed") -> bytes:
        body = {"model": model, "input": custom_id}
        return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/embeddings", "body": body}).encode()

    def chat(custom_id: str) -> bytes:
        return json.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": {"model": "chat"}}).encode()

    # Parts of two lines: part 0 (c1, e1) was written before; an unknown model and a duplicate are sent to no model.
    stream = [chat("c1"), b"  ", embedding("e1"), chat("c2"), embedding("e2", "other"), embedding("e3"), chat("c2")]
    assert runner.backlog_by_model(iter(stream), 2, {0}, config) == {"chat": 1, "embed": 1}
