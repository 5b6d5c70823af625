"""One line of an OpenAI Batch API input file: a request to send, or a bad line to report."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

# The endpoints vLLM's OpenAI-compatible server answers that a batch line may name, by the model's task
# (llm:model.task): a model that generates answers completions, an embedding model (vLLM's pooling runner)
# embeddings, and each refuses the other's.
URLS_BY_TASK: Final = {
    "generate": ("/v1/chat/completions", "/v1/completions"),
    "embed": ("/v1/embeddings",),
}

# Embedding encodings vLLM answers as raw bytes, not JSON (vllm/entrypoints/pooling/embed/serving.py, 0.18.1 and 0.33.0).
BINARY_ENCODINGS: Final = frozenset({"bytes", "bytes_only"})


@dataclass(frozen=True, slots=True)
class Request:
    custom_id: str
    url: str
    body: dict[str, Any]
    # The served model the line is sent to: its body.model in a stack of several models; "" in a one-model stack.
    model: str = ""


@dataclass(frozen=True, slots=True)
class BadLine:
    custom_id: str | None
    code: str
    message: str


def parse(line_number: int, raw: bytes, seen: set[str], task: str = "generate", models: dict[str, str] | None = None) -> Request | BadLine:
    """Reads one input line for a model of ``task``; a valid ``custom_id`` joins ``seen``, so a later line with it is a duplicate.

    With ``models`` (served name -> task: a stack of several models) the line goes to the model its ``body.model``
    names, and its url must be one that model's task serves; ``task`` is then unused."""
    where = f"line {line_number}"
    try:
        line = json.loads(raw)
    except ValueError as error:
        return BadLine(None, "invalid_json", f"{where}: not JSON ({error})")
    except RecursionError:
        # Nested deeper than the parser's stack: one such line must not stop the batch (or crash-loop its runner).
        return BadLine(None, "invalid_json", f"{where}: JSON nested too deeply to read")
    if not isinstance(line, dict):
        return BadLine(None, "invalid_json", f"{where}: a JSON object is required, got {type(line).__name__}")
    custom_id = line.get("custom_id")
    if not isinstance(custom_id, str) or not custom_id:
        return BadLine(None, "missing_custom_id", f"{where}: custom_id must be a non-empty string, got {custom_id!r}")
    if custom_id in seen:
        return BadLine(custom_id, "duplicate_custom_id", f"{where}: custom_id {custom_id!r} was already used by an earlier line")
    seen.add(custom_id)
    method = line.get("method")
    if method != "POST":
        return BadLine(custom_id, "unsupported_method", f"{where}: method {method!r} is not supported; use 'POST'")
    url = line.get("url")
    known = any(url in urls for urls in URLS_BY_TASK.values())
    if models is None:
        served = sorted(URLS_BY_TASK[task])
        if url not in served:
            why = f"is not served by this stack's model (model.task {task})" if known else "is not supported"
            return BadLine(custom_id, "unsupported_url", f"{where}: url {url!r} {why}; use one of {served}")
    elif not known:
        every = sorted(url for urls in URLS_BY_TASK.values() for url in urls)
        return BadLine(custom_id, "unsupported_url", f"{where}: url {url!r} is not supported; use one of {every}")
    body = line.get("body")
    if not isinstance(body, dict):
        return BadLine(custom_id, "invalid_body", f"{where}: body must be a JSON object, got {type(body).__name__}")
    model = ""
    if models is not None:
        named = body.get("model")
        if not isinstance(named, str) or named not in models:
            # OpenAI's and vLLM's code for a model the server does not serve; never sent.
            return BadLine(
                custom_id, "model_not_found", f"{where}: body.model {named!r} is not served by this stack; use one of {sorted(models)}"
            )
        model = named
        served = sorted(URLS_BY_TASK[models[model]])
        if url not in served:
            why = f"is not served by model {model!r} (task {models[model]})"
            return BadLine(custom_id, "unsupported_url", f"{where}: url {url!r} {why}; use one of {served}")
    encoding = body.get("encoding_format")
    if url == "/v1/embeddings" and encoding in BINARY_ENCODINGS:
        return BadLine(
            custom_id,
            "invalid_body",
            f"{where}: encoding_format {encoding!r} answers in binary, which an output line cannot hold; use 'float' or 'base64'",
        )
    return Request(custom_id, str(url), body, model)


def answer_id(batch: str, line_number: int) -> str:
    """The answer's ``id``: the same on every run of a batch, so a resumed batch writes what the first run would
    have; its own for each line (a custom_id can be missing or used twice), and for another batch under the same
    name (another generation)."""
    return "batch_req_" + hashlib.sha256(f"{batch}\n{line_number}".encode()).hexdigest()[:24]


def answered(answer: str, custom_id: str | None, response: dict[str, Any] | None, error: dict[str, str] | None) -> bytes:
    """One line of the OpenAI batch output (or error) file."""
    record = {"id": answer, "custom_id": custom_id, "response": response, "error": error}
    return json.dumps(record, separators=(",", ":")).encode() + b"\n"
