"""The runner over more than one batch, as a user meets it: reused names, Cloud Storage's real answers, cut answers.

Each test here failed on the runner before its fix; each names the class it stands for.
"""

from __future__ import annotations

import concurrent.futures
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import google.cloud.storage as storage
import pytest

from tests.workloads.batch.conftest import (
    Balancer,
    KubernetesApi,
    StorageCall,
    StorageProxy,
    VllmLike,
    chat_line,
    read_jsonl,
    run_runner,
    start_vllm_like,
    upload_lines,
)
from workloads.batch import bucket as objects
from workloads.batch import layout

# Real processes over seconds: run after the README's test command (pyproject.toml, .ci/run).
pytestmark = pytest.mark.timeline


def run_held(server: VllmLike, until: Callable[[], object], *args: Any, **overrides: Any) -> Any:
    """``run_runner`` in a thread while ``server`` holds its answers (``pause_after``), resumed once ``until()``
    is true: what it waits for happens while the batch runs, however fast or loaded this machine is."""
    ran: list[Any] = []
    runner = threading.Thread(target=lambda: ran.append(run_runner(*args, **overrides)))
    runner.start()
    deadline = time.monotonic() + 30
    while not until() and runner.is_alive():
        assert time.monotonic() < deadline, "not within 30 s"
        time.sleep(0.01)
    server.resume()
    runner.join(timeout=60)
    assert ran, "the runner failed (its error is above)"
    return ran[0]


def reports(bucket: storage.Bucket, name: str) -> list[dict[str, Any]]:
    blobs = sorted(bucket.list_blobs(prefix=f"{layout.REPORTS}{name}/"), key=lambda blob: blob.name)
    return [json.loads(blob.download_as_bytes()) for blob in blobs]


