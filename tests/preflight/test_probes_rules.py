"""What each request to the engine sends and what comes back, against a local server that records every request."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

import pytest

from preflight.probes import _ending_of_error, completion, http, port_open
from tests.http_stand_in import serving

USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


class Recording(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[dict[str, Any]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _events(self, lines: list[bytes]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for line in lines:
            self.wfile.write(line)
        self.wfile.flush()
        self.close_connection = True

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append({"method": self.command, "path": self.path, "type": self.headers.get("Content-Type"), "body": body})
        if self.path == "/ok":
            self._answer(200, b"fine")
        elif self.path == "/latin":
            self._answer(200, b"caf\xe9")
        elif self.path == "/missing":
            self._answer(404, b"no such model \xff")
        elif self.path == "/slow":
            time.sleep(0.5)
            self._answer(200, b"late")
        elif self.path == "/chat":
            answer = {"choices": [{"message": {"content": "hello"}, "finish_reason": "stop"}], "usage": USAGE}
            self._answer(200, json.dumps(answer).encode())
        elif self.path == "/long":
            self._answer(200, json.dumps({"choices": [{"text": "y" * 500, "finish_reason": "length"}]}).encode())
        elif self.path == "/unfinished":
            self._answer(200, json.dumps({"choices": [{"text": "half", "finish_reason": None}]}).encode())
        elif self.path == "/no-choices":
            self._answer(200, json.dumps({"object": "text_completion"}).encode())
        elif self.path == "/empty-text":
            self._answer(200, json.dumps({"choices": [{"text": None, "finish_reason": "stop"}]}).encode())
        elif self.path == "/not-json":
            self._answer(200, b"<html>")
        elif self.path == "/loud-error":
            self._answer(500, b"E" * 1000)
        elif self.path == "/latin-error":
            self._answer(500, b"caf\xe9")
        elif self.path == "/latin-answer":
            # Not UTF-8: json.loads fails, and its error quotes every byte.
            self._answer(200, b'{"choices": [{"text": "' + b"\xe9" * 400 + b'"}]}')
        elif self.path == "/latin-stream":
            self._events([b'data: {"choices": [{"text": "caf\xe9", "finish_reason": "stop"}]}\n\n', b"data: [DONE]\n\n"])
        elif self.path == "/stream":
            chunk = {"choices": [{"text": "a", "finish_reason": None}]}
            two = {"choices": [{"text": "b", "finish_reason": None}, {"text": "c", "finish_reason": None}]}
            last = {"choices": [{"text": "d", "finish_reason": "stop"}]}
            usage = {"choices": [], "usage": USAGE}
            self._events(
                [
                    b": keep-alive\n\n",
                    f"data: {json.dumps(chunk)}\n\n".encode(),
                    b"event: ping\n\n",
                    f"data:{json.dumps(two)}\n\n".encode(),
                    f"data: {json.dumps(last)}\n\n".encode(),
                    f"data: {json.dumps(usage)}\n\n".encode(),
                    b"data: [DONE]\n\n",
                    f"data: {json.dumps(chunk)}\n\n".encode(),
                ]
            )
        elif self.path == "/stream-then-cut":
            # Two chunks, then the connection ends mid-event: a chunk that is not JSON.
            chunk = {"choices": [{"text": "a", "finish_reason": None}]}
            self._events([f"data: {json.dumps(chunk)}\n\n".encode(), f"data: {json.dumps(chunk)}\n\n".encode(), b'data: {"choi\n\n'])
        elif self.path == "/stream-finished-then-cut":
            last = {"choices": [{"text": "d", "finish_reason": "length"}]}
            self._events([f"data: {json.dumps(last)}\n\n".encode(), b"data: {broken\n\n"])
        elif self.path == "/stream-nothing-then-cut":
            self._events([b"data: {broken\n\n"])
        elif self.path == "/stream-usage-none":
            usage_none: dict[str, Any] = {"choices": [{"text": "a", "finish_reason": "stop"}], "usage": None}
            self._events([f"data: {json.dumps(usage_none)}\n\n".encode(), b"data: [DONE]\n\n"])
        else:
            self._answer(418, b"")

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()


@pytest.fixture
def server() -> Iterator[str]:
    Recording.seen = []
    with serving(Recording) as url:
        yield url


def _closed_port() -> int:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        return int(spare.getsockname()[1])


class Ticks:
    """A clock that moves one second per reading."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


