"""What a change of the stack does to each resource: create, delete, update or replace.

The providers decide, not the diff: pulumi-kubernetes replaces an object when
a field of its forceNew table changes (``replacements/kubernetes.yaml``),
pulumi-gcp when a Terraform ForceNew field does (``replacements/gcp.yaml``) or
a CustomizeDiff function decides so on the values (``render/customize_diff.py``),
and the Kubernetes API refuses an update of an immutable field, which fails
`pulumi up` (``immutable`` there, and the CRDs' ``self == oldSelf`` rules).
Options count too: ``ignoreChanges`` hides a field, ``replaceOnChanges`` adds one.

Works on records (``records``), which a render folder keeps in
``resources.json``, so two folders rendered from two commits compare as well
as two renders.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from facts.data_files import read_yaml
from render.chart import chart_objects
from render.crd_rules import declared_rules
from render.customize_diff import forced
from render.engine import Render, redact
from render.files import RECORDS_FILE
from render.validation import custom_resources

RULES = Path(__file__).resolve().parent / "vendor" / "replacements"
# Workloads whose pods restart when their template changes.
_WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet"}


@dataclass(frozen=True)
class Change:
    key: str
    type: str
    name: str
    action: str  # create, delete, update, replace, refused
    fields: tuple[str, ...] = ()
    because: tuple[str, ...] = ()
    restarts_pods: bool = False
    # What depends on a replaced or deleted resource, as ``Kind name``.
    dependents: tuple[str, ...] = ()

    def line(self) -> str:
        shown = ", ".join(self.because or self.fields)
        restart = " (rolls its pods)" if self.restarts_pods else ""
        under = f"; {self.depended_on()}" if self.dependents else ""
        return f"{self.action:<8} {self.type} {self.name}{restart}" + (f": {shown}" if shown else "") + under

    def depended_on(self) -> str:
        return f"{', '.join(self.dependents)} {'depends' if len(self.dependents) == 1 else 'depend'} on it"


def records(render: Render) -> list[dict[str, Any]]:
    """What the classification needs of each resource, secrets redacted; charts' objects included."""
    found = [
        {
            # Without the stack's name, so two stacks compare resource by resource.
            "key": r.urn.split("::", 1)[-1],
            "type": r.type,
            "name": r.name,
            "inputs": redact(r.inputs),
            "ignoreChanges": list(r.ignore_changes),
            "replaceOnChanges": list(r.replace_on_changes),
            "protect": r.protect,
            "dependsOn": sorted({urn.split("::", 1)[-1] for urn in r.dependencies}),
        }
        for r in render.resources
        if r.custom or r.remote
    ]
    for item in chart_objects(render):
        metadata = item.manifest.get("metadata", {})
        kind = item.manifest["kind"]
        found.append(
            {
                "key": f"{item.source}/{kind}/{metadata.get('namespace', '')}/{metadata.get('name')}",
                "type": f"{item.source}: {kind}",
                "name": str(metadata.get("name")),
                "inputs": redact(item.manifest),
                "ignoreChanges": [],
                "replaceOnChanges": [],
            }
        )
    return found


def write_records(render: Render, folder: Path) -> Path:
    path = folder / RECORDS_FILE
    path.write_text(json.dumps(records(render), indent=1, sort_keys=True, default=str) + "\n")
    return path


def read_records(folder: Path) -> list[dict[str, Any]]:
    path = folder / RECORDS_FILE
    if not path.exists():
        raise FileNotFoundError(f"{folder} has no {RECORDS_FILE}: render it again with this version of the renderer")
    loaded: list[dict[str, Any]] = json.loads(path.read_text())
    return loaded


