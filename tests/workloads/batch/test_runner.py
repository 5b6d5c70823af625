"""The runner against real local parts: the Cloud Storage emulator, a vLLM-like server, a Kubernetes API server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import google.cloud.storage as storage
import pytest

from tests.workloads.batch.conftest import (
    DEPLOYMENT,
    NAMESPACE,
    ROOT,
    KubernetesApi,
    VllmLike,
    chat_line,
    only_report,
    read_jsonl,
    run_runner,
    start_vllm_like,
    upload_lines,
)
from tests.workloads.batch.vllm_like import EMBEDDING_LENGTH
from tests.workloads.cold_start import samples
from workloads.batch.serving import RetryPolicy

# Real processes over seconds: run after the README's test command (pyproject.toml, .ci/run).
pytestmark = pytest.mark.timeline


def run_once(bucket: storage.Bucket, server: VllmLike, api: KubernetesApi, **overrides: Any) -> Any:
    return run_runner(bucket.name, server.url, api.url, **overrides)


def test_every_custom_id_is_answered_exactly_once_through_503_429_drops_and_slow_answers(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    # Each fault comes back every few requests: 500 lines meet each of them dozens of times.
    server = vllm_like(status_503_every=7, status_429_every=11, drop_every=13, slow_every=50, slow_seconds=0.3)
    ids = [f"req-{i}" for i in range(500)]
    upload_lines(bucket, "faults.jsonl", [chat_line(custom_id) for custom_id in ids])

    finished, _ = run_once(bucket, server, kubernetes_api)

    answers = read_jsonl(bucket, "output/faults.jsonl/")
    assert [key.rpartition("/")[0] for key in finished] == ["faults.jsonl"]
    assert Counter(answer["custom_id"] for answer in answers) == Counter(ids)
    assert all(answer["response"]["status_code"] == 200 and answer["error"] is None for answer in answers)
    assert read_jsonl(bucket, "errors/faults.jsonl/") == []
    assert server.stats()["requests"] > len(ids)  # the faults happened and were retried


def test_each_kind_of_bad_line_goes_to_errors_and_the_batch_goes_on(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    server = vllm_like()
    wrong_method = chat_line("get") | {"method": "GET"}
    wrong_url = chat_line("embed") | {"url": "/v1/embeddings"}
    no_id = {key: value for key, value in chat_line("x").items() if key != "custom_id"}
    lines: list[object] = [chat_line("a"), "not json {", no_id, chat_line("a"), wrong_url, wrong_method, chat_line("b")]
    upload_lines(bucket, "bad.jsonl", lines)

    run_once(bucket, server, kubernetes_api)

    errors = {(error["custom_id"], error["error"]["code"]): error["error"]["message"] for error in read_jsonl(bucket, "errors/bad.jsonl/")}
    assert set(errors) == {
        (None, "invalid_json"),
        (None, "missing_custom_id"),
        ("a", "duplicate_custom_id"),
        ("embed", "unsupported_url"),
        ("get", "unsupported_method"),
    }
    assert errors[("a", "duplicate_custom_id")].startswith("line 4:")
    assert errors[(None, "invalid_json")].startswith("line 2:")
    assert sorted(answer["custom_id"] for answer in read_jsonl(bucket, "output/bad.jsonl/")) == ["a", "b"]
    report = only_report(bucket, "bad.jsonl")
    assert (report["lines"], report["succeeded"], report["failed"], report["bad_lines"]) == (7, 2, 5, 5)


def test_an_embedding_models_batch_sends_embeddings_lines_and_answers_completions_lines_with_an_error_never_sent(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    server = vllm_like(task="embed")
    texts = {"e1": "first text to embed", "e2": "second"}
    embeddings = [
        {"custom_id": custom_id, "method": "POST", "url": "/v1/embeddings", "body": {"model": "text-embedding-3-small", "input": text}}
        for custom_id, text in texts.items()
    ]
    upload_lines(bucket, "vectors.jsonl", [embeddings[0], chat_line("chat"), embeddings[1]])

    finished, _ = run_once(bucket, server, kubernetes_api, task="embed")

    assert [key.rpartition("/")[0] for key in finished] == ["vectors.jsonl"]
    answers = {answer["custom_id"]: answer for answer in read_jsonl(bucket, "output/vectors.jsonl/")}
    assert set(answers) == set(texts)
    for custom_id, answer in answers.items():
        # OpenAI's batch output line: the HTTP answer as the response, the embeddings body as vLLM sent it.
        assert answer["id"].startswith("batch_req_") and answer["error"] is None
        response = answer["response"]
        assert (response["status_code"], response["request_id"]) == (200, response["body"]["id"])
        body = response["body"]
        assert (body["object"], body["model"]) == ("list", "served-model")
        assert [(item["object"], len(item["embedding"])) for item in body["data"]] == [("embedding", EMBEDDING_LENGTH)]
        assert body["usage"]["prompt_tokens"] == len(texts[custom_id].split())
    (error,) = read_jsonl(bucket, "errors/vectors.jsonl/")
    assert (error["custom_id"], error["response"], error["error"]["code"]) == ("chat", None, "unsupported_url")
    assert "model.task embed" in error["error"]["message"]
    # Only the embeddings reached the engine: the completions line was never sent.
    assert server.stats()["requests"] == 2
    report = only_report(bucket, "vectors.jsonl")
    assert (report["lines"], report["succeeded"], report["failed"], report["bad_lines"]) == (3, 2, 1, 1)


def test_a_replica_that_drains_and_comes_back_loses_no_request(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    server = vllm_like(drain_after=150, drain_seconds=0.5)
    ids = [f"d{i}" for i in range(500)]
    upload_lines(bucket, "drain.jsonl", [chat_line(custom_id) for custom_id in ids])

    # Attempts that span at least 6 s (equal jitter), not the suite's 2.2 s: the server is a process of its
    # own, and on a loaded machine a 1 s drain and restart took longer than 2.2 s.
    retry = RetryPolicy(attempts=10, first_backoff_seconds=0.05, max_backoff_seconds=3.0, request_timeout_seconds=10)
    run_once(bucket, server, kubernetes_api, retry=retry)

    assert Counter(answer["custom_id"] for answer in read_jsonl(bucket, "output/drain.jsonl/")) == Counter(ids)
    assert not list(bucket.list_blobs(prefix="input/"))
    assert [blob.name.rpartition("/")[0] for blob in bucket.list_blobs(prefix="finished/")] == ["finished/drain.jsonl"]
    assert not list(bucket.list_blobs(prefix="claims/"))


def test_requests_that_fail_for_good_are_answered_once_in_errors(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    server = vllm_like(model="another-model")  # every request gets vLLM's 404 for an unknown model
    upload_lines(bucket, "wrong-model.jsonl", [chat_line(f"w{i}") for i in range(20)])

    run_once(bucket, server, kubernetes_api)

    errors = read_jsonl(bucket, "errors/wrong-model.jsonl/")
    assert sorted(error["custom_id"] for error in errors) == sorted(f"w{i}" for i in range(20))
    # OpenAI's batch output: an HTTP failure is its response (status, request id, JSON body) with error null.
    assert {(error["response"]["status_code"], error["error"]) for error in errors} == {(404, None)}
    assert all(isinstance(error["response"]["body"], dict) and error["response"]["request_id"] for error in errors)
    assert server.stats()["requests"] == 20  # a 404 is not retried
    assert read_jsonl(bucket, "output/wrong-model.jsonl/") == []


def test_two_runners_never_take_one_file(bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi) -> None:
    server = vllm_like()
    names = [f"part-{n}.jsonl" for n in range(4)]
    for name in names:
        upload_lines(bucket, name, [chat_line(f"{name}-{i}") for i in range(200)])

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        runs = [pool.submit(run_once, bucket, server, kubernetes_api) for _ in range(2)]
        finished = [run.result(timeout=120)[0] for run in runs]

    assert not set(finished[0]) & set(finished[1])
    assert sorted(key.rpartition("/")[0] for key in finished[0] + finished[1]) == names
    answered = server.stats()["answered"]
    assert len(answered) == 800 and set(answered.values()) == {1}  # no line was sent twice


def test_one_claim_wins_a_race_of_eight(bucket: storage.Bucket) -> None:
    from workloads.batch import bucket as objects

    upload_lines(bucket, "raced.jsonl", [chat_line("only")])
    source = bucket.get_blob("input/raced.jsonl")
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        claims = list(pool.map(lambda n: objects.claim(bucket, source, f"runner-{n}", 60.0, 100), range(8)))

    winners = [claim for claim in claims if claim is not None]
    assert len(winners) == 1
    assert json.loads(bucket.blob(f"claims/raced.jsonl/{source.generation}").download_as_bytes())["runner"] == winners[0].lease.runner


def test_report_arithmetic_matches_the_output(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    server = vllm_like()
    kubernetes_api.status = {"replicas": 3, "readyReplicas": 3}
    lines = [chat_line(f"t{i}", words=3 + i % 5, max_tokens=10 + i % 7) for i in range(600)] + ["{broken"]
    upload_lines(bucket, "costed.jsonl", lines)

    run_once(bucket, server, kubernetes_api, price_per_replica_hour=88.93, estimated_usd_per_million_tokens=0.27)

    report = only_report(bucket, "costed.jsonl")
    usages = [answer["response"]["body"]["usage"] for answer in read_jsonl(bucket, "output/costed.jsonl/")]
    input_tokens = sum(3 + i % 5 for i in range(600))
    output_tokens = sum(10 + i % 7 for i in range(600))
    assert (sum(u["prompt_tokens"] for u in usages), sum(u["completion_tokens"] for u in usages)) == (input_tokens, output_tokens)
    assert (report["input_tokens"], report["output_tokens"], report["total_tokens"]) == (
        input_tokens,
        output_tokens,
        input_tokens + output_tokens,
    )
    assert (report["succeeded"], report["failed"]) == (600, 1)
    wall = report["wall_seconds"]
    assert report["tokens_per_second"] == pytest.approx((input_tokens + output_tokens) / wall, rel=1e-3)
    # Three replicas held from the claim to the end; the first sample comes after the count of the input's lines.
    assert 0 < report["replica_hours"] <= 3 * wall / 3600 + 1e-6
    assert report["cost_usd"] == pytest.approx(report["replica_hours"] * 88.93, rel=1e-4)
    assert report["usd_per_million_tokens"] == pytest.approx(report["cost_usd"] / (input_tokens + output_tokens) * 1e6, rel=1e-4)
    assert report["estimated_usd_per_million_tokens"] == 0.27


def test_metrics_count_what_was_answered(bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi) -> None:
    from prometheus_client import generate_latest
    from prometheus_client.registry import CollectorRegistry

    from workloads.batch import layout
    from workloads.batch.metrics import ProgressCollector

    server = vllm_like()
    upload_lines(bucket, "counted.jsonl", [chat_line(f"m{i}") for i in range(150)] + ["nope"])
    _, progress = run_once(bucket, server, kubernetes_api)
    registry = CollectorRegistry()
    registry.register(ProgressCollector(progress))

    scraped = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in generate_latest(registry).decode().splitlines()
        if not line.startswith("#")
    }
    assert scraped[layout.DONE] == 150
    assert scraped[layout.FAILED] == 1
    assert scraped[layout.BACKLOG] == 0
    assert scraped[layout.IN_FLIGHT] == 0
    assert layout.WAITING_FILES in scraped


def test_worker_processes_split_one_input_and_answer_each_line_once(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    server = vllm_like()
    ids = [f"p{i}" for i in range(600)]  # six parts of 100, three for each worker
    upload_lines(bucket, "shared.jsonl", [chat_line(custom_id) for custom_id in ids])

    _, progress = run_once(bucket, server, kubernetes_api, workers=2)

    assert Counter(answer["custom_id"] for answer in read_jsonl(bucket, "output/shared.jsonl/")) == Counter(ids)
    assert progress.done.value == 600
    assert set(server.stats()["answered"].values()) == {1}


def test_every_line_of_a_batch_is_answered_under_an_id_of_its_own(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    # A line without a custom_id, a line whose custom_id reads like a line number, and a custom_id used twice:
    # a consumer that joins the output and errors files on "id" must find one line under each.
    no_id = {key: value for key, value in chat_line("x").items() if key != "custom_id"}
    upload_lines(bucket, "ids.jsonl", [no_id, chat_line("#1"), chat_line("#2"), chat_line("q"), chat_line("q")])

    run_once(bucket, vllm_like(), kubernetes_api)

    records = read_jsonl(bucket, "output/ids.jsonl/") + read_jsonl(bucket, "errors/ids.jsonl/")
    assert len(records) == 5
    assert len({record["id"] for record in records}) == 5, records


def runner_process(bucket: storage.Bucket, server: VllmLike, api: KubernetesApi, lease_seconds: float) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "tests.workloads.batch.runner_process", bucket.name, server.url, api.url, str(lease_seconds)]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)


def test_a_runner_killed_mid_batch_is_resumed_without_repeating_finished_requests(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    parts_at_kill = random.randint(1, 4)
    # The server answers 500 x (parts_at_kill + 1) requests, then holds the rest: the kill lands mid-batch
    # however fast this machine is. The runner keeps two parts of 500 open at once and sends their lines
    # interleaved, so those answers finish at least parts_at_kill parts (a pause after the parts' lines
    # plus the 2 x 64 in flight left both open parts unfinished at times: a minute's wait, then a kill anyway).
    pause_after = 500 * (parts_at_kill + 1) + 1
    server = vllm_like(slow_every=97, slow_seconds=0.2, pause_after=pause_after)
    ids = [f"k{i}" for i in range(pause_after + 400)]  # and lines no request reached before the kill
    upload_lines(bucket, "killed.jsonl", [chat_line(custom_id) for custom_id in ids])
    # Nothing else runs the batch while the runner lives, so a short lease costs no renewal race.
    first = runner_process(bucket, server, kubernetes_api, lease_seconds=1.0)
    deadline = time.monotonic() + 30
    while len(list(bucket.list_blobs(prefix="output/killed.jsonl/"))) < parts_at_kill:
        assert time.monotonic() < deadline, f"{parts_at_kill} parts not written within 30 s"
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    server.resume()
    kept = read_jsonl(bucket, "output/killed.jsonl/")
    answered_before = server.stats()["answered"]
    assert 0 < len(kept) < len(ids)

    # Until the killed runner's lease runs out: the time its claim holds, from its last renewal.
    (claim,) = bucket.list_blobs(prefix="claims/killed.jsonl/")
    while (until := json.loads(claim.download_as_bytes())["until"]) >= time.time():
        time.sleep(max(0.0, until - time.time()) + 0.01)
    run_once(bucket, server, kubernetes_api, part_lines=100)  # the parts the first claim fixed (500) still hold

    answers = read_jsonl(bucket, "output/killed.jsonl/")
    assert Counter(answer["custom_id"] for answer in answers) == Counter(ids)
    answered_after = server.stats()["answered"]
    for answer in kept:  # nothing written before the kill was sent again
        prompt = f"{answer['custom_id']} word word word"
        assert answered_after[prompt] == answered_before[prompt] == 1


def test_a_runners_peak_memory_stays_flat_from_two_thousand_to_twenty_thousand_lines(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    server = vllm_like()
    padding = "x" * 4000

    def upload(count: int) -> None:
        lines: list[dict[str, Any] | str] = []
        for i in range(count):
            # One line in 25 is sent; the others are answered in errors/ without a request, so the
            # test stays fast while every line is still read, parsed, indexed and written.
            line = chat_line(f"id-{count}-{i}") | {"padding": padding}
            lines.append(line if i % 25 == 0 else line | {"url": "/v1/embeddings"})
        upload_lines(bucket, f"size-{count}.jsonl", lines)

    def runner() -> subprocess.Popen[str]:
        # The runner in a process of its own: its peak resident memory is what a pod's limit meets.
        command = [sys.executable, "-m", "tests.workloads.batch.peak_memory", bucket.name, server.url, kubernetes_api.url, "500"]
        return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def peak_bytes(run: subprocess.Popen[str]) -> int:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        return int(out.split()[-1])

    upload(2_000)
    small_run = runner()
    # The large input is built and uploaded while the small one runs, once the small run has claimed its
    # input: it lists the waiting inputs once, before its claim, so it never sees the large one.
    deadline = time.monotonic() + 30
    while not list(bucket.list_blobs(prefix="claims/size-2000.jsonl/")) and small_run.poll() is None:
        assert time.monotonic() < deadline, "the small run claimed nothing within 30 s"
        time.sleep(0.02)
    upload(20_000)
    small = peak_bytes(small_run)
    large = peak_bytes(runner())
    extra_input = 18_000 * (len(json.dumps(chat_line("id-20000-00000") | {"padding": padding})) + 1)
    # Holding the input (or its answers) would grow the peak by more than the extra input; the
    # custom_id index is the one thing that grows with the lines (about 100 bytes a line).
    assert large - small < 0.25 * extra_input, (small, large, extra_input)
    report = only_report(bucket, "size-20000.jsonl")
    assert (report["succeeded"], report["bad_lines"]) == (800, 19_200)


def test_a_batch_run_in_process_leaves_the_callers_event_loop_alone(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        upload_lines(bucket, "loop.jsonl", [chat_line("one")])
        run_once(bucket, vllm_like(), kubernetes_api)
        assert asyncio.get_event_loop() is loop  # Pulumi's engine, in the same process, runs on it
    finally:
        loop.close()
        asyncio.set_event_loop(asyncio.new_event_loop())  # as open as the tests after this one expect


def wake_replicas(api: KubernetesApi) -> dict[str, float]:
    """The replicas' Deployment at zero Ready until the runner has read it twice, as in a wake from zero.

    Returns the runner's settings for the run: it sleeps a poll interval after each read at zero, 50 ms here.
    """
    api.status = {"replicas": 1, "readyReplicas": 0}
    api.reads_until_ready = 2
    return {"poll_seconds": 0.05}


def test_a_batch_that_woke_the_replicas_reports_how_the_last_one_started(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    kubernetes_api.events = samples.events_list(samples.wake_events(samples.EARLIER_POD, day="2026-11-22"), samples.wake_events())
    kubernetes_api.logs = {samples.EARLIER_POD: samples.WARM_LOG, samples.POD: samples.COLD_LOG}
    wake = wake_replicas(kubernetes_api)
    upload_lines(bucket, "woke.jsonl", [chat_line(f"woke-{i}") for i in range(20)])
    run_once(bucket, vllm_like(), kubernetes_api, **wake)
    cold_start = only_report(bucket, "woke.jsonl")["cold_start"]
    assert cold_start["pod"] == samples.POD  # the pod that started last, not yesterday's
    # From the samples' stamps: first event 12:00:00, Scheduled 12:05:31, Started 12:05:45, the slowest engine's
    # loading 12:06:19.031, weights 12:06:41.007, last profiling 12:09:53.250, KV cache 12:11:41.600 and graphs
    # 12:13:20.019, the server 12:13:31.224, the first answer 12:15:13.880.
    assert cold_start["phases"] == pytest.approx(
        {
            "node provisioned": 331.0,
            "image pulled or streamed": 14.0,
            "imports and config": 34.031,
            "weights loaded": 21.976,
            "torch.compile, profiling and kernel JIT": 192.243,
            "FlashInfer JIT and KV cache": 108.35,
            "CUDA graph capture": 98.419,
            "server start": 11.205,
            "first answer": 102.656,
        }
    )
    assert (cold_start["imageStreamed"], cold_start["compileCacheHit"]) == (True, False)


def test_a_batch_that_found_replicas_ready_reports_no_cold_start_and_one_whose_events_expired_says_so(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    server = vllm_like()
    upload_lines(bucket, "warm.jsonl", [chat_line("warm")])
    run_once(bucket, server, kubernetes_api)
    assert only_report(bucket, "warm.jsonl")["cold_start"] is None
    wake = wake_replicas(kubernetes_api)  # the API server keeps events an hour (--event-ttl): none is left here
    upload_lines(bucket, "expired.jsonl", [chat_line("expired")])
    run_once(bucket, server, kubernetes_api, **wake)
    cold_start = only_report(bucket, "expired.jsonl")["cold_start"]
    assert cold_start == {"unavailable": "no Started event of a pod named vllm-... in the events"}


@pytest.mark.parametrize("events", ["not json", '{"items": [{"reason": "Started", "involvedObject": "a string"}]}'])
def test_an_api_server_answer_the_parser_cannot_read_leaves_the_batch_whole_and_says_why(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi, events: str
) -> None:
    kubernetes_api.raw_events = events
    wake = wake_replicas(kubernetes_api)
    ids = [f"odd-{i}" for i in range(20)]
    upload_lines(bucket, "odd.jsonl", [chat_line(custom_id) for custom_id in ids])
    run_once(bucket, vllm_like(), kubernetes_api, **wake)
    report = only_report(bucket, "odd.jsonl")
    assert report["succeeded"] == len(ids)
    assert set(report["cold_start"]) == {"unavailable"}


def test_a_woken_batch_reports_each_phase_measured_beside_the_stacks_estimate(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    kubernetes_api.events = samples.events_list(samples.wake_events())
    kubernetes_api.logs = {samples.POD: samples.COLD_LOG}
    wake = wake_replicas(kubernetes_api)
    upload_lines(bucket, "expected.jsonl", [chat_line("expected")])
    # The estimate's phases as the stack outputs them (estimates.coldStart.phases).
    expected = {
        "nodeProvisioning": {"seconds": 330, "source": "node"},
        "image": {"seconds": 30, "source": "image"},
        "weights": {"seconds": 12, "source": "weights"},
        "compileColdCache": {"seconds": 600, "source": "cold"},
        "compileWarmCache": {"seconds": 106, "source": "warm"},
        "firstAnswerColdKernels": {"seconds": 194, "source": "first answer"},
    }
    run_once(bucket, vllm_like(), kubernetes_api, expected_cold_start={"phases": expected}, **wake)
    cold_start = only_report(bucket, "expected.jsonl")["cold_start"]
    # Measured from the samples' stamps (see the test above); the cache was cold, so the cold figure applies.
    rows = {
        "node provisioned": (331.0, 330),
        "image pulled or streamed": (14.0, 30),
        "weights loaded": (21.976, 12),
        "compile, CUDA graphs and ready": (34.031 + 192.243 + 108.35 + 98.419 + 11.205, 600),
        "first answer": (102.656, 194),
    }
    assert set(cold_start["againstEstimate"]) == set(rows)
    for name, (measured, expected_seconds) in rows.items():
        assert cold_start["againstEstimate"][name] == {"measured": pytest.approx(measured), "expected": expected_seconds}


def test_a_file_mixing_two_models_lines_goes_to_each_model_by_its_body_model_and_an_unknown_model_is_never_sent(
    bucket: storage.Bucket, vllm_like: Callable[..., VllmLike], kubernetes_api: KubernetesApi
) -> None:
    from workloads.batch.metrics import Progress
    from workloads.batch.replicas import DeploymentApi
    from workloads.batch.runner import ModelRoute, RunnerSettings, run_waiting

    chat = vllm_like(model="qwen-chat")
    embed = start_vllm_like()  # a second engine, answering embeddings only
    try:
        embed.configure("qwen-embed", {}, task="embed")
        routes = (
            ModelRoute("qwen-chat", chat.url, "generate", "chat-replicas", 4),
            ModelRoute("qwen-embed", embed.url, "embed", "embed-replicas", 2),
        )
        vectors = {"emb": "emb text to embed", "emb2": "emb2 more text"}
        lines: list[object] = [
            {"custom_id": custom_id, "method": "POST", "url": "/v1/embeddings", "body": {"model": "qwen-embed", "input": text}}
            for custom_id, text in vectors.items()
        ]
        chats = [chat_line(f"chat{i}") | {"body": chat_line(f"chat{i}")["body"] | {"model": "qwen-chat"}} for i in range(12)]
        unknown = chat_line("unknown")  # names gpt-4o-mini, which this stack does not serve
        wrong_task = {"custom_id": "wrong", "method": "POST", "url": "/v1/embeddings", "body": {"model": "qwen-chat", "input": "x"}}
        upload_lines(bucket, "mixed.jsonl", [lines[0], *chats[:6], unknown, lines[1], wrong_task, *chats[6:]])
        deployment = DeploymentApi(kubernetes_api.url, NAMESPACE, DEPLOYMENT)  # the stand-in API serves one Deployment
        settings = RunnerSettings(
            bucket=bucket.name,
            serving_url="",
            concurrency_per_replica=0,
            part_lines=5,
            lease_seconds=30.0,
            poll_seconds=0.2,
            ready_timeout_seconds=20.0,
            retry=RetryPolicy(attempts=10, first_backoff_seconds=0.05, max_backoff_seconds=1.0, request_timeout_seconds=10),
            models=routes,
        )

        finished = run_waiting(settings, storage.Client(), {"qwen-chat": deployment, "qwen-embed": deployment}, Progress())

        assert [key.rpartition("/")[0] for key in finished] == ["mixed.jsonl"]
        answers = {answer["custom_id"]: answer["response"]["body"] for answer in read_jsonl(bucket, "output/mixed.jsonl/")}
        assert set(answers) == set(vectors) | {f"chat{i}" for i in range(12)}
        assert {answers[custom_id]["model"] for custom_id in vectors} == {"qwen-embed"}
        assert {answers[f"chat{i}"]["model"] for i in range(12)} == {"qwen-chat"}
        # Each engine got its own lines, each once: the embeddings engine the two texts, the chat engine the twelve chats.
        assert embed.stats()["answered"] == dict.fromkeys(vectors.values(), 1)
        assert chat.stats()["answered"] == {f"chat{i} word word word": 1 for i in range(12)}
        assert (chat.stats()["requests"], embed.stats()["requests"]) == (12, 2)
        # At most each model's own budget in flight: its Ready replicas (2) x its requests per replica.
        assert chat.stats()["most_in_flight"] <= 8
        assert embed.stats()["most_in_flight"] <= 4
        errors = {error["custom_id"]: error["error"] for error in read_jsonl(bucket, "errors/mixed.jsonl/")}
        assert {custom_id: error["code"] for custom_id, error in errors.items()} == {
            "unknown": "model_not_found",
            "wrong": "unsupported_url",
        }
        assert errors["unknown"]["message"].startswith("line 8: body.model 'gpt-4o-mini' is not served by this stack")
        assert "qwen-chat" in errors["wrong"]["message"]
        report = only_report(bucket, "mixed.jsonl")
        assert (report["lines"], report["succeeded"], report["failed"], report["bad_lines"]) == (16, 14, 2, 2)
    finally:
        embed.process.kill()
        embed.process.wait(timeout=10)
