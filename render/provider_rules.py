"""What pulumi-gcp's provider (google-beta) refuses before it calls the API, checked offline.

pulumi-gcp runs the Terraform schema's checks in its Check step, so a violation
fails ``pulumi preview`` and ``pulumi up`` before any resource changes. The
rules are data, generated from google-beta's source by ``dev/provider_schema.py``
(``constraints/gcp.yaml``): Required, MaxItems/MinItems, ExactlyOneOf,
ConflictsWith, RequiredWith, AtLeastOneOf, and the enums, ranges, patterns,
RFC 3339 times and CIDR ranges of the validators. They are applied as the
Terraform plugin SDK does: a nested field's rules only inside a block that is
set, relations by absolute key, a value not yet known never a violation.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from render.engine import Registration, Render, reveal
from render.sdk import UNKNOWN

CONSTRAINTS = Path(__file__).resolve().parent / "vendor" / "constraints" / "gcp.yaml"
_ABSENT = object()
# time.RFC3339 as Go's time.Parse reads it: seconds required, fraction optional, Z or an offset.
_RFC3339 = re.compile(r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2}):(\d{2}))$")


class ProviderConstraintError(ValueError):
    pass


@cache
def constraints() -> dict[str, Any]:
    """The generated rules, read once (the C loader when PyYAML has it: the file is large)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with CONSTRAINTS.open() as stream:
        loaded: dict[str, Any] = yaml.load(stream, Loader=loader)
    return loaded


def _unknown(value: Any) -> bool:
    return value is None or value == UNKNOWN


def _set(value: Any) -> bool:
    """Set in the Terraform sense: present, known, and not an empty block list."""
    return value is not _ABSENT and not _unknown(value) and value != []


def lookup(inputs: dict[str, Any], path: str) -> Any:
    """The value at a Pulumi path (``a.b``; a number indexes a list), or ``_ABSENT``."""
    value: Any = inputs
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit():
            value = value[int(part)] if int(part) < len(value) else _ABSENT
        elif isinstance(value, dict):
            value = value.get(part, _ABSENT)
        else:
            return _ABSENT
    return value


