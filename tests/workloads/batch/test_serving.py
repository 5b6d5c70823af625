"""Sending one batch request: what is retried, what is final, against a local aiohttp server that answers as told."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from workloads.batch.lines import Request
from workloads.batch.serving import Limiter, Outcome, RetryPolicy, as_object, cut_short, send

FAST = RetryPolicy(attempts=4, first_backoff_seconds=0.001, max_backoff_seconds=0.002)
REQUEST = Request("q-1", "/v1/chat/completions", {"model": "qwen", "stream": True, "stream_options": {"include_usage": True}})
FINISHED = {"id": "chatcmpl-1", "choices": [{"finish_reason": "stop"}], "usage": {"prompt_tokens": 12, "completion_tokens": 5}}
# One answer per attempt: (status, body text, headers).
Answer = tuple[int, str, dict[str, str]]
# What the last server received: each request's Content-Type and body as sent.
raw: list[tuple[str | None, bytes]] = []


def answered(status: int, body: Any, headers: dict[str, str] | None = None) -> Answer:
    return status, body if isinstance(body, str) else json.dumps(body), headers or {}


def sent(
    answers: list[Answer],
    policy: RetryPolicy = FAST,
    ready: Callable[[], bool] = lambda: True,
    base: str = "/v1",
    request: Request = REQUEST,
) -> tuple[Outcome, list[tuple[str, dict[str, Any]]]]:
    """Sends ``request`` to a server that gives ``answers`` in turn; returns the outcome and each request it received."""
    received: list[tuple[str, dict[str, Any]]] = []
    raw.clear()

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        raw.append((request.headers.get("Content-Type"), body))
        received.append((request.path, json.loads(body)))
        status, text, headers = answers[min(len(received), len(answers)) - 1]
        return web.Response(status=status, text=text, headers=headers)

    async def main() -> Outcome:
        app = web.Application()
        app.router.add_post("/{tail:.*}", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        try:
            async with aiohttp.ClientSession() as session:
                return await send(session, f"http://127.0.0.1:{port}{base}", request, policy, ready)
        finally:
            await runner.cleanup()

    return asyncio.run(main()), received


@pytest.mark.parametrize("base", ["/v1", "/v1/"])
def test_a_finished_answer_is_final_with_its_tokens_and_the_request_goes_as_one_json_answer(base: str) -> None:
    outcome, received = sent([answered(200, FINISHED, {"X-Request-Id": "req-9"})], base=base)
    assert outcome == Outcome(200, FINISHED, None, 12, 5, request_id="req-9") and outcome.succeeded
    # The line's stream settings are dropped: a batch answer is one JSON object.
    assert received == [("/v1/chat/completions", {"model": "qwen", "stream": False})]
    assert raw == [("application/json", b'{"model":"qwen","stream":false}')]


def test_without_a_request_id_header_the_answers_id_is_kept_and_missing_usage_counts_nothing() -> None:
    outcome, _ = sent([answered(200, {"id": "cmpl-3", "choices": [{"finish_reason": "length"}]})])
    assert (outcome.request_id, outcome.prompt_tokens, outcome.completion_tokens) == ("cmpl-3", 0, 0) and outcome.succeeded
    outcome, _ = sent([answered(200, {"id": 4, "choices": [{"finish_reason": "stop"}], "usage": "none"})])
    assert outcome.request_id is None and outcome.succeeded


@pytest.mark.parametrize(
    ("status", "code"), [(429, "rate_limited"), (500, "server_error"), (502, "server_error"), (503, "server_error"), (504, "server_error")]
)
def test_a_busy_or_draining_server_is_asked_again(status: int, code: str) -> None:
    outcome, received = sent([answered(status, {"error": "busy"}, {"X-Request-Id": "r1"}), answered(200, FINISHED)])
    assert outcome.succeeded and len(received) == 2
    outcome, received = sent([answered(status, "overloaded", {"X-Request-Id": "r1"})])
    assert len(received) == 4
    assert outcome == Outcome(
        status,
        {"error": {"message": "overloaded", "type": "non_json_response"}},
        {"code": code, "message": f"HTTP {status}, after 4 attempts"},
        request_id="r1",
    )


@pytest.mark.parametrize("status", [400, 404, 422, 501])
def test_a_refusal_is_final_at_once(status: int) -> None:
    outcome, received = sent([answered(status, {"error": "bad"}, {"X-Request-Id": "r2"}), answered(200, FINISHED)])
    assert len(received) == 1
    assert outcome == Outcome(status, {"error": "bad"}, {"code": "request_failed", "message": f"HTTP {status}"}, request_id="r2")
    assert not outcome.succeeded


def test_an_answer_cut_short_by_a_drain_is_sent_again() -> None:
    cut = answered(200, {"choices": [{"finish_reason": "abort"}]})
    outcome, received = sent([cut, cut, answered(200, FINISHED)])
    assert outcome.succeeded and len(received) == 3
    outcome, received = sent([cut])
    assert len(received) == 4
    assert outcome == Outcome(
        None, None, {"code": "incomplete_answer", "message": "an answer without a finish_reason (cut by a drain), after 4 attempts"}
    )


def test_no_server_is_a_connection_failure_after_every_attempt() -> None:
    async def main() -> Outcome:
        async with aiohttp.ClientSession() as session:
            # Port 9 (discard) on loopback: nothing listens, the connection is refused.
            return await send(session, "http://127.0.0.1:9/v1", REQUEST, FAST, lambda: True)

    outcome = asyncio.run(main())
    assert outcome.status is None and outcome.body is None and outcome.error is not None
    assert outcome.error["code"] == "connection_failed"
    assert outcome.error["message"].startswith("ClientConnectorError: ") and outcome.error["message"].endswith(", after 4 attempts")


def test_no_attempt_at_all_says_so() -> None:
    outcome, received = sent([answered(200, FINISHED)], policy=RetryPolicy(attempts=0))
    assert received == [] and outcome.error == {"code": "unreachable", "message": "no attempt made, after 0 attempts"}


def test_a_retry_waits_for_a_ready_replica_without_using_an_attempt() -> None:
    looks: list[bool] = []

    def ready() -> bool:
        looks.append(len(looks) >= 1)
        return looks[-1]

    outcome, received = sent([answered(503, "draining"), answered(200, FINISHED)], policy=FAST, ready=ready)
    assert outcome.succeeded and len(received) == 2 and looks == [False, True]


def test_the_wait_for_a_ready_replica_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[int] = []
    slept: list[float] = []
    real_sleep = asyncio.sleep

    def never() -> bool:
        looks.append(1)
        return False

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    policy = Counted(attempts=2, ready_wait_seconds=2.0)
    outcome, received = sent([answered(503, "draining"), answered(200, FINISHED)], policy=policy, ready=never)
    # The backoff, then a look each second for two seconds, then the attempt is made anyway.
    assert outcome.succeeded and len(received) == 2 and len(looks) == 3
    assert [s for s in slept if s] == [0.001, 1.0, 1.0]


def test_the_first_attempt_goes_at_once() -> None:
    looks: list[int] = []

    def ready() -> bool:
        looks.append(1)
        return True

    outcome, _ = sent([answered(200, FINISHED)], ready=ready)
    assert outcome.succeeded and looks == []


@pytest.mark.parametrize(
    ("attempt", "delay"),
    [(0, 0.5), (1, 1.0), (3, 4.0), (6, 30.0), (12, 30.0)],
)
def test_backoff_doubles_to_its_cap_with_equal_jitter(attempt: int, delay: float, monkeypatch: pytest.MonkeyPatch) -> None:
    policy = RetryPolicy()
    draws: list[tuple[float, float]] = []

    def uniform(low: float, high: float) -> float:
        draws.append((low, high))
        return high

    monkeypatch.setattr(random, "uniform", uniform)
    assert policy.backoff(attempt) == delay
    assert draws == [(0, delay / 2)]


def test_the_default_policy_is_the_documented_one() -> None:
    policy = RetryPolicy()
    assert (policy.attempts, policy.first_backoff_seconds, policy.max_backoff_seconds) == (10, 0.5, 30.0)
    assert (policy.request_timeout_seconds, policy.ready_wait_seconds) == (300.0, 3600.0)


@pytest.mark.parametrize(
    ("body", "short"),
    [
        ({"choices": [{"finish_reason": "stop"}, {"finish_reason": "length"}]}, False),
        ({"choices": [{"finish_reason": "stop"}, {"finish_reason": None}]}, True),
        ({"choices": [{"finish_reason": "abort"}]}, True),
        ({"choices": [{}]}, True),
        ({"choices": ["stop"]}, True),
        ({"choices": []}, True),
        ({"choices": {"finish_reason": "stop"}}, True),
        ({}, True),
        (["choices"], True),
    ],
)
def test_an_answer_is_cut_short_unless_every_choice_finished(body: Any, short: bool) -> None:
    assert cut_short(body, "/v1/chat/completions") is short
    assert cut_short(body, "/v1/completions") is short


@pytest.mark.parametrize(
    ("body", "short"),
    [
        ({"object": "list", "data": [{"index": 0, "object": "embedding", "embedding": [0.1, 0.2]}]}, False),
        ({"data": [{"index": 0, "embedding": [0.1]}, {"index": 1, "embedding": "AAAAPw=="}]}, False),
        ({"data": [{"index": 0, "embedding": [0.1]}, {"index": 1, "embedding": []}]}, True),
        ({"data": [{"index": 0}]}, True),
        ({"data": []}, True),
        ({"data": ["x"]}, True),
        ({"choices": [{"finish_reason": "stop"}]}, True),
        (["data"], True),
    ],
)
def test_an_embedding_is_cut_short_unless_each_input_has_its_vector(body: Any, short: bool) -> None:
    assert cut_short(body, "/v1/embeddings") is short


def test_an_embedding_is_sent_as_the_line_asks_without_a_stream_field_and_counts_its_prompt_tokens() -> None:
    vector = {"id": "embd-1", "object": "list", "data": [{"index": 0, "object": "embedding", "embedding": [0.6, 0.8]}]}
    answer = vector | {"usage": {"prompt_tokens": 3, "total_tokens": 3, "completion_tokens": 0}}
    request = Request("e-1", "/v1/embeddings", {"model": "qwen", "input": "three word text", "encoding_format": "float"})
    outcome, received = sent([answered(200, answer)], request=request)
    assert outcome == Outcome(200, answer, None, 3, 0, request_id="embd-1") and outcome.succeeded
    assert received == [("/v1/embeddings", {"model": "qwen", "input": "three word text", "encoding_format": "float"})]


@pytest.mark.parametrize(
    ("text", "body"),
    [
        ('{"id": "x"}', {"id": "x"}),
        ("[1]", {"error": {"message": "[1]", "type": "non_json_response"}}),
        ("Bad Gateway", {"error": {"message": "Bad Gateway", "type": "non_json_response"}}),
    ],
)
def test_an_answer_is_always_an_object(text: str, body: dict[str, Any]) -> None:
    assert as_object(text) == body


@pytest.mark.parametrize(("status", "error", "succeeded"), [(200, None, True), (200, {"code": "x"}, False), (201, None, False)])
def test_only_a_200_without_an_error_succeeded(status: int, error: dict[str, str] | None, succeeded: bool) -> None:
    assert Outcome(status, {}, error).succeeded is succeeded


def run_limited(limit: Callable[[], int], body: Callable[[Limiter], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(body(Limiter(limit)))


def test_the_limiter_lets_in_as_many_as_the_limit_allows_now() -> None:
    limit = [2]

    async def body(limiter: Limiter) -> None:
        await limiter.acquire()
        await limiter.acquire()
        third = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0.05)
        assert not third.done() and limiter.in_flight == 2
        limiter.release()
        await asyncio.wait_for(third, 1)
        assert limiter.in_flight == 2
        # A larger share lets one more in without any release, at the next look.
        limit[0] = 3
        await asyncio.wait_for(limiter.acquire(), 1)
        assert limiter.in_flight == 3

    run_limited(lambda: limit[0], body)


def test_a_limit_of_zero_waits_for_a_share() -> None:
    limit = [0]

    async def body(limiter: Limiter) -> None:
        waiting = asyncio.create_task(limiter.acquire())
        await asyncio.sleep(0.3)
        assert not waiting.done() and limiter.in_flight == 0
        limit[0] = 1
        await asyncio.wait_for(waiting, 1)
        assert limiter.in_flight == 1

    assert Limiter.RECHECK_SECONDS == 0.2
    run_limited(lambda: limit[0], body)


@dataclass(frozen=True)
class Counted(RetryPolicy):
    """The fast policy, noting the attempt number of each backoff it is asked for."""

    asked: list[int] = field(default_factory=list)

    def backoff(self, attempt: int) -> float:
        self.asked.append(attempt)
        return 0.001


def test_each_retry_backs_off_by_its_own_number_from_zero() -> None:
    policy = Counted(attempts=4)
    _, received = sent([answered(503, "draining")], policy=policy)
    assert len(received) == 4 and policy.asked == [0, 1, 2]


def test_a_refused_connection_is_tried_again_until_the_attempts_run_out() -> None:
    policy = Counted(attempts=3)

    async def main() -> Outcome:
        async with aiohttp.ClientSession() as session:
            return await send(session, "http://127.0.0.1:9/v1", REQUEST, policy, lambda: True)

    assert asyncio.run(main()).error is not None and policy.asked == [0, 1]


def test_a_release_frees_one_slot_of_many() -> None:
    async def body(limiter: Limiter) -> None:
        for _ in range(3):
            await limiter.acquire()
        limiter.release()
        assert limiter.in_flight == 2 and limiter.freed.is_set()

    run_limited(lambda: 3, body)
