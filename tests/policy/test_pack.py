"""The policy pack as the Pulumi CLI drives it: pulumi-policy's own analyzer servicer, called in-process.

No gRPC server starts: the servicer's methods are what the CLI calls over gRPC,
so these tests run the real SDK path (config, unknown values, secrets) offline.
"""

from __future__ import annotations

import json
import runpy
import sys
from collections.abc import Mapping
from typing import Any

import pulumi_policy
import pytest
from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

from policy.guardrails import PACK_NAME, policies
from policy.rules import RULES
from render.engine import PROJECT_ROOT
from render.sdk import SECRET_SIGNATURE, SIGNATURE_KEY, UNKNOWN, PolicyAnalyzer

# The wire forms the engine sends: a secret, and a value a preview does not know yet.
SECRET_SIG = {SIGNATURE_KEY: SECRET_SIGNATURE}
UNKNOWN_STRING = UNKNOWN
LABELS = {"app": "llm-serving", "managed-by": "pulumi", "stack": "dev"}
URN = "urn:pulumi:dev::llm::{type}::{name}"


def _analyzer(policy_config: Mapping[str, Mapping[str, Any]] | None = None) -> PolicyAnalyzer:
    return PolicyAnalyzer(PACK_NAME, "0.1.0", policies(), EnforcementLevel.MANDATORY, policy_config)


def analyze(type_: str, name: str, properties: Mapping[str, Any], policy_config: Mapping[str, Mapping[str, Any]] | None = None) -> set[str]:
    """The policies that report the resource, as `pulumi preview` would ask."""
    return _analyzer(policy_config).analyze(type_, name, URN.format(type=type_, name=name), properties)


def analyze_stack(resources: list[tuple[str, str, Mapping[str, Any]]]) -> list[tuple[str, str]]:
    """(policy, urn) of every stack-policy diagnostic."""
    return _analyzer().analyze_stack([(t, n, URN.format(type=t, name=n), p) for t, n, p in resources])


def service(service_type: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "vllm", "labels": LABELS}, "spec": {"type": service_type}}


def deployment(selector: Mapping[str, str], env: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    gpus = {"nvidia.com/gpu": "8"}
    container = {"name": "vllm", "image": "vllm", "resources": {"requests": gpus, "limits": gpus}, "env": env or []}
    return {
        "metadata": {"name": "vllm", "labels": LABELS},
        "spec": {"template": {"spec": {"nodeSelector": dict(selector), "containers": [container]}}},
    }


SPOT_B200 = {"cloud.google.com/gke-accelerator": "nvidia-b200", "cloud.google.com/gke-spot": "true"}


# --- what the pack declares --------------------------------------------------------------


def test_the_pack_has_one_mandatory_policy_per_rule() -> None:
    built = policies()
    assert [p.name for p in built] == [rule.name for rule in RULES]
    assert all(p.enforcement_level is EnforcementLevel.MANDATORY for p in built)
    # Only the GPU rule needs the whole stack (the ComputeClasses a pod may name).
    assert {p.name for p in built if isinstance(p, StackValidationPolicy)} == {"gpu-pods-take-whole-a4-nodes"}
    assert all(isinstance(p, ResourceValidationPolicy) for p in built if not isinstance(p, StackValidationPolicy))


def test_the_switches_are_policy_config_without_defaults() -> None:
    schemas = _analyzer().config_schemas()
    assert set(schemas) == {"no-public-exposure", "deletion-protection-on-production", "private-cluster"}
    assert set(schemas["private-cluster"]) == {"allowPublicNodes", "allowOpenControlPlane"}
    assert schemas["no-public-exposure"]["allowPublicExposure"]["type"] == "boolean"
    assert schemas["deletion-protection-on-production"]["production"]["type"] == "boolean"
    # A default would be filled in by the CLI and hide the stack's own llm: setting.
    assert not any("default" in prop for schema in schemas.values() for prop in schema.values())


def test_main_serves_the_policies_under_the_pack_name(monkeypatch: pytest.MonkeyPatch) -> None:
    served: dict[str, Any] = {}

    def serve(name: str, **kwargs: Any) -> None:
        served.update(name=name, **kwargs)

    monkeypatch.setattr(pulumi_policy, "PolicyPack", serve)
    monkeypatch.setattr(sys, "path", list(sys.path))
    runpy.run_path(str(PROJECT_ROOT / "policy" / "__main__.py"), run_name="__main__")
    assert served["name"] == PACK_NAME
    assert [p.name for p in served["policies"]] == [rule.name for rule in RULES]
    assert served["enforcement_level"] is EnforcementLevel.MANDATORY


def test_the_policy_project_file_runs_python_in_the_projects_environment() -> None:
    import yaml

    project = yaml.safe_load((PROJECT_ROOT / "policy" / "PulumiPolicy.yaml").read_text())
    assert project["runtime"]["name"] == "python"
    assert (PROJECT_ROOT / "policy" / project["runtime"]["options"]["virtualenv"]).resolve() == (PROJECT_ROOT / ".venv").resolve()


# --- switches: policy config, else the stack's own config ---------------------------------


def test_a_load_balancer_is_reported_unless_the_stack_opts_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    assert analyze("kubernetes:core/v1:Service", "vllm", service("LoadBalancer")) == {"no-public-exposure"}
    assert analyze("kubernetes:core/v1:Service", "vllm", service("ClusterIP")) == set()


def test_the_stack_config_the_cli_passes_opts_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"llm:allowPublicExposure": "true"}))
    assert analyze("kubernetes:core/v1:Service", "vllm", service("LoadBalancer")) == set()


