"""Sending one batch request to the replicas' Service, retrying what a healthy replica would answer."""

from __future__ import annotations

import asyncio
import json
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import aiohttp

from workloads.batch.lines import Request

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
    body: Any  # the JSON answer, or the text of a non-JSON one
    error: dict[str, str] | None
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def succeeded(self) -> bool:
        return self.error is None


class Limiter:
    """A concurrency bound that follows the Ready replicas while requests are in flight."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.in_flight = 0
        self.waiters: deque[asyncio.Future[None]] = deque()

    def resize(self, limit: int) -> None:
        self.limit = max(1, limit)
        self._wake()

    async def acquire(self) -> None:
        while self.in_flight >= self.limit:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self.waiters.append(waiter)
            await waiter
        self.in_flight += 1

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        free = self.limit - self.in_flight
        while free > 0 and self.waiters:
            waiter = self.waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1


async def send(session: aiohttp.ClientSession, base_url: str, request: Request, policy: RetryPolicy, ready: Callable[[], bool]) -> Outcome:
    """Posts the request until a replica answers it for good or the attempts run out."""
    url = base_url.rstrip("/") + request.url.removeprefix("/v1")
    payload = json.dumps(request.body, separators=(",", ":")).encode()
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
        except (aiohttp.ClientError, TimeoutError) as error:
            # Refused (no Ready endpoint), reset, or dropped mid-answer (a replica drained or was preempted).
            last = Outcome(None, None, {"code": "connection_failed", "message": f"{type(error).__name__}: {error}"})
            continue
        try:
            body: Any = json.loads(text)
        except ValueError:
            body = text
        if status in TRANSIENT_STATUS:
            last = Outcome(status, body, {"code": "server_error" if status != 429 else "rate_limited", "message": f"HTTP {status}"})
            continue
        if status != 200:
            return Outcome(status, body, {"code": "request_failed", "message": f"HTTP {status}"})
        usage = body.get("usage") if isinstance(body, dict) else None
        usage = usage if isinstance(usage, dict) else {}
        return Outcome(status, body, None, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
    assert last.error is not None
    return Outcome(
        last.status, last.body, {"code": last.error["code"], "message": f"{last.error['message']}, after {policy.attempts} attempts"}
    )
