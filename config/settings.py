"""The stack configuration: every knob of the program, typed.

Defaults reproduce the measured reference deployment (docs/reference.md):
Qwen 3.5 27B FP8 on A4 nodes, one vLLM pod per node running data parallel 8.
Keys are camelCase, exactly as written in ``Pulumi.<stack>.yaml``.
"""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, get_args
from zoneinfo import available_timezones

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from config.cron import CronError, schedule
from config.maintenance import MIN_AVAILABLE, MIN_STRETCH, ROLLING_PERIOD, least_available
from config.problems import ConfigProblem, one_of, show_value
from facts.data_files import read_yaml
from facts.gke import A4_MACHINE_TYPE as A4_MACHINE_TYPE  # one A4 node's facts live in facts/gke.py
from facts.gke import GPU_TYPE as GPU_TYPE
from facts.gke import GPUS_PER_NODE as GPUS_PER_NODE
from facts.vllm import TTFT_FAMILY, TTFT_HISTOGRAM, VllmFacts, custom_buckets, facts, supported_releases, tagged_release

# GKE runs B200 on Autopilot from 1.32.2-gke.1422000; any 1.32 GKE offers today is later (docs/config-rules.md).
B200_MIN_VERSION = "1.32.2-gke.1422000"
B200_MIN_MINOR = 32
# The namespace the stack installs KEDA in; the stack's own workloads may not share it.
KEDA_NAMESPACE = "keda"
# Authorized networks GKE takes with the public IP endpoint the program opens for them (docs/config-rules.md).
MAX_AUTHORIZED_NETWORKS = 50

# A closed set the type checker sees: a new mode is a type error wherever a branch misses it.
CapacityMode = Literal["spot", "reservation", "flex-start", "fallback"]
CAPACITY_MODES: tuple[CapacityMode, ...] = get_args(CapacityMode)
FallbackStep = Literal["reservation", "spot", "flex-start"]
FALLBACK_CHOICES: tuple[FallbackStep, ...] = get_args(FallbackStep)
# Calendar-mode future reservations: 1 to 90 days, 1 to 80 VMs per request (docs/reference.md).
CALENDAR_MIN_DAYS = 1
CALENDAR_MAX_DAYS = 90
CALENDAR_MAX_VMS = 80
# A rollout replaces this many replicas at once by default: a 12-node rollout
# then takes 3 cold starts, which fits the deploy job's time limit.
ROLLOUT_PARALLELISM = 4
# Flex-start (DWS) runs a node for at most 7 days (docs/reference.md).
FLEX_START_MAX_HOURS = 7 * 24
# The benchmark clients take 14 CPUs of a dedicated node.
BENCHMARK_MIN_CPUS = 16

