"""A4 capacity: where the GPU nodes come from.

A4 (``a4-highgpu-8g``) has no on-demand capacity: Spot, Flex-start,
reservations or an ordered fallback across them (docs/reference.md). How GPU
pods ask for the capacity is decided in the plan (``plan/stack.py``).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.manifests import Manifest
from components.options import child_options
from facts import gke
from facts.gke import A4_MACHINE_TYPE, GPU_TYPE, GPUS_PER_NODE
from plan.stack import FALLBACK_CLASS, CapacitySpec


def _priority(step: str, spec: CapacitySpec) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "machineType": A4_MACHINE_TYPE,
        "gpu": {"type": GPU_TYPE, "count": GPUS_PER_NODE, "driverVersion": "latest"},
        "location": {"zones": [spec.zone]},
    }
    if step == "spot":
        rule["spot"] = True
    elif step == "flex-start":
        rule["flexStart"] = {"enabled": True}
        rule["maxRunDurationSeconds"] = spec.flex_start_max_run_hours * 3600
    elif step == "reservation" and spec.reservation is not None:
        specific: dict[str, str] = {"name": spec.reservation.name}
        if spec.reservation.project:
            specific["project"] = spec.reservation.project
        rule["reservations"] = {"affinity": "Specific", "specific": [specific]}
    return rule


def compute_class(spec: CapacitySpec) -> dict[str, Any]:
    """The ComputeClass for fallback mode: the steps in order, never on-demand."""
    return {
        "apiVersion": gke.COMPUTE_CLASS_API,
        "kind": "ComputeClass",
        "metadata": {"name": FALLBACK_CLASS, "labels": spec.labels},
        "spec": {
            "description": "A4 nodes: " + ", then ".join(spec.steps),
            "priorities": [_priority(step, spec) for step in spec.steps],
            "nodePoolAutoCreation": {"enabled": True},
            # Without this GKE would fall back to on-demand, which A4 does not have.
            "whenUnsatisfiable": "DoNotScaleUp",
            "activeMigration": {"optimizeRulePriority": True},
        },
    }


def future_reservation_args(spec: CapacitySpec) -> gcp.compute.FutureReservationArgs | None:
    reservation, created = spec.reservation, spec.future_reservation
    if reservation is None or created is None:
        return None
    return gcp.compute.FutureReservationArgs(
        name=created.name,
        project=spec.project,
        zone=spec.zone,
        reservation_name=reservation.name,
        reservation_mode="CALENDAR",
        # Only pods that name it consume it: what Autopilot needs.
        specific_reservation_required=True,
        time_window=gcp.compute.FutureReservationTimeWindowArgs(start_time=created.start_time, end_time=created.end_time),
        specific_sku_properties=gcp.compute.FutureReservationSpecificSkuPropertiesArgs(
            # Its own count: scaling the stack must never touch a commitment.
            total_count=str(created.nodes),
            instance_properties=gcp.compute.FutureReservationSpecificSkuPropertiesInstancePropertiesArgs(machine_type=A4_MACHINE_TYPE),
        ),
        planning_status="SUBMITTED",
        # Required by the API: the reservations it creates end with it.
        auto_delete_auto_created_reservations=True,
        # GPU VMs in calendar mode are placed densely.
        deployment_type="DENSE",
    )


# Every input of the request: once submitted it cannot be modified, so no update may try.
RESERVATION_INPUTS = (
    "name",
    "project",
    "zone",
    "reservationName",
    "reservationMode",
    "specificReservationRequired",
    "timeWindow",
    "specificSkuProperties",
    "planningStatus",
    "autoDeleteAutoCreatedReservations",
    "deploymentType",
)


class Capacity(pulumi.ComponentResource):
    """Registers what the capacity mode needs: a calendar reservation, the fallback ComputeClass."""

    REGISTERS = (gcp.compute.FutureReservation,)

    def __init__(self, name: str, spec: CapacitySpec, *, kubernetes: k8s.Provider, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm:capacity:Capacity", name, None, opts)
        child = child_options(self, opts)
        reservation = future_reservation_args(spec)
        if reservation is not None:
            # A submitted calendar reservation cannot be cancelled, deleted or modified:
            # `pulumi destroy` leaves it in place and no update touches it.
            gcp.compute.FutureReservation(
                "reservation",
                reservation,
                opts=pulumi.ResourceOptions.merge(
                    child, pulumi.ResourceOptions(retain_on_delete=True, ignore_changes=list(RESERVATION_INPUTS))
                ),
            )
        if spec.mode == "fallback":
            Manifest("compute-class", compute_class(spec), child_options(self, opts, kubernetes))
        self.register_outputs({"mode": spec.mode, "nodeSelector": spec.scheduling.node_selector})