def changed_paths(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Dotted paths of what differs; lists compare whole, except items of the same length."""
    if isinstance(before, dict) and isinstance(after, dict):
        paths: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            if key not in before or key not in after:
                paths.append(path)
            else:
                paths.extend(changed_paths(before[key], after[key], path))
        return paths
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [p for index, (b, a) in enumerate(zip(before, after, strict=True)) for p in changed_paths(b, a, f"{prefix}[{index}]")]
    return [] if before == after else [prefix]


def _matches(path: str, rule: str) -> bool:
    """A changed path falls under a rule: the rule itself or below it; ``[*]`` is any item."""
    plain = path
    if "[*]" in rule:
        head = rule.split("[*]", 1)[0]
        return plain == head or plain.startswith(head + "[") or plain.startswith(head + ".")
    while "[" in plain:
        start = plain.index("[")
        plain = plain[:start] + plain[plain.index("]", start) + 1 :]
    return plain == rule or plain.startswith(rule + ".") or path.startswith(rule + "[")


@cache
def _kubernetes_rules() -> dict[str, Any]:
    loaded: dict[str, Any] = read_yaml(RULES / "kubernetes.yaml")
    return loaded


@cache
def _gcp_rules() -> dict[str, list[str]]:
    loaded: dict[str, list[str]] = read_yaml(RULES / "gcp.yaml")
    return loaded


@cache
def _custom_immutable() -> dict[str, tuple[str, ...]]:
    """Fields the vendored CRDs declare immutable (a ``self == oldSelf`` rule), by kind."""
    table: dict[str, list[str]] = {}
    for (_, kind), resource in custom_resources().items():
        for path, rule in declared_rules(resource.schema):
            if rule.get("rule", "").replace(" ", "") == "self==oldSelf":
                table.setdefault(kind, []).append(path.lstrip(".").replace("[]", "").replace("[*]", ""))
    return {kind: tuple(paths) for kind, paths in table.items()}


def _classify(before: dict[str, Any], after: dict[str, Any]) -> Change:
    inputs_before, inputs_after = before["inputs"], after["inputs"]
    ignored = after.get("ignoreChanges") or []
    fields = tuple(
        path for path in changed_paths(inputs_before, inputs_after) if not any(_matches(path, rule) or rule in ("*",) for rule in ignored)
    )
    base = Change(after["key"], after["type"], after["name"], "update", fields)
    if not fields:
        return Change(after["key"], after["type"], after["name"], "same")
    kind = str(inputs_after.get("kind", "")) if "apiVersion" in inputs_after else ""
    if kind:
        table = _kubernetes_rules()
        force = [*table["all"], *table.get(kind, []), *after.get("replaceOnChanges", [])]
        replacing = tuple(f for f in fields if any(_matches(f, rule) for rule in force))
        if replacing:
            return Change(base.key, base.type, base.name, "replace", fields, replacing)
        immutable = [*table["immutable"].get(kind, []), *_custom_immutable().get(kind, ())]
        refused = tuple(f for f in fields if any(_matches(f, rule) for rule in immutable))
        if refused:
            return Change(base.key, base.type, base.name, "refused", fields, refused)
        rolls = kind in _WORKLOADS and any(_matches(f, "spec.template") for f in fields)
        return Change(base.key, base.type, base.name, "update", fields, (), rolls)
    force = [*_gcp_rules().get(after["type"], []), *after.get("replaceOnChanges", [])]
    replacing = tuple(f for f in fields if any(_matches(f, rule) for rule in force))
    replacing += forced(after["type"], inputs_before, inputs_after, fields)
    if replacing:
        return Change(base.key, base.type, base.name, "replace", fields, replacing)
    return base


def _protected(change: Change, before: dict[str, Any], after: dict[str, Any] | None) -> Change:
    """Pulumi refuses to delete a protected resource, and to replace one protected before and after (pulumi step_generator)."""
    stays_protected = after is None or bool(after.get("protect"))
    if change.action in ("delete", "replace") and before.get("protect") and stays_protected:
        because = (*change.because, "protected: `pulumi state unprotect` it first")
        return Change(change.key, change.type, change.name, "refused", change.fields, because)
    return change


def _with_dependents(change: Change, among: list[dict[str, Any]]) -> Change:
    """A replaced or deleted resource names what depends on it (records of an older renderer hold no dependencies)."""
    if change.action not in ("replace", "delete", "refused"):
        return change
    on_it = tuple(f"{r['type'].rsplit(':', 1)[-1]} {r['name']}" for r in among if change.key in r.get("dependsOn", ()))
    return replace(change, dependents=on_it) if on_it else change


def changes(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> list[Change]:
    """Every resource that is created, deleted, updated, replaced or refused, from ``before`` to ``after``."""
    old = {r["key"]: r for r in before}
    new = {r["key"]: r for r in after}
    found = [Change(k, r["type"], r["name"], "create") for k, r in new.items() if k not in old]
    found += [_protected(Change(k, r["type"], r["name"], "delete"), r, None) for k, r in old.items() if k not in new]
    found += [
        _protected(change, old[k], new[k]) for k in new if k in old for change in [_classify(old[k], new[k])] if change.action != "same"
    ]
    found = [_with_dependents(c, after if c.action != "delete" else before) for c in found]
    order = {"refused": 0, "replace": 1, "delete": 2, "create": 3, "update": 4}
    return sorted(found, key=lambda c: (order[c.action], c.type, c.name))


def render_changes(before: Render, after: Render) -> list[Change]:
    return changes(records(before), records(after))


def summary(found: list[Change]) -> list[str]:
    if not found:
        return ["no resource changes\n"]
    counts = {action: sum(c.action == action for c in found) for action in ("refused", "replace", "delete", "create", "update")}
    head = ", ".join(f"{n} {action}" for action, n in counts.items() if n)
    return [f"resource changes: {head}\n", *(f"  {c.line()}\n" for c in found), "\n"]
