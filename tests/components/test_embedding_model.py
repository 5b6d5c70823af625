"""An embedding model (``llm:model.task: embed``): vLLM's pooling runner, a probe that asks for a vector, no generation flags.

The probe is run for real against a stand-in that answers as vLLM serves a pooling model: vectors on
``/v1/embeddings``, and a refusal on ``/v1/completions``.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from render.engine import Render, reveal
from stacks.problems import StackConfigError
from tests.conftest import render_with
from tests.http_stand_in import serving

EMBEDDING_MODEL = "Qwen/Qwen3-Embedding-8B"
# Its config.json's hidden_size: the length of the vector its last-token pooler answers with.
VECTOR_LENGTH = 4096
# vLLM's answer to a completion sent to a model that does not generate (vllm/entrypoints/openai/completion/api_router.py).
REFUSED = {"error": {"message": "The model does not support Completions API", "type": "BadRequestError", "param": None, "code": 400}}


def embedding_stack(**changes: Any) -> Render:
    return render_with("dev", model={"id": EMBEDDING_MODEL, "task": "embed"}, **changes)


def container(render: Render) -> dict[str, Any]:
    found: dict[str, Any] = render.one("kubernetes:apps/v1:Deployment", "vllm").inputs["spec"]["template"]["spec"]["containers"][0]
    return found


def test_an_embedding_model_runs_on_vllms_pooling_runner_without_generation_flags() -> None:
    command = container(embedding_stack())["command"]
    assert "--runner=pooling" in command
    # Speculative decoding drafts tokens to generate; a pooling model generates none.
    assert not any(arg.startswith("--speculative-config") for arg in command)
    assert not any(arg.startswith("--runner") for arg in container(render_with("dev"))["command"])


def test_an_embedding_models_startup_probe_asks_each_engine_for_a_vector_of_its_length() -> None:
    command = container(embedding_stack())["startupProbe"]["exec"]["command"]
    assert command[:2] == ["python3", "-c"]
    assert command[3:] == ["http://127.0.0.1:8000/v1/embeddings", EMBEDDING_MODEL, "8", str(VECTOR_LENGTH)]


class PoolingEngine(BaseHTTPRequestHandler):
    """vLLM serving a pooling model: a vector of ``length`` per input on /v1/embeddings, completions refused."""

    length = VECTOR_LENGTH
    seen: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append((self.path, body))
        if self.path == "/v1/embeddings":
            status, answer = 200, embedding_answer(body, type(self).length)
        else:
            status, answer = 400, REFUSED
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def embedding_answer(body: dict[str, Any], length: int) -> dict[str, Any]:
    """vLLM's EmbeddingResponse (vllm/entrypoints/pooling/embed/protocol.py): one normalized vector per input."""
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    data = [{"index": i, "object": "embedding", "embedding": [1 / length**0.5] * length} for i in range(len(inputs))]
    return {
        "id": "embd-1",
        "object": "list",
        "created": 1,
        "model": body["model"],
        "data": data,
        "usage": {"prompt_tokens": 2, "total_tokens": 2, "completion_tokens": 0, "prompt_tokens_details": None},
    }


@contextmanager
def pooling_engine(length: int) -> Iterator[tuple[int, list[tuple[str, dict[str, Any]]]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    handler: type[PoolingEngine] = type("Handler", (PoolingEngine,), {"length": length, "seen": seen})
    with serving(handler) as url:
        yield int(url.rsplit(":", 1)[1]), seen


def probe(render: Render, port: int) -> int:
    """Runs the rendered startup probe's command against 127.0.0.1:``port``."""
    command = [part.replace("127.0.0.1:8000", f"127.0.0.1:{port}") for part in container(render)["startupProbe"]["exec"]["command"]]
    clean = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    return subprocess.run(command, env=clean, capture_output=True, timeout=60).returncode


def test_the_embedding_probe_passes_on_an_engine_that_answers_vectors_and_refuses_completions() -> None:
    with pooling_engine(VECTOR_LENGTH) as (port, seen):
        assert probe(embedding_stack(), port) == 0
    assert len(seen) == 8
    assert all(path == "/v1/embeddings" and body == {"model": EMBEDDING_MODEL, "input": "Hello"} for path, body in seen)


def test_the_completion_probe_never_starts_a_pooling_engine() -> None:
    # The finding: a completion probe on an embedding model's engine fails forever.
    with pooling_engine(VECTOR_LENGTH) as (port, seen):
        assert probe(render_with("dev"), port) != 0
    assert {path for path, _ in seen} == {"/v1/completions"}


def test_an_embedding_models_task_defaults_to_embed_and_generate_is_refused() -> None:
    render = render_with("dev", model={"id": EMBEDDING_MODEL})
    assert "--runner=pooling" in container(render)["command"]
    assert container(render)["startupProbe"]["exec"]["command"][3].endswith("/v1/embeddings")
    with pytest.raises(StackConfigError) as error:
        render_with("dev", model={"id": EMBEDDING_MODEL, "task": "generate"})
    assert "llm:model.task: 'generate' does not fit Qwen/Qwen3-Embedding-8B: an embedding model" in str(error.value)


@pytest.mark.parametrize("length", [0, 1024], ids=["empty", "another-model's-length"])
def test_a_vector_of_the_wrong_length_does_not_start_the_replica(length: int) -> None:
    with pooling_engine(length) as (port, _):
        assert probe(embedding_stack(), port) != 0


def refusal(**changes: Any) -> str:
    with pytest.raises(StackConfigError) as error:
        embedding_stack(**changes)
    return str(error.value)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"serving": {"mtpTokens": 1}}, ["llm:serving.mtpTokens", "1", "embed"]),
        ({"serving": {"mambaCacheMode": "align"}}, ["llm:serving.mambaCacheMode", "'align'", "embed"]),
        ({"serving": {"mambaBlockSize": 8}}, ["llm:serving.mambaBlockSize", "8", "embed"]),
        ({"benchmark": {"enabled": True}}, ["llm:benchmark.enabled", "generated tokens"]),
        ({"serving": {"extraArgs": ["--runner=generate"]}}, ["llm:serving.extraArgs[0]", "model.task"]),
        ({"serving": {"extraArgs": ["--convert=classify"]}}, ["llm:serving.extraArgs[0]", "model.task"]),
    ],
    ids=["mtp", "mamba-cache-mode", "mamba-block-size", "benchmark", "runner", "convert"],
)
def test_generation_only_settings_on_an_embedding_model_are_refused_naming_the_key(changes: dict[str, Any], expected: list[str]) -> None:
    message = refusal(**changes)
    for text in expected:
        assert text in message, message


def test_an_unknown_task_is_refused_naming_the_tasks() -> None:
    with pytest.raises(StackConfigError) as error:
        render_with("dev", model={"id": EMBEDDING_MODEL, "task": "classify"})
    assert "llm:model.task: 'classify' is not allowed; use one of: generate, embed" in str(error.value)


def test_an_embedding_stack_states_why_it_has_no_token_throughput_estimate() -> None:
    estimates = reveal(embedding_stack().outputs)["estimates"]
    assert estimates["tokensPerSecond"] is None and estimates["dollarsPerMillionTokens"] is None
    assert "embedding" in estimates["basis"]
