"""A local OpenAI-compatible server that answers like vLLM's, with no model behind it, and injects faults.

Run in its own process (``python -m tests.workloads.batch.vllm_like [PORT]``) so it never competes with the
runner for a core; it prints its port, then serves until stdin closes or it is killed. One
process serves a test worker's tests one after another: ``POST /configure`` sets the next test's
faults and served model, with every count at zero.

On SIGTERM it stops as vLLM 0.26.0 was seen to stop on an H100 (tests/real_runs/): the port closes at once
(connections refused, no 503); requests in flight run on until ``shutdown_timeout``, then are cut: a
stream ends with ``data: [DONE]`` and no tokens or ``finish_reason``, a plain request gets no answer;
then a teardown of ``teardown_seconds`` before the process exits. ``/health`` answers 200 from the
start, while the first ``warmup_requests`` answers each take ``warmup_seconds`` more (vLLM compiles
kernels at its first requests: ~100 s there).

Configured with ``task: embed`` it serves as vLLM serves a pooling model: a vector per input on
``/v1/embeddings``, and completions refused with vLLM's 400.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

EMBEDDING_LENGTH = 4


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
    answer_seconds: float = 0.0  # every answer takes this long (a decode)
    warmup_requests: int = 0  # the first requests after start ...
    warmup_seconds: float = 0.0  # ... each take this much longer
    shutdown_timeout: float = 0.0  # after SIGTERM, in-flight requests run this long, then are cut
    teardown_seconds: float = 0.0  # and the process exits this much later
    pause_after: int = 0  # from this request on nothing is answered until POST /resume: a runner stops at a known point


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
    task: str = "generate"
    requests: int = 0
    answered: Counter[str] = field(default_factory=Counter)  # 200 answers by prompt: tests put the custom_id in it
    in_flight: int = 0
    most_in_flight: int = 0  # the high-water mark: what the runners sent at once
    cut: int = 0  # requests cut by a shutdown
    resumed: asyncio.Event = field(default_factory=asyncio.Event)  # set by POST /resume


class Server:
    def __init__(self) -> None:
        self.test = Test(Faults(), "served-model")
        self.app = web.Application()
        self.app.router.add_post("/v1/chat/completions", self.complete)
        self.app.router.add_post("/v1/completions", self.complete)
        self.app.router.add_post("/v1/embeddings", self.complete)
        self.app.router.add_get("/stats", self.stats)
        self.app.router.add_get("/health", self.health)
        self.app.router.add_post("/configure", self.configure)
        self.app.router.add_post("/resume", self.resume)
        self.runner = web.AppRunner(self.app, handle_signals=False)
        self.port = 0
        self.site: web.TCPSite | None = None
        self.shutting_down: asyncio.Event | None = None
        self.open: set[asyncio.Task[Any]] = set()

    async def start(self, port: int = 0) -> None:
        await self.runner.setup()
        self.site = web.TCPSite(self.runner, "127.0.0.1", port, reuse_address=True)
        await self.site.start()
        self.port = self.runner.addresses[0][1]
        self.shutting_down = asyncio.Event()

    async def shutdown(self) -> None:
        """SIGTERM: stop listening now, let in-flight requests run until the shutdown timeout, cut the rest."""
        assert self.site is not None and self.shutting_down is not None
        await self.site.stop()  # the listening socket closes: new connections are refused
        faults = self.test.faults
        pending = {task for task in self.open if not task.done()}
        if pending:
            await asyncio.wait(pending, timeout=faults.shutdown_timeout)
        self.shutting_down.set()  # what still runs is cut
        await asyncio.sleep(faults.teardown_seconds)

    async def drain(self, seconds: float) -> None:
        await self.runner.cleanup()  # closes the listener and open connections: new requests are refused
        await asyncio.sleep(seconds)
        self.runner = web.AppRunner(self.app, handle_signals=False)
        await self.start(self.port)

    async def configure(self, request: web.Request) -> web.Response:
        settings = await request.json()
        self.test = Test(Faults(**settings["faults"]), settings["model"], settings.get("task", "generate"))
        return web.json_response({})

    async def resume(self, request: web.Request) -> web.Response:
        self.test.resumed.set()
        return web.json_response({})

    async def stats(self, request: web.Request) -> web.Response:
        test = self.test
        return web.json_response(
            {"requests": test.requests, "answered": test.answered, "most_in_flight": test.most_in_flight, "cut": test.cut}
        )

    async def health(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    async def complete(self, request: web.Request) -> web.StreamResponse:
        test = self.test  # a request still open when the next test configures counts for its own test
        task = asyncio.current_task()
        assert task is not None
        self.open.add(task)
        test.in_flight += 1
        test.most_in_flight = max(test.most_in_flight, test.in_flight)
        try:
            return await self.answer(request, test)
        finally:
            test.in_flight -= 1
            self.open.discard(task)

    async def decode(self, seconds: float) -> bool:
        """Waits ``seconds`` of decoding; False when a shutdown cut it first."""
        assert self.shutting_down is not None
        if self.shutting_down.is_set():
            return False
        try:
            await asyncio.wait_for(self.shutting_down.wait(), seconds)
        except TimeoutError:
            return True
        return False

    async def answer(self, request: web.Request, test: Test) -> web.StreamResponse:
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
        if f.pause_after and n >= f.pause_after:
            await test.resumed.wait()
        if f.slow_every and n % f.slow_every == 0:
            await asyncio.sleep(f.slow_seconds)
        if body.get("model") != test.model:
            # vLLM's answer to a model it does not serve.
            return web.json_response({"error": {"message": f"The model `{body.get('model')}` does not exist.", "code": 404}}, status=404)
        if (request.path == "/v1/embeddings") != (test.task == "embed"):
            # vLLM serves the other task's endpoints no answer (vllm/entrypoints/openai/completion/api_router.py).
            api = "Embeddings" if test.task == "generate" else "Completions"
            refused = {"message": f"The model does not support {api} API", "type": "BadRequestError", "param": None, "code": 400}
            return web.json_response({"error": refused}, status=400)
        if test.task == "embed":
            return await self.embed(request, test, body, f.answer_seconds)
        prompt_tokens, completion_tokens = usage(body)
        chat = request.path.endswith("/chat/completions")
        slow = f.answer_seconds + (f.warmup_seconds if n <= f.warmup_requests else 0.0)
        if body.get("stream"):
            return await self.stream(request, test, body, slow)
        if not await self.decode(slow):
            test.cut += 1
            assert request.transport is not None
            request.transport.abort()  # a plain request cut by the shutdown gets no answer at all
            return web.Response()
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

    async def embed(self, request: web.Request, test: Test, body: dict[str, Any], seconds: float) -> web.StreamResponse:
        """vLLM's EmbeddingResponse (vllm/entrypoints/pooling/embed/protocol.py): one vector of EMBEDDING_LENGTH per input."""
        if not await self.decode(seconds):
            test.cut += 1
            assert request.transport is not None
            request.transport.abort()
            return web.Response()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        prompt_tokens = sum(len(str(text).split()) for text in inputs)
        data = [{"index": i, "object": "embedding", "embedding": [0.5] * EMBEDDING_LENGTH} for i in range(len(inputs))]
        usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens, "completion_tokens": 0, "prompt_tokens_details": None}
        for text in inputs:
            test.answered[str(text)] += 1
        answer = {"id": f"embd-{test.requests}", "object": "list", "created": int(time.time()), "model": test.model, "data": data}
        return web.json_response(answer | {"usage": usage})

    async def stream(self, request: web.Request, test: Test, body: dict[str, Any], seconds: float) -> web.StreamResponse:
        """Server-sent events as vLLM streams them; a shutdown ends the stream with [DONE] alone."""
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        _, completion_tokens = usage(body)
        if await self.decode(seconds):
            for index in range(completion_tokens):
                finish = "length" if index == completion_tokens - 1 else None
                chunk = {"id": f"chatcmpl-{test.requests}", "choices": [{"index": 0, "delta": {"content": "ok "}, "finish_reason": finish}]}
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            test.answered[prompt_of(body)] += 1
        else:
            test.cut += 1
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


async def serve(port: int) -> None:
    server = Server()
    await server.start(port)
    print(server.port, flush=True)
    loop = asyncio.get_running_loop()
    stopped = asyncio.Event()

    def terminate() -> None:
        loop.create_task(server.shutdown()).add_done_callback(lambda _: stopped.set())

    loop.add_signal_handler(signal.SIGTERM, terminate)
    # Serve until the parent closes stdin, SIGTERM's shutdown ends, or it is killed: never outlives the test.
    stdin_closed = loop.run_in_executor(None, sys.stdin.read)
    await asyncio.wait([asyncio.ensure_future(stdin_closed), asyncio.ensure_future(stopped.wait())], return_when=asyncio.FIRST_COMPLETED)
    os._exit(0)  # the stdin reader thread may still block


if __name__ == "__main__":
    asyncio.run(serve(int(sys.argv[1]) if len(sys.argv) > 1 else 0))
