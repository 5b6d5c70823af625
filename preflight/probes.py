"""Requests to the engine's OpenAI-compatible server, with what each one's ending was.

Standard library only. An ending is one of: ``answered`` (a finish_reason), ``stream cut`` (the stream
ended, ``[DONE]`` or not, without a finish_reason), ``refused`` (no connection), ``dropped`` (the
connection closed with no answer), ``timed out``, ``http <code>``.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from typing import Any


def http(method: str, url: str, body: Any = None, timeout: float = 30.0) -> tuple[int | None, str, float]:
    """(status or None, body or the error, seconds)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read().decode(errors="replace"), time.monotonic() - started
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace"), time.monotonic() - started
    except (OSError, ValueError) as error:
        return None, repr(error), time.monotonic() - started


def port_open(host: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _ending_of_error(error: BaseException) -> str:
    text = repr(error)
    if "Connection refused" in text:
        return "refused"
    if "timed out" in text or isinstance(error, TimeoutError | socket.timeout):
        return "timed out"
    return "dropped"


def completion(
    url: str, body: dict[str, Any], *, timeout: float, clock: Any = time.monotonic, record: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One request to ``url`` (completions or chat), streamed when ``body['stream']``; what came back and how it ended.

    ``record`` is filled as the answer arrives, so another thread can see a stream's first tokens.
    """
    stream = bool(body.get("stream"))
    record = {} if record is None else record
    record.update(stream=stream, start=clock())
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            record["status"] = response.status
            if stream:
                _read_stream(response, record, clock)
            else:
                answer = json.loads(response.read())
                choice = (answer.get("choices") or [{}])[0]
                record["finish_reason"] = choice.get("finish_reason")
                record["usage"] = answer.get("usage")
                text = choice.get("text") if "text" in choice else (choice.get("message") or {}).get("content")
                record["text"] = (text or "")[:200]
                record["ending"] = "answered" if record["finish_reason"] else "no finish_reason"
    except urllib.error.HTTPError as error:
        record.update(status=error.code, error=error.read().decode(errors="replace")[:300], ending=f"http {error.code}")
    except (OSError, ValueError) as error:
        record.update(error=repr(error)[:300], ending=_ending_of_error(error))
        if record.get("chunks"):
            # The connection closed in the middle of a stream that had sent tokens.
            record["ending"] = "stream cut" if not record.get("finish_reason") else "answered"
    record["end"] = clock()
    record["seconds"] = record["end"] - record["start"]
    return record


def _read_stream(response: Any, record: dict[str, Any], clock: Any) -> None:
    record.update(chunks=0, done_marker=False, finish_reason=None, usage=None)
    for raw in response:
        line = raw.decode(errors="replace").strip()
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            record["done_marker"] = True
            break
        chunk = json.loads(data)
        now = clock()
        record.setdefault("first_chunk", now)
        record["last_chunk"] = now
        for choice in chunk.get("choices") or []:
            record["chunks"] += 1
            if choice.get("finish_reason"):
                record["finish_reason"] = choice["finish_reason"]
        if chunk.get("usage"):
            record["usage"] = chunk["usage"]
    record["ending"] = "answered" if record["finish_reason"] else "stream cut"
