"""A local OpenAI-compatible server that answers like vLLM's, with no model behind it, and injects faults.

Run in its own process (``python -m tests.workloads.batch.vllm_like``) so it never competes with the
runner for a core; it prints its port, then serves until stdin closes or it is killed. One
process serves a test worker's tests one after another: ``POST /configure`` sets the next test's
faults and served model, with every count at zero.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Faults:
    """Every Nth request (by arrival) misbehaves; 0 turns a fault off."""

    status_503_every: int = 0
    status_429_every: int = 0
    drop_every: int = 0  # headers and half a body, then the connection closes
    slow_every: int = 0
    slow_seconds: float = 0.0
    drain_after: int = 0  # after this many requests the server stops listening (a replica draining) ...
    drain_seconds: float = 0.0  # ... and listens again this much later
    abort_every: int = 0  # a 200 whose choice vLLM aborted: finish_reason "abort", no tokens


def prompt_of(body: dict[str, Any]) -> str:
    if "messages" in body:
        return " ".join(str(message.get("content", "")) for message in body["messages"])
    return str(body.get("prompt", ""))


def usage(body: dict[str, Any]) -> tuple[int, int]:
    """Tokens as this server counts them: one per word of the prompt, ``max_tokens`` generated."""
    return len(prompt_of(body).split()), int(body.get("max_tokens", 16))


@dataclass
class Test:
    """What one test set, and what the server saw during it."""

    faults: Faults
    model: str
    requests: int = 0
    answered: Counter[str] = field(default_factory=Counter)  # 200 answers by prompt: tests put the custom_id in it


class Server:
    def __init__(self) -> None:
        self.test = Test(Faults(), "served-model")
        self.app = web.Application()
        self.app.router.add_post("/v1/chat/completions", self.complete)
        self.app.router.add_post("/v1/completions", self.complete)
        self.app.router.add_get("/stats", self.stats)
        self.app.router.add_post("/configure", self.configure)
        self.runner = web.AppRunner(self.app, handle_signals=False)
        self.port = 0

    async def start(self, port: int = 0) -> None:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", port, reuse_address=True)
        await site.start()
        self.port = self.runner.addresses[0][1]

    async def drain(self, seconds: float) -> None:
        await self.runner.cleanup()  # closes the listener and open connections: new requests are refused
        await asyncio.sleep(seconds)
        self.runner = web.AppRunner(self.app, handle_signals=False)
        await self.start(self.port)

    async def configure(self, request: web.Request) -> web.Response:
        settings = await request.json()
        self.test = Test(Faults(**settings["faults"]), settings["model"])
        return web.json_response({})

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response({"requests": self.test.requests, "answered": self.test.answered})

    async def complete(self, request: web.Request) -> web.StreamResponse:
        test = self.test  # a request still open when the next test configures counts for its own test
        test.requests += 1
        n, f = test.requests, test.faults
        body = await request.json()
        if f.drain_after and n == f.drain_after:
            asyncio.get_running_loop().create_task(self.drain(f.drain_seconds))
            return web.json_response({"error": {"message": "server shutting down", "code": 503}}, status=503)
        if f.status_503_every and n % f.status_503_every == 0:
            return web.json_response({"error": {"message": "Service Unavailable", "code": 503}}, status=503)
        if f.status_429_every and n % f.status_429_every == 0:
            return web.json_response({"error": {"message": "Too Many Requests", "code": 429}}, status=429)
        if f.slow_every and n % f.slow_every == 0:
            await asyncio.sleep(f.slow_seconds)
        if body.get("model") != test.model:
            # vLLM's answer to a model it does not serve.
            return web.json_response({"error": {"message": f"The model `{body.get('model')}` does not exist.", "code": 404}}, status=404)
        prompt_tokens, completion_tokens = usage(body)
        chat = request.path.endswith("/chat/completions")
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": "length", "stop_reason": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": "ok " * completion_tokens, "tool_calls": []}
        else:
            choice["text"] = "ok " * completion_tokens
        answer = {
            "id": f"{'chatcmpl' if chat else 'cmpl'}-{n}",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": test.model,
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "completion_tokens": completion_tokens,
            },
        }
        if f.abort_every and n % f.abort_every == 0:
            choice.update(finish_reason="abort")
            answer["usage"] = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens, "completion_tokens": 0}
            return web.json_response(answer)
        if f.drop_every and n % f.drop_every == 0:
            raw = json.dumps(answer).encode()
            response = web.StreamResponse(headers={"Content-Type": "application/json", "Content-Length": str(len(raw))})
            await response.prepare(request)
            await response.write(raw[: len(raw) // 2])
            assert request.transport is not None
            request.transport.abort()  # preempted mid-answer
            return response
        test.answered[prompt_of(body)] += 1
        return web.json_response(answer)


async def serve() -> None:
    server = Server()
    await server.start()
    print(server.port, flush=True)
    # Serve until the parent closes stdin (or kills this process): never outlives the test.
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(serve())
