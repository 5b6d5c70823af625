"""Committed capacity is cost: a reservation bills every hour, whether or not replicas run on it.

The reference's list price of a reserved A4 node is $88.93/h (1-year CUD, docs/reference.md); the
idle bill of a stack with the default cache is the $0.10 cluster fee, 100 GiB and 2,400 MiB/s of
Hyperdisk ML and its snapshot.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from plan.stack import plan_stack
from render.engine import reveal
from render.files import write
from render.lifecycle import lifecycle_text
from render.review import estimate_changes
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered

RESERVED = 88.93
KEPT = 0.10 + (100 * 0.08 + 2400 * 0.12) / 730 + 100 * 0.05 / 730
CALENDAR = {"name": "a4", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-02-01T00:00:00Z", "nodes": 5}


def output(**values: Any) -> dict[str, Any]:
    settings = StackSettings.model_validate({"project": "example-project", **values})
    return plan_stack(settings, "test").estimate.as_output()


def test_prods_scale_to_zero_keeps_billing_its_twelve_reserved_nodes() -> None:
    idle = render_with("prod", nodes=0)
    estimates = reveal(idle.outputs)["estimates"]
    assert estimates["costPerHour"] == pytest.approx(12 * RESERVED + KEPT, abs=0.01)
    assert estimates["whenIdle"]["costPerHour"] == pytest.approx(12 * RESERVED + KEPT, abs=0.01)
    assert "reservation" in estimates["basis"]
    assert f"after a scale to zero: ${12 * RESERVED + KEPT:,.2f}/h keeps billing" in lifecycle_text(idle)


def test_prods_idle_bill_while_serving_is_its_reservation_too() -> None:
    estimates = reveal(rendered("prod").outputs)["estimates"]
    assert estimates["whenIdle"]["costPerHour"] == pytest.approx(12 * RESERVED + KEPT, abs=0.01)
    assert estimates["committed"]["nodes"] == 12
    # Serving on the reservation adds nothing to it: the running cost is the idle one.
    assert estimates["costPerHour"] == estimates["whenIdle"]["costPerHour"]


def test_a_four_node_reservation_autoscaled_from_one_never_costs_51_cents_an_hour() -> None:
    figures = output(
        nodes=1,
        capacity={"mode": "reservation", "reservation": {"name": "a4", "nodes": 4}},
        autoscaling={"enabled": True, "minReplicas": 1, "maxReplicas": 3},
    )
    four = 4 * RESERVED + KEPT
    assert figures["whenIdle"]["costPerHour"] == pytest.approx(four, abs=0.01)
    assert figures["costPerHourRange"] == pytest.approx({"fewest": four, "most": four}, abs=0.01)


def test_a_reservation_of_unstated_size_is_assumed_to_hold_the_most_replicas_and_says_so() -> None:
    figures = output(
        nodes=1,
        capacity={"mode": "reservation", "reservation": {"name": "a4"}},
        autoscaling={"enabled": True, "minReplicas": 1, "maxReplicas": 4},
        rollout={"keepServing": False},
    )
    assert figures["whenIdle"]["costPerHour"] == pytest.approx(4 * RESERVED + KEPT, abs=0.01)
    assert "capacity.reservation.nodes" in figures["committed"]["basis"]


def test_at_zero_replicas_a_reservation_of_unstated_size_has_no_known_cost_and_names_the_key() -> None:
    figures = output(nodes=0, capacity={"mode": "reservation", "reservation": {"name": "a4"}})
    assert figures["costPerHour"] is None and figures["whenIdle"]["costPerHour"] is None
    assert "capacity.reservation.nodes" in figures["basis"]


def test_a_wake_on_reserved_nodes_adds_nothing_and_says_what_the_reservation_bills_meanwhile() -> None:
    cold_start = output(
        nodes=0,
        capacity={"mode": "reservation", "reservation": {"name": "a4", "nodes": 5}},
        autoscaling={"enabled": True, "maxReplicas": 4},
    )["coldStart"]
    assert cold_start["wakeCost"] == {"coldCompileCache": 0.0, "warmCompileCache": 0.0}
    on_reservation = cold_start["wakeCostOnReservation"]
    assert on_reservation["replicas"] == 4
    minutes = cold_start["minutes"]["coldCompileCache"]
    assert on_reservation["coldCompileCache"] == pytest.approx(4 * RESERVED * minutes / 60, rel=0.01)


def test_a_created_calendar_reservations_whole_commitment_is_in_the_plan() -> None:
    figures = output(nodes=4, capacity={"mode": "reservation", "reservation": {"name": "a4", "create": CALENDAR}})
    committed = figures["committed"]
    # 62 days, December and January.
    assert committed["term"]["hours"] == 62 * 24
    assert committed["term"]["totalUsd"] == pytest.approx(5 * 62 * 24 * RESERVED, abs=0.01)
    assert "cannot be cancelled" in committed["basis"]
    # Four replicas serve on five reserved nodes: the fifth bills too.
    assert figures["costPerHour"] == pytest.approx(5 * RESERVED + KEPT, abs=0.01)


def test_the_diff_that_adds_a_calendar_reservation_shows_its_commitment(tmp_path: Path) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    write(rendered("dev"), before)
    write(render_with("dev", nodes=4, capacity={"mode": "reservation", "reservation": {"name": "a4", "create": CALENDAR}}), after)
    text = "".join(estimate_changes(before, after))
    total = 5 * 62 * 24 * RESERVED
    assert f"committed.term.totalUsd: - -> {round(total, 2)}" in text
    assert "committed.nodes: - -> 5" in text
