"""A batch plan for the stack's own workload: wake, serving and idle tail, and what each costs.

The batch stack wakes 4 Spot replicas ($32.61 per node-hour) from zero; the reference measured
94,019 tok/s per node at 4 nodes (input + output, 1,024 + 512 tokens per request).
"""

from __future__ import annotations

from typing import Any

import pytest

from plan.stack import plan_stack
from render.engine import Render, reveal
from render.simulations.scaling import (
    HPA_SYNC_SECONDS,
    batch_from_zero,
    estimated_serving,
    replicas_scaled_object,
    scaling_timeline,
    simulate,
)
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered

SPOT = 32.61
BATCH = {"autoscaling": {"enabled": True, "maxReplicas": 4}, "batch": {"enabled": True}}
# The workload the issue names: long prompts, no measured figure.
LONG_PROMPTS = {"workload": {"inputTokens": 6000, "outputTokens": 800}, "serving": {"maxModelLen": 10240}}


def batch_plan(**values: Any) -> dict[str, Any]:
    settings = StackSettings.model_validate({"project": "example-project", "nodes": 0, **BATCH, **values})
    output = plan_stack(settings, "test").estimate.as_output()
    plan: dict[str, Any] = output["batchPlan"]  # type: ignore[assignment]
    return plan


def test_a_non_reference_workload_gets_a_plan_labelled_an_estimate_with_its_basis() -> None:
    plan = batch_plan(**LONG_PROMPTS)
    assert plan["tokensPerRequest"] == 6800
    assert plan["basis"].startswith("estimate, no reference figure: workload differs from the reference")
    assert "6,800 tokens per request" in plan["basis"]
    # The reference's tokens/s per node at 4 nodes, held, at 6,800 tokens a line.
    per_replica = 376_074 / 4
    assert plan["completionsPerSecondPerReplica"] == pytest.approx(per_replica / 6800, abs=0.01)
    serving = 100_000 / (4 * per_replica / 6800)
    assert plan["minutes"]["serving"] == pytest.approx(serving / 60, abs=0.1)
    assert plan["costUsd"]["serving"] == pytest.approx(4 * SPOT * serving / 3600, abs=0.01)


def test_the_plan_runs_from_the_wake_to_zero_in_three_parts_that_add_up() -> None:
    plan = batch_plan(**LONG_PROMPTS)
    minutes, hours, costs = plan["minutes"], plan["replicaHours"], plan["costUsd"]
    assert minutes["wakeToZero"] == pytest.approx(minutes["wake"] + minutes["serving"] + minutes["idleTail"], abs=0.2)
    assert hours["total"] == pytest.approx(hours["wake"] + hours["serving"] + hours["idleTail"], abs=0.002)
    assert costs["total"] == pytest.approx(costs["wake"] + costs["serving"] + costs["idleTail"], abs=0.02)
    # The idle tail is KEDA's cooldown (idleMinutes, 15 by default) and one 30 s poll.
    assert minutes["idleTail"] == 15.5
    assert hours["wake"] == pytest.approx(4 * minutes["wake"] / 60, abs=0.01)


def test_the_wake_is_the_cold_start_estimate_of_every_replica() -> None:
    settings = StackSettings.model_validate({"project": "example-project", "nodes": 0, **BATCH})
    estimate = plan_stack(settings, "test").estimate
    assert estimate.cold_start is not None and estimate.batch is not None
    assert estimate.batch.pace.wake_seconds == estimate.cold_start.seconds(warm=False)
    assert estimate.batch.as_output()["costUsd"]["wake"] == estimate.cold_start.cost(warm=False)  # type: ignore[index]


def test_on_reserved_nodes_a_batch_adds_nothing_and_the_reservation_bills_the_whole_time() -> None:
    reserved = {"mode": "reservation", "reservation": {"name": "a4", "nodes": 5}}
    plan = batch_plan(capacity=reserved)
    assert plan["costUsd"]["total"] == 0
    assert plan["committedUsd"] == pytest.approx(5 * 88.93 * plan["minutes"]["wakeToZero"] / 60, rel=0.01)


def test_without_autoscaling_there_is_no_batch_plan() -> None:
    assert "batchPlan" not in reveal(rendered("dev").outputs)["estimates"]


def _trace(render: Render) -> tuple[dict[str, Any], list[Any]]:
    plan: dict[str, Any] = reveal(render.outputs)["estimates"]["batchPlan"]
    scaled_object = replicas_scaled_object(render)
    assert scaled_object is not None
    serving, _ = estimated_serving(render)
    return plan, simulate(scaled_object, serving, batch_from_zero(plan["lines"]))


@pytest.mark.parametrize("workload", [{}, LONG_PROMPTS], ids=["reference", "long-prompts"])
def test_the_batch_wake_trace_agrees_with_the_batch_plan(workload: dict[str, Any]) -> None:
    render = render_with("batch", **workload) if workload else rendered("batch")
    plan, steps = _trace(render)
    minutes = plan["minutes"]
    step = HPA_SYNC_SECONDS / 60
    every = next(s.second for s in steps if s.ready == plan["replicas"])
    assert every / 60 == pytest.approx(minutes["wake"], abs=2 * step)
    last = max(s.second for s in steps if s.outstanding > 0)
    assert last / 60 == pytest.approx(minutes["wake"] + minutes["serving"], abs=2 * step)
    zero = next(s.second for s in steps if s.second > last and s.desired == 0)
    # KEDA polls every 30 s: zero comes within a poll of the idle tail.
    assert zero / 60 == pytest.approx(minutes["wakeToZero"], abs=0.5 + 2 * step)
    # The printed trace names the figures it ran.
    assert f"{minutes['wake']:g}-minute wake, {plan['completionsPerSecondPerReplica']:,.1f} completions/s" in scaling_timeline(render)
