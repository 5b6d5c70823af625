"""A4 capacity: where the GPU nodes come from, and how GPU pods ask for them.

A4 (``a4-highgpu-8g``) has no on-demand capacity: Spot, Flex-start,
reservations or an ordered fallback across them (REFERENCE.md sections 1, 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.manifests import Manifest
from components.options import child_options
from stacks.settings import A4_MACHINE_TYPE, GPU_TYPE, GPUS_PER_NODE, CapacitySettings, StackSettings

# List prices of one A4 node-hour, 2026 (REFERENCE.md section 1). Flex-start
# has no reference figure; set capacity.pricePerNodeHour to estimate it.
LIST_PRICE_PER_NODE_HOUR: dict[str, float] = {"spot": 32.61, "reservation": 88.93}

COMPUTE_CLASS = "a4-fallback"
_GKE = "cloud.google.com"


@dataclass(frozen=True)
class Scheduling:
    """What a GPU pod carries to land on the selected A4 capacity."""

    mode: str
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]] = field(default_factory=list)
    price_per_node_hour: float | None = None


def price_per_node_hour(capacity: CapacitySettings) -> float | None:
    """The configured price, else the list price of the preferred step."""
    if capacity.price_per_node_hour is not None:
        return capacity.price_per_node_hour
    return LIST_PRICE_PER_NODE_HOUR.get(capacity.steps[0])


def _reservation_selector(capacity: CapacitySettings) -> dict[str, str]:
    reservation = capacity.reservation
    if reservation is None:
        raise ValueError("capacity.reservation is required for reservation mode")
    # Autopilot consumes only specific reservations.
    selector = {f"{_GKE}/reservation-name": reservation.name, f"{_GKE}/reservation-affinity": "specific"}
    if reservation.project:
        selector[f"{_GKE}/reservation-project"] = reservation.project
    return selector


def scheduling(settings: StackSettings) -> Scheduling:
    """The node selectors and tolerations of a GPU pod for the stack's capacity mode."""
    capacity = settings.capacity
    price = price_per_node_hour(capacity)
    if capacity.mode == "fallback":
        # The ComputeClass names the machine, GPUs and zone for every step;
        # extra hard selectors would fight its fallback.
        return Scheduling(capacity.mode, {f"{_GKE}/compute-class": COMPUTE_CLASS}, price_per_node_hour=price)
    selector = {
        f"{_GKE}/gke-accelerator": GPU_TYPE,
        f"{_GKE}/gke-gpu-driver-version": "latest",
        "topology.kubernetes.io/zone": settings.zone,
    }
    tolerations: list[dict[str, str]] = []
    if capacity.mode == "spot":
        selector[f"{_GKE}/gke-spot"] = "true"
        tolerations.append({"key": f"{_GKE}/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"})
    elif capacity.mode == "flex-start":
        selector[f"{_GKE}/gke-flex-start"] = "true"
        selector[f"{_GKE}/gke-max-run-duration-seconds"] = str(capacity.flex_start.max_run_hours * 3600)
    elif capacity.mode == "reservation":
        selector.update(_reservation_selector(capacity))
    return Scheduling(capacity.mode, selector, tolerations, price)


def _priority(step: str, settings: StackSettings) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "machineType": A4_MACHINE_TYPE,
        "gpu": {"type": GPU_TYPE, "count": GPUS_PER_NODE, "driverVersion": "latest"},
        "location": {"zones": [settings.zone]},
    }
    if step == "spot":
        rule["spot"] = True
    elif step == "flex-start":
        rule["flexStart"] = {"enabled": True}
        rule["maxRunDurationSeconds"] = settings.capacity.flex_start.max_run_hours * 3600
    elif step == "reservation" and settings.capacity.reservation is not None:
        specific: dict[str, str] = {"name": settings.capacity.reservation.name}
        if settings.capacity.reservation.project:
            specific["project"] = settings.capacity.reservation.project
        rule["reservations"] = {"affinity": "Specific", "specific": [specific]}
    return rule


def compute_class(settings: StackSettings, labels: dict[str, str]) -> dict[str, Any]:
    """The ComputeClass for fallback mode: the steps in order, never on-demand."""
    return {
        "apiVersion": f"{_GKE}/v1",
        "kind": "ComputeClass",
        "metadata": {"name": COMPUTE_CLASS, "labels": labels},
        "spec": {
            "description": "A4 nodes: " + ", then ".join(settings.capacity.steps),
            "priorities": [_priority(step, settings) for step in settings.capacity.steps],
            "nodePoolAutoCreation": {"enabled": True},
            # Without this GKE would fall back to on-demand, which A4 does not have.
            "whenUnsatisfiable": "DoNotScaleUp",
            "activeMigration": {"optimizeRulePriority": True},
        },
    }


def future_reservation_args(settings: StackSettings) -> gcp.compute.FutureReservationArgs | None:
    reservation = settings.capacity.reservation
    if reservation is None or reservation.create is None:
        return None
    return gcp.compute.FutureReservationArgs(
        name=reservation.create.name,
        project=settings.project,
        zone=settings.zone,
        reservation_name=reservation.name,
        reservation_mode="CALENDAR",
        # Only pods that name it consume it: what Autopilot needs.
        specific_reservation_required=True,
        time_window=gcp.compute.FutureReservationTimeWindowArgs(
            start_time=reservation.create.start_time, end_time=reservation.create.end_time
        ),
        specific_sku_properties=gcp.compute.FutureReservationSpecificSkuPropertiesArgs(
            # Its own count: scaling the stack must never touch a commitment.
            total_count=str(reservation.create.nodes),
            instance_properties=gcp.compute.FutureReservationSpecificSkuPropertiesInstancePropertiesArgs(machine_type=A4_MACHINE_TYPE),
        ),
        planning_status="SUBMITTED",
    )


class Capacity(pulumi.ComponentResource):
    """Registers what the capacity mode needs; ``scheduling`` is what GPU pods use."""

    def __init__(
        self,
        name: str,
        settings: StackSettings,
        *,
        labels: dict[str, str],
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:capacity:Capacity", name, None, opts)
        self.scheduling = scheduling(settings)
        child = child_options(self, opts)
        reservation = future_reservation_args(settings)
        if reservation is not None:
            # A calendar reservation is a commitment: a stack change must never delete it.
            gcp.compute.FutureReservation(
                "reservation", reservation, opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(protect=True))
            )
        if settings.capacity.mode == "fallback":
            Manifest(
                "compute-class",
                compute_class(settings, labels),
                child_options(self, opts, kubernetes),
            )
        self.register_outputs({"mode": settings.capacity.mode, "nodeSelector": self.scheduling.node_selector})