# -- http -------------------------------------------------------------------------------------------


def test_a_get_sends_no_body_and_returns_the_status_and_text(server: str) -> None:
    status, text, seconds = http("GET", server + "/ok")
    assert (status, text) == (200, "fine")
    assert 0 <= seconds < 5
    assert Recording.seen == [{"method": "GET", "path": "/ok", "type": "application/json", "body": b""}]


def test_a_body_is_sent_as_json_with_the_method_given(server: str) -> None:
    http("PUT", server + "/ok", {"a": [1, "é"]})
    assert Recording.seen[0]["method"] == "PUT"
    assert json.loads(Recording.seen[0]["body"]) == {"a": [1, "é"]}
    assert Recording.seen[0]["type"] == "application/json"


def test_a_body_that_is_not_utf8_is_read_with_replacements(server: str) -> None:
    assert http("GET", server + "/latin")[1] == "caf\ufffd"


def test_an_http_error_returns_its_code_and_body(server: str) -> None:
    assert http("GET", server + "/missing")[:2] == (404, "no such model \ufffd")


def test_the_seconds_count_the_wait(server: str) -> None:
    assert http("GET", server + "/slow")[2] >= 0.45
    assert http("GET", server + "/missing")[2] < 0.45


def test_a_request_past_its_timeout_returns_no_status(server: str) -> None:
    status, text, seconds = http("GET", server + "/slow", timeout=0.1)
    assert status is None and "timed out" in text
    assert 0.09 <= seconds < 0.45


def test_a_refused_connection_and_a_bad_url_return_no_status() -> None:
    status, text, seconds = http("GET", f"http://127.0.0.1:{_closed_port()}/health")
    assert status is None and "ConnectionRefusedError" in text and 0 <= seconds < 5
    status, text, _ = http("GET", "nothing://here")
    assert status is None and text.startswith("URLError(") and "unknown url type" in text


# -- port_open --------------------------------------------------------------------------------------


def test_a_listening_port_is_open_and_a_closed_one_not() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        assert port_open("127.0.0.1", listening.getsockname()[1]) is True
    assert port_open("127.0.0.1", _closed_port()) is False


# -- how a request ended ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "ending"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "refused"),
        (urllib.error.URLError(ConnectionRefusedError(111, "Connection refused")), "refused"),
        (TimeoutError(), "timed out"),
        (urllib.error.URLError("timed out"), "timed out"),
        (OSError("the read timed out"), "timed out"),
        (ConnectionResetError(104, "Connection reset by peer"), "dropped"),
        (ValueError("bad chunk"), "dropped"),
    ],
)
def test_an_error_is_named_by_what_it_says(error: BaseException, ending: str) -> None:
    assert _ending_of_error(error) == ending


# -- completion: a plain answer ---------------------------------------------------------------------


def test_a_request_sends_its_body_as_json_by_post(server: str) -> None:
    completion(server + "/chat", {"model": "m", "messages": []}, timeout=5)
    assert Recording.seen == [
        {"method": "POST", "path": "/chat", "type": "application/json", "body": json.dumps({"model": "m", "messages": []}).encode()}
    ]


def test_a_chat_answer_keeps_its_text_reason_usage_and_times(server: str) -> None:
    record = completion(server + "/chat", {"messages": []}, timeout=5, clock=Ticks())
    assert record == {
        "stream": False,
        "start": 101.0,
        "status": 200,
        "finish_reason": "stop",
        "usage": USAGE,
        "text": "hello",
        "ending": "answered",
        "end": 102.0,
        "seconds": 1.0,
    }


def test_a_long_text_is_cut_to_200_characters(server: str) -> None:
    record = completion(server + "/long", {}, timeout=5)
    assert record["text"] == "y" * 200 and record["ending"] == "answered" and record["usage"] is None


def test_an_answer_without_a_finish_reason_says_so(server: str) -> None:
    record = completion(server + "/unfinished", {"stream": False}, timeout=5)
    assert (record["ending"], record["text"], record["finish_reason"]) == ("no finish_reason", "half", None)


