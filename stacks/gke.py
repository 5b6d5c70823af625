"""Names GKE gives meaning to: the label keys and API group of its node-selection objects."""

from __future__ import annotations

GROUP = "cloud.google.com"
COMPUTE_CLASS_API = f"{GROUP}/v1"
COMPUTE_CLASS_LABEL = f"{GROUP}/compute-class"
MACHINE_FAMILY_LABEL = f"{GROUP}/machine-family"
ACCELERATOR_LABEL = f"{GROUP}/gke-accelerator"
GPU_DRIVER_LABEL = f"{GROUP}/gke-gpu-driver-version"
SPOT_LABEL = f"{GROUP}/gke-spot"
FLEX_START_LABEL = f"{GROUP}/gke-flex-start"
MAX_RUN_DURATION_LABEL = f"{GROUP}/gke-max-run-duration-seconds"
RESERVATION_NAME_LABEL = f"{GROUP}/reservation-name"
RESERVATION_AFFINITY_LABEL = f"{GROUP}/reservation-affinity"
RESERVATION_PROJECT_LABEL = f"{GROUP}/reservation-project"
ZONE_LABEL = "topology.kubernetes.io/zone"
