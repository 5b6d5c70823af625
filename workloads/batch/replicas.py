"""The replicas, read through the Kubernetes API: Ready replicas, the replicas held, and how the last one started."""

from __future__ import annotations

import json
import os
import ssl
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

# Where Kubernetes mounts a pod's service-account token and the cluster's CA.
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class ReplicaCount:
    replicas: int  # pods the Deployment has, Ready or not: each holds an A4 node, and bills
    ready: int


class Deployment(Protocol):
    name: str  # the replicas' pods are named after it

    def count(self) -> ReplicaCount: ...

    def events(self) -> dict[str, Any]:
        """The namespace's events, as ``kubectl get events -o json`` lists them."""
        ...

    def log(self, pod: str) -> list[str]:
        """The vLLM container's log of ``pod``, each line stamped as ``kubectl logs --timestamps`` stamps it."""
        ...


class DeploymentApi:
    """GET on one Deployment, and the namespace's events and pod logs (what the runner's Role grants)."""

    def __init__(self, api_url: str, namespace: str, name: str, *, token_file: Path | None = None, ca_file: Path | None = None) -> None:
        self.api = api_url.rstrip("/")
        self.namespace = namespace
        self.name = name
        self.url = f"{self.api}/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
        self.token_file = token_file
        self.context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None

    @classmethod
    def in_cluster(cls, namespace: str, name: str) -> DeploymentApi:
        host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
        host = f"[{host}]" if ":" in host else host
        return cls(f"https://{host}:{port}", namespace, name, token_file=SERVICE_ACCOUNT / "token", ca_file=SERVICE_ACCOUNT / "ca.crt")

    def _get(self, url: str, accept: str) -> bytes:
        request = urllib.request.Request(url, headers={"Accept": accept})
        if self.token_file is not None:
            # Read every time: the kubelet rotates projected tokens.
            request.add_header("Authorization", f"Bearer {self.token_file.read_text().strip()}")
        with urllib.request.urlopen(request, timeout=10, context=self.context) as response:
            return bytes(response.read())

    def count(self) -> ReplicaCount:
        status = json.loads(self._get(self.url, "application/json")).get("status", {})
        # The API server omits zero counts.
        return ReplicaCount(replicas=int(status.get("replicas", 0)), ready=int(status.get("readyReplicas", 0)))

    def events(self) -> dict[str, Any]:
        return dict(json.loads(self._get(f"{self.api}/api/v1/namespaces/{self.namespace}/events", "application/json")))

    def log(self, pod: str) -> list[str]:
        # The replicas' container has the Deployment's name (components/replicas.py).
        query = urllib.parse.urlencode({"container": self.name, "timestamps": "true"})
        url = f"{self.api}/api/v1/namespaces/{self.namespace}/pods/{urllib.parse.quote(pod)}/log?{query}"
        return self._get(url, "text/plain").decode(errors="replace").splitlines()


class ReplicaMeter:
    """Replica-seconds held, summed from samples of the Deployment: each count holds until the next sample."""

    def __init__(self, held_before: float, at: float, first: ReplicaCount) -> None:
        self.replica_seconds = held_before
        self.last_at = at
        self.last = first

    def sample(self, at: float, current: ReplicaCount) -> None:
        self.replica_seconds += self.last.replicas * max(0.0, at - self.last_at)
        self.last_at, self.last = at, current
