"""The claim and release script, run for real against an HTTP server on 127.0.0.1 that answers as the API server would."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from components.model_cache import RELEASE_SOURCE, release_code
from workloads.cache_release import claim, release

CLAIMS = "/api/v1/namespaces/llm-serving/persistentvolumeclaims/"
SNAPSHOTS = "/apis/snapshot.storage.k8s.io/v1/namespaces/llm-serving/volumesnapshots/"
WRITER = json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "model-cache-x-writer"}})


class _ApiServer(BaseHTTPRequestHandler):
    existing: ClassVar[set[str]] = set()
    # Snapshot name -> readyToUse.
    snapshots: ClassVar[dict[str, bool]] = {}
    calls: ClassVar[list[tuple[str, str, str]]] = []

    def do_GET(self) -> None:
        self.calls.append((self.command, self.path, self.headers.get("Authorization", "")))
        name = self.path.removeprefix(SNAPSHOTS)
        if self.path.startswith(SNAPSHOTS) and name in self.snapshots:
            self._answer(200, json.dumps({"status": {"readyToUse": self.snapshots[name]}}).encode())
        else:
            self._answer(404)

    def do_POST(self) -> None:
        self.calls.append((self.command, self.path, self.headers.get("Authorization", "")))
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name = body["metadata"]["name"]
        if self.path != CLAIMS.rstrip("/"):
            self._answer(404)
        elif name in self.existing:
            self._answer(409)
        else:
            self.existing.add(name)
            self._answer(201)

    def do_DELETE(self) -> None:
        self.calls.append((self.command, self.path, self.headers.get("Authorization", "")))
        if self.headers.get("Authorization") != "Bearer job-token":
            self._answer(403)
        elif self.path.startswith(CLAIMS) and self.path.removeprefix(CLAIMS) in self.existing:
            self.existing.discard(self.path.removeprefix(CLAIMS))
            self._answer(200)
        else:
            self._answer(404)

    def _answer(self, status: int, body: bytes = b'{"kind": "Status"}') -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def api() -> Iterator[str]:
    _ApiServer.existing = {"model-cache-x-writer"}
    _ApiServer.snapshots = {}
    _ApiServer.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ApiServer)
    # shutdown() returns once serve_forever next looks at its flag: every 0.5 s by default, 50 ms here.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=5)


def test_release_deletes_the_writable_claim_as_the_job_account(api: str) -> None:
    said = release("llm-serving", "model-cache-x-writer", api=api, token="job-token", context=None)
    assert "released llm-serving/model-cache-x-writer" in said
    assert _ApiServer.calls == [("DELETE", CLAIMS + "model-cache-x-writer", "Bearer job-token")]
    assert _ApiServer.existing == set()


def test_a_second_run_finds_the_claim_gone_and_succeeds(api: str) -> None:
    release("llm-serving", "model-cache-x-writer", api=api, token="job-token", context=None)
    assert "already released" in release("llm-serving", "model-cache-x-writer", api=api, token="job-token", context=None)


def test_claim_creates_the_writable_claim_until_its_snapshot_is_ready(api: str) -> None:
    _ApiServer.existing = set()
    assert "created llm-serving/model-cache-x-writer" in claim(
        "llm-serving", "model-cache-x", WRITER, api=api, token="job-token", context=None
    )
    assert _ApiServer.existing == {"model-cache-x-writer"}
    # A second run (a replaced Job) finds it there.
    assert "already exists" in claim("llm-serving", "model-cache-x", WRITER, api=api, token="job-token", context=None)
    # Once the snapshot is ready and the claim released, a run makes no new disk.
    _ApiServer.snapshots = {"model-cache-x": True}
    release("llm-serving", "model-cache-x-writer", api=api, token="job-token", context=None)
    assert "is not needed again" in claim("llm-serving", "model-cache-x", WRITER, api=api, token="job-token", context=None)
    assert _ApiServer.existing == set()
    assert [call[0] for call in _ApiServer.calls] == ["GET", "POST", "GET", "POST", "DELETE", "GET"]


def test_a_snapshot_not_yet_ready_still_gets_its_claim(api: str) -> None:
    _ApiServer.existing = set()
    _ApiServer.snapshots = {"model-cache-x": False}
    assert "created" in claim("llm-serving", "model-cache-x", WRITER, api=api, token="job-token", context=None)


def test_a_refusal_fails_the_job(api: str) -> None:
    with pytest.raises(Exception, match="403"):
        release("llm-serving", "model-cache-x-writer", api=api, token="someone-else", context=None)


def test_the_job_runs_the_script_as_its_volume_lays_it_out(tmp_path: Path) -> None:
    # The Job runs the file by its path in the ConfigMap's volume, with only the standard library.
    code = release_code()
    for item in code.volume()["configMap"]["items"]:
        (tmp_path / item["path"]).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / item["path"]).write_text(code.files()[item["key"]], encoding="utf-8")
    script = tmp_path / code.path_of(RELEASE_SOURCE).removeprefix(f"{code.root}/")
    completed = subprocess.run(
        [sys.executable, "-I", str(script), "release", "llm-serving", "model-cache-x-writer"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "1"},
    )
    # No service account is mounted here: it gets as far as reading the token.
    assert completed.returncode != 0
    assert "serviceaccount/token" in completed.stderr
