"""What Compute Engine and VPC networks allow: reservations, subnet ranges, machine shapes and the zones offering A4."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from facts.data_files import read_yaml

# Calendar-mode future reservations: 1 to 90 days, 1 to 80 VMs per request (docs/reference.md).
CALENDAR_MIN_DAYS = 1
CALENDAR_MAX_DAYS = 90
CALENDAR_MAX_VMS = 80
# Ranges GCP refuses for subnets and secondary ranges (docs/reference.md).
PROHIBITED_RANGES = tuple(
    ipaddress.IPv4Network(r) for r in ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32")
)
# Not RFC 1918, yet not public: shared address space and class E, which GKE accepts.
NON_PUBLIC_RANGES = tuple(ipaddress.IPv4Network(r) for r in ("100.64.0.0/10", "240.0.0.0/4"))
# GB of memory per vCPU of the machine shapes the benchmark node may use (Compute Engine's
# general-purpose and compute-optimized machine series pages); other series are not listed.
GB_PER_VCPU = {
    ("c4", "standard"): 3.75,
    ("c4", "highcpu"): 2.0,
    ("c4", "highmem"): 7.75,
    ("c3", "standard"): 4.0,
    ("c3", "highcpu"): 2.0,
    ("c3", "highmem"): 8.0,
}


@dataclass(frozen=True)
class KnownZones:
    """The zones known to offer A4, and the day the list was read."""

    zones: tuple[str, ...]
    as_of: str


@cache
def a4_zones() -> KnownZones:
    """The vendored list of zones that offer a4-highgpu-8g (facts/data/a4-zones.yaml)."""
    loaded = read_yaml(Path(__file__).parent / "data" / "a4-zones.yaml")
    return KnownZones(tuple(loaded["zones"]), str(loaded["asOf"]))