_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# Valid for both GCP and Kubernetes: alphanumeric at both ends.
_LABEL_KEY = re.compile(r"^[a-z]([-_a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([a-z0-9]([-_a-z0-9]{0,61}[a-z0-9])?)?$")
_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_QUANTITY_FACTORS = {
    None: Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
# What an a4-highgpu-8g node (224 vCPU, 3,968 GiB) leaves a pod after GKE's
# reservations for the kubelet and system (docs/reference.md).
A4_POD_CPU = Decimal(220)
A4_POD_MEMORY = Decimal(3850) * 2**30
# The program's own labels; a stack's labels may not replace them (Stack.labels).
PROGRAM_LABELS = ("app", "managed-by", "stack")
# Namespaces Kubernetes and GKE manage: a stack that owned one would delete it on destroy.
RESERVED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
RESERVED_NAMESPACE_PREFIXES = ("kube-", "gke-", "gmp-")
# Ranges GCP refuses for subnets and secondary ranges (docs/reference.md).
PROHIBITED_RANGES = tuple(
    ipaddress.IPv4Network(r) for r in ("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32")
)
# Not RFC 1918, yet not public: shared address space and class E, which GKE accepts.
NON_PUBLIC_RANGES = tuple(ipaddress.IPv4Network(r) for r in ("100.64.0.0/10", "240.0.0.0/4"))
# Credentials vLLM and Hugging Face read from the environment.
CREDENTIAL_VARIABLES = {"HF_TOKEN": "hfToken", "HUGGING_FACE_HUB_TOKEN": "hfToken", "VLLM_API_KEY": "apiKey"}
# The `vllm serve` flags the program sets, and the key that sets each.
MANAGED_FLAGS = {
    "--model": "model.id",
    "--served-model-name": "model.servedName",
    "--host": "(always 0.0.0.0)",
    "--port": "serving.port",
    "--data-parallel-size": "serving.dataParallelSize",
    "--max-model-len": "serving.maxModelLen",
    "--max-num-batched-tokens": "serving.maxNumBatchedTokens",
    "--max-num-seqs": "serving.maxNumSeqs",
    "--kv-cache-dtype": "serving.kvCacheDtype",
    "--gpu-memory-utilization": "serving.gpuMemoryUtilization",
    "--enable-prefix-caching": "serving.enablePrefixCaching",
    "--enable-chunked-prefill": "serving.enableChunkedPrefill",
    "--attention-backend": "serving.attentionBackend",
    "-O": "serving.optimizationLevel",
    "--optimization-level": "serving.optimizationLevel",
    "--speculative-config": "serving.mtpTokens",
    "--mamba-cache-mode": "serving.mambaCacheMode",
    "--mamba-block-size": "serving.mambaBlockSize",
    "--shutdown-timeout": "drain.shutdownTimeoutSeconds",
    "--api-key": "the apiKey secret (pulumi config set --secret apiKey)",
}
_FLAG = re.compile(r"^(--[a-z0-9][a-z0-9-]*|-O)(=.*)?$|^-O[0-9]$")
# Kubernetes 1.30+ (RelaxedEnvironmentVariableValidation) takes any printable ASCII but '='.
_ENV_NAME = re.compile(r"^[\x20-\x3c\x3e-\x7e]+$")


@dataclass(frozen=True)
class KnownZones:
    """The zones known to offer A4, and the day the list was read."""

    zones: tuple[str, ...]
    as_of: str


@cache
def a4_zones() -> KnownZones:
    """The vendored list of zones that offer a4-highgpu-8g (facts/data/a4-zones.yaml)."""
    loaded = read_yaml(Path(__file__).parent.parent / "facts" / "data" / "a4-zones.yaml")
    return KnownZones(tuple(loaded["zones"]), str(loaded["asOf"]))


def _config_bool(value: Any) -> Any:
    """Only what Pulumi's own ``get_bool`` takes: true/false (and True/False), not yes, on or 1."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in ("true", "True", "false", "False"):
        return value.lower() == "true"
    raise ConfigProblem((), value, "is not a boolean; use true or false")


ConfigBool = Annotated[bool, BeforeValidator(_config_bool)]


def quantity(value: str) -> Decimal:
    """A Kubernetes quantity as a number (cores, bytes)."""
    match = _QUANTITY.match(value)
    if match is None:
        raise ValueError(value)
    try:
        return Decimal(match.group(1)) * _QUANTITY_FACTORS[match.group(2)]
    except InvalidOperation as error:
        raise ValueError(value) from error


_MACHINE_CPUS = re.compile(r"^([a-z0-9]+)-([a-z]+)-(\d+)$")
# GB of memory per vCPU of the machine shapes the benchmark node may use (Compute Engine's
# general-purpose and compute-optimized machine series pages); other series are not checked.
_GB_PER_VCPU = {
    ("c4", "standard"): 3.75,
    ("c4", "highcpu"): 2.0,
    ("c4", "highmem"): 7.75,
    ("c3", "standard"): 4.0,
    ("c3", "highcpu"): 2.0,
    ("c3", "highmem"): 8.0,
}
# The clients' pod asks for 48Gi (components/benchmark.py), beside what Autopilot keeps for the node.
BENCHMARK_MIN_GB = 56
_VERSION = re.compile(r"^1\.(\d+)$")
# distribution/reference's grammar (regexp.go): [domain[:port]/]path[:tag][@digest].
_IMAGE_DOMAIN = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?"
_IMAGE_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
_IMAGE_REFERENCE = re.compile(
    rf"^(?:{_IMAGE_DOMAIN}/)?{_IMAGE_PATH}(?::(?P<tag>[\w][\w.-]{{0,127}}))?(?:@(?P<digest>sha256:[0-9a-f]{{64}}))?$", re.ASCII
)


class Section(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        coerce_numbers_to_str=True,
    )


def _private_cidr(value: str) -> str:
    try:
        network = ipaddress.IPv4Network(value)
    except ValueError as exc:
        raise ConfigProblem((), value, "is not an IPv4 CIDR range such as 10.0.0.0/20") from exc
    for prohibited in PROHIBITED_RANGES:
        if network.overlaps(prohibited):
            raise ConfigProblem(
                (),
                value,
                f"overlaps {prohibited}, which GCP refuses for subnets; use RFC 1918, 100.64.0.0/10, 240.0.0.0/4 "
                "or another range GCP allows",
            )
    if not (network.is_private or any(network.subnet_of(shared) for shared in NON_PUBLIC_RANGES)):
        # Privately used public ranges need the cluster's default SNAT off, which this program does not set.
        raise ConfigProblem(
            (), value, "is a public range; use RFC 1918 (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16), 100.64.0.0/10 or 240.0.0.0/4"
        )
    return value


def _project_id(value: str) -> str:
    if not re.match(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$", value):
        raise ConfigProblem((), value, "is not a GCP project id: 6 to 30 lowercase letters, digits or '-', starting with a letter")
    return value


def _pinned_image(value: str) -> str:
    reference = _IMAGE_REFERENCE.match(value)
    # With a digest the tag is only a label: the node pulls by digest, so even latest is pinned.
    if reference is None or not (reference["digest"] or (reference["tag"] and reference["tag"] != "latest")):
        raise ConfigProblem((), value, "is not pinned; name a tag such as vllm/vllm-openai:v0.18.1, a sha256 digest, or both")
    return value


def image_release(image: str, version: str | None) -> str:
    """The vLLM release ``image`` runs: its tag's, else the version setting; refused without facts of it.

    Raised problems name ``image`` or ``vllmVersion`` relative to the section.
    """
    tagged = tagged_release(image)
    supported = ", ".join(supported_releases())
    if tagged is not None and version is not None and version != tagged:
        raise ConfigProblem(("vllmVersion",), version, f"contradicts the image's tag (v{tagged}); remove it or fix the tag")
    release = tagged or version
    if release is None:
        raise ConfigProblem(
            ("vllmVersion",),
            None,
            f"is required: the image's tag names no vLLM release ({image}); set the release it runs, one of: {supported}",
        )
    if release not in supported_releases():
        key = "image" if tagged else "vllmVersion"
        shown = image if tagged else release
        raise ConfigProblem(
            (key,), shown, f"runs vLLM {release}, which has no vendored facts to check flags and metrics against; use one of: {supported}"
        )
    return release


def _quantity(value: str) -> str:
    if not _QUANTITY.match(value):
        raise ConfigProblem((), value, "is not a Kubernetes quantity such as 10, 500m, 16Gi or 1900G")
    return value


def _check_name(value: str, max_length: int) -> str:
    if len(value) > max_length or not _NAME.match(value):
        raise ConfigProblem(
            (), value, f"is not a valid name: lowercase letters, digits and '-', starting with a letter, at most {max_length} characters"
        )
    return value


class NetworkSettings(Section):
    """The VPC, its node subnet and the subnet's secondary ranges (VPC-native)."""

    name: str = "llm-serving"
    """Name of the VPC; the node subnet is `<name>-nodes`."""
    node_cidr: str = "10.0.0.0/20"
    """Primary range of the node subnet."""
    pod_cidr: str = "10.4.0.0/14"
    """Secondary range for pod IPs (VPC-native)."""
    service_cidr: str = "10.8.0.0/20"
    """Secondary range for Service IPs."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value, 62)

    @field_validator("node_cidr", "pod_cidr", "service_cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        return _private_cidr(value)

    @model_validator(mode="after")
    def _disjoint(self) -> NetworkSettings:
        ranges = {"nodeCidr": self.node_cidr, "podCidr": self.pod_cidr, "serviceCidr": self.service_cidr}
        seen: list[tuple[str, ipaddress.IPv4Network]] = []
        for key, cidr in ranges.items():
            network = ipaddress.IPv4Network(cidr)
            for other_key, other in seen:
                if network.overlaps(other):
                    raise ConfigProblem((key,), cidr, f"overlaps {other_key} ({other}); the ranges must be disjoint")
            seen.append((key, network))
        return self


_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
# GKE's maintenance exclusion scopes; `no_upgrades` lasts at most 30 days (docs/reference.md).
EXCLUSION_SCOPES = {
    "no-upgrades": "NO_UPGRADES",
    "no-minor-upgrades": "NO_MINOR_UPGRADES",
    "no-minor-or-node-upgrades": "NO_MINOR_OR_NODE_UPGRADES",
}
NO_UPGRADES_MAX_DAYS = 30
# The provider's maintenance_exclusion MaxItems (docs/config-rules.md).
MAX_EXCLUSIONS = 20


def _utc_time(value: str) -> str:
    try:
        if not _RFC3339.match(value):
            raise ValueError(value)
        # The provider parses with Go's time.Parse(time.RFC3339): no hour 24, no 31 April, no 29 February 2027.
        datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise ConfigProblem((), value, "is not an RFC 3339 UTC time such as 2026-12-01T00:00:00Z (a real date, hours 00-23)") from None
    return value


def _instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _check_order(start: str, end: str) -> None:
    if end <= start:
        raise ConfigProblem(("endTime",), end, f"must be after startTime ({start})")


def _days_between(start: str, end: str) -> float:
    return (_instant(end) - _instant(start)).total_seconds() / 86400


def _hours(span: timedelta) -> str:
    return f"{span.total_seconds() / 3600:g} hours"


class MaintenanceWindowSettings(Section):
    """A recurring maintenance window: GKE upgrades the cluster only inside it."""

    start_time: str
    """First start, RFC 3339 UTC (e.g. 2026-01-03T02:00:00Z)."""
    end_time: str
    """First end, RFC 3339 UTC; the window lasts from start to end each time it recurs."""
    recurrence: str = "FREQ=WEEKLY;BYDAY=SA,SU"
    """An RFC 5545 RRULE (FREQ=DAILY or FREQ=WEEKLY;BYDAY=...)."""

    _times = field_validator("start_time", "end_time")(_utc_time)

    @field_validator("recurrence")
    @classmethod
    def _recurrence(cls, value: str) -> str:
        if not re.match(r"^FREQ=(DAILY|WEEKLY)(;BYDAY=(MO|TU|WE|TH|FR|SA|SU)(,(MO|TU|WE|TH|FR|SA|SU))*)?$", value):
            raise ConfigProblem((), value, "is not a recurrence GKE takes; use FREQ=DAILY or FREQ=WEEKLY;BYDAY=SA,SU")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> MaintenanceWindowSettings:
        _check_order(self.start_time, self.end_time)
        return self

    @model_validator(mode="after")
    def _enough_time(self) -> MaintenanceWindowSettings:
        available = least_available(_instant(self.start_time), _instant(self.end_time), self.recurrence)
        if available < MIN_AVAILABLE:
            raise ConfigProblem(
                (),
                None,
                f"({self.start_time} to {self.end_time}, {self.recurrence}) allows {_hours(available)} of maintenance in some "
                f"{ROLLING_PERIOD.days} days; GKE requires at least {_hours(MIN_AVAILABLE)} in any {ROLLING_PERIOD.days} days, "
                f"counting only stretches of {_hours(MIN_STRETCH)} or more: lengthen the window or let it recur more often",
            )
        return self


class MaintenanceExclusionSettings(Section):
    """A period without upgrades, for example a batch; host maintenance still happens."""

    name: str
    """A name for the exclusion."""
    start_time: str
    """Start, RFC 3339 UTC."""
    end_time: str
    """End, RFC 3339 UTC."""
    scope: str = "no-minor-or-node-upgrades"
    """What it blocks: `no-minor-or-node-upgrades` (keeps a batch's nodes), `no-minor-upgrades`, or `no-upgrades` (30 days at most)."""

    _times = field_validator("start_time", "end_time")(_utc_time)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value, 63)

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str) -> str:
        if value not in EXCLUSION_SCOPES:
            raise ConfigProblem((), value, f"is not an exclusion scope; {one_of(EXCLUSION_SCOPES)}")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> MaintenanceExclusionSettings:
        _check_order(self.start_time, self.end_time)
        days = _days_between(self.start_time, self.end_time)
        if self.scope == "no-upgrades" and days > NO_UPGRADES_MAX_DAYS:
            raise ConfigProblem(
                ("endTime",),
                self.end_time,
                f"is {days:g} days after startTime; a no-upgrades exclusion lasts at most {NO_UPGRADES_MAX_DAYS} days",
            )
        return self


