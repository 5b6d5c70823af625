"""Reading one input line of an OpenAI Batch API file, and the answer's id and line (pure, no bucket)."""

from __future__ import annotations

import hashlib
import json

import pytest

from workloads.batch.lines import BadLine, Request, answer_id, answered, parse

GOOD = {"custom_id": "q-1", "method": "POST", "url": "/v1/chat/completions", "body": {"model": "qwen", "messages": []}}


def line(**changes: object) -> bytes:
    return json.dumps({**GOOD, **changes}).encode()


@pytest.mark.parametrize("url", ["/v1/chat/completions", "/v1/completions"])
def test_a_post_to_an_endpoint_vllm_serves_is_a_request(url: str) -> None:
    seen: set[str] = set()
    assert parse(3, line(url=url), seen) == Request("q-1", url, {"model": "qwen", "messages": []})
    assert seen == {"q-1"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"custom_id": ', BadLine(None, "invalid_json", "line 7: not JSON (")),
        (b"[" * 100_000 + b"]" * 100_000, BadLine(None, "invalid_json", "line 7: JSON nested too deeply to read")),
        (b"[1, 2]", BadLine(None, "invalid_json", "line 7: a JSON object is required, got list")),
        (b'"text"', BadLine(None, "invalid_json", "line 7: a JSON object is required, got str")),
        (line(custom_id=None), BadLine(None, "missing_custom_id", "line 7: custom_id must be a non-empty string, got None")),
        (line(custom_id=""), BadLine(None, "missing_custom_id", "line 7: custom_id must be a non-empty string, got ''")),
        (line(custom_id=12), BadLine(None, "missing_custom_id", "line 7: custom_id must be a non-empty string, got 12")),
        (line(method="GET"), BadLine("q-1", "unsupported_method", "line 7: method 'GET' is not supported; use 'POST'")),
        (line(method=None), BadLine("q-1", "unsupported_method", "line 7: method None is not supported; use 'POST'")),
        (
            line(url="/v1/responses"),
            BadLine(
                "q-1",
                "unsupported_url",
                "line 7: url '/v1/responses' is not supported; use one of ['/v1/chat/completions', '/v1/completions']",
            ),
        ),
        (
            line(url="/v1/embeddings"),
            BadLine(
                "q-1",
                "unsupported_url",
                "line 7: url '/v1/embeddings' is not served by this stack's model (model.task generate); "
                "use one of ['/v1/chat/completions', '/v1/completions']",
            ),
        ),
        (line(body=[1]), BadLine("q-1", "invalid_body", "line 7: body must be a JSON object, got list")),
        (line(body=None), BadLine("q-1", "invalid_body", "line 7: body must be a JSON object, got NoneType")),
    ],
)
def test_a_bad_line_is_reported_with_its_number_and_what_is_wrong(raw: bytes, expected: BadLine) -> None:
    found = parse(7, raw, set())
    assert isinstance(found, BadLine)
    assert (found.custom_id, found.code) == (expected.custom_id, expected.code)
    if expected.message.endswith("("):
        assert found.message.startswith(expected.message) and found.message.endswith(")")
    else:
        assert found.message == expected.message


def test_an_embedding_models_batch_takes_embeddings_lines_and_refuses_completions() -> None:
    embedding = {"model": "qwen-embed", "input": ["a text", "another"]}
    assert parse(2, line(url="/v1/embeddings", body=embedding), set(), "embed") == Request("q-1", "/v1/embeddings", embedding)
    for url in ("/v1/chat/completions", "/v1/completions"):
        message = f"line 2: url {url!r} is not served by this stack's model (model.task embed); use one of ['/v1/embeddings']"
        assert parse(2, line(url=url), set(), "embed") == BadLine("q-1", "unsupported_url", message)


@pytest.mark.parametrize("encoding", ["bytes", "bytes_only"])
def test_an_embedding_asked_in_binary_is_a_bad_line_and_float_or_base64_a_request(encoding: str) -> None:
    body = {"model": "e", "input": "text", "encoding_format": encoding}
    assert parse(4, line(url="/v1/embeddings", body=body), set(), "embed") == BadLine(
        "q-1",
        "invalid_body",
        f"line 4: encoding_format {encoding!r} answers in binary, which an output line cannot hold; use 'float' or 'base64'",
    )
    for readable in ("float", "base64"):
        body["encoding_format"] = readable
        assert isinstance(parse(4, line(url="/v1/embeddings", body=body), set(), "embed"), Request)


