"""The estimates follow the reference's rules at every node count, not only at the measured ones.

Every expected figure is worked out here by hand from the reference's measured totals
(95,317 / 190,000 / 376,074 / 740,192 / 1,103,941 tok/s at 1 / 2 / 4 / 8 / 12 nodes), its
gateway overheads (31 / 35 / 37% at 2 / 4 / 8 nodes) and its 2026 list prices (Spot $32.61,
1-year CUD $88.93 per node-hour, $0.10 cluster fee), never by calling the code under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from plan.estimates import Estimate, GatewayPods, cost_per_hour, gateway_bill
from plan.stack import plan_stack
from stacks.settings import StackSettings

# A config.json for model ids the catalogue lacks (llm:model.config): the 27B's.
OWN_CONFIG = "facts/data/models/Qwen--Qwen3.5-27B-FP8/config.json"

# Per-node throughput at each measured count: linear interpolation of the efficiency is linear in these.
PER_NODE = {1: 95_317.0, 2: 95_000.0, 4: 376_074 / 4, 8: 740_192 / 8, 12: 1_103_941 / 12}
NO_CACHE = {"cache": {"enabled": False}}


def figures(**values: Any) -> Estimate:
    settings = StackSettings.model_validate({"project": "example-project", **NO_CACHE, **values})
    return plan_stack(settings, "test").estimate


@pytest.mark.parametrize(
    ("nodes", "per_node"),
    [
        (3, (PER_NODE[2] + PER_NODE[4]) / 2),
        (5, PER_NODE[4] + (PER_NODE[8] - PER_NODE[4]) / 4),
        (10, (PER_NODE[8] + PER_NODE[12]) / 2),
        (11, PER_NODE[8] + (PER_NODE[12] - PER_NODE[8]) * 3 / 4),
    ],
)
def test_between_measured_counts_each_node_makes_the_interpolated_share(nodes: int, per_node: float) -> None:
    result = figures(nodes=nodes)
    assert result.tokens_per_second == round(nodes * per_node)
    assert result.basis.endswith(f"at {nodes} nodes")


def test_beyond_twelve_nodes_the_twelve_node_efficiency_holds_and_the_basis_says_so() -> None:
    result = figures(nodes=16)
    assert result.tokens_per_second == round(16 * PER_NODE[12])
    assert result.basis.endswith("(extrapolated beyond the measured node counts)")
    assert "extrapolated" not in figures(nodes=12).basis


def test_the_basis_names_the_per_node_figure_the_efficiency_and_the_count() -> None:
    assert figures(nodes=1).basis == "reference: 95,317 tok/s per node x 100.0% scaling efficiency at 1 node"
    # 190,000 / (2 x 95,317) = 99.67%.
    assert figures(nodes=2).basis == "reference: 95,317 tok/s per node x 99.7% scaling efficiency at 2 nodes"
    assert figures(nodes=2).as_output()["basis"] == figures(nodes=2).basis
    # 740,192 / (8 x 95,317) = 97.07%.
    assert figures(nodes=8).basis == "reference: 95,317 tok/s per node x 97.1% scaling efficiency at 8 nodes"


@pytest.mark.parametrize(
    ("nodes", "overhead", "extrapolated"),
    [(2, 0.31, False), (3, 0.33, False), (6, 0.36, False), (8, 0.37, False), (1, 0.31, True), (12, 0.37, False)],
)
def test_gateway_overhead_is_interpolated_between_its_measured_counts(nodes: int, overhead: float, extrapolated: bool) -> None:
    result = figures(nodes=nodes, routing="gateway")
    clusterip = figures(nodes=nodes)
    assert clusterip.tokens_per_second is not None
    per_node = {1: PER_NODE[1], 2: PER_NODE[2], 3: (PER_NODE[2] + PER_NODE[4]) / 2, 6: (PER_NODE[4] + PER_NODE[8]) / 2}
    per_node |= {8: PER_NODE[8], 12: PER_NODE[12]}
    assert result.tokens_per_second == round(nodes * per_node[nodes] * (1 - overhead))
    assert result.basis.startswith("reference: 95,317 tok/s per node x ")
    assert f"at {nodes} node" in result.basis and f"minus {overhead:.0%} Inference Gateway overhead" in result.basis
    # At 12 nodes the throughput table is measured but the gateway's is not: 8 is its last point.
    beyond_gateway = nodes > 8
    assert ("extrapolated" in result.basis) == (extrapolated or beyond_gateway)


@pytest.mark.parametrize(
    ("capacity", "price"),
    [
        ({"mode": "spot"}, 32.61),
        ({"mode": "reservation", "reservation": {"name": "r"}}, 88.93),
        ({"mode": "fallback", "fallback": ["spot", "reservation"], "reservation": {"name": "r"}}, 32.61),
        ({"mode": "fallback", "fallback": ["reservation", "spot"], "reservation": {"name": "r"}}, 88.93),
        ({"mode": "spot", "pricePerNodeHour": 20.0}, 20.0),
        ({"mode": "flex-start", "pricePerNodeHour": 50.0}, 50.0),
    ],
    ids=["spot", "reservation", "fallback-spot-first", "fallback-reservation-first", "configured", "flex-start-configured"],
)
def test_cost_is_nodes_at_the_first_steps_price_plus_the_cluster_fee(capacity: dict[str, Any], price: float) -> None:
    result = figures(nodes=3, capacity=capacity)
    assert result.cost_per_hour == pytest.approx(3 * price + 0.10, abs=0.005)
    assert "pricePerNodeHour" not in result.basis


def test_dollars_per_million_tokens_divide_the_hourly_cost_by_an_hours_tokens() -> None:
    result = figures(nodes=3)
    tokens = 3 * (PER_NODE[2] + PER_NODE[4]) / 2
    assert result.dollars_per_million_tokens == pytest.approx((3 * 32.61 + 0.10) / (tokens * 3600) * 1e6, abs=0.0005)


def test_dollars_per_million_tokens_are_rounded_to_a_tenth_of_a_cent() -> None:
    # A price high enough that the figure has digits to lose: $10,000 per node-hour on one node.
    result = figures(nodes=1, capacity={"mode": "spot", "pricePerNodeHour": 10_000.0})
    assert result.dollars_per_million_tokens == round(10_000.10 / (95_317 * 3600) * 1_000_000, 3)


def test_cost_per_hour_defaults_to_the_stacks_own_node_count() -> None:
    settings = StackSettings.model_validate({"project": "example-project", "nodes": 3, **NO_CACHE})
    costs = plan_stack(settings, "test").costing
    assert cost_per_hour(costs) == round(3 * 32.61 + 0.10, 2)
    assert cost_per_hour(costs, 5) == round(5 * 32.61 + 0.10, 2)


def test_without_a_price_the_running_cost_is_unknown_but_the_idle_cost_is_not() -> None:
    running = figures(nodes=2, capacity={"mode": "flex-start"})
    assert (running.cost_per_hour, running.dollars_per_million_tokens) == (None, None)
    assert running.tokens_per_second == 190_000
    assert running.basis.endswith("; no price for this capacity: set capacity.pricePerNodeHour")
    idle = figures(nodes=0, capacity={"mode": "flex-start"})
    assert idle.cost_per_hour == pytest.approx(0.10)
    assert "pricePerNodeHour" not in idle.basis


def test_the_idle_bill_holds_the_cluster_fee_the_cache_disk_and_its_snapshot() -> None:
    cache = {"enabled": True, "sizeGi": 200, "pricePerGibMonth": 0.08, "pricePerMibpsMonth": 0.01, "snapshotPricePerGibMonth": 0.05}
    settings = StackSettings.model_validate({"project": "example-project", "nodes": 0, "cache": cache})
    output = plan_stack(settings, "test").estimate.as_output()
    disk = (200 * 0.08 + 2400 * 0.01) / 730
    snapshot = 200 * 0.05 / 730
    assert output["whenIdle"] == {
        "costPerHour": round(0.10 + disk + snapshot, 2),
        "keeps": {
            "cluster fee": 0.10,
            "model cache disk (Hyperdisk ML, read-only)": round(disk, 4),
            "model cache snapshot": round(snapshot, 4),
        },
    }
    assert output["costPerHour"] == round(0.10 + disk + snapshot, 2)
    assert output["tokensPerSecond"] == 0
    assert output["basis"] == "scaled to zero: idle cost of cluster and cache"
    assert output["dollarsPerMillionTokens"] is None


def test_by_default_the_idle_bill_prices_the_caches_throughput_and_capacity_at_hyperdisk_mls_list_prices() -> None:
    # Hyperdisk ML list prices: $0.08 per GiB-month and $0.12 per provisioned MiB/s-month (docs/cold-start.md);
    # the default cache is 100 GiB at 2,400 MiB/s.
    settings = StackSettings.model_validate({"project": "example-project", "nodes": 0})
    idle = plan_stack(settings, "test").estimate.as_output()["whenIdle"]
    assert isinstance(idle, dict)
    keeps = idle["keeps"]
    assert keeps["model cache disk (Hyperdisk ML, read-only)"] == round((100 * 0.08 + 2400 * 0.12) / 730, 4)


def test_a_stack_without_a_cache_keeps_only_the_cluster_fee() -> None:
    assert figures(nodes=0).as_output()["whenIdle"] == {"costPerHour": 0.10, "keeps": {"cluster fee": 0.10}}


def test_the_cost_range_spans_the_fewest_and_the_most_replicas_at_the_list_price() -> None:
    result = figures(nodes=2, autoscaling={"enabled": True, "minReplicas": 1, "maxReplicas": 12})
    assert result.cost_range == pytest.approx((32.61 + 0.10, 12 * 32.61 + 0.10))
    assert result.as_output()["costPerHourRange"] == {"fewest": round(32.61 + 0.10, 2), "most": round(12 * 32.61 + 0.10, 2)}
    # From zero: the fewest is the idle bill, and the figures are a batch's at the most replicas.
    from_zero = figures(nodes=0, autoscaling={"enabled": True, "maxReplicas": 4})
    assert from_zero.cost_range == pytest.approx((0.10, 4 * 32.61 + 0.10))
    assert from_zero.tokens_per_second == 376_074
    assert from_zero.cost_per_hour == pytest.approx(4 * 32.61 + 0.10)
    assert "costPerHourRange" not in figures(nodes=2).as_output()


@pytest.mark.parametrize(
    "serving",
    [{"image": "vllm/vllm-openai:v0.33.0"}, {"port": 8080}, {"coldStartMinutes": 40}, {"cpu": 100}, {"memory": "1000Gi"}],
    ids=["image", "port", "cold-start", "cpu", "memory"],
)
def test_what_does_not_change_the_engine_keeps_the_reference_figure(serving: dict[str, Any]) -> None:
    assert figures(nodes=2, serving=serving).tokens_per_second == 190_000


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"model": {"id": "Qwen/Qwen3.5-27B", "config": OWN_CONFIG}}, "no reference figure: model Qwen/Qwen3.5-27B was not measured"),
        (
            {"workload": {"outputTokens": 256}},
            "no reference figure: workload differs from the reference (input 1024, output 512, range 0.5)",
        ),
        ({"serving": {"mtpTokens": 0}}, "no reference figure: serving profile differs from the reference flags"),
    ],
    ids=["model", "workload", "profile"],
)
def test_outside_the_reference_the_basis_says_what_differs(values: dict[str, Any], reason: str) -> None:
    result = figures(nodes=2, **values)
    assert result.tokens_per_second == 190_000 and result.basis.startswith(f"estimate, {reason}; ")
    assert result.cost_per_hour == pytest.approx(2 * 32.61 + 0.10)


def test_a_costly_capacity_still_divides_by_a_million_tokens() -> None:
    # At $1,000,000 a node-hour ($2,914 per million tokens) a millionth more per token shows in the third decimal.
    result = figures(nodes=1, capacity={"mode": "spot", "pricePerNodeHour": 1_000_000.0})
    assert result.dollars_per_million_tokens == round((1_000_000 + 0.10) / (PER_NODE[1] * 3600) * 1e6, 3)


def test_the_expected_cold_start_is_part_of_the_figures_and_their_output() -> None:
    settings = StackSettings.model_validate({"project": "example-project"})
    result = plan_stack(settings, "test").estimate
    assert result.cold_start is not None
    assert result.as_output()["coldStart"] == result.cold_start.as_output()


@pytest.mark.parametrize(
    ("exposure", "balancer"),
    [("internal", "internal Application Load Balancer"), ("external", "regional external Application Load Balancer")],
)
def test_the_gateways_bill_is_its_pickers_cpu_and_memory_and_its_load_balancer(exposure: str, balancer: str) -> None:
    # Two pickers of half a vCPU and 2 GiB at $0.04 a vCPU-hour and $0.005 a GiB-hour: 2 x (0.02 + 0.01).
    pods = GatewayPods("500m", "2Gi", 2, 0.04, 0.005, exposure, 0.025)
    (picker, picker_cost), (name, balancer_cost) = gateway_bill(pods)
    assert picker == "endpoint picker (Autopilot Pods)" and picker_cost == pytest.approx(0.06)
    assert (name, balancer_cost) == (balancer, 0.025)


def test_the_pickers_memory_is_read_in_gib_whatever_its_unit() -> None:
    (_, in_mi), _ = gateway_bill(GatewayPods("1", "512Mi", 1, 0.0, 1.0, "internal", 0.0))
    assert in_mi == pytest.approx(0.5)
