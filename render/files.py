"""Turns a render into a readable plan and a folder of files, and diffs folders."""

from __future__ import annotations

import difflib
import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from render.awaits import awaits
from render.chart import CHART_TYPE, chart_objects, render_chart
from render.engine import Registration, Render, redact
from render.simulations.scaling import scaling_timeline

RECORDS_FILE = "resources.json"
PLAN_FILE = "plan.txt"

# The inputs worth a glance in the plan, by resource type.
HIGHLIGHTS: dict[str, tuple[str, ...]] = {
    "gcp:projects/service:Service": ("service",),
    "gcp:compute/network:Network": ("name",),
    "gcp:compute/subnetwork:Subnetwork": ("name", "ipCidrRange", "purpose", "role"),
    "gcp:container/cluster:Cluster": ("name", "location", "releaseChannel", "minMasterVersion", "deletionProtection"),
    "gcp:compute/futureReservation:FutureReservation": ("name", "zone"),
    "kubernetes:apps/v1:Deployment": ("spec.replicas", "spec.template.spec.containers.0.image"),
    "kubernetes:batch/v1:Job": ("spec.template.spec.containers.0.image",),
    "kubernetes:core/v1:Service": ("spec.type", "spec.ports.0.port"),
    "kubernetes:core/v1:PersistentVolumeClaim": ("spec.accessModes", "spec.resources.requests.storage"),
    "kubernetes:helm.sh/v4:Chart": ("chart", "version"),
}


def _dig(value: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            return None
    return value


def short(value: Any) -> str:
    """A value on one line as YAML or JSON would write it (``null``, ``true``), never as a Python repr."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, dict) and len(value) == 1:
        return short(next(iter(value.values())))
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, default=str)
    if isinstance(value, list):
        return ",".join(short(v) for v in value)
    return str(value)


def flatten(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested chart values as dotted keys; lists stay whole."""
    flat: dict[str, Any] = {}
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, f"{path}."))
        else:
            flat[path] = value
    return flat


def is_manifest(registration: Registration) -> bool:
    """A Kubernetes object the provider applies as it is (not a chart or provider)."""
    inputs = registration.inputs
    return registration.type.startswith("kubernetes:") and registration.custom and "kind" in inputs and "apiVersion" in inputs


def manifests(render: Render) -> list[dict[str, Any]]:
    return [redact(r.inputs) for r in render.resources if is_manifest(r)]


def _component_of(render: Render, registration: Registration) -> str:
    parent = render.find(registration.parent)
    return f"{parent.name} ({parent.type})" if parent and not parent.custom else "stack"


def plan(render: Render) -> str:
    """One screen: resources grouped by component, the inputs that matter, the outputs."""
    lines = [f"stack {render.stack}: {sum(r.custom or r.remote for r in render.resources)} resources", ""]
    if render.warnings:
        lines.extend([*(f"warning: {warning}" for warning in render.warnings), ""])
    groups: dict[str, list[Registration]] = {}
    for registration in render.resources:
        if registration.custom or registration.remote:
            groups.setdefault(_component_of(render, registration), []).append(registration)
    for component, members in groups.items():
        lines.append(component)
        for registration in members:
            inputs = redact(registration.inputs)
            details = [
                f"{key.split('.')[-1] if not key[-1].isdigit() else key.split('.')[-2]}={short(value)}"
                for key in HIGHLIGHTS.get(registration.type, ())
                if (value := _dig(inputs, key)) is not None
            ]
            lines.append(f"  {registration.type:<55} {registration.name:<28} {' '.join(details)}".rstrip())
            if is_manifest(registration):
                lines.append(f"      awaits: {awaits(inputs, registration.custom_timeouts)}")
            if registration.remote and isinstance(inputs.get("values"), dict):
                lines.extend(f"      {key} = {short(value)}" for key, value in sorted(flatten(inputs["values"]).items()))
            if registration.type == CHART_TYPE:
                lines.extend(f"      renders {item.label()}; awaits: {awaits(item.manifest)}" for item in render_chart(registration))
        lines.append("")
    if timeline := scaling_timeline(render):
        lines.extend([timeline, ""])
    lines.append("outputs")
    lines.extend(_outputs(dict(sorted(redact(render.outputs).items())), "  "))
    return "\n".join(lines) + "\n"


