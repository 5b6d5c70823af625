"""Autopilot's admission: every stack's objects, the charts' included, are admitted; each refusal class is caught."""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from render.autopilot import admission_problems, control_plane_ports, pod_specs, rules
from render.cluster_model import ClusterModelError, Sourced, check_cluster, cluster_objects
from render.engine import Render
from tests.conftest import STACKS, at, render_with, rendered

TEMPLATE = ("spec", "template", "spec")


@cache
def variant() -> Render:
    """Every option that adds objects: the gateway chart, KEDA's chart, the benchmark, a ComputeClass."""
    return render_with(
        "gateway",
        benchmark={"enabled": True},
        autoscaling={"enabled": True},
        capacity={"mode": "fallback", "fallback": ["spot"]},
    )


@cache
def objects_of(stack: str | None) -> tuple[Sourced, ...]:
    """The objects of a stack (``None``: the variant with every option); the charts render once."""
    return tuple(cluster_objects(variant() if stack is None else rendered(stack)))


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_is_admitted_by_autopilot(stack: str) -> None:
    assert admission_problems(objects_of(stack)) == []


def test_every_option_and_both_charts_are_admitted() -> None:
    assert admission_problems(objects_of(None)) == []


def test_keda_operator_gets_its_identity_without_the_refused_node_selector() -> None:
    objects = objects_of(None)
    (operator,) = [o for o in objects if o.kind == "Deployment" and o.name == "keda-operator"]
    (account,) = [o for o in objects if o.kind == "ServiceAccount" and o.name == "keda-operator"]
    assert "iam.gke.io/gke-metadata-server-enabled" not in at(operator.manifest, *TEMPLATE).get("nodeSelector", {})
    # The Google account's email is unknown offline; the chart renders the key from the value.
    assert "iam.gke.io/gcp-service-account" in account.manifest["metadata"]["annotations"]


def keda_operator_with_pod_identity(objects: tuple[Sourced, ...]) -> list[Sourced]:
    """The operator as chart 2.20.2 renders it with ``podIdentity.gcp.enabled: true``."""
    changed = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in objects]
    (operator,) = [o for o in changed if o.kind == "Deployment" and o.name == "keda-operator"]
    at(operator.manifest, *TEMPLATE)["nodeSelector"]["iam.gke.io/gke-metadata-server-enabled"] = "true"
    return changed


def test_keda_chart_with_gcp_pod_identity_is_refused_naming_the_selector() -> None:
    found = admission_problems(keda_operator_with_pod_identity(objects_of(None)))
    (refusal,) = [p for p in found if "gke-metadata-server-enabled" in p]
    assert refusal.startswith("Deployment keda/keda-operator (chart keda (keda 2.20.2)): spec.template.spec.nodeSelector")
    assert "all nodes use Workload Identity" in refusal and "workload-identity" in refusal


# What the control plane calls in a stack with KEDA: its admission webhook and its external metrics API.
KEDA_CALLEES = {"ValidatingWebhookConfiguration keda-admission", "APIService v1beta1.external.metrics.k8s.io"}


def test_the_control_plane_calls_kedas_webhook_and_metrics_api_on_ports_gkes_firewall_opens() -> None:
    ports = control_plane_ports(objects_of(None))
    assert set(ports) == KEDA_CALLEES
    assert set(ports.values()) <= set(rules()["control_plane_calls"]["ports"]), ports


def test_a_webhook_behind_a_port_the_firewall_closes_is_refused_naming_both() -> None:
    def chart_default_port(service: dict[str, Any]) -> None:
        service["spec"]["ports"][0]["targetPort"] = 9443

    refusals = planted(None, "Service", "keda-admission-webhooks", chart_default_port)
    # One per webhook of the configuration: each is a call the control plane makes.
    webhooks = next(o for o in objects_of(None) if o.label() == "ValidatingWebhookConfiguration keda-admission").manifest["webhooks"]
    assert len(refusals) == len(webhooks) > 0
    refusal = refusals[0]
    assert refusal.startswith("ValidatingWebhookConfiguration keda-admission (chart keda (keda 2.20.2)): webhooks[0].clientConfig.service")
    assert "keda/keda-admission-webhooks" in refusal and "pod port 9443" in refusal and "443, 10250" in refusal


def planted(stack: str | None, kind: str, name: str, change: Callable[[dict[str, Any]], None]) -> list[str]:
    """The refusals a change to one object adds."""
    objects = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in objects_of(stack)]
    (target,) = [o for o in objects if o.kind == kind and o.name == name]
    change(target.manifest)
    before = set(admission_problems(objects_of(stack)))
    return [p for p in admission_problems(objects) if p not in before]


def _container(m: dict[str, Any]) -> dict[str, Any]:
    return at(m, *TEMPLATE, "containers", 0)  # type: ignore[no-any-return]


def _spot_affinity(m: dict[str, Any]) -> None:
    at(m, *TEMPLATE)["affinity"] = {
        "nodeAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "example.com/pool", "operator": "In", "values": ["a"]}]}}
            ]
        }
    }


