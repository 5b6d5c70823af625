"""One test per class of one-line mutant that survived the suite outside the modules mutation testing covered.

Each asserts the behaviour the mutant breaks, through the render where the program decides it; skipAwait in
the plan is tested in tests/render/test_awaits.py.
"""

from __future__ import annotations

import pytest

from render.chart import CLUSTER_SCOPED, chart_objects
from render.engine import Render, redact
from tests.conftest import render_with, rendered

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
COMPUTE_CLASS = "kubernetes:cloud.google.com/v1:ComputeClass"


def _vllm(render: Render) -> dict:  # type: ignore[type-arg]
    return next(r.inputs for r in render.by_type("kubernetes:apps/v1:Deployment") if r.inputs["metadata"]["name"] == "vllm")


def test_the_replicas_scaler_polls_at_its_setting() -> None:
    for seconds in (17, 45):
        render = render_with("batch", autoscaling={"enabled": True, "maxReplicas": 4, "pollSeconds": seconds})
        scaler = next(r.inputs for r in render.by_type(SCALED_OBJECT) if r.inputs["metadata"]["name"] == "vllm")
        assert scaler["spec"]["pollingInterval"] == seconds


@pytest.mark.parametrize("hours", [5, 24])
def test_a_flex_start_step_runs_for_its_hours_in_seconds(hours: int) -> None:
    capacity = {"mode": "fallback", "fallback": ["spot", "flex-start"], "flexStart": {"maxRunHours": hours}}
    (compute_class,) = render_with("dev", capacity=capacity).by_type(COMPUTE_CLASS)
    flex = compute_class.inputs["spec"]["priorities"][1]
    assert flex["flexStart"] == {"enabled": True} and flex["maxRunDurationSeconds"] == hours * 3600


@pytest.mark.parametrize("stack", ["gateway", "batch"])
def test_chart_objects_are_namespaced_as_their_kind_is(stack: str) -> None:
    items = chart_objects(rendered(stack))
    assert any(item.manifest["kind"] in CLUSTER_SCOPED for item in items)
    for item in items:
        namespace = (item.manifest.get("metadata") or {}).get("namespace")
        if item.manifest["kind"] in CLUSTER_SCOPED:
            assert namespace is None, f"{item.manifest['kind']} {item.manifest['metadata']['name']}"
        else:
            assert namespace, f"{item.manifest['kind']} {item.manifest['metadata']['name']}"


def test_a_drain_shorter_than_spots_is_kept_under_spot() -> None:
    pod = _vllm(render_with("dev", drain={"preStopSeconds": 6, "shutdownTimeoutSeconds": 10}))["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["lifecycle"]["preStop"]["sleep"]["seconds"] == 6
    assert "--shutdown-timeout=10" in container["command"]
    assert pod["terminationGracePeriodSeconds"] == 25


def test_the_hourly_cost_counts_every_node() -> None:
    def cost(nodes: int) -> float:
        return float(redact(render_with("dev", nodes=nodes).outputs)["estimates"]["costPerHour"])

    assert cost(3) - cost(1) == pytest.approx(2 * 32.61, abs=0.02)
