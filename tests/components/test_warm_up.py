"""A replica is started only when it answers a completion: /health is 200 while kernels still compile (tests/real_runs/)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from tests.conftest import rendered
from tests.http_stand_in import serving
from tests.workloads.cold_start import samples
from workloads.cold_start.phases import measure

SERVED = "Qwen/Qwen3.5-27B-FP8"


def vllm_container() -> dict[str, Any]:
    template = rendered("dev").one("kubernetes:apps/v1:Deployment", "vllm").inputs["spec"]["template"]
    container: dict[str, Any] = template["spec"]["containers"][0]
    return container


def test_the_startup_probe_waits_for_an_answer_longer_than_the_first_one_took_and_readiness_stays_cheap() -> None:
    container = vllm_container()
    probe = container["startupProbe"]
    # /health was 200 about 100 s before the first completion was answered: only a completion proves the engine serves.
    assert "httpGet" not in probe and probe["exec"]["command"][:2] == ["python3", "-c"]
    first_answer = dict(measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines()).phases())["first answer"]
    assert first_answer is not None and probe["timeoutSeconds"] > first_answer
    # Still the whole cold start to get there.
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 25 * 60
    for name in ("readinessProbe", "livenessProbe"):
        assert container[name]["httpGet"]["path"] == "/health", name


class Engine(BaseHTTPRequestHandler):
    """A vLLM-like completions endpoint: answers with ``reply`` and records each request."""

    reply: ClassVar[dict[str, Any]] = {}
    seen: ClassVar[list[tuple[dict[str, Any], str | None]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((body, self.headers.get("Authorization")))
        data = json.dumps(type(self).reply).encode()
        self.send_response(200 if self.path == "/v1/completions" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def engine(reply: dict[str, Any]) -> Iterator[tuple[int, list[tuple[dict[str, Any], str | None]]]]:
    seen: list[tuple[dict[str, Any], str | None]] = []
    handler: type[Engine] = type("Handler", (Engine,), {"reply": reply, "seen": seen})
    with serving(handler) as url:
        yield int(url.rsplit(":", 1)[1]), seen


def warm_up(port: int, env: dict[str, str] | None = None) -> int:
    """Runs the rendered probe's command against 127.0.0.1:``port``."""
    command = [part.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for part in vllm_container()["startupProbe"]["exec"]["command"]]
    clean = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    return subprocess.run(command, env=clean | (env or {}), capture_output=True, timeout=60).returncode


ANSWER = {"choices": [{"index": 0, "text": "!", "finish_reason": "length"}]}


def test_the_warm_up_sends_one_completion_per_engine_and_succeeds_when_each_is_answered() -> None:
    with engine(ANSWER) as (port, seen):
        assert warm_up(port) == 0
    # dev runs data parallel 8: one request for each engine the API server spreads them over.
    assert len(seen) == 8
    assert all(body == {"model": SERVED, "prompt": "Hello", "max_tokens": 1} and key is None for body, key in seen)


def test_the_warm_up_sends_vllms_api_key_when_the_container_has_one() -> None:
    with engine(ANSWER) as (port, seen):
        assert warm_up(port, {"VLLM_API_KEY": "sk-test"}) == 0
    assert {key for _, key in seen} == {"Bearer sk-test"}


@pytest.mark.parametrize(
    "reply",
    [{"choices": [{"index": 0, "text": "", "finish_reason": None}]}, {"error": "engine dead"}],
    ids=["no-finish-reason", "no-choices"],
)
def test_an_answer_without_a_finish_reason_is_not_started(reply: dict[str, Any]) -> None:
    with engine(reply) as (port, _):
        assert warm_up(port) != 0


def test_a_server_not_listening_yet_is_not_started() -> None:
    with engine(ANSWER) as (port, _):
        pass
    assert warm_up(port) != 0
