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
    ("c4a", "standard"): 4.0,
    ("c4a", "highcpu"): 2.0,
    ("c4a", "highmem"): 8.0,
    ("c4d", "standard"): 3.875,
    ("c4d", "highcpu"): 1.875,
    ("c4d", "highmem"): 7.875,
    ("c3", "standard"): 4.0,
    ("c3", "highcpu"): 2.0,
    ("c3", "highmem"): 8.0,
    ("c3d", "standard"): 4.0,
    ("c3d", "highcpu"): 2.0,
    ("c3d", "highmem"): 8.0,
    ("c2", "standard"): 4.0,
    ("c2d", "standard"): 4.0,
    ("c2d", "highcpu"): 2.0,
    ("c2d", "highmem"): 8.0,
    ("n4", "standard"): 4.0,
    ("n4", "highcpu"): 2.0,
    ("n4", "highmem"): 8.0,
    ("n2", "standard"): 4.0,
    ("n2", "highcpu"): 1.0,
    ("n2", "highmem"): 8.0,
    ("n2d", "standard"): 4.0,
    ("n2d", "highcpu"): 1.0,
    ("n2d", "highmem"): 8.0,
    ("e2", "standard"): 4.0,
    ("e2", "highcpu"): 1.0,
    ("e2", "highmem"): 8.0,
    ("n1", "standard"): 3.75,
    ("n1", "highcpu"): 0.9,
    ("n1", "highmem"): 6.5,
    ("t2d", "standard"): 4.0,
}
# Strings a project id may not contain (cloud.google.com/resource-manager/docs/creating-managing-projects).
PROJECT_RESTRICTED = ("google", "null", "undefined", "ssl")
# Digits Cloud Storage reads as the letters they resemble in "g00gle" (cloud.google.com/storage/docs/buckets#naming).
_LOOK_ALIKE = str.maketrans({"0": "o", "1": "l", "3": "e"})


def _misspellings(word: str) -> set[str]:
    """``word`` with one letter dropped, doubled, or swapped with the next: the close misspellings."""
    found = {word[:i] + word[i + 1 :] for i in range(len(word))}
    found |= {word[:i] + word[i] + word[i:] for i in range(len(word))}
    found |= {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}
    return found - {""}


_GOOGLE_LIKE = _misspellings("google") | {"google"}


def bucket_name_problem(name: str) -> str | None:
    """Why Cloud Storage refuses a bucket name for its words, or None: no "goog" prefix, no "google" or close
    misspellings such as "g00gle" (cloud.google.com/storage/docs/buckets#naming)."""
    if name.startswith("goog"):
        return 'begins with "goog"'
    plain = name.translate(_LOOK_ALIKE)
    spelled = next((word for word in sorted(_GOOGLE_LIKE) if word in plain), None)
    return f'holds "google" or a close misspelling of it ({spelled})' if spelled else None


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
