"""Replacements google-beta decides on the values: its ``CustomizeDiff`` functions, modelled one by one.

A ForceNew field replaces on any change (``replacements/gcp.yaml``); these
replace only on some: a subnet range that no longer holds the old one, a
feature turned off that cannot be. ``replacements/gcp-customize-diff.yaml``
lists every ``CustomizeDiff`` function of every GCP resource the program
registers, as ``dev/provider_schema.py`` read them from google-beta; each one
that can force new has its model here, under the Go function's name (a test
holds the two together). Sources are at the commit the vendored file names.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from facts.data_files import read_yaml

RULES = Path(__file__).resolve().parent / "vendor" / "replacements" / "gcp-customize-diff.yaml"

Inputs = dict[str, Any]


def value_at(inputs: Inputs, path: str) -> Any:
    """The input at a dotted path; None where any part is missing."""
    value: Any = inputs
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _is_shrinkage_ip_cidr(old: Any, new: Any) -> bool:
    """google-beta/services/compute/resource_compute_subnetwork.go ``IsShrinkageIpCidr``: the new range must hold the old one's
    first and last address, else the subnet is replaced (an expansion is updated in place); an unreadable range forces nothing."""
    try:
        before, after = ipaddress.ip_network(str(old), strict=False), ipaddress.ip_network(str(new), strict=False)
    except ValueError:
        return False
    return not (before.version == after.version and before[0] in after and before[-1] in after)


def _turned_off(old: Any, new: Any) -> bool:
    """``isBeenEnabled`` (resource_container_cluster.go) and ``isPolicyLocked`` (resource_storage_bucket.go): true before,
    false now; a value not set on either side forces nothing."""
    return old is True and new is False


def _autopilot_dns_domain(before: Inputs, after: Inputs) -> bool:
    """resource_container_cluster.go ``containerClusterAutopilotCustomizeDiff``: an Autopilot cluster cannot change
    ``dns_config.0.additive_vpc_scope_dns_domain`` in place (the rule is asked only once that field changed)."""
    return bool(after.get("enableAutopilot"))


def _beta_api_removed(before: Inputs, after: Inputs) -> bool:
    """resource_container_cluster.go ``containerClusterEnableK8sBetaApisCustomizeDiffFunc``: a Kubernetes beta API once
    enabled cannot be disabled, so removing one from the list replaces the cluster; adding one updates it."""
    old = value_at(before, "enableK8sBetaApis.enabledApis") or []
    new = value_at(after, "enableK8sBetaApis.enabledApis") or []
    return any(api not in new for api in old)


# ``customdiff.ForceNewIfChange(field, condition)``: the condition on the field's old and new value, by its Go name.
CONDITIONS: dict[str, Callable[[Any, Any], bool]] = {
    "IsShrinkageIpCidr": _is_shrinkage_ip_cidr,
    "isBeenEnabled": _turned_off,
    "isPolicyLocked": _turned_off,
}
# A CustomizeDiff function that calls ``ForceNew`` itself: whether it does, on the whole inputs before and after,
# once the field it forces has changed.
FUNCTIONS: dict[str, Callable[[Inputs, Inputs], bool]] = {
    "containerClusterAutopilotCustomizeDiff": _autopilot_dns_domain,
    "containerClusterEnableK8sBetaApisCustomizeDiff": _beta_api_removed,
}
_WHY = {
    "IsShrinkageIpCidr": "the new range does not hold the old one",
    "isBeenEnabled": "it cannot be turned off once on",
    "isPolicyLocked": "a locked retention policy cannot be unlocked",
    "containerClusterAutopilotCustomizeDiff": "an Autopilot cluster cannot change it in place",
    "containerClusterEnableK8sBetaApisCustomizeDiff": "an enabled beta API cannot be disabled",
}


@dataclass(frozen=True)
class ForceNewRule:
    """One CustomizeDiff entry that can replace the resource: the field it forces new and the Go function that decides."""

    field: str
    function: str
    source: str

    def forces(self, before: Inputs, after: Inputs) -> bool:
        """Whether the provider replaces, the rule's field having changed."""
        if self.function in CONDITIONS:
            return CONDITIONS[self.function](value_at(before, self.field), value_at(after, self.field))
        return FUNCTIONS[self.function](before, after)

    def reason(self) -> str:
        return f"{self.field} ({_WHY[self.function]}: {self.source} {self.function})"


@cache
def vendored() -> dict[str, Any]:
    loaded: dict[str, Any] = read_yaml(RULES)
    return loaded


@cache
def rules(resource_type: str) -> tuple[ForceNewRule, ...]:
    """The rules of a GCP resource type that can force new; none for a type the file does not list."""
    listed = vendored().get(resource_type) or {}
    found: list[ForceNewRule] = []
    for entry in listed.get("customizeDiff", []):
        if "condition" in entry:
            found.append(ForceNewRule(field=entry["field"], function=entry["condition"], source=listed["source"]))
        found.extend(ForceNewRule(field=f, function=entry["function"], source=listed["source"]) for f in entry.get("forcesNew", []))
    return tuple(found)


def _touches(path: str, field: str) -> bool:
    """A changed path is the field, lies below it, or holds it (a whole block added or removed)."""
    return path == field or path.startswith((field + ".", field + "[")) or field.startswith(path + ".")


def forced(resource_type: str, before: Inputs, after: Inputs, changed: tuple[str, ...]) -> tuple[str, ...]:
    """Why the provider replaces rather than updates, one reason per rule that fires on a changed field."""
    return tuple(
        rule.reason() for rule in rules(resource_type) if any(_touches(path, rule.field) for path in changed) and rule.forces(before, after)
    )
