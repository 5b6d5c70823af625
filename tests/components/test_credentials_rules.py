"""Credentials on a hand-made spec: ``Credentials`` alone makes a Secret for each configured credential, and how pods read one."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.credentials import Credentials, SecretRef
from plan.stack import CredentialsSpec
from render.engine import Render, Secret
from tests.components.alone import component_outputs, registered

LABELS = {"team": "ml", "stack": "dev"}
SPEC = CredentialsSpec(namespace="serving", labels=LABELS)


def credentials_alone(hf_token: str | None, api_key: str | None, found: dict[str, object] | None = None) -> Render:
    def program() -> None:
        api = gcp.projects.Service("api", service="container.googleapis.com")
        credentials = Credentials(
            "credentials",
            SPEC,
            hf_token=pulumi.Output.secret(hf_token) if hf_token else None,
            api_key=pulumi.Output.secret(api_key) if api_key else None,
            kubernetes=k8s.Provider("cluster"),
            opts=pulumi.ResourceOptions(depends_on=[api]),
        )
        if found is not None:
            found.update(hf_token=credentials.hf_token, api_key=credentials.api_key, resources=len(credentials.resources))

    return registered(program)


def secret(name: str, value: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": "serving", "labels": LABELS},
        "type": "Opaque",
        # A Pulumi secret stays one in what the provider receives.
        "stringData": Secret({"value": value}),
    }


def test_each_configured_credential_is_a_secret_in_the_namespace_on_the_clusters_provider() -> None:
    found: dict[str, object] = {}
    render = credentials_alone("hf_example", "sk-example", found)
    secrets = render.by_type("kubernetes:core/v1:Secret")
    assert {s.name: s.inputs for s in secrets} == {
        "hf-token": secret("hf-token", "hf_example"),
        "vllm-api-key": secret("vllm-api-key", "sk-example"),
    }
    component = render.one("llm:serving:Credentials", "credentials")
    api = render.one("gcp:projects/service:Service", "api").urn
    cluster = render.one("pulumi:providers:kubernetes", "cluster").urn
    assert api in component.dependencies
    for each in secrets:
        assert each.parent == component.urn and api in each.dependencies and each.provider.startswith(cluster), each.name
    assert found == {"hf_token": SecretRef("hf-token"), "api_key": SecretRef("vllm-api-key"), "resources": 2}


def test_a_credential_the_stack_does_not_configure_has_no_secret_and_no_reference() -> None:
    found: dict[str, object] = {}
    render = credentials_alone(None, "sk-example", found)
    assert [s.name for s in render.by_type("kubernetes:core/v1:Secret")] == ["vllm-api-key"]
    assert found == {"hf_token": None, "api_key": SecretRef("vllm-api-key"), "resources": 1}
    found.clear()
    render = credentials_alone("hf_example", None, found)
    assert [s.name for s in render.by_type("kubernetes:core/v1:Secret")] == ["hf-token"]
    assert found == {"hf_token": SecretRef("hf-token"), "api_key": None, "resources": 1}


def test_a_pod_reads_a_credential_from_its_secrets_value_key() -> None:
    assert SecretRef("hf-token").env("HF_TOKEN") == {
        "name": "HF_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "value"}},
    }
    assert SecretRef("other", "token").env("TOKEN")["valueFrom"] == {"secretKeyRef": {"name": "other", "key": "token"}}


def test_the_component_records_no_outputs() -> None:
    def program() -> None:
        Credentials("credentials", SPEC, hf_token=None, api_key=None, kubernetes=k8s.Provider("cluster"))

    assert component_outputs(program) == {"credentials": {}}