def test_a_custom_id_used_again_is_a_duplicate_even_when_its_first_line_was_bad() -> None:
    seen: set[str] = set()
    assert isinstance(parse(1, line(method="GET"), seen), BadLine) and seen == {"q-1"}
    assert parse(2, line(), seen) == BadLine("q-1", "duplicate_custom_id", "line 2: custom_id 'q-1' was already used by an earlier line")
    # A line without a usable id takes no place among the ids.
    parse(3, line(custom_id=""), seen)
    assert seen == {"q-1"}


def test_the_answer_id_is_the_same_on_every_run_of_a_batch_and_its_own_per_batch_and_line() -> None:
    first = answer_id("input/a.jsonl/17", 1)
    assert first.startswith("batch_req_") and len(first) == len("batch_req_") + 24
    # The first 24 hex digits of the SHA-256 of the batch and the line's number on two lines.
    assert first == "batch_req_" + hashlib.sha256(b"input/a.jsonl/17\n1").hexdigest()[:24]
    others = {answer_id("input/a.jsonl/18", 1), answer_id("input/a.jsonl/17", 2), answer_id("input/a.jsonl/1", 71)}
    assert first not in others and len(others) == 3


def test_an_answer_is_one_compact_json_line_of_the_batch_output_format() -> None:
    done = answered("batch_req_1", "q-1", {"status_code": 200, "body": {"id": "x"}}, None)
    assert done == b'{"id":"batch_req_1","custom_id":"q-1","response":{"status_code":200,"body":{"id":"x"}},"error":null}\n'
    failed = answered("batch_req_2", None, None, {"code": "invalid_json", "message": "line 2: not JSON"})
    assert json.loads(failed) == {
        "id": "batch_req_2",
        "custom_id": None,
        "response": None,
        "error": {"code": "invalid_json", "message": "line 2: not JSON"},
    }
    assert failed.endswith(b"}\n") and failed.count(b"\n") == 1


MODELS = {"qwen-chat": "generate", "qwen-embed": "embed"}


def test_with_several_models_a_line_goes_to_the_model_its_body_names_and_must_ask_what_that_model_serves() -> None:
    embed = line(url="/v1/embeddings", body={"model": "qwen-embed", "input": "text"})
    assert parse(1, embed, set(), models=MODELS) == Request("q-1", "/v1/embeddings", {"model": "qwen-embed", "input": "text"}, "qwen-embed")
    chat = line(body={"model": "qwen-chat", "messages": []})
    assert parse(1, chat, set(), models=MODELS) == Request(
        "q-1", "/v1/chat/completions", {"model": "qwen-chat", "messages": []}, "qwen-chat"
    )
    # The chat model's name on the embeddings url: the line asks a model what it does not serve.
    wrong = parse(3, line(url="/v1/embeddings", body={"model": "qwen-chat", "input": "x"}), set(), models=MODELS)
    assert wrong == BadLine(
        "q-1",
        "unsupported_url",
        "line 3: url '/v1/embeddings' is not served by model 'qwen-chat' (task generate); "
        "use one of ['/v1/chat/completions', '/v1/completions']",
    )


@pytest.mark.parametrize("named", ["gpt-4o-mini", None, 7])
def test_with_several_models_a_line_naming_no_model_of_the_stack_is_a_bad_line(named: object) -> None:
    found = parse(2, line(body={"model": named, "messages": []}), set(), models=MODELS)
    assert found == BadLine(
        "q-1", "model_not_found", f"line 2: body.model {named!r} is not served by this stack; use one of ['qwen-chat', 'qwen-embed']"
    )
    # One model's stack keeps replacing the name an OpenAI file gives: no line is refused for it.
    assert isinstance(parse(2, line(body={"model": named, "messages": []}), set()), Request)
