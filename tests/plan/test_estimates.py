"""Estimates come from the reference measurements, and only for the reference profile."""

from __future__ import annotations

import re
from typing import Any

import pytest

from plan.estimates import Estimate, scaling_efficiency
from plan.stack import plan_stack
from render.engine import PROJECT_ROOT, reveal
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered

# A config.json for model ids the catalogue lacks (llm:model.config): the 27B's.
OWN_CONFIG = "facts/data/models/Qwen--Qwen3.5-27B-FP8/config.json"


def settings(**values: Any) -> StackSettings:
    return StackSettings.model_validate({"project": "example-project", **values})


def estimate(stack: StackSettings) -> Estimate:
    """The figures as the stack's plan gives them."""
    return plan_stack(stack, "test").estimate


@pytest.mark.parametrize(("nodes", "measured"), [(1, 95_317), (2, 190_000), (4, 376_074), (8, 740_192), (12, 1_103_941)])
def test_measured_node_counts_give_the_measured_throughput(nodes: int, measured: int) -> None:
    assert estimate(settings(nodes=nodes)).tokens_per_second == measured


def test_prod_estimates_about_1_1m_tokens_per_second_and_its_cost() -> None:
    estimates = reveal(rendered("prod").outputs)["estimates"]
    assert estimates["tokensPerSecond"] == 1_103_941
    # 12 x $88.93 + $0.10 cluster fee + 100 GiB and 2,400 MiB/s of Hyperdisk ML at $0.08/GiB- and $0.12/MiB/s-month.
    assert estimates["costPerHour"] == pytest.approx(12 * 88.93 + 0.10 + (100 * 0.08 + 2400 * 0.12) / 730, abs=0.01)
    assert estimates["dollarsPerMillionTokens"] == pytest.approx(0.27, abs=0.005)


def test_dev_estimates_one_spot_node() -> None:
    estimates = reveal(rendered("dev").outputs)["estimates"]
    assert estimates["tokensPerSecond"] == 95_317
    assert estimates["costPerHour"] == pytest.approx(32.61 + 0.10 + (100 * 0.08 + 2400 * 0.12) / 730, abs=0.01)
    assert estimates["dollarsPerMillionTokens"] < 0.10


def test_between_measured_counts_the_efficiency_is_interpolated() -> None:
    efficiency, extrapolated = scaling_efficiency(10)
    assert scaling_efficiency(12)[0] < efficiency < scaling_efficiency(8)[0]
    assert not extrapolated
    assert scaling_efficiency(16)[1]


def test_gateway_routing_applies_the_measured_overhead() -> None:
    clusterip = estimate(settings(nodes=4))
    gateway = estimate(settings(nodes=4, routing="gateway"))
    assert gateway.tokens_per_second == round(376_074 * (1 - 0.35))
    assert clusterip.tokens_per_second is not None and gateway.tokens_per_second < clusterip.tokens_per_second
    assert "Inference Gateway" in gateway.basis


@pytest.mark.parametrize(
    "changes",
    [
        {"serving": {"maxNumSeqs": 512}},
        {"workload": {"inputTokens": 2048}, "serving": {"maxModelLen": 8192}},
        {"model": {"id": "Qwen/Qwen3.5-27B", "config": OWN_CONFIG}},
    ],
    ids=["profile", "workload", "model"],
)
def test_outside_the_reference_the_figures_are_an_estimate_that_says_so(changes: dict[str, Any]) -> None:
    result = estimate(settings(**changes))
    # The reference's tokens/s held, labelled: never a null with nothing said.
    assert result.tokens_per_second == 95_317 and result.dollars_per_million_tokens is not None
    assert result.basis.startswith("estimate, no reference figure")
    assert result.cost_per_hour is not None


def test_an_unknown_price_says_how_to_set_one() -> None:
    result = estimate(settings(capacity={"mode": "flex-start"}))
    assert result.cost_per_hour is None
    assert "capacity.pricePerNodeHour" in result.basis


def test_changing_the_image_keeps_the_reference_figure() -> None:
    render = render_with("dev", serving={"image": "vllm/vllm-openai:v0.33.0"})
    assert reveal(render.outputs)["estimates"]["tokensPerSecond"] == 95_317


