"""Scaled to zero: no GPU pod, no endpoint picker; cluster, network and model cache stay."""

from __future__ import annotations

from typing import Any

import pytest

from render.engine import Render, reveal
from tests.conftest import render_with, rendered

KEPT_COMPONENTS = ("llm:platform:Network", "llm:platform:Cluster", "llm:storage:ModelCache")


def gpus_running(render: Render) -> int:
    """GPUs that the rendered workloads would hold: replicas x GPU limit per pod."""
    total = 0
    for registration in render.resources:
        spec: dict[str, Any] = registration.inputs.get("spec") or {}
        template = spec.get("template")
        if not registration.type.startswith("kubernetes:") or not isinstance(template, dict):
            continue
        pods = spec.get("replicas", 1) if registration.type.endswith(":Deployment") else spec.get("parallelism", 1)
        for container in template["spec"]["containers"]:
            total += pods * int(container.get("resources", {}).get("limits", {}).get("nvidia.com/gpu", 0))
    return total


def kept(render: Render) -> dict[str, Any]:
    owners = {r.urn for r in render.resources if r.type in KEPT_COMPONENTS}
    return {r.urn: r.inputs for r in render.resources if r.parent in owners}


@pytest.mark.parametrize("stack", ["prod", "gateway"])
def test_at_zero_nodes_no_gpu_is_held_and_no_endpoint_picker_runs(stack: str) -> None:
    idle = render_with(stack, nodes=0)
    assert gpus_running(rendered(stack)) > 0
    assert gpus_running(idle) == 0
    assert idle.by_type("kubernetes:helm.sh/v4:Chart") == []
    assert reveal(idle.outputs)["serving"]["gpus"] == 0


def test_at_zero_nodes_the_cache_cluster_and_network_are_those_of_twelve_nodes() -> None:
    busy, idle = rendered("prod"), render_with("prod", nodes=0)
    assert kept(idle) == kept(busy)
    assert len(kept(idle)) >= 9


def test_the_idle_render_shows_the_idle_cost_per_hour() -> None:
    estimates = reveal(render_with("prod", nodes=0).outputs)["estimates"]
    assert estimates["tokensPerSecond"] == 0
    # The 12 reserved nodes bill whether or not replicas run; no other GPU node does. Then the cluster fee
    # and the Hyperdisk ML cache (100 GiB, 2,400 MiB/s).
    assert estimates["costPerHour"] == pytest.approx(12 * 88.93 + 0.10 + (100 * 0.08 + 2400 * 0.12) / 730, abs=0.01)
    assert "scaled to zero" in estimates["basis"]
