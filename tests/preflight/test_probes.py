"""How each request ended, as the drain saw them end on the real run: answered, stream cut, dropped, refused."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from preflight.probes import completion, port_open
from tests.http_stand_in import serving

CHUNK = {"choices": [{"index": 0, "text": "x", "finish_reason": None}]}
LAST = {"choices": [{"index": 0, "text": "x", "finish_reason": "length"}]}


class Endings(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _events(self, chunks: list[dict[str, Any]], done: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        if done:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        if self.path == "/finished":
            self._events([CHUNK, LAST], done=True)
        elif self.path == "/done-without-finish":
            self._events([CHUNK, CHUNK], done=True)
        elif self.path == "/cut":
            self._events([CHUNK], done=False)
        elif self.path == "/plain":
            body = json.dumps({**LAST, "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/error":
            self.send_response(503)
            self.send_header("Content-Length", "4")
            self.end_headers()
            self.wfile.write(b"busy")
        else:
            # No answer at all: the connection closes, as when the engine is killed.
            self.close_connection = True


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(Endings) as url:
        yield url


@pytest.mark.parametrize(
    ("path", "stream", "ending", "done"),
    [
        ("/finished", True, "answered", True),
        ("/done-without-finish", True, "stream cut", True),
        ("/cut", True, "stream cut", False),
        ("/plain", False, "answered", None),
        ("/dropped", False, "dropped", None),
        ("/error", False, "http 503", None),
    ],
)
def test_each_ending_is_told_apart(server: str, path: str, stream: bool, ending: str, done: bool | None) -> None:
    record = completion(server + path, {"stream": stream}, timeout=10)
    assert record["ending"] == ending
    assert record.get("done_marker") == done


def test_a_plain_answer_keeps_its_usage(server: str) -> None:
    record = completion(server + "/plain", {}, timeout=10)
    assert record["usage"] == {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    assert record["finish_reason"] == "length"


def test_a_closed_port_refuses() -> None:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = spare.getsockname()[1]
    assert not port_open("127.0.0.1", port)
    assert completion(f"http://127.0.0.1:{port}/v1/completions", {}, timeout=5)["ending"] == "refused"


def test_a_stream_is_visible_to_other_threads_while_it_arrives(server: str) -> None:
    record: dict[str, Any] = {}
    completion(server + "/finished", {"stream": True}, timeout=10, record=record)
    assert record["chunks"] == 2 and "first_chunk" in record and record["finish_reason"] == "length"
