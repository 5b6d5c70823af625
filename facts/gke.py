"""What GKE and A4 give meaning to: the label keys and API group of GKE's node-selection objects, and the A4 machine.

The program and the policy pack (policy/rules.py) both read them from here (docs/reference.md).
"""

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

# One A4 node: the only machine this project schedules GPU work on (docs/reference.md).
A4_MACHINE_TYPE = "a4-highgpu-8g"
A4_MACHINE_FAMILY = "a4"
GPU_TYPE = "nvidia-b200"
GPUS_PER_NODE = 8
GPU_RESOURCE = "nvidia.com/gpu"
