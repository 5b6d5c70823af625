"""A stand-in for ``vllm serve`` and ``vllm bench serve`` on a machine without a GPU: the preflight's shell, end to end.

It behaves as vLLM 0.26.0 did on the real run (tests/real_runs/): its startup lines, ``/health``,
``/metrics`` with the ``engine`` and ``model_name`` labels, completions and chat (streamed or not, with
usage), a cache file written on the first start only, and SIGTERM as measured: the port closes at once,
streams end with ``[DONE]`` and no finish_reason after ``--shutdown-timeout``, plain requests get no
answer. ``python -m vllm.entrypoints.cli.main`` reaches ``main`` through a shim the tests write.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SERIES = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:num_preemptions_total",
    "vllm:request_success_total",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_draft_tokens_total",
)
HISTOGRAMS = (
    "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:request_time_per_output_token_seconds",
    "vllm:e2e_request_latency_seconds",
)
# Shrinks the shutdown timeout, so a test drains in seconds with its requests still in flight.
SCALE = float(os.environ.get("FAKE_VLLM_TIME_SCALE", "1"))


TOKEN_SECONDS = 0.02


def log(text: str) -> None:
    print(f"(APIServer pid={os.getpid()}) INFO 11-26 10:00:00 [fake.py:1] {text}", flush=True)


def flag(args: list[str], name: str, default: str) -> str:
    for index, arg in enumerate(args):
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
        if arg == name and index + 1 < len(args):
            return args[index + 1]
    return default


class State:
    served = "model"
    stopping = False
    shutdown_timeout = 0.0
    generated = 0


def metrics_text() -> str:
    labels = f'engine="0",model_name="{State.served}"'
    lines = [f"{name}{{{labels}}} {State.generated if 'generation' in name else 0}" for name in SERIES]
    for name in HISTOGRAMS:
        for bound in ("0.1", "1.0", "2560.0", "+Inf"):
            lines.append(f'{name}_bucket{{{labels},le="{bound}"}} 1')
        lines += [f"{name}_sum{{{labels}}} 0.5", f"{name}_count{{{labels}}} 1"]
    return "\n".join(lines) + "\n"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        print(
            f'(APIServer pid={os.getpid()}) INFO:     127.0.0.1 - "{self.command} {self.path}" {args[1] if len(args) > 1 else ""}',
            flush=True,
        )

    def _send(self, status: int, body: str, kind: str = "application/json") -> None:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/health":
            self._send(200, "")
        elif self.path == "/metrics":
            self._send(200, metrics_text(), "text/plain")
        else:
            self._send(200, json.dumps({"data": [{"id": State.served}]}))

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        # What the request asked for, so a test can check what the preflight sent.
        log(f"request {self.path} {json.dumps(body, sort_keys=True)}")
        chat = self.path.endswith("/chat/completions")
        tokens = int(body.get("max_tokens") or 16)
        usage = {"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": 5 + tokens}
        if not body.get("stream"):
            deadline = time.monotonic() + tokens * TOKEN_SECONDS
            while time.monotonic() < deadline:
                if State.stopping:
                    # vLLM aborts it at the shutdown timeout and never answers.
                    time.sleep(3600)
                time.sleep(0.01)
            State.generated += tokens
            choice = {"index": 0, "finish_reason": "length", **({"message": {"content": "x"}} if chat else {"text": "x"})}
            self._send(200, json.dumps({"choices": [choice], "usage": usage}))
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        stopped_at: float | None = None
        for index in range(tokens):
            if State.stopping:
                stopped_at = stopped_at or time.monotonic()
                if time.monotonic() - stopped_at >= State.shutdown_timeout:
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                    return
            last = index == tokens - 1
            delta = {"delta": {"content": "x"}} if chat else {"text": "x"}
            chunk = {"choices": [{"index": 0, **delta, "finish_reason": "length" if last else None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(TOKEN_SECONDS)
        State.generated += tokens
        if body.get("stream_options", {}).get("include_usage"):
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def exit_after_timeout() -> None:
    time.sleep(State.shutdown_timeout + 0.5)
    os._exit(0)


def serve(args: list[str]) -> None:
    model = args[0]
    State.served = flag(args, "--served-model-name", model)
    State.shutdown_timeout = float(flag(args, "--shutdown-timeout", "0")) * SCALE
    port = int(flag(args, "--port", "8000"))
    log(f"non-default args: {{'model': '{model}'}}")
    cache = Path(os.environ.get("VLLM_CACHE_ROOT", Path.home() / ".cache" / "vllm")) / "torch_compile_cache" / "abc"
    triton = Path.home() / ".triton" / "cache" / "kernel"
    hit = cache.exists()
    for path in (cache, triton):
        if not path.exists():
            path.mkdir(parents=True)
            (path / "artefact").write_text("compiled")
    time.sleep(0.2)
    log("Loading weights took 0.08 seconds")
    log("Model loading took 0.46 GiB memory and 0.69 seconds")
    if hit:
        log(f"Directly load AOT compilation from path {cache}")
    log(f"torch.compile took {1.2 if hit else 24.6} s in total")
    log("Initial profiling/warmup run took 0.95 s")
    log(f"Starting vLLM server on http://0.0.0.0:{port}")
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True

    def on_term(signum: int, frame: Any) -> None:
        log("[shutdown] API server: shutdown triggered")
        State.stopping = True
        # The port closes at once, as uvicorn's did.
        server.socket.close()
        threading.Thread(target=exit_after_timeout, daemon=True).start()

    signal.signal(signal.SIGTERM, on_term)
    try:
        server.serve_forever(poll_interval=0.1)
    except OSError:
        time.sleep(3600)


def bench(args: list[str]) -> None:
    prompts = int(flag(args, "--num-prompts", "10"))
    folder = Path(flag(args, "--result-dir", "."))
    result = {
        "duration": 1.0,
        "completed": prompts,
        "failed": 0,
        "total_input_tokens": 100 * prompts,
        "total_output_tokens": 50 * prompts,
        "request_throughput": float(prompts),
        "output_throughput": 50.0 * prompts,
        "total_token_throughput": 150.0 * prompts,
        "ttfts": [0.1] * prompts,
        "itls": [[0.01, 0.01]] * prompts,
        "output_lens": [50] * prompts,
        "errors": [""] * prompts,
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / flag(args, "--result-filename", "result.json")).write_text(json.dumps(result))
    print("============ Serving Benchmark Result ============", flush=True)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["serve"]:
        serve(args[1:])
    elif args[:2] == ["bench", "serve"]:
        bench(args[2:])
    else:
        raise SystemExit(f"fake vllm: unknown command {args}")
