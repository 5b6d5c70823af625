"""The objects a Helm chart of the program creates, rendered offline as a real `pulumi up` would.

pulumi-kubernetes' ``helm.v4.Chart`` renders its chart with Helm's Go SDK and
registers each object, passing it through the chart's transforms. The mock
engine sees only the chart resource, so this module does the same from the
chart source vendored in ``charts/`` (see its PROVENANCE.md): Helm's own SDK
(``helm-python-sdk``) with the recorded values, release name and namespace,
Helm's manifest splitting, then the program's transforms.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import helm_python as helm
import pulumi

from components.manifests import type_token
from facts.data_files import parse_yaml
from render.engine import PROJECT_ROOT, Registration, Render

CHARTS = PROJECT_ROOT / "render" / "vendor" / "charts"
CHART_TYPE = "kubernetes:helm.sh/v4:Chart"
# Helm's releaseutil.SplitManifests separator; it also splits `---apiVersion`.
_SEPARATOR = re.compile(r"(?:^|\s*\n)---\s*")


class ChartError(ValueError):
    pass


@dataclass(frozen=True)
class ChartObject:
    """One object a chart creates, and where it comes from."""

    source: str
    release: str
    manifest: dict[str, Any]

    def label(self) -> str:
        metadata = self.manifest.get("metadata", {})
        where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
        return f"{self.manifest.get('kind')} {where}{metadata.get('name')}"


def chart_name(registration: Registration) -> str:
    """``oci://.../charts/inferencepool`` or ``keda`` -> the chart's name."""
    return str(registration.inputs["chart"]).rstrip("/").rsplit("/", 1)[-1]


def chart_folder(registration: Registration) -> Path:
    name, version = chart_name(registration), str(registration.inputs.get("version", ""))
    folder = CHARTS / f"{name}-{version}" / name
    if not folder.is_dir():
        raise ChartError(
            f"chart {name} {version or '(no version)'} of resource {registration.name} is not vendored: "
            f"add its source as render/vendor/charts/{name}-{version}/{name} (render/vendor/charts/PROVENANCE.md)"
        )
    return folder


def describe(registration: Registration) -> str:
    release = registration.inputs.get("name") or registration.name
    return f"chart {release} ({chart_name(registration)} {registration.inputs.get('version', '')})"


def split_manifests(text: str) -> list[dict[str, Any]]:
    """The objects of one rendered template, split the way Helm splits them: a new copy on every call."""
    return copy.deepcopy(_parsed_manifests(text))


@cache
def _parsed_manifests(text: str) -> list[dict[str, Any]]:
    # A render reads a chart's objects five or six times (files, checks, cluster model, diff); KEDA's
    # templates are 0.8 MB of YAML, 0.25 s to split and parse, and 9 ms to copy.
    documents = (parse_yaml(part) for part in _SEPARATOR.split(text) if part.strip())
    return [document for document in documents if isinstance(document, dict) and document]


def _transformed(registration: Registration, manifest: dict[str, Any]) -> dict[str, Any]:
    """The object after the chart's transforms, called as the engine calls them for each child."""
    token = type_token(manifest["apiVersion"], manifest["kind"])
    name = f"{registration.name}:{manifest.get('metadata', {}).get('namespace', '')}/{manifest['metadata']['name']}"
    props = manifest
    for transform in registration.transforms:
        result = transform(pulumi.ResourceTransformArgs(True, token, name, props, pulumi.ResourceOptions()))
        if result is not None:
            props = dict(result.props)
    return props


@cache
def helm_render(folder: Path, values_json: str, release: str, namespace: str | None) -> dict[str, str]:
    """Helm's output for one chart source and values; the same inputs always render the same."""
    with tempfile.TemporaryDirectory() as scratch:
        # Local dependencies (file://) resolve into a copy; the vendored source stays untouched.
        root = Path(scratch) / "source"
        shutil.copytree(folder.parent, root)
        copy = root / folder.name
        helm.dependency_update(copy, skip_refresh=True)
        chart = helm.Chart.load(copy)
        return chart.render(json.loads(values_json), name=release, namespace=namespace, is_install=True)


def render_chart(registration: Registration) -> list[ChartObject]:
    """Every object the chart resource creates, in template order."""
    inputs = registration.inputs
    source = describe(registration)
    release = str(inputs.get("name") or registration.name)
    namespace = inputs.get("namespace")
    rendered = helm_render(chart_folder(registration), json.dumps(inputs.get("values") or {}, sort_keys=True), release, namespace)
    objects: list[ChartObject] = []
    for template in sorted(rendered):
        if template.endswith("NOTES.txt"):
            continue
        for manifest in split_manifests(rendered[template]):
            manifest.setdefault("metadata", {})
            if namespace and not _cluster_scoped(manifest):
                manifest["metadata"].setdefault("namespace", namespace)
            objects.append(ChartObject(source, release, _transformed(registration, manifest)))
    return objects


# Kinds without a namespace, among those the program and its charts create.
CLUSTER_SCOPED = {
    "VolumeSnapshotClass",
    "ComputeClass",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "APIService",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
    "Namespace",
    "PriorityClass",
    "StorageClass",
}


def _cluster_scoped(manifest: dict[str, Any]) -> bool:
    return manifest.get("kind") in CLUSTER_SCOPED


def chart_objects(render: Render) -> list[ChartObject]:
    """The objects of every chart the stack registers."""
    return [item for registration in render.by_type(CHART_TYPE) for item in render_chart(registration)]