def test_a_second_day_under_the_same_name_is_sent_and_reported_as_a_batch_of_its_own(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    """Class: every derived object (claim, parts, errors, report, finished copy) keyed by name and generation."""
    server = vllm_like()
    upload_lines(bucket, "requests.jsonl", [chat_line(f"day1-{i}") for i in range(50)])
    run_runner(bucket.name, server.url, kubernetes_api.url)
    upload_lines(bucket, "requests.jsonl", [chat_line(f"day2-{i}") for i in range(50)])
    run_runner(bucket.name, server.url, kubernetes_api.url)

    answered = server.stats()["answered"]
    assert all(answered[f"day2-{i} word word word"] == 1 for i in range(50))  # the second day was sent
    days = reports(bucket, "requests.jsonl")
    assert [(day["lines"], day["succeeded"]) for day in days] == [(50, 50), (50, 50)]
    assert days[0]["generation"] != days[1]["generation"]
    for day, prefix in zip(days, ("day1-", "day2-"), strict=True):
        answers = read_jsonl(bucket, f"{layout.OUTPUT}requests.jsonl/{day['generation']}/")
        assert sorted(answer["custom_id"] for answer in answers) == sorted(f"{prefix}{i}" for i in range(50))
    assert len({answer["id"] for answer in read_jsonl(bucket, layout.OUTPUT)}) == 100  # no id shared by the two days
    assert not list(bucket.list_blobs(prefix=layout.INPUT))
    assert len(list(bucket.list_blobs(prefix=f"{layout.FINISHED}requests.jsonl/"))) == 2


def test_an_input_replaced_while_it_runs_is_two_batches_and_the_first_report_counts_only_what_it_sent(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    # 100 answers finish a part of 50 (two parts are open at once, so at most two); then answers are held
    # until the replacement. Meanwhile the reader is at most six parts past those (two open, one taken, two
    # queued, one in hand): 400 lines, within the first two 1 MiB read ranges of these 4 kB lines. It
    # meets the replacement at its next range, before the end.
    server = vllm_like(pause_after=101)
    upload_lines(bucket, "nightly.jsonl", [chat_line(f"old-{i}") | {"padding": "x" * 4000} for i in range(800)])

    def replaced() -> bool:
        if not list(bucket.list_blobs(prefix=f"{layout.OUTPUT}nightly.jsonl/")):
            return False
        upload_lines(bucket, "nightly.jsonl", [chat_line(f"new-{i}") for i in range(100)])
        return True

    run_held(server, replaced, bucket.name, server.url, kubernetes_api.url, concurrency_per_replica=4, part_lines=50)
    run_runner(bucket.name, server.url, kubernetes_api.url)

    old, new = reports(bucket, "nightly.jsonl")
    old_answers = read_jsonl(bucket, f"{layout.OUTPUT}nightly.jsonl/{old['generation']}/")
    assert old["replaced"] and 0 < old["succeeded"] == len(old_answers) < 800
    assert old["not_sent"] == 800 - old["lines"]
    assert all(answer["custom_id"].startswith("old-") for answer in old_answers)
    new_answers = read_jsonl(bucket, f"{layout.OUTPUT}nightly.jsonl/{new['generation']}/")
    assert (new["replaced"], new["succeeded"]) == (False, 100)
    assert sorted(answer["custom_id"] for answer in new_answers) == sorted(f"new-{i}" for i in range(100))
    assert not list(bucket.list_blobs(prefix=layout.INPUT)) and not list(bucket.list_blobs(prefix=layout.CLAIMS))


def renewals(proxy: StorageProxy) -> list[tuple[StorageCall, str | int | None]]:
    return [(call, action) for call, action in proxy.calls if call.writes(layout.CLAIMS) and call.conditional]


def test_a_renewal_whose_response_was_lost_keeps_the_claim(
    bucket: storage.Bucket, storage_proxy: StorageProxy, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    """Class: a conditional write retried by the client after a lost response meets its own generation
    (claims, renewals and output parts)."""
    lost: list[StorageCall] = []

    def lose_first_renewal(call: StorageCall) -> str | None:
        if call.writes(layout.CLAIMS) and call.conditional and not lost:
            lost.append(call)
            return "lose the response"
        return None

    storage_proxy.rules.append(lose_first_renewal)
    server = vllm_like(pause_after=1)  # nothing is answered until the renewal was lost: the batch outlives it
    upload_lines(bucket, "kept.jsonl", [chat_line(f"k{i}") for i in range(50)])

    finished, _ = run_held(server, lambda: lost, bucket.name, server.url, kubernetes_api.url, concurrency_per_replica=8, poll_seconds=0.05)

    assert lost and [key.rpartition("/")[0] for key in finished] == ["kept.jsonl"]
    assert Counter(answer["custom_id"] for answer in read_jsonl(bucket, f"{layout.OUTPUT}kept.jsonl/")) == Counter(
        f"k{i}" for i in range(50)
    )


def test_a_lost_response_on_an_output_part_is_no_failure(
    bucket: storage.Bucket, storage_proxy: StorageProxy, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    lost: list[StorageCall] = []

    def lose_first_part(call: StorageCall) -> str | None:
        if call.writes(layout.OUTPUT) and not lost:
            lost.append(call)
            return "lose the response"
        return None

    storage_proxy.rules.append(lose_first_part)
    upload_lines(bucket, "parts.jsonl", [chat_line(f"p{i}") for i in range(150)])

    finished, _ = run_runner(bucket.name, vllm_like().url, kubernetes_api.url)

    assert lost and len(finished) == 1
    assert sorted(answer["custom_id"] for answer in read_jsonl(bucket, f"{layout.OUTPUT}parts.jsonl/")) == sorted(
        f"p{i}" for i in range(150)
    )


def test_a_renewal_that_fails_with_any_error_is_tried_again(
    bucket: storage.Bucket, storage_proxy: StorageProxy, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    """Class: any error in the renewal thread (here a 403 while IAM settles) is logged and tried again, never the thread's end."""
    refused: list[StorageCall] = []

    def refuse_one_renewal(call: StorageCall) -> int | None:
        if call.writes(layout.CLAIMS) and call.conditional and not refused:
            refused.append(call)
            return 403
        return None

    storage_proxy.rules.append(refuse_one_renewal)
    server = vllm_like(pause_after=1)  # nothing is answered until two renewals followed the refused one

    def renewed_twice_after_the_refusal() -> bool:
        return [action for _, action in renewals(storage_proxy)][1:].count(None) >= 2

    upload_lines(bucket, "renewed.jsonl", [chat_line(f"r{i}") for i in range(50)])

    run_held(
        server, renewed_twice_after_the_refusal, bucket.name, server.url, kubernetes_api.url, concurrency_per_replica=8, poll_seconds=0.05
    )

    assert refused and renewed_twice_after_the_refusal()  # renewals went on after the refused one


def test_a_takeover_raced_by_the_holders_renewal_leaves_the_claim_to_the_holder(
    bucket: storage.Bucket, storage_proxy: StorageProxy
) -> None:
    upload_lines(bucket, "raced.jsonl", [chat_line("one")])
    source = bucket.get_blob(f"{layout.INPUT}raced.jsonl")
    assert objects.claim(bucket, source, "holder", -1.0, 100) is not None  # a lease that has just run out

    def holder_renews(call: StorageCall) -> None:
        # The holder renews between the taker's read of the claim and its download (from the emulator itself).
        name = call.path.split("/o/", 1)[1]
        held = bucket.get_blob(name)
        lease = json.loads(held.download_as_bytes()) | {"until": time.time() + 60}
        bucket.blob(name).upload_from_string(json.dumps(lease), if_generation_match=held.generation)

    storage_proxy.between.append((lambda call: call.reads(layout.CLAIMS), holder_renews))
    taker = storage.Client().bucket(bucket.name)  # through the proxy

    assert objects.claim(taker, taker.get_blob(source.name), "taker", 30.0, 100) is None


def test_a_resumed_part_with_no_errors_removes_the_errors_part_of_the_run_before(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    """Class: what a stopped run left behind for a part is replaced or removed when the part is written again."""
    upload_lines(bucket, "resumed.jsonl", [chat_line(f"s{i}") for i in range(20)])
    generation = bucket.get_blob(f"{layout.INPUT}resumed.jsonl").generation
    # A run killed after part 0's errors (s3 had failed) and before its answers part.
    stale = {"id": "batch_req_x", "custom_id": "s3", "response": None, "error": {"code": "connection_failed", "message": "..."}}
    key = objects.batch_key("resumed.jsonl", generation)
    bucket.blob(objects.part_name(layout.ERRORS, key, 0)).upload_from_string(json.dumps(stale) + "\n")

    run_runner(bucket.name, vllm_like().url, kubernetes_api.url)

    answered = {answer["custom_id"] for answer in read_jsonl(bucket, f"{layout.OUTPUT}resumed.jsonl/")}
    failed = {error["custom_id"] for error in read_jsonl(bucket, f"{layout.ERRORS}resumed.jsonl/")}
    assert answered == {f"s{i}" for i in range(20)} and not answered & failed


def test_a_line_nested_too_deep_for_the_parser_is_a_bad_line_and_the_batch_goes_on(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    """Class: no line's content may raise out of the parser (a runner that crashes on it crash-loops on it)."""
    upload_lines(bucket, "deep.jsonl", [chat_line("before"), "[" * 100_000 + "]" * 100_000, chat_line("after")])

    run_runner(bucket.name, vllm_like().url, kubernetes_api.url)

    assert sorted(answer["custom_id"] for answer in read_jsonl(bucket, f"{layout.OUTPUT}deep.jsonl/")) == ["after", "before"]
    (error,) = read_jsonl(bucket, f"{layout.ERRORS}deep.jsonl/")
    assert (error["custom_id"], error["response"], error["error"]["code"]) == (None, None, "invalid_json")
    assert error["error"]["message"].startswith("line 2:")


def test_an_answer_cut_by_a_drain_is_sent_again_and_never_written_as_an_answer(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    """Class: only a finished answer is an answer (an aborted choice, a dropped connection, a refused one are retried)."""
    server = vllm_like(abort_every=5)
    upload_lines(bucket, "cut.jsonl", [chat_line(f"c{i}") for i in range(100)])

    run_runner(bucket.name, server.url, kubernetes_api.url)

    answers = read_jsonl(bucket, f"{layout.OUTPUT}cut.jsonl/")
    assert Counter(answer["custom_id"] for answer in answers) == Counter(f"c{i}" for i in range(100))
    assert {answer["response"]["body"]["choices"][0]["finish_reason"] for answer in answers} == {"length"}
    assert server.stats()["requests"] > 100


def test_output_lines_carry_openais_fields_and_only_a_request_with_no_http_answer_has_an_error(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    """OpenAI's BatchRequestOutput (openai-openapi 2.3.0): id, custom_id, response {status_code, request_id,
    body: object} or null, error {code, message} only for a request that failed without an HTTP answer."""
    upload_lines(bucket, "ok.jsonl", [chat_line(f"o{i}") for i in range(5)])
    run_runner(bucket.name, vllm_like().url, kubernetes_api.url)
    for answer in read_jsonl(bucket, f"{layout.OUTPUT}ok.jsonl/"):
        assert set(answer) == {"id", "custom_id", "response", "error"} and answer["error"] is None
        assert set(answer["response"]) == {"status_code", "request_id", "body"}
        assert answer["response"]["request_id"] == answer["response"]["body"]["id"]  # the server's own id
        assert answer["id"].startswith("batch_req_")

    upload_lines(bucket, "unanswered.jsonl", [chat_line(f"u{i}") for i in range(3)])
    run_runner(bucket.name, vllm_like(drop_every=1).url, kubernetes_api.url, retry=fast_attempts(2))
    for error in read_jsonl(bucket, f"{layout.ERRORS}unanswered.jsonl/"):
        assert error["response"] is None and error["error"]["code"] == "connection_failed"


def fast_attempts(attempts: int) -> Any:
    from workloads.batch.serving import RetryPolicy

    return RetryPolicy(attempts=attempts, first_backoff_seconds=0.01, max_backoff_seconds=0.02, request_timeout_seconds=5)


def test_a_woken_batch_reports_the_wake_the_serving_and_the_idle_tail_it_caused_each_labelled(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    """Class: the report's cost is what the batch caused on the bill, not only the replica time it watched."""
    kubernetes_api.status = {"replicas": 2, "readyReplicas": 0}
    kubernetes_api.reads_until_ready = 4  # the runner sleeps a poll (50 ms) after each read at zero Ready
    upload_lines(bucket, "first.jsonl", [chat_line(f"a{i}") for i in range(30)])
    upload_lines(bucket, "second.jsonl", [chat_line(f"b{i}") for i in range(30)])
    started = time.time()

    run_runner(bucket.name, vllm_like().url, kubernetes_api.url, poll_seconds=0.05, idle_tail_seconds=900.0, price_per_replica_hour=88.93)

    wall = time.time() - started
    first, second = (reports(bucket, name)[0] for name in ("first.jsonl", "second.jsonl"))
    parts = first["cost_parts"]
    assert set(parts) == {"wake", "serving", "idle_tail"} and all(part["counts"] for part in parts.values())
    # Two replicas held through four reads at zero Ready: the wake; never more than the run's wall time.
    assert 2 * 3 * 0.05 / 3600 <= parts["wake"]["replica_hours"] <= 2 * wall / 3600
    # The idle tail is the last batch's: the first finished with another waiting.
    assert (parts["idle_tail"]["replica_hours"], second["cost_parts"]["idle_tail"]["replica_hours"]) == (0.0, 2 * 900 / 3600)
    for report in (first, second):
        hours = sum(part["replica_hours"] for part in report["cost_parts"].values())
        assert report["replica_hours"] == pytest.approx(hours)
        assert report["cost_usd"] == pytest.approx(hours * 88.93)


def test_requests_reach_a_replica_that_became_ready_after_the_batch_started(
    bucket: storage.Bucket, balancer: Balancer, kubernetes_api: KubernetesApi
) -> None:
    """A ClusterIP Service balances connections, not requests: kept-alive connections would stay on the first
    replica, and one Ready later would get nothing."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:  # the two start at once
        first, later = pool.map(lambda _: start_vllm_like(), range(2))
    try:
        # The first replica holds its answers from the 100th request until the second is Ready: every line
        # after those in flight then is sent once both are, however fast this machine is.
        first.configure("served-model", {"answer_seconds": 0.01, "pause_after": 100})
        later.configure("served-model", {"answer_seconds": 0.01})
        balancer.endpoints.append(port_of(first))
        upload_lines(bucket, "spread.jsonl", [chat_line(f"s{i}") for i in range(300)])
        runner = threading.Thread(
            target=run_runner, args=(bucket.name, balancer.url, kubernetes_api.url), kwargs={"concurrency_per_replica": 4}
        )
        runner.start()
        deadline = time.monotonic() + 30
        while first.stats()["requests"] < 100 and time.monotonic() < deadline:
            time.sleep(0.01)
        balancer.endpoints.append(port_of(later))  # the second replica is Ready
        sent_before = first.stats()["requests"]
        first.resume()
        runner.join(timeout=60)
        assert not runner.is_alive()
        # After it joined, about half the requests reach it (new connections alternate); kept-alive ones gave it none.
        assert later.stats()["requests"] >= 0.3 * (300 - sent_before)
    finally:
        for server in (first, later):
            server.process.kill()
            server.process.wait(timeout=10)


def port_of(server: VllmLike) -> int:
    return int(server.url.removesuffix("/v1").rsplit(":", 1)[1])
