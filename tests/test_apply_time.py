"""What a real `pulumi up` would do with the rendered objects: GKE's, Helm's and the providers' rules.

Each test here failed on the program before its fix.
"""

from __future__ import annotations

from typing import Any

import pytest

from facts.naming import REPLICAS
from render.engine import Render
from stacks.problems import StackConfigError
from tests.conftest import render_with, rendered

JOB = "kubernetes:batch/v1:Job"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RESERVATION = "gcp:compute/futureReservation:FutureReservation"
CALENDAR: dict[str, Any] = {
    "name": "a4-llm-serving",
    "create": {"name": "a4-llm-serving", "startTime": "2027-01-04T00:00:00Z", "endTime": "2027-02-01T00:00:00Z", "nodes": 12},
}


def pulumi_annotations(render: Render, type_: str, prefix: str = "") -> dict[str, str]:
    found = [r for r in render.by_type(type_) if r.name.startswith(prefix)]
    assert len(found) == 1, [r.name for r in found]
    return dict(found[0].inputs["metadata"].get("annotations") or {})


def pod_templates(render: Render) -> dict[str, Any]:
    return {r.name: r.inputs["spec"]["template"] for r in [*render.by_type(DEPLOYMENT), *render.by_type(JOB)]}


def test_the_replicas_pod_monitoring_leaves_the_chart_release_name_to_the_chart() -> None:
    # The chart renders a PodMonitoring named after its release for the endpoint picker.
    render = rendered("gateway")
    release = render.one("kubernetes:helm.sh/v4:Chart").inputs["name"]
    assert release == REPLICAS
    names = {r.inputs["metadata"]["name"] for r in render.by_type("kubernetes:monitoring.googleapis.com/v1:PodMonitoring")}
    assert release not in names


def test_the_route_leaves_timeouts_to_the_backend_policy_since_gke_refuses_them() -> None:
    route = rendered("gateway").one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute").inputs
    assert all("timeouts" not in rule for rule in route["spec"]["rules"])


def test_the_snapshot_is_awaited_until_it_is_ready_to_use() -> None:
    found = pulumi_annotations(rendered("dev"), "kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot")
    assert found["pulumi.com/waitFor"] == "jsonpath={.status.readyToUse}=true"


def test_a_failed_download_is_replaced_by_the_next_up_instead_of_blocking_it() -> None:
    assert pulumi_annotations(rendered("dev"), JOB, "download-")["pulumi.com/replaceUnready"] == "true"


def test_a_failed_benchmark_never_blocks_a_later_up() -> None:
    render = render_with("dev", benchmark={"enabled": True})
    assert pulumi_annotations(render, JOB, "benchmark")["pulumi.com/skipAwait"] == "true"


def test_a_labels_change_touches_no_pod_template() -> None:
    before = pod_templates(render_with("dev", benchmark={"enabled": True}))
    after = pod_templates(render_with("dev", benchmark={"enabled": True}, labels={"team": "research"}))
    assert before == after


@pytest.mark.parametrize(
    ("change", "key", "allowed"),
    [
        ({"endTime": "2027-04-05T00:00:00Z"}, "endTime", "90 days"),
        ({"nodes": 81}, "nodes", "80"),
    ],
)
def test_calendar_reservations_outside_gcp_limits_are_refused(change: dict[str, Any], key: str, allowed: str) -> None:
    capacity = {"mode": "reservation", "reservation": {**CALENDAR, "create": {**CALENDAR["create"], **change}}}
    with pytest.raises(StackConfigError) as error:
        render_with("prod", capacity=capacity)
    assert f"capacity.reservation.create.{key}" in str(error.value) and allowed in str(error.value)


def test_a_calendar_reservation_is_retained_on_destroy_and_never_updated() -> None:
    render = render_with("prod", capacity={"mode": "reservation", "reservation": CALENDAR})
    reservation = render.one(RESERVATION)
    assert reservation.retain_on_delete
    assert set(reservation.inputs) - {"__defaults"} <= set(reservation.ignore_changes)
    assert reservation.inputs["autoDeleteAutoCreatedReservations"] is True
    assert reservation.inputs["deploymentType"] == "DENSE"
    assert reservation.inputs["reservationMode"] == "CALENDAR"


def test_a_pod_the_fallback_may_place_on_spot_asks_for_no_more_than_spot_gives() -> None:
    capacity = {"mode": "fallback", "fallback": ["reservation", "spot"], "reservation": {"name": "a4-llm-serving"}}
    pod = render_with("dev", capacity=capacity).one(DEPLOYMENT).inputs["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] <= 25
