"""The claim and release script, run for real against an HTTP server on 127.0.0.1 that answers as the API server would."""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

import pytest

import workloads.cache_release
from components.model_cache import RELEASE_SOURCE, release_code
from tests.http_stand_in import serving
from workloads.cache_release import claim, main, release

CLAIMS = "/api/v1/namespaces/llm-serving/persistentvolumeclaims/"
SNAPSHOTS = "/apis/snapshot.storage.k8s.io/v1/namespaces/llm-serving/volumesnapshots/"
WRITER = json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "model-cache-x-writer"}})


class _ApiServer(BaseHTTPRequestHandler):
    existing: ClassVar[set[str]] = set()
    # Snapshot name -> readyToUse.
    snapshots: ClassVar[dict[str, bool]] = {}
    calls: ClassVar[list[tuple[str, str, str]]] = []
    # (Accept, Content-Type) of each call: the API server answers JSON only to a client that asks for it.
    kinds: ClassVar[list[tuple[str, str]]] = []
    # An answer with no body (as a proxy may give to a DELETE): the client reads it as an empty object.
    empty: ClassVar[bool] = False

    def do_GET(self) -> None:
        self.calls.append((self.command, self.path, self.headers.get("Authorization", "")))
        self.kinds.append((self.headers.get("Accept", ""), self.headers.get("Content-Type", "")))
        if self.headers.get("Authorization") != "Bearer job-token":
            self._answer(403)
            return
        name = self.path.removeprefix(SNAPSHOTS)
        if self.path.startswith(SNAPSHOTS) and name in self.snapshots:
            self._answer(200, json.dumps({"status": {"readyToUse": self.snapshots[name]}}).encode())
        else:
            self._answer(404)

    def do_POST(self) -> None:
        self.calls.append((self.command, self.path, self.headers.get("Authorization", "")))
        self.kinds.append((self.headers.get("Accept", ""), self.headers.get("Content-Type", "")))
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name = body["metadata"]["name"]
        if self.path != CLAIMS.rstrip("/"):
            self._answer(404)
        elif self.headers.get("Authorization") != "Bearer job-token":
            self._answer(403)
        elif name in self.existing:
            self._answer(409)
        else:
            self.existing.add(name)
            self._answer(201)

    def do_DELETE(self) -> None:
        self.calls.append((self.command, self.path, self.headers.get("Authorization", "")))
        self.kinds.append((self.headers.get("Accept", ""), self.headers.get("Content-Type", "")))
        if self.headers.get("Authorization") != "Bearer job-token":
            self._answer(403)
        elif self.path.startswith(CLAIMS) and self.path.removeprefix(CLAIMS) in self.existing:
            self.existing.discard(self.path.removeprefix(CLAIMS))
            self._answer(200)
        else:
            self._answer(404)

    def _answer(self, status: int, body: bytes = b'{"kind": "Status"}') -> None:
        body = b"" if self.empty and status < 300 else body
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
    _ApiServer.kinds = []
    _ApiServer.empty = False
    with serving(_ApiServer) as url:
        yield url


@pytest.fixture
def account(tmp_path: Path) -> Path:
    """A service account's mounted files: a token, and the cluster's CA (self-signed here, for 127.0.0.1)."""
    folder = tmp_path / "serviceaccount"
    folder.mkdir()
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"), "-out", str(folder / "ca.crt")),
        ],
        check=True,
        capture_output=True,
    )
    (folder / "token").write_text("job-token\n")
    return folder


@pytest.fixture
def tls_api(api: str, account: Path) -> Iterator[str]:
    """The same API server behind TLS, with the certificate the account's ca.crt holds (as in a cluster)."""
    served = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    served.load_cert_chain(account / "ca.crt", account.parent / "key.pem")
    with serving(_ApiServer, tls=served) as url:
        yield url


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


def test_every_call_asks_for_json_and_sends_the_accounts_token(api: str) -> None:
    _ApiServer.existing = set()
    _ApiServer.snapshots = {"model-cache-x": False}
    claim("llm-serving", "model-cache-x", WRITER, api=api, token="job-token", context=None)
    release("llm-serving", "model-cache-x-writer", api=api, token="job-token", context=None)
    assert [call[2] for call in _ApiServer.calls] == ["Bearer job-token"] * 3
    assert _ApiServer.kinds == [("application/json", "application/json")] * 3


def test_a_claim_made_with_another_token_is_refused(api: str) -> None:
    # The token reaches the snapshot's read as well as the claim's creation.
    with pytest.raises(Exception, match="403"):
        claim("llm-serving", "model-cache-x", WRITER, api=api, token="someone-else", context=None)
    assert [call[0] for call in _ApiServer.calls] == ["GET"]


def test_an_answer_without_a_body_reads_as_done(api: str) -> None:
    _ApiServer.existing = set()
    _ApiServer.empty = True
    assert "created llm-serving/model-cache-x-writer" in claim(
        "llm-serving", "model-cache-x", WRITER, api=api, token="job-token", context=None
    )
    assert "released llm-serving/model-cache-x-writer" in release(
        "llm-serving", "model-cache-x-writer", api=api, token="job-token", context=None
    )


def test_each_call_trusts_the_cluster_ca_it_is_given(tls_api: str, account: Path) -> None:
    context = ssl.create_default_context(cafile=str(account / "ca.crt"))
    _ApiServer.existing = set()
    _ApiServer.snapshots = {"model-cache-x": False}
    assert "created" in claim("llm-serving", "model-cache-x", WRITER, api=tls_api, token="job-token", context=context)
    _ApiServer.snapshots = {"model-cache-x": True}
    assert "not needed again" in claim("llm-serving", "model-cache-x", WRITER, api=tls_api, token="job-token", context=context)
    assert "released" in release("llm-serving", "model-cache-x-writer", api=tls_api, token="job-token", context=context)
    # Without that CA the same server is not trusted.
    with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
        release("llm-serving", "model-cache-x-writer", api=tls_api, token="job-token", context=ssl.create_default_context())


@pytest.mark.parametrize(
    ("step", "ready", "said"),
    [
        ("claim", False, "created llm-serving/model-cache-x-writer"),
        ("claim", True, "llm-serving/model-cache-x is ready: model-cache-x-writer is not needed again"),
        ("release", False, "released llm-serving/model-cache-x-writer"),
    ],
)
def test_the_job_speaks_to_the_api_server_its_pod_names_as_its_account(
    step: str,
    ready: bool,
    said: str,
    tls_api: str,
    account: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    host, port = tls_api.removeprefix("https://").split(":")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.setattr(workloads.cache_release, "ACCOUNT", account)
    _ApiServer.existing = {"model-cache-x-writer"} if step == "release" else set()
    _ApiServer.snapshots = {"model-cache-x": ready}
    names = ["model-cache-x", WRITER] if step == "claim" else ["model-cache-x-writer"]
    monkeypatch.setattr(sys, "argv", ["cache_release.py", step, "llm-serving", *names])
    main()
    assert capsys.readouterr().out == said + "\n"
    assert _ApiServer.existing == ({"model-cache-x-writer"} if step == "claim" and not ready else set())
    assert {call[2] for call in _ApiServer.calls} == {"Bearer job-token"}


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