@pytest.mark.parametrize("path", ["/no-choices", "/empty-text"])
def test_an_answer_without_choices_or_text_has_empty_text(server: str, path: str) -> None:
    record = completion(server + path, {}, timeout=5)
    assert record["text"] == ""
    assert record["ending"] == ("answered" if path == "/empty-text" else "no finish_reason")


def test_an_answer_that_is_not_json_is_dropped_with_its_error(server: str) -> None:
    record = completion(server + "/not-json", {}, timeout=5)
    assert record["status"] == 200 and record["ending"] == "dropped" and record["error"].startswith("JSONDecodeError(")


def test_an_http_error_keeps_its_code_and_the_start_of_its_body(server: str) -> None:
    record = completion(server + "/loud-error", {}, timeout=5, clock=Ticks())
    assert record == {
        "stream": False,
        "start": 101.0,
        "status": 500,
        "error": "E" * 300,
        "ending": "http 500",
        "end": 102.0,
        "seconds": 1.0,
    }


def test_an_error_body_that_is_not_utf8_is_read_with_replacements(server: str) -> None:
    assert completion(server + "/latin-error", {}, timeout=5)["error"] == "caf\ufffd"


def test_an_answer_that_is_not_utf8_is_dropped_with_the_start_of_its_error(server: str) -> None:
    record = completion(server + "/latin-answer", {}, timeout=5)
    assert record["ending"] == "dropped" and record["error"].startswith("UnicodeDecodeError(") and len(record["error"]) == 300


def test_a_stream_line_that_is_not_utf8_is_read_with_replacements(server: str) -> None:
    record = completion(server + "/latin-stream", {"stream": True}, timeout=5)
    assert record["ending"] == "answered" and record["chunks"] == 1


def test_a_refused_request_keeps_its_error_and_times() -> None:
    record = completion(f"http://127.0.0.1:{_closed_port()}/v1/completions", {}, timeout=5, clock=Ticks())
    assert record["ending"] == "refused" and "Connection refused" in record["error"] and len(record["error"]) <= 300
    assert (record["start"], record["end"], record["seconds"]) == (101.0, 102.0, 1.0)
    assert "status" not in record


def test_a_request_past_its_timeout_times_out(server: str) -> None:
    record = completion(server + "/slow", {}, timeout=0.1)
    assert record["ending"] == "timed out" and 0.09 <= record["seconds"] < 0.45


def test_the_record_given_is_the_one_filled(server: str) -> None:
    given: dict[str, Any] = {"kept": 1}
    assert completion(server + "/chat", {}, timeout=5, record=given) is given
    assert given["kept"] == 1 and given["ending"] == "answered"


# -- completion: a stream ---------------------------------------------------------------------------


def test_a_stream_counts_choices_and_keeps_its_last_reason_usage_and_chunk_times(server: str) -> None:
    record = completion(server + "/stream", {"stream": True}, timeout=5, clock=Ticks())
    assert record == {
        "stream": True,
        "start": 101.0,
        "status": 200,
        "chunks": 4,
        "done_marker": True,
        "finish_reason": "stop",
        "usage": USAGE,
        "first_chunk": 102.0,
        "last_chunk": 105.0,
        "ending": "answered",
        "end": 106.0,
        "seconds": 5.0,
    }


def test_a_stream_cut_after_tokens_is_a_stream_cut(server: str) -> None:
    record = completion(server + "/stream-then-cut", {"stream": True}, timeout=5)
    assert record["ending"] == "stream cut" and record["chunks"] == 2 and record["done_marker"] is False
    assert record["error"].startswith("JSONDecodeError(")


def test_a_stream_cut_after_its_finish_reason_was_answered(server: str) -> None:
    record = completion(server + "/stream-finished-then-cut", {"stream": True}, timeout=5)
    assert record["ending"] == "answered" and record["finish_reason"] == "length"


def test_a_stream_cut_before_any_token_is_dropped(server: str) -> None:
    record = completion(server + "/stream-nothing-then-cut", {"stream": True}, timeout=5)
    assert record["ending"] == "dropped" and record["chunks"] == 0 and record["finish_reason"] is None


def test_a_chunk_with_null_usage_keeps_none(server: str) -> None:
    record = completion(server + "/stream-usage-none", {"stream": True}, timeout=5)
    assert record["usage"] is None and record["ending"] == "answered" and record["chunks"] == 1