class MaintenanceSettings(Section):
    """When GKE may upgrade the cluster and its nodes."""

    window: MaintenanceWindowSettings | None = None
    """A recurring window; unset: GKE picks any time."""
    exclusions: tuple[MaintenanceExclusionSettings, ...] = ()
    """Periods without upgrades, e.g. a batch."""

    @field_validator("exclusions")
    @classmethod
    def _exclusions(cls, value: tuple[MaintenanceExclusionSettings, ...]) -> tuple[MaintenanceExclusionSettings, ...]:
        if len(value) > MAX_EXCLUSIONS:
            raise ConfigProblem((), None, f"lists {len(value)} exclusions; GKE takes at most {MAX_EXCLUSIONS}")
        first: dict[str, int] = {}
        for index, exclusion in enumerate(value):
            if exclusion.name in first:
                # GKE keys exclusions by name: the later one would silently replace the earlier.
                raise ConfigProblem(
                    (index, "name"), exclusion.name, f"is already the name of exclusions[{first[exclusion.name]}]; give each its own name"
                )
            first[exclusion.name] = index
        return value

    @model_validator(mode="after")
    def _window_with_exclusions(self) -> MaintenanceSettings:
        if self.exclusions and self.window is None:
            # The provider requires exactly one window kind in a maintenance policy.
            raise ConfigProblem(
                ("window",), None, "is required with exclusions: a maintenance policy needs a window; set startTime, endTime and recurrence"
            )
        return self


class ClusterSettings(Section):
    """The GKE Autopilot cluster."""

    name: str = "llm-serving"
    """GKE cluster name."""
    release_channel: Literal["rapid", "regular", "stable", "extended"] = "rapid"
    """GKE release channel; the reference ran on rapid."""
    version: str = "1.35"
    """Minimum control-plane minor version. Also the Kubernetes schema rendered manifests are validated
    against, and whether GKE installs the InferencePool CRDs itself (1.34.0-gke.1626000 and later)."""
    deletion_protection: ConfigBool = True
    """Refuse to delete the cluster; must be true on production stacks."""
    namespace: str = "llm-serving"
    """Namespace of every workload of the stack."""
    maintenance: MaintenanceSettings = MaintenanceSettings()
    """Maintenance window and exclusions."""
    private_nodes: ConfigBool = True
    """Nodes without public IPs; they reach the internet (Hugging Face) through Cloud NAT. False needs allowPublicNodes."""
    authorized_networks: tuple[str, ...] = ()
    """CIDR ranges that may reach the control plane's IP endpoint; none: only the DNS endpoint (IAM) is reachable from outside."""

    @field_validator("authorized_networks")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(value) > MAX_AUTHORIZED_NETWORKS:
            # Authorized networks make the program open the IP endpoint publicly, where GKE takes 50 (100 only when private).
            raise ConfigProblem((), None, f"lists {len(value)} ranges; GKE takes at most {MAX_AUTHORIZED_NETWORKS} with a public endpoint")
        for index, cidr in enumerate(value):
            try:
                network = ipaddress.IPv4Network(cidr)
            except ValueError:
                raise ConfigProblem((index,), cidr, "is not an IPv4 CIDR range such as 203.0.113.0/24") from None
            if str(network) != cidr:
                # The provider's IsCIDRNetwork takes only the form Go's net.ParseCIDR prints back.
                raise ConfigProblem((index,), cidr, f"is not in address/prefix-length form; write {network}")
            if network.prefixlen == 0:
                raise ConfigProblem((index,), cidr, "opens the control plane to the whole internet; set allowOpenControlPlane instead")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value, 40)

    @field_validator("namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if value in RESERVED_NAMESPACES or value.startswith(RESERVED_NAMESPACE_PREFIXES):
            raise ConfigProblem(
                (),
                value,
                "is a namespace Kubernetes or GKE manages (default, kube-*, gke-*, gmp-*); the stack would own and, "
                "on destroy, delete it: choose another",
            )
        return _check_name(value, 63)

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        match = _VERSION.match(value)
        if not match or int(match.group(1)) > 37:
            raise ConfigProblem(
                (), value, f"is not a supported GKE minor version; use one from 1.{B200_MIN_MINOR} to 1.37, written like 1.35"
            )
        if int(match.group(1)) < B200_MIN_MINOR:
            raise ConfigProblem(
                (),
                value,
                f"is too old for B200 on Autopilot, which needs GKE {B200_MIN_VERSION} or later; use 1.{B200_MIN_MINOR} to 1.37",
            )
        return value

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])


