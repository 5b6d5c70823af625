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
class MachineShape:
    """A predefined Compute Engine machine type: its vCPUs and its memory in GB."""

    cpus: int
    gb: float


@cache
def machine_shapes() -> dict[str, MachineShape]:
    """The vendored shapes of the series the benchmark node may use (facts/data/machine-types.yaml): a series'
    memory per vCPU is not constant (n2-highmem-128 has 864 GB, not 128 x 8), so each shape is looked up."""
    loaded = read_yaml(Path(__file__).parent / "data" / "machine-types.yaml")
    return {name: MachineShape(int(shape["cpus"]), float(shape["gb"])) for name, shape in loaded["shapes"].items()}


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
