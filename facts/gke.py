"""What GKE and A4 give meaning to: the label keys and API group of GKE's node-selection objects, the A4 machine,
and the limits GKE sets on versions, maintenance, control-plane access, flex-start and namespaces.

The program and the policy pack (policy/rules.py) both read them from here (docs/reference.md).
"""

from __future__ import annotations

from decimal import Decimal

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

# Autopilot grants a Spot pod at most 25 s of termination grace, a pod a ComputeClass places on Spot too
# (https://cloud.google.com/kubernetes-engine/docs/how-to/autopilot-spot-pods; docs/autopilot.md).
SPOT_GRACE_SECONDS = 25

# One A4 node: the only machine this project schedules GPU work on (docs/reference.md).
A4_MACHINE_TYPE = "a4-highgpu-8g"
A4_MACHINE_FAMILY = "a4"
GPU_TYPE = "nvidia-b200"
GPUS_PER_NODE = 8
# One B200's memory as the driver reports it (nvidia-smi: 183359MiB; NVIDIA/TensorRT-LLM issue 10278 shows a
# b200x8 host's): what vLLM multiplies by gpu_memory_utilization (facts/engine_memory.py).
GPU_MEMORY_BYTES = 183_359 * 2**20
GPU_RESOURCE = "nvidia.com/gpu"
# What an a4-highgpu-8g node (224 vCPU, 3,968 GiB) leaves a pod after GKE's
# reservations for the kubelet and system (docs/reference.md).
A4_POD_CPU = Decimal(220)
A4_POD_MEMORY = Decimal(3850) * 2**30
# The most a pod of Autopilot's default general-purpose compute class (no compute class, accelerator or
# machine family selected) may request; above it Autopilot refuses the pod
# (cloud.google.com/kubernetes-engine/docs/concepts/autopilot-resource-requests, "Minimum and maximum resource requests").
# Not verified against that table, which no stored copy reaches; two third-party statements agree with both
# figures (docs/config-rules.md, "Pods against Autopilot's maximums").
GENERAL_PURPOSE_MAX_CPU = Decimal(30)
GENERAL_PURPOSE_MAX_MEMORY = Decimal(110) * 2**30
# GKE runs B200 on Autopilot from 1.32.2-gke.1422000; any 1.32 GKE offers today is later (docs/config-rules.md).
B200_MIN_VERSION = "1.32.2-gke.1422000"
B200_MIN_MINOR = 32
# Authorized networks GKE takes with the public IP endpoint the program opens for them (docs/config-rules.md).
MAX_AUTHORIZED_NETWORKS = 50
# Flex-start (DWS) runs a node for at most 7 days (docs/reference.md).
FLEX_START_MAX_HOURS = 7 * 24
# GKE's maintenance exclusion scopes; `no_upgrades` lasts at most 30 days (docs/reference.md).
EXCLUSION_SCOPES = {
    "no-upgrades": "NO_UPGRADES",
    "no-minor-upgrades": "NO_MINOR_UPGRADES",
    "no-minor-or-node-upgrades": "NO_MINOR_OR_NODE_UPGRADES",
}
NO_UPGRADES_MAX_DAYS = 30
# The provider's maintenance_exclusion MaxItems (docs/config-rules.md).
MAX_EXCLUSIONS = 20
# Namespaces Kubernetes and GKE manage: a stack that owned one would delete it on destroy.
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
RESERVED_NAMESPACE_PREFIXES = ("kube-", "gke-", "gmp-")
