"""A stack of several models in all: every model at its replicas, what they share counted once, each one's own listed."""

from __future__ import annotations

from typing import Any

import pytest

from plan.estimates import CLUSTER_FEE_PER_HOUR, LIST_PRICE_PER_NODE_HOUR
from plan.stack import plan_stack
from render.engine import stack_settings
from tests.conftest import rendered
from tests.stacks.handed import parsed


def rag_total() -> dict[str, Any]:
    total: dict[str, Any] = rendered("rag").outputs["estimatesTotal"]
    return total


def test_the_idle_total_counts_the_cluster_fee_once_and_lists_each_models_own_cache() -> None:
    idle = rag_total()["whenIdle"]
    fees = [item for item in idle["keeps"] if "cluster fee" in item]
    assert fees == ["cluster fee"]
    per_model = rendered("rag").outputs["estimates"]
    # Each model's own cache stays, under its short name; the fee once: not the sum of the models' idle figures.
    for name, figures in per_model.items():
        assert idle["keeps"][f"{name}: model cache snapshot"] == figures["whenIdle"]["keeps"]["model cache snapshot"]
    counted_twice = sum(figures["whenIdle"]["costPerHour"] for figures in per_model.values())
    assert idle["costPerHour"] == pytest.approx(counted_twice - CLUSTER_FEE_PER_HOUR * (len(per_model) - 1), abs=0.011)


def test_the_total_cost_is_the_models_replicas_plus_what_they_share_once() -> None:
    total = rag_total()
    plan = plan_stack(stack_settings("rag"), "rag")
    replicas = sum(model.replicas.replicas for model in plan.served)
    assert total["replicas"] == replicas
    idle = total["whenIdle"]["costPerHour"]
    assert total["costPerHour"] == pytest.approx(replicas * LIST_PRICE_PER_NODE_HOUR["spot"] + idle, abs=0.011)
    # The range spans every model at its fewest to every model at its most.
    most = sum(model.autoscaling.max_replicas for model in plan.served if model.autoscaling)
    assert total["costPerHourRange"] == {
        "fewest": pytest.approx(idle, abs=0.011),
        "most": pytest.approx(most * LIST_PRICE_PER_NODE_HOUR["spot"] + idle, abs=0.011),
    }


def test_a_one_model_stack_has_no_total_beside_its_estimate() -> None:
    assert "estimatesTotal" not in rendered("dev").outputs


def test_a_reservation_is_billed_once_and_its_nodes_are_spent_once_across_the_models() -> None:
    models = [{"id": "Qwen/Qwen3.5-27B-FP8", "nodes": 2}, {"id": "Qwen/Qwen3-Embedding-8B", "nodes": 2}]
    settings = parsed(
        models=models, capacity={"mode": "fallback", "fallback": ["reservation", "spot"], "reservation": {"name": "a4", "nodes": 3}}
    )
    plan = plan_stack(settings, "rag")
    assert plan.total is not None
    total = plan.total.as_output()
    keeps: dict[str, float] = total["whenIdle"]["keeps"]  # type: ignore[index]
    reserved = [cost for item, cost in keeps.items() if item.startswith("reservation a4")]
    assert reserved == [pytest.approx(3 * LIST_PRICE_PER_NODE_HOUR["reservation"])]
    # Four replicas, three on the reservation: only the one beyond it bills (at the first step's price), not one per model.
    assert total["costPerHour"] == pytest.approx(LIST_PRICE_PER_NODE_HOUR["reservation"] + sum(keeps.values()), abs=0.011)
