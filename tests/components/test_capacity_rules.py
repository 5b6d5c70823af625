"""The capacity builders on plans made from hand-written settings, without a render: the ComputeClass and the calendar request."""

from __future__ import annotations

import contextvars
import logging
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from components.capacity import RESERVATION_INPUTS, Capacity, compute_class, future_reservation_args
from components.manifests import type_token
from facts import gke
from plan.stack import FALLBACK_CLASS, CapacitySpec, plan_stack
from render.sdk import Registration, run_program
from stacks.settings import StackSettings

RESERVATION = {"name": "a4-llm-serving"}
CREATE = {"name": "a4-llm-serving", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z", "nodes": 16}


def spec(capacity: dict[str, Any]) -> CapacitySpec:
    settings = StackSettings.model_validate({"project": "example-project", "labels": {"team": "ml"}, "capacity": capacity})
    return plan_stack(settings, "dev").capacity


def test_the_compute_class_names_each_step_in_order() -> None:
    chosen = spec({"mode": "fallback", "reservation": RESERVATION, "fallback": ["reservation", "spot", "flex-start"]})
    manifest = compute_class(chosen)
    assert (manifest["apiVersion"], manifest["kind"]) == (gke.COMPUTE_CLASS_API, "ComputeClass")
    assert manifest["metadata"] == {"name": FALLBACK_CLASS, "labels": chosen.labels} and chosen.labels["team"] == "ml"
    body = manifest["spec"]
    assert body["description"] == "A4 nodes: reservation, then spot, then flex-start"
    assert body["whenUnsatisfiable"] == "DoNotScaleUp" and body["nodePoolAutoCreation"] == {"enabled": True}
    assert body["activeMigration"] == {"optimizeRulePriority": True}
    reservation, spot, flex = body["priorities"]
    assert reservation["reservations"] == {"affinity": "Specific", "specific": [{"name": "a4-llm-serving"}]}
    assert spot["spot"] is True and "reservations" not in spot and "flexStart" not in spot
    assert flex["flexStart"] == {"enabled": True} and flex["maxRunDurationSeconds"] == 168 * 3600
    for rule in (reservation, spot, flex):
        assert rule["machineType"] == "a4-highgpu-8g"
        assert rule["gpu"] == {"type": "nvidia-b200", "count": 8, "driverVersion": "latest"}
        assert rule["location"] == {"zones": ["europe-west4-b"]}


@pytest.mark.parametrize("hours", [1, 36])
def test_a_flex_start_step_runs_its_hours_in_seconds(hours: int) -> None:
    (flex,) = compute_class(spec({"mode": "fallback", "fallback": ["flex-start"], "flexStart": {"maxRunHours": hours}}))["spec"][
        "priorities"
    ]
    assert flex["maxRunDurationSeconds"] == hours * 3600 and "spot" not in flex


def test_a_shared_reservation_names_its_project() -> None:
    chosen = spec({"mode": "fallback", "fallback": ["reservation"], "reservation": {**RESERVATION, "project": "shared-capacity"}})
    (rule,) = compute_class(chosen)["spec"]["priorities"]
    assert rule["reservations"]["specific"] == [{"name": "a4-llm-serving", "project": "shared-capacity"}]


def test_no_calendar_request_unless_the_stack_creates_one() -> None:
    assert future_reservation_args(spec({"mode": "spot"})) is None
    assert future_reservation_args(spec({"mode": "reservation", "reservation": {**RESERVATION, "nodes": 2}})) is None


def plain(value: Any) -> Any:
    """An input type as the dict the provider receives: its set fields, nested."""
    return {key: plain(item) for key, item in vars(value).items()} if hasattr(value, "__dict__") else value


def calendar_request() -> dict[str, Any]:
    args = future_reservation_args(spec({"mode": "reservation", "reservation": {**RESERVATION, "create": CREATE}}))
    assert args is not None
    request: dict[str, Any] = plain(args)
    return request


def test_the_calendar_request_asks_for_dense_a4_nodes_that_only_named_pods_consume() -> None:
    assert calendar_request() == {
        "name": "a4-llm-serving",
        "project": "example-project",
        "zone": "europe-west4-b",
        "reservation_name": "a4-llm-serving",
        "reservation_mode": "CALENDAR",
        "specific_reservation_required": True,
        "time_window": {"start_time": "2026-12-01T00:00:00Z", "end_time": "2027-01-01T00:00:00Z"},
        "specific_sku_properties": {"total_count": "16", "instance_properties": {"machine_type": "a4-highgpu-8g"}},
        "planning_status": "SUBMITTED",
        "auto_delete_auto_created_reservations": True,
        "deployment_type": "DENSE",
    }


def test_every_input_of_the_request_is_kept_from_updates() -> None:
    camel = {"".join(part.capitalize() if i else part for i, part in enumerate(name.split("_"))) for name in calendar_request()}
    assert camel == set(RESERVATION_INPUTS)


class Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, []


def registered(capacity: dict[str, Any]) -> list[Registration]:
    """What ``Capacity`` alone registers under the mock engine, after an API it is told to wait for."""
    chosen = spec(capacity)
    resources: list[Registration] = []

    def program() -> None:
        api = gcp.projects.Service("api", service="compute.googleapis.com")
        kubernetes = k8s.Provider("cluster")
        Capacity("capacity", chosen, kubernetes=kubernetes, opts=pulumi.ResourceOptions(depends_on=[api]))

    def run() -> None:
        run_program(
            program,
            project="llm",
            stack="dev",
            config={},
            secret_keys=[],
            engine=Mocks(),
            resources=resources,
            invokes=[],
            logger=logging.getLogger("capacity-test"),
        )

    contextvars.Context().run(run)
    return resources


def one(resources: list[Registration], type_: str) -> Registration:
    (found,) = [r for r in resources if r.type == type_]
    return found


def test_a_created_reservation_is_kept_on_destroy_and_never_updated() -> None:
    resources = registered({"mode": "reservation", "reservation": {**RESERVATION, "create": CREATE}})
    component = one(resources, "llm:capacity:Capacity")
    request = one(resources, "gcp:compute/futureReservation:FutureReservation")
    assert component.name == "capacity" and request.name == "reservation"
    assert request.parent == component.urn and request.retain_on_delete
    assert set(request.ignore_changes) == set(RESERVATION_INPUTS)
    assert request.inputs["reservationName"] == "a4-llm-serving" and request.inputs["specificSkuProperties"]["totalCount"] == "16"
    api = one(resources, "gcp:projects/service:Service").urn
    assert api in request.dependencies and api in component.dependencies
    assert not [r for r in resources if r.type.endswith(":ComputeClass")]


def test_the_fallback_class_is_registered_on_the_clusters_provider() -> None:
    resources = registered({"mode": "fallback", "reservation": RESERVATION, "fallback": ["reservation", "spot"]})
    component = one(resources, "llm:capacity:Capacity")
    (manifest,) = [r for r in resources if r.type.endswith(":ComputeClass")]
    assert manifest.type == type_token(gke.COMPUTE_CLASS_API, "ComputeClass") and manifest.name == "compute-class"
    assert manifest.parent == component.urn and manifest.provider.startswith(one(resources, "pulumi:providers:kubernetes").urn)
    assert one(resources, "gcp:projects/service:Service").urn in manifest.dependencies
    assert manifest.inputs["spec"]["description"] == "A4 nodes: reservation, then spot"
    assert not [r for r in resources if r.type.endswith("FutureReservation")]


@pytest.mark.parametrize(
    "capacity", [{"mode": "spot"}, {"mode": "flex-start"}, {"mode": "reservation", "reservation": {**RESERVATION, "nodes": 2}}]
)
def test_other_modes_register_nothing_but_the_component(capacity: dict[str, Any]) -> None:
    types = sorted(r.type for r in registered(capacity))
    assert types == ["gcp:projects/service:Service", "llm:capacity:Capacity", "pulumi:providers:kubernetes"]
