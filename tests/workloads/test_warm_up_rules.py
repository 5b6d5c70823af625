"""The startup probe's program in-process, against a local completions endpoint: what it sends, and when it succeeds."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from tests.http_stand_in import serving
from workloads.warm_up import answered, embedded, main

FINISHED = {"choices": [{"index": 0, "text": "!", "finish_reason": "length"}]}
UNFINISHED = {"choices": [{"index": 0, "text": "", "finish_reason": None}]}


def vectors(*lengths: int) -> dict[str, Any]:
    """vLLM's embeddings answer: one entry per input, each a vector."""
    data = [{"index": i, "object": "embedding", "embedding": [0.5] * length} for i, length in enumerate(lengths)]
    return {"id": "embd-1", "object": "list", "model": "m", "data": data, "usage": {"prompt_tokens": 1, "total_tokens": 1}}


@dataclass
class Engine:
    """Answers each POST with the next of ``replies`` (the last one repeats) and records what it got."""

    replies: list[dict[str, Any]]
    # Holds each answer until this many requests are in: engines that answer only requests sent at once.
    together: int = 1
    url: str = ""
    seen: list[tuple[str, dict[str, str], dict[str, Any]]] = field(default_factory=list)


@pytest.fixture
def engine() -> Iterator[Engine]:
    state = Engine([FINISHED])
    lock = threading.Lock()
    arrived = threading.Condition(lock)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with arrived:
                state.seen.append((self.command, dict(self.headers), body))
                reply = state.replies[min(len(state.seen), len(state.replies)) - 1]
                arrived.notify_all()
                together = arrived.wait_for(lambda: len(state.seen) >= state.together, timeout=2)
            data = json.dumps(reply if together else UNFINISHED).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    with serving(Handler) as url:
        state.url = f"{url}/v1/completions"
        yield state


def test_a_completion_is_a_one_token_json_post_for_the_served_model_without_a_key(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    assert answered(engine.url, "served/model") is True
    ((method, headers, body),) = engine.seen
    assert method == "POST"
    assert headers["Content-Type"] == "application/json"
    assert "Authorization" not in headers
    assert body == {"model": "served/model", "prompt": "Hello", "max_tokens": 1}


def test_vllms_api_key_goes_as_a_bearer_token_and_an_empty_one_is_no_key(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_API_KEY", "sk-test")
    assert answered(engine.url, "m")
    monkeypatch.setenv("VLLM_API_KEY", "")
    assert answered(engine.url, "m")
    assert [headers.get("Authorization") for _, headers, _ in engine.seen] == ["Bearer sk-test", None]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (FINISHED, True),
        (UNFINISHED, False),
        ({"choices": [{"finish_reason": "stop"}, {"finish_reason": None}]}, False),
        ({"choices": [{"finish_reason": "stop"}, {"finish_reason": "length"}]}, True),
        ({"choices": []}, False),
        ({"error": "engine dead"}, False),
    ],
    ids=["finished", "unfinished", "one-of-two-unfinished", "both-finished", "no-choice", "no-choices"],
)
def test_an_answer_counts_only_when_every_choice_has_a_finish_reason(engine: Engine, reply: dict[str, Any], expected: bool) -> None:
    engine.replies = [reply]
    assert answered(engine.url, "m") is expected


def test_the_probe_sends_n_completions_at_once_and_succeeds_when_each_is_answered(engine: Engine) -> None:
    # Each answer waits for all eight requests: sent one after another, or by fewer threads, none would finish.
    engine.together = 8
    assert main(engine.url, "served", 8) == 0
    assert len(engine.seen) == 8
    assert {body["model"] for _, _, body in engine.seen} == {"served"}


def test_one_engine_still_compiling_fails_the_probe(engine: Engine) -> None:
    # Held until all four are in: once one answer fails, the probe need not send the ones not yet sent.
    engine.replies, engine.together = [FINISHED, FINISHED, UNFINISHED, FINISHED], 4
    assert main(engine.url, "served", 4) == 1
    assert len(engine.seen) == 4


def test_a_probe_of_one_sends_one(engine: Engine) -> None:
    assert main(engine.url, "served", 1) == 0
    assert len(engine.seen) == 1


def test_an_embedding_is_a_json_post_of_one_input_for_the_served_model(engine: Engine) -> None:
    engine.replies = [vectors(4)]
    assert embedded(engine.url, "served/embedder", 4) is True
    ((method, headers, body),) = engine.seen
    assert (method, headers["Content-Type"]) == ("POST", "application/json")
    assert body == {"model": "served/embedder", "input": "Hello"}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (vectors(4), True),
        (vectors(3), False),
        (vectors(4, 4), True),
        (vectors(4, 0), False),
        ({"data": []}, False),
        ({"data": [{"index": 0, "embedding": None}]}, False),
        (FINISHED, False),
        ({"error": {"message": "The model does not support Embeddings API"}}, False),
    ],
    ids=["its-length", "another-length", "two-vectors", "one-empty", "no-data", "null-vector", "a-completion", "an-error"],
)
def test_an_embedding_counts_only_when_every_vector_has_the_models_length(engine: Engine, reply: dict[str, Any], expected: bool) -> None:
    engine.replies = [reply]
    assert embedded(engine.url, "m", 4) is expected


def test_the_probe_of_an_embedding_model_sends_n_embeddings_at_once(engine: Engine) -> None:
    engine.replies, engine.together = [vectors(8)], 8
    assert main(engine.url, "served", 8, 8) == 0
    assert [body for _, _, body in engine.seen] == [{"model": "served", "input": "Hello"}] * 8
    engine.seen.clear()
    engine.together = 1
    assert main(engine.url, "served", 2, 16) == 1