def test_the_plan_estimates_the_throughput_docs_reference_cites_at_each_measured_node_count() -> None:
    text = (PROJECT_ROOT / "docs" / "reference.md").read_text()
    rows = re.findall(r"^\s*\| (\d+) \| ([\d,]+) \| [\d,]+ \|$", text, re.MULTILINE)
    assert rows
    for nodes, total in rows:
        assert estimate(settings(nodes=int(nodes))).tokens_per_second == int(total.replace(",", "")), nodes


@pytest.mark.parametrize(
    "values",
    [{"nodes": 0}, {"nodes": 0, "autoscaling": {"enabled": True, "maxReplicas": 4}}, {"nodes": 3, "autoscaling": {"enabled": True}}],
)
def test_the_estimates_say_scaled_to_zero_exactly_when_the_plan_does(values: dict[str, Any]) -> None:
    plan = plan_stack(settings(**values), "test")
    figures = plan.estimate
    assert ("scaled to zero" in figures.basis) == plan.scaled_to_zero
    assert (figures.tokens_per_second == 0) == plan.scaled_to_zero


# Autopilot general-purpose Pod list prices (us-central1) and the load balancer's hourly charge,
# as docs/reference.md cites them; written out here, not read from the code under test.
VCPU_HOUR = 0.0445
GIB_HOUR = 0.0049225
LOAD_BALANCER_HOUR = 0.025


@pytest.mark.parametrize(
    ("cpu", "memory", "replicas", "picker_hour"),
    [("10", "16Gi", 1, 10 * VCPU_HOUR + 16 * GIB_HOUR), ("4", "8192Mi", 3, 3 * (4 * VCPU_HOUR + 8 * GIB_HOUR))],
)
def test_gateway_mode_bills_its_endpoint_picker_and_load_balancer(cpu: str, memory: str, replicas: int, picker_hour: float) -> None:
    gateway = {"endpointPickerCpu": cpu, "endpointPickerMemory": memory, "endpointPickerReplicas": replicas}
    clusterip = settings(nodes=4)
    routed = settings(nodes=4, routing="gateway", gateway=gateway)
    # The picker and the load balancer stay with no replica running, so they are part of the idle bill too.
    kept = dict(estimate(routed).idle)
    assert kept["endpoint picker (Autopilot Pods)"] == pytest.approx(picker_hour)
    assert kept["internal Application Load Balancer"] == pytest.approx(LOAD_BALANCER_HOUR)
    assert "endpoint picker (Autopilot Pods)" not in dict(estimate(clusterip).idle)
    difference = estimate(routed).cost_per_hour - estimate(clusterip).cost_per_hour  # type: ignore[operator]
    assert difference == pytest.approx(picker_hour + LOAD_BALANCER_HOUR, abs=0.01)


# Prod's 12 replicas wake on its reserved nodes: that node time is billed anyway, so the wake adds nothing.
@pytest.mark.parametrize(("stack", "replicas", "price", "reserved"), [("dev", 1, 32.61, 0), ("prod", 12, 88.93, 12)])
def test_the_estimates_show_a_wakes_cold_start_phase_by_phase_and_what_it_costs(
    stack: str, replicas: int, price: float, reserved: int
) -> None:
    cold_start = reveal(rendered(stack).outputs)["estimates"]["coldStart"]
    assert cold_start["replicas"] == replicas
    phases = cold_start["phases"]
    assert set(phases) == {
        "nodeProvisioning",
        "image",
        "weights",
        "compileColdCache",
        "compileWarmCache",
        "firstAnswerColdKernels",
        "compileCacheOnly",
    }
    assert all(phase["source"] for phase in phases.values())
    for cache, engine in (
        ("coldCompileCache", ("compileColdCache", "firstAnswerColdKernels")),
        ("warmCompileCache", ("compileWarmCache",)),
    ):
        seconds = sum(phases[name]["seconds"] for name in ("nodeProvisioning", "image", "weights", *engine))
        # Every node of the wake bills from the start of provisioning to the last phase.
        assert cold_start["wakeCost"][cache] == pytest.approx((replicas - reserved) * price * seconds / 3600, abs=0.5)
        on_reservation = cold_start.get("wakeCostOnReservation", {}).get(cache, 0)
        assert on_reservation == pytest.approx(reserved * price * seconds / 3600, abs=0.5)
    spent = cold_start.get("wakeCostOnReservation", cold_start["wakeCost"])
    assert spent["warmCompileCache"] < spent["coldCompileCache"]
