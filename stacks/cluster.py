"""The cluster section: the GKE Autopilot cluster and when GKE may upgrade it."""

from __future__ import annotations

import ipaddress
import re
from datetime import timedelta
from typing import Literal

from pydantic import field_validator, model_validator

from facts.gke import (
    B200_MIN_MINOR,
    B200_MIN_VERSION,
    EXCLUSION_SCOPES,
    MAX_AUTHORIZED_NETWORKS,
    MAX_EXCLUSIONS,
    NO_UPGRADES_MAX_DAYS,
    RESERVED_NAMESPACE_PREFIXES,
    RESERVED_NAMESPACES,
)
from stacks.maintenance import MIN_AVAILABLE, MIN_STRETCH, ROLLING_PERIOD, least_available
from stacks.problems import ConfigProblem, one_of
from stacks.section import ConfigBool, Section, check_name, check_order, days_between, instant, utc_time

_VERSION = re.compile(r"^1\.(\d+)$")


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

    _times = field_validator("start_time", "end_time")(utc_time)

    @field_validator("recurrence")
    @classmethod
    def _recurrence(cls, value: str) -> str:
        if not re.match(r"^FREQ=(DAILY|WEEKLY)(;BYDAY=(MO|TU|WE|TH|FR|SA|SU)(,(MO|TU|WE|TH|FR|SA|SU))*)?$", value):
            raise ConfigProblem((), value, "is not a recurrence GKE takes; use FREQ=DAILY or FREQ=WEEKLY;BYDAY=SA,SU")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> MaintenanceWindowSettings:
        check_order(self.start_time, self.end_time)
        return self

    @model_validator(mode="after")
    def _enough_time(self) -> MaintenanceWindowSettings:
        available = least_available(instant(self.start_time), instant(self.end_time), self.recurrence)
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

    _times = field_validator("start_time", "end_time")(utc_time)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, 63)

    @field_validator("scope")
    @classmethod
    def _scope(cls, value: str) -> str:
        if value not in EXCLUSION_SCOPES:
            raise ConfigProblem((), value, f"is not an exclusion scope; {one_of(EXCLUSION_SCOPES)}")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> MaintenanceExclusionSettings:
        check_order(self.start_time, self.end_time)
        days = days_between(self.start_time, self.end_time)
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
        # GKE: up to 40 of lowercase letters, digits and '-', from a letter to a letter or digit (API Cluster.name).
        return check_name(value, 40)

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
        return check_name(value, 63)

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
