"""Kubernetes Secrets built from Pulumi secrets: the only place credentials reach the cluster."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.options import child_options
from plan.stack import CredentialsSpec

HF_TOKEN = "hf-token"
API_KEY = "vllm-api-key"
SECRET_KEY = "value"


@dataclass(frozen=True)
class SecretRef:
    """How a pod reads one credential: ``env`` with ``valueFrom.secretKeyRef``."""

    name: str
    key: str = SECRET_KEY

    def env(self, variable: str) -> dict[str, object]:
        return {"name": variable, "valueFrom": {"secretKeyRef": {"name": self.name, "key": self.key}}}


class Credentials(pulumi.ComponentResource):
    """``hf_token`` and ``api_key`` are set only when the stack configured them."""

    def __init__(
        self,
        name: str,
        spec: CredentialsSpec,
        *,
        hf_token: pulumi.Output[str] | None,
        api_key: pulumi.Output[str] | None,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:serving:Credentials", name, None, opts)
        base = child_options(self, opts, kubernetes)
        self.resources: list[pulumi.Resource] = []
        self.hf_token = self._secret(HF_TOKEN, hf_token, spec, base)
        self.api_key = self._secret(API_KEY, api_key, spec, base)
        self.register_outputs({})

    def _secret(self, name: str, value: pulumi.Output[str] | None, spec: CredentialsSpec, opts: pulumi.ResourceOptions) -> SecretRef | None:
        if value is None:
            return None
        self.resources.append(
            k8s.core.v1.Secret(
                name,
                metadata=k8s.meta.v1.ObjectMetaArgs(name=name, namespace=spec.namespace, labels=spec.labels),
                type="Opaque",
                # A Pulumi secret from config: it stays one in state, previews and outputs.
                string_data={SECRET_KEY: value},
                opts=opts,
            )
        )
        return SecretRef(name)
