"""The cluster model: one identity per object, every reference resolves, no field GKE refuses."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from render.cluster_model import ClusterModelError, Sourced, check_cluster, cluster_objects, problems
from render.engine import Render
from tests.conftest import STACKS, at, render_with, rendered

# The dev stack's read-only claim and snapshot share this name.
CACHE = "model-cache-qwen3-5-27b-fp8-36bbd8e7"
TEMPLATE = ("spec", "template", "spec")


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_holds_together(stack: str) -> None:
    assert problems(cluster_objects(rendered(stack))) == []


def test_stacks_with_every_option_hold_together() -> None:
    render = render_with(
        "gateway",
        benchmark={"enabled": True},
        autoscaling={"enabled": True},
        capacity={"mode": "fallback", "fallback": ["spot"]},
    )
    assert problems(cluster_objects(render)) == []


def planted(render: Render, kind: str, name: str, change: Callable[[dict[str, Any]], None]) -> list[str]:
    objects = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in cluster_objects(render)]
    (target,) = [o for o in objects if o.kind == kind and o.name == name]
    change(target.manifest)
    return problems(objects)


def test_two_objects_with_one_identity_fail_the_render_naming_both() -> None:
    render = rendered("gateway")
    objects = cluster_objects(render)
    (chart_monitoring,) = [o for o in objects if o.kind == "PodMonitoring" and o.source.startswith("chart")]
    (own,) = [o for o in objects if o.kind == "PodMonitoring" and o.source.startswith("the program")]
    clash = Sourced(own.source, {**own.manifest, "metadata": {**own.manifest["metadata"], "name": chart_monitoring.name}})
    (found,) = problems([*[o for o in objects if o is not own], clash])
    assert found.startswith("PodMonitoring llm-serving/vllm: made twice")
    assert "chart vllm (inferencepool v1.4.0)" in found and "the program" in found and "AlreadyExists" in found


@pytest.mark.parametrize(
    ("stack", "kind", "name", "change", "expected"),
    [
        ("gateway", "HTTPRoute", "vllm", lambda m: m["spec"]["rules"][0].update(timeouts={"request": "300s"}), "not supported by GKE"),
        ("gateway", "HTTPRoute", "vllm", lambda m: m["spec"]["parentRefs"][0].update(name="nowhere"), "parent Gateway nowhere"),
        ("gateway", "HTTPRoute", "vllm", lambda m: m["spec"]["rules"][0]["backendRefs"][0].update(name="other"), "InferencePool other"),
        (
            "dev",
            "PersistentVolumeClaim",
            CACHE,
            lambda m: m["spec"]["dataSource"].update(name="x"),
            "VolumeSnapshot x",
        ),
        (
            "dev",
            "PersistentVolumeClaim",
            CACHE,
            lambda m: m["spec"].update(storageClassName="fast"),
            "StorageClass fast",
        ),
        (
            "dev",
            "VolumeSnapshot",
            CACHE,
            lambda m: m["spec"].update(volumeSnapshotClassName="x"),
            "VolumeSnapshotClass x",
        ),
        (
            "dev",
            "VolumeSnapshot",
            CACHE,
            lambda m: m["spec"]["source"].update(persistentVolumeClaimName="y"),
            "PersistentVolumeClaim y",
        ),
        (
            "dev",
            "Deployment",
            "vllm",
            lambda m: at(m, *TEMPLATE, "volumes", 1, "persistentVolumeClaim").update(claimName="z"),
            "Claim z",
        ),
        (
            "dev",
            "Deployment",
            "vllm",
            lambda m: at(m, *TEMPLATE, "nodeSelector").update({"cloud.google.com/compute-class": "gpu"}),
            "ComputeClass gpu",
        ),
        ("dev", "Service", "vllm", lambda m: m["spec"]["selector"].update(app="other"), "matches no pod"),
        ("dev", "PodDisruptionBudget", "vllm", lambda m: m["spec"]["selector"]["matchLabels"].update(app="other"), "matches no pod"),
        ("gateway", "GCPBackendPolicy", "vllm", lambda m: m["spec"]["targetRef"].update(name="gone"), "target InferencePool gone"),
        (
            "gateway",
            "InferencePool",
            "vllm",
            lambda m: m["spec"]["endpointPickerRef"].update(name="epp-x"),
            "endpoint picker Service epp-x",
        ),
        (
            "dev",
            "PersistentVolumeClaim",
            CACHE,
            lambda m: m["metadata"].update(namespace="elsewhere"),
            "namespace elsewhere",
        ),
    ],
    ids=[
        "route-timeouts",
        "route-parent",
        "route-backend",
        "claim-snapshot",
        "claim-class",
        "snapshot-class",
        "snapshot-source",
        "pod-claim",
        "pod-compute-class",
        "service-selector",
        "budget-selector",
        "policy-target",
        "pool-picker",
        "namespace",
    ],
)
def test_each_class_of_problem_is_caught(stack: str, kind: str, name: str, change: Callable[[dict[str, Any]], None], expected: str) -> None:
    found = planted(rendered(stack), kind, name, change)
    assert any(expected in problem for problem in found), found


def test_a_secret_key_the_pods_read_must_exist() -> None:
    render = render_with("dev", cache={"enabled": False})
    objects = cluster_objects(render)
    deployment = next(o for o in objects if o.kind == "Deployment")
    pod = deployment.manifest["spec"]["template"]["spec"]
    pod["containers"][0]["env"].append({"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "missing", "key": "value"}}})
    assert any("Secret missing, which does not exist" in p for p in problems(objects))


def test_the_render_fails_on_a_problem_naming_it() -> None:
    render = rendered("gateway")
    route = render.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")
    route.inputs["spec"]["rules"][0]["timeouts"] = {"request": "300s"}
    try:
        with pytest.raises(ClusterModelError, match="1 cluster model problem"):
            check_cluster(render)
    finally:
        del route.inputs["spec"]["rules"][0]["timeouts"]