def _blocks(value: Any, parts: list[str], label: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every block instance at ``parts`` below ``value``, lists expanded, with its concrete path."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _blocks(item, parts, f"{label}[{index}]")
        return
    if not isinstance(value, dict):
        return
    if not parts:
        yield label, value
        return
    head, *rest = parts
    if head in value:
        yield from _blocks(value[head], rest, f"{label}.{head}".lstrip("."))


def _cidr(value: str, rule: dict[str, Any]) -> str | None:
    """Go's net.ParseCIDR: an address, one ``/`` and a decimal prefix length; IsCIDRNetwork also wants the network address."""
    address, slash, prefix = value.partition("/")
    if not slash or not prefix.isascii() or not prefix.isdigit() or "%" in address:
        return "is not an address/prefix-length CIDR range"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "is not an address/prefix-length CIDR range"
    if int(prefix) > ip.max_prefixlen:
        return "is not an address/prefix-length CIDR range"
    network = ipaddress.ip_network(f"{address}/{int(prefix)}", strict=False)
    if rule.get("network") and str(network) != value:
        return f"is not a network address in canonical form (expected {network})"
    low, high = rule.get("minPrefix", 0), rule.get("maxPrefix", ip.max_prefixlen)
    if rule.get("network") and not low <= network.prefixlen <= high:
        return f"has a prefix length outside {low}..{high}"
    return None


def _rfc3339(value: str, form: str) -> str | None:
    if form == "HH:MM":
        hours, colon, minutes = value[:2], value[2:3], value[3:]
        ok = len(value) == 5 and colon == ":" and (hours + minutes).isascii() and (hours + minutes).isdigit()
        return None if ok and int(hours) <= 23 and int(minutes) <= 59 else "is not an HH:MM time (00:00 to 23:59)"
    match = _RFC3339.match(value)
    if match is None:
        return "is not an RFC 3339 date-time such as 2026-01-03T02:00:00Z"
    year, month, day, hour, minute, second, zone_hours, zone_minutes = (int(g) if g else 0 for g in match.groups())
    try:
        datetime(year, month, day, hour, minute, second)  # the calendar only
    except ValueError as error:
        return f"is not a real instant ({error})"
    return None if zone_hours < 24 and zone_minutes < 60 else "has a time-zone offset out of range"


def invalid(rule: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` fails a validator of the generated rules, or None."""
    if rule.get("allowEmpty") and value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    if "enum" in rule and isinstance(value, str):
        allowed: list[str] = rule["enum"]
        fold = rule.get("ignoreCase")
        if (value.casefold() if fold else value) not in ([a.casefold() for a in allowed] if fold else allowed):
            return f"is not one of {', '.join(repr(a) for a in allowed)}"
    if "range" in rule and isinstance(value, int | float):
        low, high = rule["range"]["min"], rule["range"]["max"]
        if (low is not None and value < low) or (high is not None and value > high):
            return f"is outside {'' if low is None else low}..{'' if high is None else high}"
    if "length" in rule and isinstance(value, str) and not rule["length"]["min"] <= len(value) <= rule["length"]["max"]:
        return f"is not {rule['length']['min']} to {rule['length']['max']} characters long"
    if "pattern" in rule and isinstance(value, str) and not re.search(rule["pattern"], value):
        return f"does not match {rule['pattern']}"
    if "rfc3339" in rule and isinstance(value, str):
        return _rfc3339(value, rule["rfc3339"])
    if "cidr" in rule and isinstance(value, str):
        return _cidr(value, rule["cidr"])
    return None


def _relations(inputs: dict[str, Any], path: str, value: Any, facts: dict[str, Any]) -> Iterator[str]:
    """The ExactlyOneOf, AtLeastOneOf, ConflictsWith and RequiredWith failures of one field, as the plugin SDK words them."""
    for name in ("exactlyOneOf", "atLeastOneOf"):
        if name in facts:
            group = sorted({*facts[name], path})
            values = [lookup(inputs, key) for key in group]
            chosen = [key for key, v in zip(group, values, strict=True) if _set(v)]
            pending = any(v is not _ABSENT and _unknown(v) for v in values)
            if not chosen and not pending:
                yield f"{name}: one of {', '.join(group)} must be set, none is"
            if name == "exactlyOneOf" and len(chosen) > 1:
                yield f"{name}: only one of {', '.join(group)} may be set, {', '.join(chosen)} are"
    if not _set(value):
        return
    clashes = [key for key in facts.get("conflictsWith", []) if _set(lookup(inputs, key))]
    if clashes:
        yield f"conflictsWith: {path} is set, so {', '.join(clashes)} must not be"
    missing = [key for key in facts.get("requiredWith", []) if lookup(inputs, key) is _ABSENT]
    if missing:
        yield f"requiredWith: {path} is set, so {', '.join(missing)} must be too"


def _field_problems(inputs: dict[str, Any], path: str, facts: dict[str, Any]) -> Iterator[tuple[str, Any, str]]:
    """(where, value, what is wrong) for one field of the rules, in every block instance it is in."""
    *parent, leaf = path.split(".")
    for label, block in _blocks(inputs, parent, ""):
        where = f"{label}.{leaf}".lstrip(".")
        value = block.get(leaf, _ABSENT)
        # Top-level required inputs: the SDK refuses them missing, and the bridge names some itself (auto-naming).
        if facts.get("required") and parent and value is _ABSENT:
            yield where, None, "required: must be set"
        for problem in _relations(inputs, path, value, facts):
            # A group (exactlyOneOf, atLeastOneOf) is named once, on the block it is in.
            if problem.startswith(("exactlyOneOf", "atLeastOneOf")):
                yield label or "(inputs)", None, problem
            else:
                yield where, value, problem
        if not _set(value):
            continue
        if isinstance(value, list):
            if "maxItems" in facts and len(value) > facts["maxItems"]:
                yield where, value, f"maxItems: has {len(value)} items, at most {facts['maxItems']}"
            if "minItems" in facts and len(value) < facts["minItems"]:
                yield where, value, f"minItems: has {len(value)} items, at least {facts['minItems']}"
            for index, item in enumerate(value):
                reason = invalid(facts["items"], item) if "items" in facts and not _unknown(item) else None
                if reason:
                    yield f"{where}[{index}]", item, reason
        elif "validate" in facts and (reason := invalid(facts["validate"], value)):
            yield where, value, reason


def resource_problems(resource: Registration, rules: dict[str, Any] | None = None) -> list[str]:
    """The problems of one registration, by the generated rules of its type (or ``rules``: ``source`` and ``fields``)."""
    rules = rules or constraints()["resources"].get(resource.type)
    if rules is None:
        return [f"{resource.type} {resource.name}: no provider rules for this type; regenerate constraints/gcp.yaml (docs/provider.md)"]
    inputs = reveal(resource.inputs)
    found: dict[str, None] = {}
    for path, facts in rules["fields"].items():
        for where, value, problem in _field_problems(inputs, path, facts):
            shown = f" = {value!r}" if isinstance(value, str | int | float) else ""
            found[f"{resource.type} {resource.name}: {where}{shown}: {problem} ({rules['source']})"] = None
    return list(found)


def provider_problems(render: Render) -> list[str]:
    """Every input of a ``gcp:`` registration that google-beta's schema refuses."""
    return [problem for resource in render.resources if resource.type.startswith("gcp:") for problem in resource_problems(resource)]


def check_provider(render: Render) -> int:
    """Raises ``ProviderConstraintError`` listing every problem; returns how many gcp resources were checked."""
    found = provider_problems(render)
    if found:
        raise ProviderConstraintError(f"{len(found)} provider constraint problem(s):\n" + "\n".join(f"  - {p}" for p in found))
    return sum(r.type.startswith("gcp:") for r in render.resources)
