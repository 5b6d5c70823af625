"""The pack's policies called as pulumi-policy calls them: what reaches each rule and what each report carries.

pulumi-policy (``pulumi_policy/policy.py``) calls a resource policy's ``validate(args, report_violation)`` with the
resource's type, name, URN and properties, and a stack policy's with every resource; ``report_violation(message,
urn)`` takes the message and, for a stack policy, the URN of the resource at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, cast

import pytest
from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

from policy.guardrails import _stack_policy, policies, stack_facts
from policy.rules import ALLOW_OPEN_CONTROL_PLANE, ALLOW_PUBLIC_EXPOSURE, ALLOW_PUBLIC_NODES, PRODUCTION, Resource, Rule, StackFacts

CLUSTER = "gcp:container/cluster:Cluster"
CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


@dataclass
class Args:
    """The fields of pulumi-policy's validation args that the policies read."""

    resource_type: str
    name: str
    props: Mapping[str, Any]
    urn: str
    config: Mapping[str, Any] = field(default_factory=dict)
    resources: list[Args] = field(default_factory=list)

    def get_config(self) -> Mapping[str, Any]:
        return self.config


def policy(name: str) -> Any:
    (found,) = [p for p in policies() if p.name == name]
    return found


def reports(name: str, args: Args) -> list[tuple[Any, ...]]:
    found: list[tuple[Any, ...]] = []
    policy(name).validate(args, lambda *given: found.append(given))
    return found


def test_a_resource_policy_reports_the_rules_message_for_the_resource_by_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    public_nodes = {"privateClusterConfig": {"enablePrivateNodes": False, "enablePrivateEndpoint": True}}
    cluster = Args(CLUSTER, "gke", public_nodes, f"urn:pulumi:dev::llm::{CLUSTER}::gke")
    (report,) = reports("private-cluster", cluster)
    # The message names the resource by its Pulumi name (a GCP resource has no metadata.name).
    assert report[1] is None and report[0].startswith("Cluster gke: nodes get public IPs")


def test_a_resource_policy_judges_a_resource_by_its_urn(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    unlabelled = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
    own = Args(CONFIG_MAP, "settings", unlabelled, f"urn:pulumi:dev::llm::llm:index:Serving${CONFIG_MAP}::settings")
    (report,) = reports("project-labels", own)
    assert report == ("ConfigMap settings: missing label(s) app, managed-by, stack; give it the stack's labels (Stack.labels)", None)
    # A chart's own objects are the chart's, not the program's: their parent in the URN says so.
    charted = Args(CONFIG_MAP, "settings", unlabelled, f"urn:pulumi:dev::llm::kubernetes:helm.sh/v4:Chart${CONFIG_MAP}::settings")
    assert reports("project-labels", charted) == []


def test_a_stack_policy_reports_each_resource_at_fault_with_its_urn_and_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    gpus = {"nvidia.com/gpu": "4"}
    containers = [{"name": "c", "resources": {"requests": gpus, "limits": gpus}}]
    pod = {"nodeSelector": {"cloud.google.com/gke-accelerator": "nvidia-b200"}, "containers": containers}
    urn = "urn:pulumi:dev::llm::kubernetes:batch/v1:Job::bench"
    job = Args("kubernetes:batch/v1:Job", "bench", {"spec": {"template": {"spec": pod}}}, urn)
    (report,) = reports("gpu-pods-take-whole-a4-nodes", Args("", "", {}, "", resources=[job]))
    assert report[1] == urn
    assert report[0].startswith("Job bench: requests 4 nvidia.com/gpu; a GPU pod takes one whole A4 node: exactly 8")


def test_each_switch_is_read_from_the_policy_config_else_the_stack_config() -> None:
    switches = {
        ALLOW_PUBLIC_EXPOSURE.key: "allow_public_exposure",
        PRODUCTION.key: "production",
        ALLOW_PUBLIC_NODES.key: "allow_public_nodes",
        ALLOW_OPEN_CONTROL_PLANE.key: "allow_open_control_plane",
    }
    # A live pack cannot tell a Pulumi secret from plain text (pulumi/pulumi-policy#241).
    assert stack_facts({}, {}) == StackFacts(secrets_marked=False)
    for key, attribute in switches.items():
        opted = replace(StackFacts(secrets_marked=False), **cast("dict[str, Any]", {attribute: True}))
        assert stack_facts({}, {f"llm:{key}": "true"}) == opted, key
        assert stack_facts({key: True}, {}) == opted, key
        assert stack_facts({key: False}, {f"llm:{key}": "true"}) == StackFacts(secrets_marked=False), key


def test_a_switchs_schema_describes_it_and_a_stack_policy_with_switches_has_one_too() -> None:
    (exposure,) = [p for p in policies() if p.name == "no-public-exposure"]
    assert exposure.config_schema is not None
    assert exposure.config_schema.properties == {
        ALLOW_PUBLIC_EXPOSURE.key: {"type": "boolean", "description": ALLOW_PUBLIC_EXPOSURE.description}
    }
    opted = Rule("opted", "a stack rule with a switch", lambda resource, facts: [], needs_stack=True, switches=(PRODUCTION,))
    built = _stack_policy(opted)
    assert isinstance(built, StackValidationPolicy) and built.config_schema is not None
    assert built.config_schema.properties == {PRODUCTION.key: {"type": "boolean", "description": PRODUCTION.description}}
    assert all(isinstance(p, ResourceValidationPolicy) or p.config_schema is None for p in policies() if p.name != "no-public-exposure")


def test_the_stack_policy_passes_the_stacks_switches_to_its_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    seen: list[tuple[Resource, StackFacts]] = []

    def probe(resource: Resource, facts: StackFacts) -> list[str]:
        seen.append((resource, facts))
        return []

    rule = Rule("probe", "records its calls", probe, needs_stack=True)
    urn = f"urn:pulumi:dev::llm::{CONFIG_MAP}::settings"
    args = Args("", "", {}, "", config={PRODUCTION.key: True}, resources=[Args(CONFIG_MAP, "settings", {"data": {"a": "b"}}, urn)])
    _stack_policy(rule).validate(cast("Any", args), lambda *given: None)
    ((resource, facts),) = seen
    assert resource == Resource(CONFIG_MAP, "settings", {"data": {"a": "b"}}, urn)
    assert facts.production is True and facts.compute_classes == frozenset()
