"""A4 capacity: each mode puts GPU pods on whole A4 nodes of that capacity, never on-demand."""

from __future__ import annotations

from typing import Any

import pytest

from components.capacity import compute_class
from plan.stack import FALLBACK_CLASS, plan_stack, scheduling
from render.validation import validate_render
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered

RESERVATION = {"name": "a4-llm-serving"}


def settings(capacity: dict[str, Any]) -> StackSettings:
    return StackSettings.model_validate({"project": "example-project", "capacity": capacity})


def gpu_pod(render_stack: str = "dev", **changes: Any) -> dict[str, Any]:
    render = render_with(render_stack, **changes) if changes else rendered(render_stack)
    spec: dict[str, Any] = render.one("kubernetes:apps/v1:Deployment", "vllm").inputs["spec"]["template"]["spec"]
    return spec


@pytest.mark.parametrize(
    ("capacity", "expected"),
    [
        ({"mode": "spot"}, {"cloud.google.com/gke-spot": "true"}),
        (
            {"mode": "flex-start", "flexStart": {"maxRunHours": 24}},
            {"cloud.google.com/gke-flex-start": "true", "cloud.google.com/gke-max-run-duration-seconds": "86400"},
        ),
        (
            {"mode": "reservation", "reservation": {**RESERVATION, "nodes": 2}},
            {"cloud.google.com/reservation-name": "a4-llm-serving", "cloud.google.com/reservation-affinity": "specific"},
        ),
        (
            {"mode": "reservation", "reservation": {**RESERVATION, "project": "shared-capacity", "nodes": 2}},
            {"cloud.google.com/reservation-project": "shared-capacity"},
        ),
    ],
    ids=["spot", "flex-start", "reservation", "shared-reservation"],
)
def test_gpu_pods_ask_for_eight_b200_on_the_selected_capacity_in_the_pinned_zone(
    capacity: dict[str, Any], expected: dict[str, str]
) -> None:
    pod = gpu_pod(capacity=capacity)
    selector = pod["nodeSelector"]
    assert selector["cloud.google.com/gke-accelerator"] == "nvidia-b200"
    assert selector["topology.kubernetes.io/zone"] == "europe-west4-b"
    assert expected.items() <= selector.items()
    resources = pod["containers"][0]["resources"]
    assert resources["requests"]["nvidia.com/gpu"] == resources["limits"]["nvidia.com/gpu"] == "8"


def test_only_spot_pods_carry_the_spot_selector() -> None:
    for capacity in ({"mode": "flex-start"}, {"mode": "reservation", "reservation": {**RESERVATION, "nodes": 2}}):
        assert "cloud.google.com/gke-spot" not in scheduling(settings(capacity)).node_selector


def test_fallback_pods_select_only_the_compute_class() -> None:
    pod = gpu_pod(capacity={"mode": "fallback", "reservation": RESERVATION})
    assert pod["nodeSelector"] == {"cloud.google.com/compute-class": FALLBACK_CLASS}
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"


def test_fallback_compute_class_lists_the_steps_in_order_and_never_scales_up_on_demand() -> None:
    chosen = settings({"mode": "fallback", "reservation": RESERVATION, "fallback": ["reservation", "spot", "flex-start"]})
    spec = compute_class(plan_stack(chosen, "dev").capacity)["spec"]
    priorities = spec["priorities"]
    assert [("reservations" in p, p.get("spot", False), "flexStart" in p) for p in priorities] == [
        (True, False, False),
        (False, True, False),
        (False, False, True),
    ]
    assert all(
        p["machineType"] == "a4-highgpu-8g" and p["gpu"] == {"type": "nvidia-b200", "count": 8, "driverVersion": "latest"}
        for p in priorities
    )
    assert all(p["location"] == {"zones": ["europe-west4-b"]} for p in priorities)
    assert spec["whenUnsatisfiable"] == "DoNotScaleUp"
    assert spec["nodePoolAutoCreation"] == {"enabled": True}


def test_fallback_stack_registers_a_valid_compute_class() -> None:
    render = render_with("dev", capacity={"mode": "fallback", "fallback": ["spot", "flex-start"]})
    compute = render.one("kubernetes:cloud.google.com/v1:ComputeClass")
    assert compute.inputs["metadata"]["name"] == FALLBACK_CLASS
    validate_render(render)


def test_other_modes_register_no_compute_class() -> None:
    assert rendered("dev").by_type("kubernetes:cloud.google.com/v1:ComputeClass") == []


def test_a_future_reservation_is_created_only_when_asked_and_then_left_alone() -> None:
    assert rendered("prod").by_type("gcp:compute/futureReservation:FutureReservation") == []
    create = {"name": "a4-llm-serving", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z", "nodes": 16}
    render = render_with("prod", capacity={"mode": "reservation", "reservation": {**RESERVATION, "create": create}})
    reservation = render.one("gcp:compute/futureReservation:FutureReservation")
    # Not protected (that would fail `pulumi destroy`): destroy leaves it, as GCP cannot delete it.
    assert reservation.retain_on_delete and not reservation.protect
    assert reservation.inputs["reservationMode"] == "CALENDAR"
    assert reservation.inputs["specificReservationRequired"] is True
    assert reservation.inputs["specificSkuProperties"]["instanceProperties"]["machineType"] == "a4-highgpu-8g"
    assert reservation.inputs["specificSkuProperties"]["totalCount"] == "16"
    # Scaling the stack, even to zero, leaves the commitment as it is.
    idle = render_with("prod", nodes=0, capacity={"mode": "reservation", "reservation": {**RESERVATION, "create": create}})
    assert idle.one("gcp:compute/futureReservation:FutureReservation").inputs == reservation.inputs


def test_prices_default_to_the_reference_list_prices_and_can_be_overridden() -> None:
    assert plan_stack(settings({"mode": "spot"}), "test").costing.price_per_node_hour == 32.61
    assert (
        plan_stack(settings({"mode": "reservation", "reservation": {**RESERVATION, "nodes": 2}}), "test").costing.price_per_node_hour
        == 88.93
    )
    assert plan_stack(settings({"mode": "flex-start"}), "test").costing.price_per_node_hour is None
    assert plan_stack(settings({"mode": "flex-start", "pricePerNodeHour": 50}), "test").costing.price_per_node_hour == 50