def _outputs(values: dict[str, Any], indent: str) -> list[str]:
    """Outputs as indented YAML-like lines: nested maps as their own lines, never a Python repr."""
    lines: list[str] = []
    for key, value in values.items():
        if isinstance(value, dict):
            lines.append(f"{indent}{key}:")
            lines.extend(_outputs(value, indent + "  "))
        else:
            lines.append(f"{indent}{key}: {short(value)}")
    return lines


# libyaml's emitter writes a render's files several times faster than PyYAML's own (a batch stack's
# KEDA CRDs took 0.8 s); the two fold long quoted strings at different places, with equal content.
_DUMPER: type[yaml.CSafeDumper] | type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(document: Any) -> str:
    return yaml.dump(document, Dumper=_DUMPER, sort_keys=True, default_flow_style=False, width=120)


def _file_name(*parts: str) -> str:
    return ".".join(p.replace("/", "-").replace(":", "-") for p in parts if p) + ".yaml"


def write(render: Render, folder: Path) -> list[Path]:
    """Writes the plan, every Kubernetes manifest, every cloud resource's and chart's inputs.

    The folder is replaced as a whole, so no stale file survives a rename.
    """
    if folder.exists():
        if any(folder.iterdir()) and not (folder / PLAN_FILE).exists():
            raise FileExistsError(f"{folder} exists and is not a render folder; choose another --out")
        shutil.rmtree(folder)
    written: dict[Path, str] = {folder / PLAN_FILE: plan(render), folder / "outputs.yaml": _dump(redact(render.outputs))}
    for registration in render.resources:
        inputs = redact(registration.inputs)
        if is_manifest(registration):
            metadata = inputs.get("metadata", {})
            path = (
                folder
                / "kubernetes"
                / _file_name(metadata.get("namespace", ""), inputs["kind"].lower(), metadata.get("name", registration.name))
            )
        elif registration.remote:
            path = folder / "charts" / _file_name(registration.name)
        elif registration.custom:
            kind = registration.type.split(":")[-1]
            if registration.type.startswith("pulumi:providers:"):
                kind = f"provider-{kind}"
            path = folder / "cloud" / _file_name(kind, registration.name)
        else:
            continue
        if path in written:
            raise ValueError(f"two resources render to {path}")
        written[path] = _dump(inputs)
    for board in render.by_type("gcp:monitoring/dashboard:Dashboard"):
        # The dashboard as Cloud Monitoring's JSON, readable (its input holds it as one string).
        written[folder / "monitoring" / f"{board.name}.json"] = json.dumps(json.loads(board.inputs["dashboardJson"]), indent=2) + "\n"
    for item in chart_objects(render):
        metadata = item.manifest.get("metadata", {})
        path = folder / "charts" / item.release / _file_name(metadata.get("namespace", ""), item.manifest["kind"].lower(), metadata["name"])
        if path in written:
            raise ValueError(f"two objects of {item.source} render to {path}")
        written[path] = _dump(redact(item.manifest))
    for path, text in written.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return sorted(written)


def _files(folder: Path) -> dict[str, str]:
    # The records are for classifying changes; the readable files show the same content.
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file() and p.name != RECORDS_FILE}


def diff(before: Path, after: Path, labels: tuple[str, str] | None = None) -> list[str]:
    """A unified diff of two render folders, file by file."""
    left, right = _files(before), _files(after)
    names = labels or (str(before), str(after))
    lines: list[str] = []
    for name in sorted(set(left) | set(right)):
        lines.extend(
            difflib.unified_diff(
                left.get(name, "").splitlines(keepends=True),
                right.get(name, "").splitlines(keepends=True),
                fromfile=f"{names[0]}/{name}" if name in left else "/dev/null",
                tofile=f"{names[1]}/{name}" if name in right else "/dev/null",
            )
        )
    return lines


def changed_files(lines: Iterable[str]) -> int:
    return sum(1 for line in lines if line.startswith("+++ "))