def test_the_policy_config_overrides_the_stack_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"llm:allowPublicExposure": "true"}))
    veto = {"no-public-exposure": {"allowPublicExposure": False}}
    assert analyze("kubernetes:core/v1:Service", "vllm", service("LoadBalancer"), veto) == {"no-public-exposure"}


def test_production_comes_from_the_policy_config_or_the_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    private = {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    cluster = {"name": "llm-serving", "deletionProtection": False, "resourceLabels": LABELS, "privateClusterConfig": private}
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    assert analyze("gcp:container/cluster:Cluster", "gke", cluster) == set()
    production = {"deletion-protection-on-production": {"production": True}}
    assert analyze("gcp:container/cluster:Cluster", "gke", cluster, production) == {"deletion-protection-on-production"}
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"llm:production": "true"}))
    assert analyze("gcp:container/cluster:Cluster", "gke", cluster) == {"deletion-protection-on-production"}


def test_an_open_control_plane_passes_with_authorized_networks_or_either_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    private = {"enablePrivateNodes": True, "enablePrivateEndpoint": False}
    cluster = {"name": "llm-serving", "resourceLabels": LABELS, "privateClusterConfig": private}
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    assert analyze("gcp:container/cluster:Cluster", "gke", cluster) == {"private-cluster"}
    networks = {"cidrBlocks": [{"cidrBlock": "10.0.0.0/8"}]}
    assert analyze("gcp:container/cluster:Cluster", "gke", {**cluster, "masterAuthorizedNetworksConfig": networks}) == set()
    opt_in = {"private-cluster": {"allowOpenControlPlane": True}}
    assert analyze("gcp:container/cluster:Cluster", "gke", cluster, opt_in) == set()
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"llm:allowOpenControlPlane": "true"}))
    assert analyze("gcp:container/cluster:Cluster", "gke", cluster) == set()
    # The policy config pins the answer over the stack's.
    veto = {"private-cluster": {"allowOpenControlPlane": False}}
    assert analyze("gcp:container/cluster:Cluster", "gke", cluster, veto) == {"private-cluster"}


# --- what a live pack sees ----------------------------------------------------------------


def test_secrets_reach_a_validation_as_plain_values_so_only_offline_tests_judge_secret_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    marked = {"metadata": {"name": "hf-token", "labels": LABELS}, "stringData": {**SECRET_SIG, "value": {"value": "hf_x"}}}
    unmarked = {"metadata": {"name": "hf-token", "labels": LABELS}, "stringData": {"value": "hf_x"}}
    # pulumi-policy strips the marker before validation: both look the same, so neither is reported.
    assert analyze("kubernetes:core/v1:Secret", "hf-token", marked) == set()
    assert analyze("kubernetes:core/v1:Secret", "hf-token", unmarked) == set()


def test_a_literal_token_in_a_pod_is_reported_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    leaking = deployment(SPOT_B200, env=[{"name": "HF_TOKEN", "value": "hf_x"}])
    assert analyze("kubernetes:apps/v1:Deployment", "vllm", leaking) == {"secrets-never-in-plain-text"}


def test_values_a_preview_does_not_know_yet_are_not_reported() -> None:
    unknown_labels = {"metadata": {"name": "vllm", "labels": UNKNOWN_STRING}, "spec": {"type": "ClusterIP"}}
    unknown_selector = deployment({})
    unknown_selector["spec"]["template"]["spec"]["nodeSelector"] = UNKNOWN_STRING
    assert analyze("kubernetes:core/v1:Service", "vllm", unknown_labels) == set()
    assert analyze("kubernetes:apps/v1:Deployment", "vllm", unknown_selector) == set()
    assert analyze_stack([("kubernetes:apps/v1:Deployment", "vllm", unknown_selector)]) == []


def test_the_stack_policy_knows_the_stacks_compute_classes() -> None:
    compute_class = {"metadata": {"name": "a4-fallback", "labels": LABELS}, "spec": {"priorities": [], "whenUnsatisfiable": "DoNotScaleUp"}}
    known = deployment({"cloud.google.com/compute-class": "a4-fallback"})
    unknown = deployment({"cloud.google.com/compute-class": "somewhere-else"})
    stack = [("kubernetes:cloud.google.com/v1:ComputeClass", "compute-class", compute_class)]
    assert analyze_stack([*stack, ("kubernetes:apps/v1:Deployment", "vllm", known)]) == []
    assert analyze_stack([*stack, ("kubernetes:apps/v1:Deployment", "vllm", unknown)]) == [
        ("gpu-pods-take-whole-a4-nodes", URN.format(type="kubernetes:apps/v1:Deployment", name="vllm"))
    ]


def test_a_whole_node_spot_replica_passes_live(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    assert analyze("kubernetes:apps/v1:Deployment", "vllm", deployment(SPOT_B200)) == set()
    assert analyze_stack([("kubernetes:apps/v1:Deployment", "vllm", deployment(SPOT_B200))]) == []
