"""The lifecycle checks catch each class of failure a first `pulumi up` or a destroy would meet: one planted per class."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from render.engine import Registration, Render
from render.lifecycle import creation_problems, creation_waves, destroy, lifecycle_text
from tests.conftest import render_with, rendered


def planted(render: Render, pick: Callable[[Registration], bool], **changes: Any) -> Render:
    """The render with the picked resources changed; everything else as it was."""
    picked = [r for r in render.resources if pick(r)]
    assert picked, "the plant found nothing to change"
    resources = [replace(r, **changes) if pick(r) else r for r in render.resources]
    return Render(render.stack, resources, render.outputs, render.invokes)


def without(render: Render, pick: Callable[[Registration], bool]) -> Render:
    assert any(pick(r) for r in render.resources)
    return Render(render.stack, [r for r in render.resources if not pick(r)], render.outputs, render.invokes)


def kind(name: str) -> Callable[[Registration], bool]:
    return lambda r: r.custom and r.inputs.get("kind") == name


def test_an_alert_condition_that_asks_for_unseen_metrics_is_caught() -> None:
    render = rendered("dev")
    policy = render.by_type("gcp:monitoring/alertPolicy:AlertPolicy")[0]
    conditions = [{"conditionPrometheusQueryLanguage": {"query": "up > 0"}, "displayName": "x"}]
    found = creation_problems(planted(render, lambda r: r.urn == policy.urn, inputs={**policy.inputs, "conditions": conditions}))
    assert found == [f"AlertPolicy {policy.name}: {found[0].split(': ', 1)[1]}"]
    assert "disableMetricValidation" in found[0]


def test_a_resource_type_without_a_known_api_is_caught() -> None:
    # A module the program never registers from (the batch path made storage a known one).
    found = creation_problems(planted(rendered("dev"), lambda r: r.type == "gcp:compute/router:Router", type="gcp:pubsub/topic:Topic"))
    assert found == ["gcp:pubsub/topic:Topic router: no API is known for its type; add its module to components/apis.py SERVING_API"]


def test_an_api_the_stack_never_enables_is_caught() -> None:
    found = creation_problems(without(rendered("dev"), lambda r: r.inputs.get("service") == "monitoring.googleapis.com"))
    assert found and all("needs monitoring.googleapis.com, which the stack never enables" in line for line in found)


def test_a_resource_that_does_not_wait_for_its_api_is_caught() -> None:
    found = creation_problems(planted(rendered("dev"), lambda r: r.type == "gcp:compute/network:Network", dependencies=()))
    assert found == [
        "gcp:compute/network:Network vpc: may be created before compute.googleapis.com is enabled: it does not wait for that API"
    ]


def test_a_custom_resource_created_before_its_crd_is_caught() -> None:
    render = render_with("dev", autoscaling={"enabled": True, "maxReplicas": 2})
    found = creation_problems(planted(render, kind("ScaledObject"), dependencies=()))
    assert any("ScaledObject vllm: may be created before the CRD of keda.sh" in line for line in found), found


def test_a_custom_resource_nobody_installs_the_crd_of_is_caught() -> None:
    render = rendered("dev")
    monitoring = next(r for r in render.resources if kind("PodMonitoring")(r))
    changed = {**monitoring.inputs, "apiVersion": "example.com/v1"}
    found = creation_problems(planted(render, lambda r: r.urn == monitoring.urn, inputs=changed))
    assert found == [
        "PodMonitoring vllm-replicas: no CRD for example.com exists when it is created: neither GKE nor the stack installs one"
    ]


def test_an_object_created_before_its_namespace_is_caught() -> None:
    found = creation_problems(planted(rendered("dev"), kind("PodDisruptionBudget"), dependencies=(), parent=""))
    assert "PodDisruptionBudget vllm: may be created before its namespace llm-serving" in found


def test_a_gateway_created_before_its_proxy_only_subnet_is_caught() -> None:
    found = creation_problems(planted(rendered("gateway"), kind("Gateway"), dependencies=()))
    assert any("proxy-only subnet" in line for line in found) and any("networkservices" in line for line in found)


def test_a_protected_resource_stops_the_whole_destroy() -> None:
    outcome = destroy(planted(rendered("dev"), lambda r: r.type == "gcp:compute/network:Network", protect=True))
    assert outcome.deletes == [] and [r.name for r in outcome.refused] == ["vpc"]


def test_retained_resources_are_named_in_the_destroy_summary() -> None:
    outcome = destroy(planted(rendered("dev"), lambda r: r.type == "gcp:compute/network:Network", retain_on_delete=True))
    assert "leaves 1 in place: vpc" in outcome.summary()


def test_kubernetes_objects_are_created_after_the_cluster_and_deleted_before_it() -> None:
    render = rendered("dev")
    position = {r.urn: index for index, wave in enumerate(creation_waves(render)) for r in wave}
    cluster = render.one("gcp:container/cluster:Cluster")
    for resource in render.resources:
        if resource.type.startswith("kubernetes:") and resource.custom:
            assert position[resource.urn] > position[cluster.urn], resource.name
    order = [r.urn for r in destroy(render).deletes]
    assert all(order.index(r.urn) < order.index(cluster.urn) for r in render.resources if r.type.startswith("kubernetes:") and r.custom)


# Prod's 12 reserved nodes at $88.93 bill whether or not replicas run.
@pytest.mark.parametrize(("stack_name", "reserved"), [("dev", 0.0), ("prod", 12 * 88.93)])
def test_the_render_shows_the_cost_of_what_stays_after_a_scale_to_zero(stack_name: str, reserved: float) -> None:
    text = lifecycle_text(rendered(stack_name))
    # $0.10 cluster fee + 100 GiB and 2,400 MiB/s of Hyperdisk ML ($0.08/GiB-, $0.12/MiB/s-month) + its snapshot ($0.05/GiB-month).
    idle = reserved + 0.10 + (100 * 0.08 + 2400 * 0.12) / 730 + 100 * 0.05 / 730
    assert f"after a scale to zero: ${idle:,.2f}/h keeps billing" in text
    assert "model cache snapshot" in text


def test_an_inference_pool_on_a_cluster_that_may_lack_its_crds_is_caught() -> None:
    # GKE installs the InferencePool CRDs from 1.34.0-gke.1626000; a bare 1.34 cannot promise that patch.
    render = render_with("gateway", cluster={"deletionProtection": False, "version": "1.34"}, gateway={"installCrds": "never"})
    found = creation_problems(render)
    assert any("no CRD for inference.networking.k8s.io exists when it is created" in line for line in found), found
    assert creation_problems(render_with("gateway", cluster={"deletionProtection": False, "version": "1.34"})) == []