class FutureReservationSettings(Section):
    """A calendar-mode future reservation, created only when a stack asks for it."""

    name: str
    """Must equal `capacity.reservation.name`: the reservation the pods consume."""
    start_time: str
    """Start, RFC 3339 UTC (e.g. 2026-12-01T00:00:00Z)."""
    end_time: str
    """End, RFC 3339 UTC; after startTime."""
    nodes: int = Field(ge=1, le=CALENDAR_MAX_VMS)
    """A4 nodes reserved (1 to 80 per request); independent of `llm:nodes`, so scaling never touches the commitment."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value, 63)

    _times = field_validator("start_time", "end_time")(_utc_time)

    @model_validator(mode="after")
    def _ordered(self) -> FutureReservationSettings:
        _check_order(self.start_time, self.end_time)
        days = _days_between(self.start_time, self.end_time)
        if not CALENDAR_MIN_DAYS <= days <= CALENDAR_MAX_DAYS:
            raise ConfigProblem(
                ("endTime",),
                self.end_time,
                f"is {days:g} days after startTime; a calendar-mode reservation lasts {CALENDAR_MIN_DAYS} to {CALENDAR_MAX_DAYS} days",
            )
        return self


class ReservationSettings(Section):
    """A specific reservation of A4 nodes (Autopilot consumes only specific ones)."""

    name: str
    """Name of a specific reservation of a4-highgpu-8g nodes (created with specific_reservation_required)."""
    project: str | None = None
    """Owner project, when the reservation is shared from another project."""
    create: FutureReservationSettings | None = None
    """Create a calendar-mode future reservation (left in place by destroy, never updated). Unset: consume an existing one."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return _check_name(value, 63)

    @field_validator("project")
    @classmethod
    def _project(cls, value: str | None) -> str | None:
        return value if value is None else _project_id(value)

    @model_validator(mode="after")
    def _same_name(self) -> ReservationSettings:
        if self.create is not None and self.create.name != self.name:
            raise ConfigProblem(
                ("create", "name"), self.create.name, f"must equal reservation.name ({self.name}), the reservation the pods consume"
            )
        return self


class FlexStartSettings(Section):
    max_run_hours: int = Field(default=FLEX_START_MAX_HOURS)
    """How long a flex-start node may run before GKE reclaims it (at most 7 days)."""

    @field_validator("max_run_hours")
    @classmethod
    def _hours(cls, value: int) -> int:
        if not 1 <= value <= FLEX_START_MAX_HOURS:
            raise ConfigProblem((), value, f"is out of range; flex-start runs a node for 1 to {FLEX_START_MAX_HOURS} hours")
        return value


