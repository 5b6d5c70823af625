"""Sending one batch request to the replicas' Service, retrying what a healthy replica would answer."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

import aiohttp

from workloads.batch.lines import Request

EMBEDDINGS: Final = "/v1/embeddings"
# Busy (429), failing or draining (5xx: a replica stopping answers 503, a proxy 502/504): worth another try.
TRANSIENT_STATUS: Final = frozenset({429, 500, 502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 10
    first_backoff_seconds: float = 0.5
    max_backoff_seconds: float = 30.0
    # A reference request takes ~30 s at full load (5.6 s to first token + 512 x 46 ms); allow ten times that.
    request_timeout_seconds: float = 300.0

    # While no replica is Ready (one preempted, a cold start under way) retries wait without using attempts.
    ready_wait_seconds: float = 3600.0

    def backoff(self, attempt: int) -> float:
        """Equal jitter: retries after a drain spread out, and the attempts always span at least half the backoff."""
        delay = min(self.max_backoff_seconds, self.first_backoff_seconds * 2.0**attempt)
        return delay / 2 + random.uniform(0, delay / 2)


@dataclass(frozen=True)
class Outcome:
    status: int | None  # None: no HTTP answer at all
    body: dict[str, Any] | None  # the JSON answer (a non-JSON one wrapped as an error object)
    error: dict[str, str] | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    request_id: str | None = None  # the server's X-Request-Id, or its answer's id

    @property
    def succeeded(self) -> bool:
        return self.error is None and self.status == 200


class Limiter:
    """A concurrency bound read from ``limit`` whenever a slot is asked for: it follows the claim's share
    of the global budget while requests are in flight, and may be 0 (wait for a share)."""

    # How often a waiter looks at the limit again when no request finishes (the share moves at each renewal).
    RECHECK_SECONDS = 0.2

    def __init__(self, limit: Callable[[], int]) -> None:
        self.limit = limit
        self.in_flight = 0
        self.freed = asyncio.Event()

    async def acquire(self) -> None:
        while self.in_flight >= self.limit():
            self.freed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.freed.wait(), self.RECHECK_SECONDS)
        self.in_flight += 1

    def release(self) -> None:
        self.in_flight -= 1
        self.freed.set()


def cut_short(body: Any, url: str) -> bool:
    """An answer whose choices did not finish: vLLM aborted it (a drain cut it, finish_reason "abort") or it ended early;
    for an embedding, an answer without a vector for each input."""
    if url == EMBEDDINGS:
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or not data:
            return True
        return any(not isinstance(item, dict) or not item.get("embedding") for item in data)
    choices = body.get("choices") if isinstance(body, dict) else None
    if not isinstance(choices, list) or not choices:
        return True
    return any(not isinstance(choice, dict) or choice.get("finish_reason") in (None, "abort") for choice in choices)


def as_object(text: str) -> dict[str, Any]:
    """The answer's JSON body; OpenAI's batch output always has an object there, so other text is wrapped."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    return body if isinstance(body, dict) else {"error": {"message": text, "type": "non_json_response"}}


async def send(session: aiohttp.ClientSession, base_url: str, request: Request, policy: RetryPolicy, ready: Callable[[], bool]) -> Outcome:
    """Posts the request until a replica answers it for good or the attempts run out."""
    url = base_url.rstrip("/") + request.url.removeprefix("/v1")
    # A batch answer is one JSON object: a stream asked for by the line would be read as text. Embeddings never stream
    # (vLLM would log the field as ignored).
    body = {key: value for key, value in request.body.items() if key != "stream_options"}
    if request.url != EMBEDDINGS:
        body["stream"] = False
    payload = json.dumps(body, separators=(",", ":")).encode()
    last = Outcome(None, None, {"code": "unreachable", "message": "no attempt made"})
    for attempt in range(policy.attempts):
        if attempt:
            await asyncio.sleep(policy.backoff(attempt - 1))
            waited = 0.0
            while not ready() and waited < policy.ready_wait_seconds:
                await asyncio.sleep(1.0)
                waited += 1.0
        try:
            async with session.post(url, data=payload, headers={"Content-Type": "application/json"}) as response:
                text = await response.text()
                status = response.status
                header_id = response.headers.get("X-Request-Id")
        except (aiohttp.ClientError, TimeoutError) as error:
            # Refused (no Ready endpoint, or a replica that closed its port on SIGTERM), reset, or dropped
            # mid-answer (a drain that ran out of time, a preemption): never an answer.
            last = Outcome(None, None, {"code": "connection_failed", "message": f"{type(error).__name__}: {error}"})
            continue
        answer = as_object(text)
        answer_id = answer.get("id")
        request_id = header_id or (answer_id if isinstance(answer_id, str) else None)
        if status in TRANSIENT_STATUS:
            last = Outcome(
                status,
                answer,
                {"code": "server_error" if status != 429 else "rate_limited", "message": f"HTTP {status}"},
                request_id=request_id,
            )
            continue
        if status != 200:
            return Outcome(status, answer, {"code": "request_failed", "message": f"HTTP {status}"}, request_id=request_id)
        if cut_short(answer, request.url):
            missing = "a vector for each input" if request.url == EMBEDDINGS else "a finish_reason"
            last = Outcome(None, None, {"code": "incomplete_answer", "message": f"an answer without {missing} (cut by a drain)"})
            continue
        usage = answer.get("usage")
        usage = usage if isinstance(usage, dict) else {}
        return Outcome(
            status, answer, None, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0), request_id=request_id
        )
    assert last.error is not None
    return replace(last, error={"code": last.error["code"], "message": f"{last.error['message']}, after {policy.attempts} attempts"})
