"""The capacity section (stacks/capacity.py) on hand-made settings: modes, fallback steps, and each range at its bounds.

Sources (docs/config-rules.md, docs/reference.md): A4 has no on-demand capacity; a calendar-mode future reservation
lasts 1 to 90 days and asks for 1 to 80 VMs; flex-start runs a node for at most 7 days (168 hours).
"""

from __future__ import annotations

from typing import Any

import pytest

from stacks.capacity import CapacitySettings
from tests.stacks import handed

START = "2026-12-01T00:00:00Z"


def capacity(**changes: Any) -> CapacitySettings:
    return CapacitySettings.model_validate(changes)


def problem(**changes: Any) -> str:
    return handed.problem(capacity=changes)


def calendar(end: str = "2027-01-01T00:00:00Z", nodes: int = 2, name: str = "a4") -> dict[str, Any]:
    return {
        "mode": "reservation",
        "reservation": {"name": "a4", "create": {"name": name, "startTime": START, "endTime": end, "nodes": nodes}},
    }


@pytest.mark.parametrize("mode", ["on-demand", "ondemand", "standard"])
def test_on_demand_is_refused_for_a4(mode: str) -> None:
    assert problem(mode=mode) == (
        f"llm:capacity.mode: {mode!r} is not available for A4 (a4-highgpu-8g); use one of: spot, reservation, flex-start, fallback"
    )


def test_an_unknown_mode_is_refused() -> None:
    assert (
        problem(mode="preemptible")
        == "llm:capacity.mode: 'preemptible' is not a capacity mode; use one of: spot, reservation, flex-start, fallback"
    )


@pytest.mark.parametrize(
    ("changes", "steps"),
    [
        ({}, ("spot",)),
        ({"mode": "flex-start"}, ("flex-start",)),
        ({"mode": "fallback", "fallback": ["spot", "flex-start"]}, ("spot", "flex-start")),
        ({"mode": "spot", "fallback": ["flex-start"]}, ("spot",)),
    ],
)
def test_the_steps_tried_in_order(changes: dict[str, Any], steps: tuple[str, ...]) -> None:
    assert capacity(**changes).steps == steps


def test_a_fallback_names_one_step_or_more_each_once() -> None:
    assert problem(mode="fallback", fallback=[]) == "llm:capacity.fallback: [] is empty; list one or more of: reservation, spot, flex-start"
    assert problem(mode="fallback", fallback=["spot", "on-demand"]) == (
        "llm:capacity.fallback[1]: 'on-demand' is not a fallback step; use one of: reservation, spot, flex-start"
    )
    assert problem(mode="fallback", fallback=["spot", "flex-start", "spot"]) == (
        'llm:capacity.fallback: ["spot", "flex-start", "spot"] names a step twice; list each at most once'
    )
    assert capacity(mode="fallback", fallback=("flex-start",)).fallback == ("flex-start",)


def test_a_fallback_that_is_not_a_list_says_it_is_a_list() -> None:
    assert problem(mode="fallback", fallback="spot") == "llm:capacity.fallback: 'spot' is a single value, but the setting is a list"


def test_a_reservation_step_needs_a_reservation() -> None:
    assert problem(mode="reservation") == "llm:capacity.reservation: is required when capacity.mode is reservation; set reservation.name"
    assert problem(mode="fallback", fallback=["spot", "reservation"]) == (
        "llm:capacity.reservation: is required when capacity.mode is fallback with a reservation step; set reservation.name"
    )
    assert capacity(mode="fallback", fallback=["spot", "flex-start"]).reservation is None


@pytest.mark.parametrize(("price", "taken"), [(0.01, True), (98.32, True), (0.0, False), (-1.0, False)])
def test_a_price_is_positive(price: float, taken: bool) -> None:
    if taken:
        assert capacity(price_per_node_hour=price).price_per_node_hour == price
    else:
        assert (
            problem(pricePerNodeHour=price)
            == f"llm:capacity.pricePerNodeHour: {price} must be a positive price in US dollars per node-hour"
        )


@pytest.mark.parametrize("hours", [1, 168])
def test_flex_start_runs_a_node_1_to_168_hours(hours: int) -> None:
    assert capacity(flex_start={"max_run_hours": hours}).flex_start.max_run_hours == hours


@pytest.mark.parametrize("hours", [0, 169, -1])
def test_flex_start_beyond_its_hours_is_refused(hours: int) -> None:
    assert problem(flexStart={"maxRunHours": hours}) == (
        f"llm:capacity.flexStart.maxRunHours: {hours} is out of range; flex-start runs a node for 1 to 168 hours"
    )


@pytest.mark.parametrize("end", ["2026-12-02T00:00:00Z", "2027-03-01T00:00:00Z"])
def test_a_calendar_reservation_of_1_to_90_days_is_taken(end: str) -> None:
    reservation = capacity(**calendar(end)).reservation
    assert reservation is not None and reservation.create is not None and reservation.create.end_time == end


@pytest.mark.parametrize(("end", "days"), [("2026-12-01T23:00:00Z", "0.958333"), ("2027-03-01T12:00:00Z", "90.5")])
def test_a_calendar_reservation_out_of_1_to_90_days_is_refused(end: str, days: str) -> None:
    assert problem(**calendar(end)) == (
        f"llm:capacity.reservation.create.endTime: {end!r} is {days} days after startTime; a calendar-mode reservation lasts 1 to 90 days"
    )


def test_a_calendar_reservation_ends_after_it_starts() -> None:
    assert problem(**calendar(START)) == f"llm:capacity.reservation.create.endTime: {START!r} must be after startTime ({START})"


@pytest.mark.parametrize("nodes", [1, 80])
def test_a_calendar_reservation_asks_for_1_to_80_nodes(nodes: int) -> None:
    reservation = capacity(**calendar(nodes=nodes)).reservation
    assert reservation is not None and reservation.create is not None and reservation.create.nodes == nodes


@pytest.mark.parametrize("nodes", [0, 81])
def test_a_calendar_reservation_of_more_nodes_than_a_request_takes_is_refused(nodes: int) -> None:
    assert problem(**calendar(nodes=nodes)).startswith(f"llm:capacity.reservation.create.nodes: {nodes} is not allowed")


def test_the_created_reservation_is_the_one_the_pods_consume() -> None:
    assert problem(**calendar(name="other")) == (
        "llm:capacity.reservation.create.name: 'other' must equal reservation.name (a4), the reservation the pods consume"
    )


def test_a_shared_reservation_names_its_project() -> None:
    shared = capacity(mode="reservation", reservation={"name": "a4", "project": "shared-capacity"}).reservation
    assert shared is not None and shared.project == "shared-capacity"
    assert problem(mode="reservation", reservation={"name": "a4", "project": "Shared"}).startswith(
        "llm:capacity.reservation.project: 'Shared' is not a GCP project id"
    )
    assert problem(mode="reservation", reservation={"name": "A4"}).startswith("llm:capacity.reservation.name: 'A4' is not a valid name")