class CapacitySettings(Section):
    """Where A4 nodes come from. A4 has no on-demand capacity."""

    mode: CapacityMode = "spot"
    """Where A4 nodes come from: `spot`, `reservation`, `flex-start` or `fallback` (A4 has no on-demand)."""
    reservation: ReservationSettings | None = None
    """The specific reservation; required for `reservation`, and for `fallback` with a reservation step."""
    flex_start: FlexStartSettings = FlexStartSettings()
    """Flex-start (DWS) settings."""
    fallback: tuple[FallbackStep, ...] = ("reservation", "spot", "flex-start")
    """Order of preference when mode is `fallback` (a GKE ComputeClass)."""
    price_per_node_hour: float | None = None
    """US dollars per node-hour for the estimates; default: the reference list price of the mode."""

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: object) -> object:
        if value in ("on-demand", "ondemand", "standard"):
            raise ConfigProblem((), value, f"is not available for A4 ({A4_MACHINE_TYPE}); {one_of(CAPACITY_MODES)}")
        if value not in CAPACITY_MODES:
            raise ConfigProblem((), value, f"is not a capacity mode; {one_of(CAPACITY_MODES)}")
        return value

    @field_validator("fallback", mode="before")
    @classmethod
    def _fallback(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return value
        if not value:
            raise ConfigProblem((), [], f"is empty; list one or more of: {', '.join(FALLBACK_CHOICES)}")
        for index, mode in enumerate(value):
            if mode not in FALLBACK_CHOICES:
                raise ConfigProblem((index,), mode, f"is not a fallback step; {one_of(FALLBACK_CHOICES)}")
        if len(set(value)) != len(value):
            raise ConfigProblem((), list(value), "names a step twice; list each at most once")
        return value

    @field_validator("price_per_node_hour")
    @classmethod
    def _price(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ConfigProblem((), value, "must be a positive price in US dollars per node-hour")
        return value

    @model_validator(mode="after")
    def _reservation_named(self) -> CapacitySettings:
        wants_reservation = self.mode == "reservation" or (self.mode == "fallback" and "reservation" in self.fallback)
        if wants_reservation and self.reservation is None:
            step = " with a reservation step" if self.mode == "fallback" else ""
            raise ConfigProblem(("reservation",), None, f"is required when capacity.mode is {self.mode}{step}; set reservation.name")
        return self

    @property
    def steps(self) -> tuple[CapacityMode, ...]:
        """The capacity modes tried, in order."""
        return self.fallback if self.mode == "fallback" else (self.mode,)


class ModelSettings(Section):
    id: str = "Qwen/Qwen3.5-27B-FP8"
    """Hugging Face model id."""
    revision: str = "main"
    """Branch, tag or commit. A branch follows the repo: pin a commit for a reproducible cache."""
    served_name: str | None = None
    """Public model name clients send; default: the model id."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not re.match(r"^[\w.-]+/[\w.-]+$", value):
            raise ConfigProblem((), value, "is not a Hugging Face model id such as Qwen/Qwen3.5-27B-FP8")
        return value

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str) -> str:
        if not value.strip() or any(c.isspace() for c in value):
            raise ConfigProblem((), value, "is not a revision; name a branch, tag or commit such as main")
        return value

    @property
    def public_name(self) -> str:
        return self.served_name or self.id


class WorkloadSettings(Section):
    """The request shape the serving profile is sized for (the reference method)."""

    input_tokens: int = Field(default=1024, gt=0)
    """Mean prompt length (ISL)."""
    output_tokens: int = Field(default=512, gt=0)
    """Mean generation length (OSL)."""
    range_ratio: float = Field(default=0.5, ge=0, lt=1)
    """Lengths vary by up to this fraction around the mean."""

    @property
    def longest_request(self) -> int:
        # vLLM's random dataset draws lengths within +/- range_ratio of the mean.
        grow = 1 + self.range_ratio
        return math.ceil(self.input_tokens * grow) + math.ceil(self.output_tokens * grow)


class ServingProfile(Section):
    """vLLM engine settings. Defaults are the reference's tuned flags (docs/reference.md)."""

    image: str = "vllm/vllm-openai:v0.18.1"
    """vLLM image, pinned by tag or digest. v0.18.1 fixes v0.18.0's FP8 KV-cache accuracy bug."""
    vllm_version: str | None = None
    """vLLM release the image runs (e.g. 0.33.0) when its tag names none (a digest alone); flags and metrics follow it."""
    port: int = Field(default=8000, ge=1024, le=65535)
    """HTTP port of the OpenAI-compatible server, its probes, metrics and Service."""
    data_parallel_size: int = GPUS_PER_NODE
    """Engines per pod: one full model copy per GPU. Must be 8 (tensor parallel 8 was 4x slower)."""
    max_model_len: int = Field(default=2560, gt=0)
    """Context length. The default 131072 wasted 85x of the KV cache; size it to input + output."""
    max_num_batched_tokens: int = Field(default=16384, gt=0)
    """Tokens per engine step."""
    max_num_seqs: int = Field(default=8192, gt=0)
    """Concurrent sequences per engine; 512 capped admission in the reference."""
    kv_cache_dtype: Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2"] = "fp8_e4m3"
    """KV cache precision; FP8 holds ~3x the tokens (959K vs 288K per engine)."""
    gpu_memory_utilization: float = Field(default=0.92, gt=0, le=0.95)
    """Share of HBM for the engine; 0.95 with MTP ran out of memory."""
    enable_prefix_caching: ConfigBool = True
    """Prefix caching (it found no hits on Qwen 3.5's hybrid layers: do not count on it)."""
    enable_chunked_prefill: ConfigBool = True
    """Chunked prefill."""
    attention_backend: str | None = "FLASHINFER"
    """Attention backend; unset lets vLLM choose."""
    optimization_level: int = Field(default=3, ge=0, le=3)
    """vLLM compilation level (-O)."""
    mtp_tokens: int = Field(default=1, ge=0, le=2)
    """Multi-token-prediction speculative tokens; 0 disables. MTP-1 gave +50%; MTP-2 was slower."""
    mamba_cache_mode: str | None = "align"
    """Required for Qwen 3.5's hybrid layers, else every prompt is re-processed (10x slower)."""
    mamba_block_size: int | None = Field(default=8, gt=0)
    """Goes with mambaCacheMode align."""
    extra_args: tuple[str, ...] = ()
    """More engine flags, each `--name=value`, appended as given."""
    env: dict[str, str] = {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1"}
    """Engine environment; the default counts CUDA-graph memory when profiling, which prevents OOM."""
    cold_start_minutes: int = Field(default=25, ge=5, le=120)
    """Time a pod may take to become ready: model load and CUDA graph compile took ~10 min, plus download."""
    cpu: str = "180"
    """CPU request (= limit) of a replica; an A4 node has 224 vCPUs, some kept by GKE."""
    memory: str = "1800Gi"
    """Memory request (= limit) of a replica; an A4 node has ~3.9 TB."""

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        return _pinned_image(value)

    @field_validator("cpu", "memory")
    @classmethod
    def _resources(cls, value: str) -> str:
        return _quantity(value)

    @field_validator("data_parallel_size")
    @classmethod
    def _one_engine_per_gpu(cls, value: int) -> int:
        if value != GPUS_PER_NODE:
            raise ConfigProblem(
                (),
                value,
                f"must equal the GPUs of one A4 node ({GPUS_PER_NODE}): one engine per GPU; "
                "tensor parallel 8 was 4x slower (docs/reference.md)",
            )
        return value

    @field_validator("extra_args")
    @classmethod
    def _flags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, arg in enumerate(value):
            if not _FLAG.match(arg):
                raise ConfigProblem((index,), arg, "is not a flag in the form --name=value (or --name for a switch)")
            name = "-O" if arg.startswith("-O") else arg.split("=", 1)[0]
            plain = name.replace("--no-", "--", 1)
            if plain in MANAGED_FLAGS:
                raise ConfigProblem((index,), arg, f"is set by the program; use {MANAGED_FLAGS[plain]} instead")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _ENV_NAME.match(name):
                raise ConfigProblem((name,), name, "is not an environment variable name Kubernetes takes: printable ASCII without '='")
            if name in CREDENTIAL_VARIABLES:
                key = CREDENTIAL_VARIABLES[name]
                raise ConfigProblem(
                    (name,),
                    "[not shown]",
                    f"holds a credential in plain text; remove it and run `pulumi config set --secret {key} <value>`",
                )
        return value

    @property
    def release(self) -> str:
        """The vLLM release the image runs (validated: it has facts)."""
        return image_release(self.image, self.vllm_version)

    @property
    def facts(self) -> VllmFacts:
        """What the image's vLLM release accepts and exports."""
        return facts(self.release)

    @property
    def ttft_largest_bucket(self) -> float:
        """The largest finite bucket of vLLM's TTFT histogram: the release's, or --custom-histogram-buckets'."""
        custom = custom_buckets(self.extra_args).get(TTFT_FAMILY)
        return max(custom) if custom else self.facts.largest_bucket(TTFT_HISTOGRAM)

    @model_validator(mode="after")
    def _release_facts(self) -> ServingProfile:
        release = image_release(self.image, self.vllm_version)
        known = facts(release)
        for index, arg in enumerate(self.extra_args):
            name = "-O" if arg.startswith("-O") else arg.split("=", 1)[0]
            if name not in known.serve_flags:
                raise ConfigProblem(
                    ("extraArgs", index), arg, f"{name} is not a flag of vllm serve {release} (facts/data/vllm/{release}.yaml lists them)"
                )
        for index, arg in enumerate(self.extra_args):
            try:
                custom_buckets((arg,))
            except ValueError:
                raise ConfigProblem(
                    ("extraArgs", index), arg, 'is not a JSON object of bucket lists, e.g. {"time_to_first_token": [1, 10, 100]}'
                ) from None
        for key, value, choices, what in (
            ("attentionBackend", self.attention_backend, known.attention_backends, "an attention backend"),
            ("mambaCacheMode", self.mamba_cache_mode, known.mamba_cache_modes, "a mamba cache mode"),
            ("kvCacheDtype", self.kv_cache_dtype, known.kv_cache_dtypes, "a KV-cache dtype"),
        ):
            if value is not None and value not in choices:
                raise ConfigProblem((key,), value, f"is not {what} of vLLM {release}; {one_of(choices)}")
        return self

    @field_validator("cpu")
    @classmethod
    def _fits_cpu(cls, value: str) -> str:
        if quantity(value) > A4_POD_CPU:
            raise ConfigProblem((), value, f"is more CPU than an A4 node gives a pod ({A4_POD_CPU} of its 224 vCPUs)")
        return value

    @field_validator("memory")
    @classmethod
    def _fits_memory(cls, value: str) -> str:
        if quantity(value) > A4_POD_MEMORY:
            raise ConfigProblem((), value, f"is more memory than an A4 node gives a pod ({A4_POD_MEMORY / 2**30:.0f}Gi of its 3968Gi)")
        return value

    @model_validator(mode="after")
    def _mamba_caching(self) -> ServingProfile:
        # vLLM 0.18.1 and 0.33.0 set the mode to none without prefix caching, and assert chunked prefill
        # with it (vllm/model_executor/models/config.py, MambaModelConfig; docs/vllm.md).
        if self.mamba_cache_mode not in (None, "none"):
            for key, on in (("enablePrefixCaching", self.enable_prefix_caching), ("enableChunkedPrefill", self.enable_chunked_prefill)):
                if not on:
                    raise ConfigProblem(
                        ("mambaCacheMode",),
                        self.mamba_cache_mode,
                        f"needs {key}: true (vLLM turns the mode off without prefix caching and refuses it without chunked "
                        "prefill); turn it on, or unset mambaCacheMode and mambaBlockSize",
                    )
        return self

    @model_validator(mode="after")
    def _batches(self) -> ServingProfile:
        # vLLM 0.18.1 refuses to start otherwise (vllm/config/scheduler.py, verify_max_model_len).
        if not self.enable_chunked_prefill and self.max_num_batched_tokens < self.max_model_len:
            raise ConfigProblem(
                ("maxNumBatchedTokens",),
                self.max_num_batched_tokens,
                f"is below maxModelLen ({self.max_model_len}) with chunked prefill off, which vLLM refuses; "
                "raise it or enable chunked prefill",
            )
        if self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigProblem(
                ("maxNumBatchedTokens",), self.max_num_batched_tokens, f"is below maxNumSeqs ({self.max_num_seqs}), which vLLM refuses"
            )
        return self


class CacheSettings(Section):
    """The Hyperdisk ML model cache, written once and mounted read-only."""

    enabled: ConfigBool = True
    """Pre-stage the weights on Hyperdisk ML. Off: every replica downloads them at start."""
    size_gi: int = Field(default=100, ge=40, le=65536)
    """Volume size in GiB (the FP8 27B weights are ~29 GB; at least 40)."""
    throughput_mibps: int = Field(default=2400, ge=400)
    """Provisioned throughput of the volume in MiB/s."""
    download_method: Literal["hf", "git-lfs"] = "git-lfs"
    """`hf` (huggingface_hub) or `git-lfs`. Xet downloads stalled at 16-20 GB for large checkpoints; git-lfs worked."""
    download_machine_family: Literal["c4a", "c3"] = "c4a"
    """CPU node of the download Job: C4A (Arm, as in the reference) or C3 (x86)."""
    download_image: str = "python:3.12.7-slim-bookworm"
    """Download Job image; must be multi-arch (it runs on Arm for C4A)."""
    download_retries: int = Field(default=3, ge=0, le=10)
    """Retries of the download Job before it fails."""
    download_deadline_minutes: int = Field(default=60, ge=5, le=24 * 60)
    """Deadline of the whole download Job."""
    price_per_gib_month: float = Field(default=0.08, ge=0)
    """US dollars per GiB-month, for the estimates (an unofficial figure)."""
    price_per_mibps_month: float = Field(default=0.12, ge=0)
    """US dollars per provisioned MiB/s-month, for the estimates (an unofficial figure, as the GiB price)."""
    snapshot_price_per_gib_month: float = Field(default=0.05, ge=0)
    """US dollars per GiB-month of the cache's snapshot, for the estimates (standard snapshot storage list price)."""

    @field_validator("download_image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        return _pinned_image(value)


class GatewaySettings(Section):
    """The Inference Gateway, used when routing is gateway."""

    exposure: Literal["internal", "external"] = "internal"
    """`internal` (gke-l7-rilb) or `external` (gke-l7-regional-external-managed; needs allowPublicExposure)."""
    proxy_subnet_cidr: str = "10.129.0.0/23"
    """Range of the proxy-only subnet this stack creates."""
    existing_proxy_subnet: str | None = None
    """Name of an existing ACTIVE proxy-only subnet to use instead (a VPC allows one per region)."""
    install_crds: Literal["auto", "always", "never"] = "auto"
    """Install the InferencePool CRDs: `auto` when cluster.version is below what installs them (1.35)."""
    chart_version: Literal["v1.4.0", "v1.5.0"] = "v1.4.0"
    """Version of the inferencepool chart (endpoint picker)."""
    backend_timeout_seconds: int = Field(default=300, ge=10, le=3600)
    """Request timeout of the route and the backend, for long generations."""
    endpoint_picker_cpu: str = "10"
    """CPU of the endpoint picker (requests = limits); 4 and less crashed under ~8K connections."""
    endpoint_picker_memory: str = "16Gi"
    """Memory of the endpoint picker (requests = limits)."""
    endpoint_picker_replicas: int = Field(default=1, ge=1, le=3)
    """More than 1 adds standby replicas (leader election), not capacity."""
    programmed_timeout_minutes: int = Field(default=15, ge=1, le=60)
    """How long `pulumi up` waits for the Gateway to be Programmed."""
    price_per_vcpu_hour: float = Field(default=0.0445, ge=0)
    """US dollars per vCPU-hour of the endpoint picker's Autopilot Pods, for the estimates (general-purpose, us-central1)."""
    price_per_gib_hour: float = Field(default=0.0049225, ge=0)
    """US dollars per GiB-hour of the endpoint picker's Autopilot Pods, for the estimates (general-purpose, us-central1)."""
    load_balancer_price_per_hour: float = Field(default=0.025, ge=0)
    """US dollars per hour of the Gateway's load balancer, for the estimates (before data processed)."""

    @field_validator("existing_proxy_subnet")
    @classmethod
    def _subnet_name(cls, value: str | None) -> str | None:
        # The program looks the subnet up by name in the stack's project and region.
        return value if value is None else _check_name(value, 63)

    @field_validator("proxy_subnet_cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        return _private_cidr(value)

    @field_validator("endpoint_picker_cpu", "endpoint_picker_memory")
    @classmethod
    def _resources(cls, value: str) -> str:
        return _quantity(value)


class BenchmarkSettings(Section):
    """An in-cluster benchmark Job following the reference method."""

    enabled: ConfigBool = False
    """Run the benchmark Job on `pulumi up` (not while scaled to zero)."""
    run: int = Field(default=1, ge=1)
    """Run number; raise it to run the benchmark again (a finished Job is not re-run)."""
    clients_per_node: int = Field(default=2, ge=1, le=16)
    """`vllm bench serve` clients per serving node (~2,000 concurrent requests per node in the reference)."""
    concurrency_per_client: int = Field(default=1024, ge=1, le=16000)
    """Concurrent requests of one client; one client saturates a core at ~16K."""
    prompts_per_client: int = Field(default=10240, ge=1)
    """Prompts each client sends."""
    machine_type: str = "c4-standard-16"
    """The dedicated CPU node the clients run on."""
    image: str = "vllm/vllm-openai:v0.18.1"
    """Image with `vllm bench serve`."""
    vllm_version: str | None = None
    """vLLM release the benchmark image runs when its tag names none; the clients' flags follow it."""

    @property
    def release(self) -> str:
        """The vLLM release of the benchmark image (validated: it has facts)."""
        return image_release(self.image, self.vllm_version)

    @model_validator(mode="after")
    def _release_facts(self) -> BenchmarkSettings:
        image_release(self.image, self.vllm_version)
        return self

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        return _pinned_image(value)

    @field_validator("machine_type")
    @classmethod
    def _big_enough(cls, value: str) -> str:
        match = _MACHINE_CPUS.match(value)
        if not match or int(match.group(3)) < BENCHMARK_MIN_CPUS:
            raise ConfigProblem((), value, f"is too small or not a machine type: the clients take 14 CPUs; use {BENCHMARK_MIN_CPUS}+ vCPUs")
        per_cpu = _GB_PER_VCPU.get((match.group(1), match.group(2)))
        if per_cpu is not None and per_cpu * int(match.group(3)) < BENCHMARK_MIN_GB:
            memory = per_cpu * int(match.group(3))
            raise ConfigProblem(
                (), value, f"has {memory:g} GB, too little for the clients' 48Gi pod; use {BENCHMARK_MIN_GB}+ GB, e.g. c4-standard-16"
            )
        return value


Labels = Annotated[dict[str, str], Field(default_factory=dict)]


class BatchWindowSettings(Section):
    """A period in which the replicas are scaled up whatever the queue: the wake-up from zero."""

    start: str
    """Cron expression (5 fields) of the window's start, e.g. `0 22 * * 1-5`."""
    end: str
    """Cron expression of its end, e.g. `0 6 * * 2-6`."""
    timezone: str = "Etc/UTC"
    """IANA time zone of both expressions."""
    replicas: int = Field(ge=1, le=1000)
    """Replicas kept during the window."""

    @field_validator("start", "end")
    @classmethod
    def _cron(cls, value: str) -> str:
        try:
            schedule(value)
        except CronError as error:
            raise ConfigProblem((), value, f"is not a cron expression KEDA takes: it {error} (e.g. '0 22 * * 1-5')") from None
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        # KEDA loads the zone with Go's time.LoadLocation on every poll; an unknown one fails each time.
        if value not in _time_zones():
            raise ConfigProblem((), value, "is not an IANA time zone such as Etc/UTC or Europe/Amsterdam")
        return value

    @model_validator(mode="after")
    def _opens(self) -> BatchWindowSettings:
        if schedule(self.start) == schedule(self.end):
            # KEDA refuses an identical start and end; an equal schedule spelt otherwise never opens.
            raise ConfigProblem(("end",), self.end, f"fires when start ({self.start}) does: the window would never be open")
        return self


@cache
def _time_zones() -> frozenset[str]:
    return frozenset(available_timezones())


def vendored_keda_versions() -> tuple[str, ...]:
    """The KEDA chart versions with source under render/vendor/charts/ (its PROVENANCE.md)."""
    charts = Path(__file__).parent.parent / "render" / "vendor" / "charts"
    return tuple(sorted(p.name.removeprefix("keda-") for p in charts.glob("keda-*") if p.is_dir()))


def _vendored_keda(value: str) -> str:
    # The render reads the chart's source; an unvendored version would fail only after resources were registered.
    versions = vendored_keda_versions()
    if value not in versions:
        hint = "or vendor it under render/vendor/charts/ first"
        raise ConfigProblem((), value, f"is not a vendored KEDA chart version; {one_of(versions)}, {hint}")
    return value


KedaVersion = Annotated[str, AfterValidator(_vendored_keda)]


class AutoscalingSettings(Section):
    """Replicas follow vLLM's queue between a minimum and a maximum, down to zero when idle (KEDA)."""

    enabled: ConfigBool = False
    """Scale on queue depth; `nodes` is then only the replica count the Deployment is created with."""
    min_replicas: int = Field(default=0, ge=0, le=1000)
    """Fewest replicas; 0 lets an idle stack go to zero GPU nodes."""
    max_replicas: int | None = Field(default=None, ge=1, le=1000)
    """Most replicas; default: `nodes`."""
    requests_per_replica: int = Field(default=2000, ge=1, le=100_000)
    """Target of requests running or waiting per replica (the reference ran ~2,000 per node); replicas = total / target."""
    idle_minutes: int = Field(default=15, ge=1, le=1440)
    """Minutes without requests before scaling to `minReplicas`; replicas go after load is lower for a cold start plus this."""
    poll_seconds: int = Field(default=30, ge=5, le=600)
    """How often the queue is read."""
    batch_windows: tuple[BatchWindowSettings, ...] = ()
    """Scheduled wake-ups: from zero no vLLM reports a queue, so a window (or raising minReplicas) starts a batch."""
    keda_version: KedaVersion = "2.20.2"
    """KEDA Helm chart version (kedacore/charts)."""


class BatchSettings(Section):
    """OpenAI Batch API files in the stack's bucket, run by an in-cluster runner; an input wakes the stack from zero."""

    enabled: ConfigBool = False
    """Create the batch bucket and runner: a file under `input/` wakes the replicas (needs autoscaling.enabled)."""
    finished_retention_days: int = Field(default=7, ge=1, le=3650)
    """Days a finished input stays under `finished/` before the bucket's lifecycle rule deletes it; outputs and reports stay."""
    runner_cpu: str = "1"
    """CPU of one runner worker; a pod runs the workers that saturate the most replicas (requests = limits)."""
    runner_memory: str = "1Gi"
    """Memory of one runner worker; the runner streams its files, so this does not grow with a batch."""

    @field_validator("runner_cpu", "runner_memory")
    @classmethod
    def _resources(cls, value: str) -> str:
        return _quantity(value)


class RegistrySettings(Section):
    """Where nodes pull images: Artifact Registry remote repositories in the stack's region."""

    enabled: ConfigBool = True
    """Pull images through remote repositories of Docker Hub, registry.k8s.io, ghcr.io (cached in region; upstream limits on a miss)."""


class ObservabilitySettings(Section):
    """The stack's Cloud Monitoring dashboard and alert policies."""

    enabled: ConfigBool = True
    """Register the dashboard and the alert policies."""
    notification_channels: tuple[str, ...] = ()
    """Alert notification channels, as `projects/<project>/notificationChannels/<id>`; none: alerts only show in the console."""
    minutes: int = Field(default=10, ge=1, le=120)
    """How long a condition must hold before an alert opens."""
    waiting_requests: int = Field(default=4096, ge=1)
    """Queue depth (requests waiting, all replicas) that opens the queue alert."""
    kv_cache_usage: float = Field(default=0.95, gt=0, le=1)
    """KV-cache usage of any engine that opens the KV-cache alert."""
    ttft_p99_seconds: float = Field(default=30.0, gt=0)
    """Objective for time to first token, p99; the reference median was 5.6-8 s under full load."""
    throughput_fraction: float = Field(default=0.5, gt=0, le=1)
    """Under load, throughput below this share of the stack's own estimate opens an alert (reference profile only)."""

    @field_validator("notification_channels")
    @classmethod
    def _channels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, channel in enumerate(value):
            # Cloud Monitoring names a channel by project id or project number.
            if not re.match(r"^projects/([a-z][-a-z0-9]{4,28}[a-z0-9]|[0-9]+)/notificationChannels/[0-9]+$", channel):
                raise ConfigProblem(
                    (index,), channel, "is not a notification channel: projects/<project id or number>/notificationChannels/<id>"
                )
        return value


class DrainSettings(Section):
    """How a replica stops: endpoints drop it first, then vLLM finishes what it is serving."""

    pre_stop_seconds: int = Field(default=10, ge=0, le=120)
    """Time for the Service, the load balancer and the endpoint picker to stop sending to a stopping pod."""
    shutdown_timeout_seconds: int = Field(default=35, ge=0, le=3600)
    """vLLM's --shutdown-timeout: how long in-flight requests may finish (a reference one: ~5.6 s to first token + 512 x 46 ms)."""


class RolloutSettings(Section):
    """How an engine or image change reaches the running replicas."""

    parallelism: int = Field(default=ROLLOUT_PARALLELISM, ge=1, le=1000)
    """Replicas replaced at once, each on its own node (no surge: no extra A4 node); `pulumi up` waits one cold start per round."""
    keep_serving: ConfigBool = True
    """Keep at least one replica serving through a rollout: at most replicas - 1 are replaced at once, and a
    one-replica stack starts the new replica on a second node before stopping the old. False replaces
    `parallelism` at once even if that is every replica."""


class StackSettings(Section):
    """Everything one stack chooses. Only ``project`` has no default."""

    project: str
    """GCP project id."""
    region: str = "europe-west4"
    """Region of the cluster and network."""
    zone: str = "europe-west4-b"
    """Zone of the A4 nodes and the model cache; a zone not known to offer A4 gets a warning (docs/reference.md)."""
    nodes: int = 1
    """A4 nodes, one vLLM replica each; 0 scales to zero and keeps cluster and cache."""
    routing: Literal["clusterip", "gateway"] = "clusterip"
    """`clusterip` (round-robin Service; fastest) or `gateway` (Inference Gateway; 31-37% overhead measured)."""
    production: ConfigBool = False
    """Marks a production stack: deletion protection required."""
    allow_public_exposure: ConfigBool = False
    """Opt in to an internet-facing gateway or load balancer."""
    allow_public_nodes: ConfigBool = False
    """Opt in to nodes with public IPs (cluster.privateNodes false)."""
    allow_open_control_plane: ConfigBool = False
    """Opt in to a control-plane IP endpoint reachable from any address (no authorizedNetworks)."""
    labels: Labels
    """Extra labels on every labelled resource (app, managed-by and stack are always set)."""
    network: NetworkSettings = NetworkSettings()
    """The VPC."""
    cluster: ClusterSettings = ClusterSettings()
    """The GKE cluster."""
    capacity: CapacitySettings = CapacitySettings()
    """Where A4 nodes come from."""
    model: ModelSettings = ModelSettings()
    """The model served."""
    workload: WorkloadSettings = WorkloadSettings()
    """The request shape the serving profile and estimates are for."""
    serving: ServingProfile = ServingProfile()
    """The vLLM engine profile."""
    cache: CacheSettings = CacheSettings()
    """The Hyperdisk ML model cache."""
    gateway: GatewaySettings = GatewaySettings()
    """The Inference Gateway (routing: gateway)."""
    benchmark: BenchmarkSettings = BenchmarkSettings()
    """The in-cluster benchmark Job."""
    rollout: RolloutSettings = RolloutSettings()
    """How changes roll out to the replicas."""
    autoscaling: AutoscalingSettings = AutoscalingSettings()
    """Scaling on queue depth and to zero when idle (opt-in)."""
    registry: RegistrySettings = RegistrySettings()
    """Images through Artifact Registry."""
    observability: ObservabilitySettings = ObservabilitySettings()
    """Dashboard and alerts."""
    drain: DrainSettings = DrainSettings()
    """How a replica stops (scale-down, rollout, preemption). On Spot both are cut to fit its 25 s."""
    batch: BatchSettings = BatchSettings()
    """Batches from a Cloud Storage bucket that wake the stack from zero (opt-in)."""

    @field_validator("project")
    @classmethod
    def _project(cls, value: str) -> str:
        return _project_id(value)

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not re.match(r"^[a-z]+-[a-z]+\d+$", value):
            raise ConfigProblem((), value, "is not a GCP region such as europe-west4")
        return value

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: int) -> int:
        if not 0 <= value <= 1000:
            raise ConfigProblem((), value, "is out of range; use 0 (scaled to zero) up to 1000 A4 nodes")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            if key in PROGRAM_LABELS:
                raise ConfigProblem((key,), text, f"replaces a label the program sets ({', '.join(PROGRAM_LABELS)}); use another key")
            if not _LABEL_KEY.match(key):
                raise ConfigProblem((key,), key, "is not a label key: a-z first, then up to 62 of a-z, 0-9, '-', '_', ending alphanumeric")
            if not _LABEL_VALUE.match(text):
                raise ConfigProblem((key,), text, "is not a label value: up to 63 of a-z, 0-9, '-', '_', alphanumeric at both ends")
        return value

    @property
    def max_replicas(self) -> int:
        """The most replicas the stack may run: the autoscaler's maximum, else `nodes`."""
        if self.autoscaling.enabled:
            return self.autoscaling.max_replicas or max(self.nodes, 1)
        return self.nodes

    def warnings(self, namespace: str) -> list[str]:
        """What deserves a word before `pulumi up` but may be right: refused only by the cloud, if at all."""
        known = a4_zones()
        if self.zone in known.zones:
            return []
        nearby = [zone for zone in known.zones if zone.startswith(self.region + "-")]
        where = f"in {self.region}: {', '.join(nearby)}" if nearby else f"anywhere: {', '.join(known.zones)}"
        return [
            f"{namespace}:zone: {show_value(self.zone)} is not among the zones known to offer {A4_MACHINE_TYPE} "
            f"(list of {known.as_of}; {where}); A4 nodes may never come. "
            "Check https://cloud.google.com/compute/docs/gpus/gpu-regions-zones"
        ]

    @model_validator(mode="after")
    def _cross_field(self) -> StackSettings:
        if not self.zone.startswith(self.region + "-"):
            raise ConfigProblem(("zone",), self.zone, f"is not in region {self.region}; use a zone such as {self.region}-b")
        longest = self.workload.longest_request
        if self.serving.max_model_len < longest:
            raise ConfigProblem(
                ("serving", "maxModelLen"),
                self.serving.max_model_len,
                f"is below the workload's longest request ({longest} tokens: input {self.workload.input_tokens} and "
                f"output {self.workload.output_tokens}, each up to +{self.workload.range_ratio:.0%}); raise it to at least {longest}",
            )
        largest = self.serving.ttft_largest_bucket
        if self.observability.ttft_p99_seconds >= largest:
            # histogram_quantile never exceeds the largest finite bucket: the alert could never fire.
            raise ConfigProblem(
                ("observability", "ttftP99Seconds"),
                self.observability.ttft_p99_seconds,
                f"is not below the largest bucket of {TTFT_HISTOGRAM} in vLLM {self.serving.release} ({largest:g} s), so the alert "
                "could never fire; the objective is in seconds (e.g. 30, not 30000 ms)",
            )
        if self.gateway.exposure == "external" and not self.allow_public_exposure:
            raise ConfigProblem(
                ("gateway", "exposure"),
                "external",
                "exposes the model to the internet; set allowPublicExposure: true to opt in, or use internal",
            )
        if self.routing == "gateway" and self.gateway.existing_proxy_subnet is None:
            proxy = ipaddress.IPv4Network(self.gateway.proxy_subnet_cidr)
            for key, cidr in (
                ("nodeCidr", self.network.node_cidr),
                ("podCidr", self.network.pod_cidr),
                ("serviceCidr", self.network.service_cidr),
            ):
                if proxy.overlaps(ipaddress.IPv4Network(cidr)):
                    raise ConfigProblem(
                        ("gateway", "proxySubnetCidr"), str(proxy), f"overlaps network.{key} ({cidr}); choose a disjoint range"
                    )
        scaling = self.autoscaling
        if scaling.enabled and scaling.min_replicas > self.max_replicas:
            raise ConfigProblem(
                ("autoscaling", "minReplicas"),
                scaling.min_replicas,
                f"is above the maximum ({self.max_replicas}); lower it or raise maxReplicas",
            )
        for index, window in enumerate(scaling.batch_windows):
            if scaling.enabled and window.replicas > self.max_replicas:
                raise ConfigProblem(
                    ("autoscaling", "batchWindows", index, "replicas"), window.replicas, f"is above the maximum ({self.max_replicas})"
                )
        if not self.cluster.private_nodes and not self.allow_public_nodes:
            raise ConfigProblem(("cluster", "privateNodes"), False, "gives every node a public IP; set allowPublicNodes: true to opt in")
        if self.production and not self.cluster.deletion_protection:
            raise ConfigProblem(("cluster", "deletionProtection"), False, "must be true on a production stack (production: true)")
        if self.production and self.cluster.maintenance.window is None:
            # Without one GKE may upgrade a serving production cluster at any hour.
            raise ConfigProblem(
                ("cluster", "maintenance", "window"),
                None,
                "is required on a production stack (production: true): say when GKE may upgrade it, e.g. startTime "
                "2026-01-03T00:00:00Z, endTime 2026-01-03T06:00:00Z, recurrence FREQ=WEEKLY;BYDAY=SA,SU",
            )
        if self.batch.enabled and not self.autoscaling.enabled:
            # The wake trigger and the runner's scaling are KEDA scalers: without KEDA nothing wakes the stack.
            raise ConfigProblem(
                ("batch", "enabled"), True, "needs autoscaling.enabled: true (KEDA wakes the replicas and the runner); turn both on"
            )
        if self.autoscaling.enabled and self.cluster.namespace == KEDA_NAMESPACE:
            raise ConfigProblem(
                ("cluster", "namespace"), self.cluster.namespace, "is where the stack installs KEDA when autoscaling is on; choose another"
            )
        return self


def known_keys() -> dict[tuple[str | int, ...], list[str]]:
    """The keys each section accepts, by the section's path, for spelling hints."""
    table: dict[tuple[str | int, ...], list[str]] = {}

    def walk(model: type[BaseModel], path: tuple[str, ...]) -> None:
        table[path] = [str(f.alias) for f in model.model_fields.values()]
        for field in model.model_fields.values():
            annotation = field.annotation
            for candidate in getattr(annotation, "__args__", (annotation,)):
                if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                    walk(candidate, (*path, str(field.alias)))

    walk(StackSettings, ())
    return table
