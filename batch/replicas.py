"""The replicas' Deployment, read through the Kubernetes API: Ready replicas, and the replicas held."""

from __future__ import annotations

import json
import os
import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

# Where Kubernetes mounts a pod's service-account token and the cluster's CA.
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")


@dataclass(frozen=True)
class ReplicaCount:
    replicas: int  # pods the Deployment has, Ready or not: each holds an A4 node, and bills
    ready: int


class Deployment(Protocol):
    def count(self) -> ReplicaCount: ...


class DeploymentApi:
    """GET on one Deployment (the runner's Role grants exactly that)."""

    def __init__(self, api_url: str, namespace: str, name: str, *, token_file: Path | None = None, ca_file: Path | None = None) -> None:
        self.url = f"{api_url.rstrip('/')}/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
        self.token_file = token_file
        self.context = ssl.create_default_context(cafile=str(ca_file)) if ca_file else None

    @classmethod
    def in_cluster(cls, namespace: str, name: str) -> DeploymentApi:
        host, port = os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"]
        host = f"[{host}]" if ":" in host else host
        return cls(f"https://{host}:{port}", namespace, name, token_file=SERVICE_ACCOUNT / "token", ca_file=SERVICE_ACCOUNT / "ca.crt")

    def count(self) -> ReplicaCount:
        request = urllib.request.Request(self.url, headers={"Accept": "application/json"})
        if self.token_file is not None:
            # Read every time: the kubelet rotates projected tokens.
            request.add_header("Authorization", f"Bearer {self.token_file.read_text().strip()}")
        with urllib.request.urlopen(request, timeout=10, context=self.context) as response:
            status = json.load(response).get("status", {})
        # The API server omits zero counts.
        return ReplicaCount(replicas=int(status.get("replicas", 0)), ready=int(status.get("readyReplicas", 0)))


class ReplicaMeter:
    """Replica-seconds held, summed from samples of the Deployment: each count holds until the next sample."""

    def __init__(self, held_before: float, at: float, first: ReplicaCount) -> None:
        self.replica_seconds = held_before
        self.last_at = at
        self.last = first

    def sample(self, at: float, current: ReplicaCount) -> None:
        self.replica_seconds += self.last.replicas * max(0.0, at - self.last_at)
        self.last_at, self.last = at, current