@pytest.mark.parametrize(
    ("kind", "name", "change", "expected"),
    [
        (
            "Deployment",
            "vllm-epp",
            lambda m: at(m, *TEMPLATE).update(nodeSelector={"cloud.google.com/gke-nodepool": "cpu"}),
            "nodeSelector: key cloud.google.com/gke-nodepool is not one Autopilot admits",
        ),
        ("Deployment", "vllm-epp", _spot_affinity, "preference.matchExpressions[0]: key example.com/pool"),
        (
            "Job",
            "benchmark-1",
            lambda m: at(m, *TEMPLATE, "nodeSelector").update({"kubernetes.io/os": "linux"}),
            "key kubernetes.io/os is not allowed beside the custom ComputeClass",
        ),
        (
            "Deployment",
            "vllm",
            lambda m: at(m, *TEMPLATE).update(nodeSelector={"topology.kubernetes.io/zone": "europe-west4-b"}),
            "must select cloud.google.com/gke-accelerator or cloud.google.com/compute-class",
        ),
        ("Deployment", "vllm-epp", lambda m: at(m, *TEMPLATE).update(hostNetwork=True), "hostNetwork: true is refused"),
        (
            "Deployment",
            "vllm-epp",
            lambda m: _container(m).setdefault("securityContext", {}).update(privileged=True),
            "securityContext.privileged: true is refused",
        ),
        (
            "Deployment",
            "vllm-epp",
            lambda m: _container(m).setdefault("securityContext", {}).update(capabilities={"add": ["NET_ADMIN"]}),
            "capabilities.add: NET_ADMIN is refused",
        ),
        (
            "Deployment",
            "vllm-epp",
            lambda m: _container(m)["ports"][0].update(hostPort=9002),
            "hostPort 9002 is refused",
        ),
        (
            "Deployment",
            "vllm-epp",
            lambda m: at(m, *TEMPLATE).setdefault("volumes", []).append({"name": "root", "hostPath": {"path": "/"}}),
            "hostPath: / is outside",
        ),
        (
            "ServiceAccount",
            "vllm-epp",
            lambda m: m["metadata"].update(namespace="kube-system"),
            "kube-system is managed by GKE; creating a ServiceAccount there is refused",
        ),
    ],
    ids=[
        "selector-key",
        "preferred-affinity-key",
        "custom-class-companion",
        "gpu-without-gpu-selector",
        "host-namespace",
        "privileged",
        "capability",
        "host-port",
        "host-path",
        "managed-namespace",
    ],
)
def test_each_class_of_refusal_is_caught(kind: str, name: str, change: Callable[[dict[str, Any]], None], expected: str) -> None:
    found = planted(None, kind, name, change)
    assert any(expected in problem for problem in found), found
    assert all(problem.startswith(f"{kind} ") for problem in found), found


def test_a_replica_asking_more_than_the_b200_machine_is_refused_naming_the_figure() -> None:
    ceiling = rules()["resources"]["by_accelerator"]["nvidia-b200"]

    def more_cpu(m: dict[str, Any]) -> None:
        resources = _container(m)["resources"]
        for part in ("requests", "limits"):
            resources[part]["cpu"] = str(int(ceiling["max_cpu"]) + 1)

    (found,) = planted("dev", "Deployment", "vllm", more_cpu)
    assert f"cpu {int(ceiling['max_cpu']) + 1} is above the {ceiling['max_cpu']}" in found


def test_workload_separation_admits_a_custom_key_the_pod_tolerates() -> None:
    def separated(m: dict[str, Any]) -> None:
        pod = at(m, *TEMPLATE)
        pod["nodeSelector"] = {"group": "picker"}
        pod["tolerations"] = [{"key": "group", "operator": "Equal", "value": "picker", "effect": "NoSchedule"}]

    assert planted(None, "Deployment", "vllm-epp", separated) == []


def test_every_chart_pod_template_is_checked() -> None:
    charts = {o.source for o in objects_of(None) if o.source.startswith("chart") and list(pod_specs(o))}
    assert any("keda" in source for source in charts) and any("inferencepool" in source for source in charts), charts


def test_kedas_metrics_server_can_still_read_the_authentication_config_outside_kube_system() -> None:
    objects = objects_of(None)
    assert not [o for o in objects if o.namespace == "kube-system"]
    (account,) = [o for o in objects if o.kind == "ServiceAccount" and o.name.endswith("metrics-server")]
    bindings = [
        o
        for o in objects
        if o.kind == "ClusterRoleBinding"
        and {"kind": "ServiceAccount", "name": account.name, "namespace": account.namespace} in o.manifest["subjects"]
    ]
    roles = {o.name: o for o in objects if o.kind == "ClusterRole"}
    readable = [
        rule
        for binding in bindings
        if binding.manifest["roleRef"]["name"] in roles
        for rule in roles[binding.manifest["roleRef"]["name"]].manifest["rules"]
        if "configmaps" in rule["resources"] and "extension-apiserver-authentication" in rule.get("resourceNames", [])
    ]
    assert readable and {"get", "list", "watch"} <= set(readable[0]["verbs"])


def test_the_render_fails_on_a_refusal_naming_it() -> None:
    render = rendered("dev")
    pod = render.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"]
    pod["hostNetwork"] = True
    try:
        with pytest.raises(ClusterModelError, match="autogke-disallow-hostnamespaces"):
            check_cluster(render)
    finally:
        del pod["hostNetwork"]
