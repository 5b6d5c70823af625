"""The cluster a stack creates, as one model: every object, from the program and its charts.

The API server accepts objects one at a time; what breaks a real `pulumi up`
is often between them: two sources creating one object (the provider stops on
AlreadyExists), a reference to nothing, or a field GKE's controllers refuse.
``problems`` finds those offline, each message naming the objects involved.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from facts import gke
from render.autopilot import admission_problems
from render.chart import CLUSTER_SCOPED, chart_objects
from render.engine import Render, Secret
from render.files import is_manifest

# Namespaces every GKE cluster has.
BUILT_IN_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease", "gke-gmp-system", "gmp-public"}
# Storage classes and compute classes GKE Autopilot provides itself.
BUILT_IN_STORAGE_CLASSES = {"standard", "standard-rwo", "premium-rwo", "standard-rwx", "enterprise-rwx"}
BUILT_IN_COMPUTE_CLASSES = {"autopilot", "autopilot-spot", "Balanced", "Performance", "Scale-Out", "Accelerator"}
# GKE's Gateway controller accepts no HTTPRoute timeouts (docs/reference.md).
GKE_GATEWAY_CLASSES_PREFIX = "gke-"
_WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


@dataclass(frozen=True)
class Sourced:
    """An object and who creates it: a program resource or a chart."""

    source: str
    manifest: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", ""))

    @property
    def group(self) -> str:
        api = str(self.manifest.get("apiVersion", ""))
        return api.rsplit("/", 1)[0] if "/" in api else ""

    @property
    def name(self) -> str:
        return str(self.manifest.get("metadata", {}).get("name", ""))

    @property
    def namespace(self) -> str:
        return "" if self.kind in CLUSTER_SCOPED else str(self.manifest.get("metadata", {}).get("namespace") or "default")

    @property
    def identity(self) -> tuple[str, str, str, str]:
        return (self.group, self.kind, self.namespace, self.name)

    def label(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Secret) else value


def cluster_objects(render: Render) -> list[Sourced]:
    """Every Kubernetes object of the stack: the program's, then each chart's."""
    program = [Sourced(f"the program ({r.type} {r.name})", r.inputs) for r in render.resources if is_manifest(r)]
    return program + [Sourced(item.source, item.manifest) for item in chart_objects(render)]


def _pod_specs(item: Sourced) -> Iterator[tuple[dict[str, Any], dict[str, str]]]:
    """(pod spec, pod labels) of a workload."""
    spec = item.manifest.get("spec") or {}
    if item.kind == "Pod":
        yield spec, item.manifest.get("metadata", {}).get("labels") or {}
    elif item.kind in _WORKLOADS:
        template = spec.get("template") or {}
        yield template.get("spec") or {}, (template.get("metadata") or {}).get("labels") or {}


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(key) == value for key, value in selector.items())


def _objects_in(arguments: list[str]) -> Iterator[dict[str, Any]]:
    """Kubernetes objects a command line hands over whole, as JSON (the model cache's claim Job)."""
    for argument in arguments:
        if argument.startswith("{"):
            try:
                found = json.loads(argument)
            except ValueError:
                continue
            if isinstance(found, dict) and {"apiVersion", "kind", "metadata"} <= found.keys():
                yield found


def made_at_runtime(objects: Iterable[Sourced]) -> list[Sourced]:
    """Objects a workload of the stack creates once running: KEDA's operator writes its certificates' Secret,
    and a Job that is handed a whole object creates it (the model cache's writable claim)."""
    made: list[Sourced] = []
    for item in objects:
        for spec, _labels in _pod_specs(item):
            for container in spec.get("containers") or []:
                command = [str(a) for a in container.get("command") or []]
                made.extend(
                    Sourced(f"{item.label()} at runtime", {**found, "metadata": {"namespace": item.namespace, **found["metadata"]}})
                    for found in _objects_in(command)
                )
                args = [str(a) for a in container.get("args") or []]
                if "--enable-cert-rotation=true" in args:
                    made.extend(
                        Sourced(
                            f"{item.label()} at runtime",
                            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": a.split("=", 1)[1], "namespace": item.namespace}},
                        )
                        for a in args
                        if a.startswith("--cert-secret-name=")
                    )
    return made


class _Model:
    def __init__(self, objects: list[Sourced]) -> None:
        self.objects = objects
        known = [*objects, *made_at_runtime(objects)]
        self.by_identity: dict[tuple[str, str, str], Sourced] = {(o.kind, o.namespace, o.name): o for o in known}
        self.pods = [(item, spec, labels) for item in objects for spec, labels in _pod_specs(item)]

    def has(self, kind: str, namespace: str, name: str) -> bool:
        return (kind, namespace, name) in self.by_identity

    def get(self, kind: str, namespace: str, name: str) -> Sourced | None:
        return self.by_identity.get((kind, namespace, name))


def duplicate_identities(objects: Iterable[Sourced]) -> list[str]:
    seen: dict[tuple[str, str, str, str], Sourced] = {}
    found = []
    for item in objects:
        first = seen.setdefault(item.identity, item)
        if first is not item:
            found.append(f"{item.label()}: made twice, by {first.source} and by {item.source}; the second create fails with AlreadyExists")
    return found


def _namespaces(model: _Model) -> list[str]:
    return [
        f"{item.label()} ({item.source}): namespace {item.namespace} is neither created by the stack nor built into GKE"
        for item in model.objects
        if item.namespace and item.namespace not in BUILT_IN_NAMESPACES and not model.has("Namespace", "", item.namespace)
    ]


def _routes(model: _Model) -> list[str]:
    found = []
    for item in (o for o in model.objects if o.kind == "HTTPRoute"):
        spec = item.manifest.get("spec") or {}
        for parent in spec.get("parentRefs") or []:
            gateway = model.get("Gateway", parent.get("namespace") or item.namespace, parent.get("name", ""))
            if gateway is None:
                found.append(f"{item.label()}: parent Gateway {parent.get('name')} does not exist")
            elif str((gateway.manifest.get("spec") or {}).get("gatewayClassName", "")).startswith(GKE_GATEWAY_CLASSES_PREFIX):
                found.extend(
                    f"{item.label()}: rules[{index}].timeouts is not supported by GKE's Gateway controller (the route is not "
                    "Accepted); set the backend timeout on the GCPBackendPolicy"
                    for index, rule in enumerate(spec.get("rules") or [])
                    if "timeouts" in rule
                )
        for rule in spec.get("rules") or []:
            for backend in rule.get("backendRefs") or []:
                kind = backend.get("kind", "Service")
                if not model.has(kind, backend.get("namespace") or item.namespace, backend.get("name", "")):
                    found.append(f"{item.label()}: backend {kind} {backend.get('name')} does not exist")
    return found


def _storage(model: _Model) -> list[str]:
    found = []
    for item in model.objects:
        spec = item.manifest.get("spec") or {}
        if item.kind == "PersistentVolumeClaim":
            storage_class = spec.get("storageClassName")
            if storage_class and storage_class not in BUILT_IN_STORAGE_CLASSES and not model.has("StorageClass", "", storage_class):
                found.append(f"{item.label()}: StorageClass {storage_class} does not exist")
            source = spec.get("dataSource") or {}
            if source and not model.has(source.get("kind", ""), item.namespace, source.get("name", "")):
                found.append(f"{item.label()}: data source {source.get('kind')} {source.get('name')} does not exist")
        if item.kind == "VolumeSnapshot":
            snapshot_class = spec.get("volumeSnapshotClassName")
            if snapshot_class and not model.has("VolumeSnapshotClass", "", snapshot_class):
                found.append(f"{item.label()}: VolumeSnapshotClass {snapshot_class} does not exist")
            claim = (spec.get("source") or {}).get("persistentVolumeClaimName")
            if claim and not model.has("PersistentVolumeClaim", item.namespace, claim):
                found.append(f"{item.label()}: source PersistentVolumeClaim {claim} does not exist")
    return found


def _secret_keys(secret: Sourced) -> set[str]:
    keys: set[str] = set()
    for field in ("data", "stringData"):
        value = _plain(secret.manifest.get(field))
        if isinstance(value, dict):
            keys |= set(value)
    return keys


def _pod_references(model: _Model) -> list[str]:
    found = []
    for item, spec, _labels in model.pods:
        for volume in spec.get("volumes") or []:
            for field, kind, key in (
                ("persistentVolumeClaim", "PersistentVolumeClaim", "claimName"),
                ("configMap", "ConfigMap", "name"),
                ("secret", "Secret", "secretName"),
            ):
                if field in volume and not model.has(kind, item.namespace, volume[field].get(key, "")):
                    found.append(
                        f"{item.label()}: volume {volume.get('name')} mounts {kind} {volume[field].get(key)}, which does not exist"
                    )
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        for container in containers:
            for variable in container.get("env") or []:
                reference = (variable.get("valueFrom") or {}).get("secretKeyRef")
                if not reference:
                    continue
                secret = model.get("Secret", item.namespace, reference.get("name", ""))
                if secret is None:
                    found.append(f"{item.label()}: env {variable.get('name')} reads Secret {reference.get('name')}, which does not exist")
                elif reference.get("key") not in _secret_keys(secret):
                    found.append(
                        f"{item.label()}: env {variable.get('name')} reads key {reference.get('key')} that Secret {secret.name} lacks"
                    )
        compute_class = (spec.get("nodeSelector") or {}).get(gke.COMPUTE_CLASS_LABEL)
        if compute_class and compute_class not in BUILT_IN_COMPUTE_CLASSES and not model.has("ComputeClass", "", compute_class):
            found.append(f"{item.label()}: ComputeClass {compute_class} does not exist")
    return found


def _selectors(model: _Model) -> list[str]:
    found = []
    for item in model.objects:
        spec = item.manifest.get("spec") or {}
        selector: dict[str, str] = {}
        if item.kind == "Service" and spec.get("type") != "ExternalName":
            selector = spec.get("selector") or {}
        elif item.kind in ("PodMonitoring", "PodDisruptionBudget") or item.kind == "InferencePool":
            selector = (spec.get("selector") or {}).get("matchLabels") or {}
        if selector and not any(other.namespace == item.namespace and _matches(selector, labels) for other, _, labels in model.pods):
            found.append(f"{item.label()} ({item.source}): selector {selector} matches no pod the stack runs")
        if item.kind == "InferencePool":
            picker = spec.get("endpointPickerRef") or spec.get("extensionRef") or {}
            if picker and not model.has(picker.get("kind", "Service"), item.namespace, picker.get("name", "")):
                found.append(f"{item.label()}: endpoint picker {picker.get('kind', 'Service')} {picker.get('name')} does not exist")
    return found


def _policy_targets(model: _Model) -> list[str]:
    found = []
    for item in (o for o in model.objects if o.kind in ("GCPBackendPolicy", "HealthCheckPolicy")):
        target = (item.manifest.get("spec") or {}).get("targetRef") or {}
        if not model.has(target.get("kind", ""), item.namespace, target.get("name", "")):
            found.append(f"{item.label()} ({item.source}): target {target.get('kind')} {target.get('name')} does not exist")
    return found


def _extension_references(model: _Model) -> list[str]:
    """A GKE service extension (the body-based router's) names the Gateway it attaches to and the Service it calls."""
    found = []
    for item in (o for o in model.objects if o.kind in ("GCPRoutingExtension", "GCPTrafficExtension")):
        spec = item.manifest.get("spec") or {}
        references = [("target", ref) for ref in spec.get("targetRefs") or []] + [
            ("callout", extension["backendRef"])
            for chain in spec.get("extensionChains") or []
            for extension in chain.get("extensions") or []
            if extension.get("backendRef")
        ]
        for role, ref in references:
            kind = ref.get("kind") or "Service"
            if not model.has(kind, ref.get("namespace") or item.namespace, ref.get("name", "")):
                found.append(f"{item.label()} ({item.source}): {role} {kind} {ref.get('name')} does not exist")
    return found


def problems(objects: list[Sourced]) -> list[str]:
    """What a real apply would trip on between these objects; empty when they hold together."""
    model = _Model(objects)
    return [
        *duplicate_identities(objects),
        *_namespaces(model),
        *_routes(model),
        *_storage(model),
        *_pod_references(model),
        *_selectors(model),
        *_policy_targets(model),
        *_extension_references(model),
        # What Autopilot's admission refuses object by object (render/autopilot.py).
        *admission_problems(objects),
    ]


class ClusterModelError(ValueError):
    pass


def check_cluster(render: Render) -> list[Sourced]:
    """Raises ``ClusterModelError`` listing every problem; returns the objects checked."""
    objects = cluster_objects(render)
    found = problems(objects)
    if found:
        raise ClusterModelError(f"{len(found)} cluster model problem(s):\n" + "\n".join(f"  - {p}" for p in found))
    return objects
