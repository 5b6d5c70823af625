"""The replicas as the runner reads them through a local stand-in of the Kubernetes API: counts, events, logs, replica-seconds."""

from __future__ import annotations

import ssl
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.http_stand_in import serving
from tests.workloads.batch.conftest import DEPLOYMENT, NAMESPACE, KubernetesApi
from workloads.batch.replicas import SERVICE_ACCOUNT, DeploymentApi, ReplicaCount, ReplicaMeter


def test_the_deployment_is_read_at_its_api_path_with_a_fresh_token_each_time(kubernetes_api: KubernetesApi, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("  first\n")
    api = DeploymentApi(kubernetes_api.url + "/", NAMESPACE, DEPLOYMENT, token_file=token)
    assert api.url == f"{kubernetes_api.url}/apis/apps/v1/namespaces/llm-serving/deployments/vllm"
    kubernetes_api.status = {"replicas": 3, "readyReplicas": 1}
    assert api.count() == ReplicaCount(replicas=3, ready=1)
    kubernetes_api.status = {"replicas": 2}
    token.write_text("second")
    assert api.count() == ReplicaCount(replicas=2, ready=0)
    kubernetes_api.status = {}
    assert api.count() == ReplicaCount(replicas=0, ready=0)
    assert kubernetes_api.authorizations == ["Bearer first", "Bearer second", "Bearer second"]


def test_without_a_token_file_no_authorization_is_sent(kubernetes_api: KubernetesApi) -> None:
    DeploymentApi(kubernetes_api.url, NAMESPACE, DEPLOYMENT).count()
    assert kubernetes_api.authorizations == [None]


def test_the_namespaces_events_and_a_pods_vllm_log_with_timestamps(kubernetes_api: KubernetesApi) -> None:
    events = {"apiVersion": "v1", "kind": "List", "items": [{"reason": "Scheduled", "message": "assigned"}]}
    kubernetes_api.events = events
    kubernetes_api.logs["vllm-7d9f-abc"] = "2026-11-26T10:00:00Z one\n2026-11-26T10:00:01Z two\n"
    api = DeploymentApi(kubernetes_api.url, NAMESPACE, DEPLOYMENT)
    assert api.events() == events
    # The stand-in answers the log only for the vLLM container (the Deployment's name) with timestamps.
    assert api.log("vllm-7d9f-abc") == ["2026-11-26T10:00:00Z one", "2026-11-26T10:00:01Z two"]


@pytest.mark.parametrize(("host", "server"), [("10.0.0.1", "https://10.0.0.1:443"), ("fd00::1", "https://[fd00::1]:443")])
def test_in_the_cluster_the_api_is_found_from_the_pods_environment(host: str, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setattr("ssl.create_default_context", lambda cafile: ("context", cafile))
    api = DeploymentApi.in_cluster("serving", "vllm-a")
    assert api.url == f"{server}/apis/apps/v1/namespaces/serving/deployments/vllm-a"
    assert (api.namespace, api.name) == ("serving", "vllm-a")
    assert api.token_file == Path("/var/run/secrets/kubernetes.io/serviceaccount/token") == SERVICE_ACCOUNT / "token"
    assert api.context == ("context", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt")  # type: ignore[comparison-overlap]


def test_without_a_ca_file_the_default_trust_is_used(kubernetes_api: KubernetesApi) -> None:
    assert DeploymentApi(kubernetes_api.url, NAMESPACE, DEPLOYMENT).context is None


def test_replica_seconds_hold_each_count_until_the_next_sample_and_never_run_backwards() -> None:
    meter = ReplicaMeter(held_before=600.0, at=100.0, first=ReplicaCount(2, 0))
    assert (meter.replica_seconds, meter.last_at, meter.last) == (600.0, 100.0, ReplicaCount(2, 0))
    meter.sample(150.0, ReplicaCount(4, 2))
    assert meter.replica_seconds == 700.0 and meter.last == ReplicaCount(4, 2) and meter.last_at == 150.0
    # A clock that steps back adds nothing.
    meter.sample(140.0, ReplicaCount(1, 1))
    assert meter.replica_seconds == 700.0 and meter.last_at == 140.0
    meter.sample(240.0, ReplicaCount(0, 0))
    assert meter.replica_seconds == 800.0


class Canned:
    """A server that answers every GET with one body and records the Accept header of each request."""

    def __init__(self) -> None:
        self.body = b"{}"
        self.accepts: list[str | None] = []
        self.url = ""


@pytest.fixture
def canned() -> Iterator[Canned]:
    found = Canned()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found.accepts.append(self.headers.get("Accept"))
            self.send_response(200)
            self.send_header("Content-Length", str(len(found.body)))
            self.end_headers()
            self.wfile.write(found.body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    with serving(Handler) as found.url:
        yield found


def test_each_read_asks_for_the_form_it_parses(canned: Canned) -> None:
    api = DeploymentApi(canned.url, NAMESPACE, DEPLOYMENT)
    api.count()
    api.events()
    api.log("vllm-1")
    assert canned.accepts == ["application/json", "application/json", "text/plain"]


def test_a_deployment_without_any_status_yet_has_no_replicas(canned: Canned) -> None:
    canned.body = b'{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm"}}'
    assert DeploymentApi(canned.url, NAMESPACE, DEPLOYMENT).count() == ReplicaCount(replicas=0, ready=0)


def test_a_log_line_that_is_not_utf8_is_read_with_a_replacement_character(canned: Canned) -> None:
    canned.body = b"2026-11-26T10:00:00Z weights \xff loaded\nnext"
    assert DeploymentApi(canned.url, NAMESPACE, DEPLOYMENT).log("vllm-1") == ["2026-11-26T10:00:00Z weights \ufffd loaded", "next"]


def test_each_read_gives_up_after_ten_seconds_and_checks_the_clusters_certificate(canned: Canned, monkeypatch: pytest.MonkeyPatch) -> None:
    api = DeploymentApi(canned.url, NAMESPACE, DEPLOYMENT)
    api.context = ssl.create_default_context()
    opened: list[dict[str, Any]] = []
    real = urllib.request.urlopen

    def recording(request: urllib.request.Request, **options: Any) -> Any:
        opened.append(options)
        return real(request, timeout=options.get("timeout"))

    monkeypatch.setattr(urllib.request, "urlopen", recording)
    api.count()
    assert opened == [{"timeout": 10, "context": api.context}]
