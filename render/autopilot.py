"""GKE Autopilot's admission, offline: what GKE Warden refuses that the schemas accept.

The rules are data (``render/vendor/data/autopilot.yaml``, each with its sources and the date
they were read). ``admission_problems`` checks every object of a stack, the charts'
included, and names the object, who makes it, the field, the value and the rule. It also
checks that every webhook and aggregated API the control plane calls listens on a pod port
GKE's firewall opens to the control plane: admitted, such a call would only time out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Protocol

import yaml

from facts import gke
from facts.kubernetes import quantity

RULES = Path(__file__).parent / "vendor" / "data" / "autopilot.yaml"
_POD_TEMPLATES = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


class Placed(Protocol):
    """An object and who creates it (``render.cluster_model.Sourced``)."""

    @property
    def source(self) -> str: ...
    @property
    def manifest(self) -> dict[str, Any]: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    def label(self) -> str: ...


@cache
def rules() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(RULES.read_text())
    return loaded


def _cite(section: dict[str, Any], source: str | None = None) -> str:
    urls = rules()["sources"]
    names = [source] if source else section["sources"]
    return ", ".join(urls[name] for name in names)


def pod_specs(item: Placed) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, pod spec) of every pod the object makes."""
    spec = item.manifest.get("spec") or {}
    if item.kind == "Pod":
        yield "spec", spec
    elif item.kind in _POD_TEMPLATES:
        yield "spec.template.spec", (spec.get("template") or {}).get("spec") or {}
    elif item.kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        yield "spec.jobTemplate.spec.template.spec", (job.get("template") or {}).get("spec") or {}


def _tolerates(pod: dict[str, Any], key: str, value: str | None) -> bool:
    effect = rules()["node_selection"]["workload_separation"]["toleration_effect"]
    for toleration in pod.get("tolerations") or []:
        if toleration.get("key") != key or toleration.get("effect", effect) != effect:
            continue
        if toleration.get("operator") == "Exists" or value is None or toleration.get("value") == value:
            return True
    return False


def _affinity_terms(pod: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    node = (pod.get("affinity") or {}).get("nodeAffinity") or {}
    required = (node.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for index, term in enumerate(required):
        for kind in ("matchExpressions", "matchFields"):
            for number, expression in enumerate(term.get(kind) or []):
                yield f"affinity.nodeAffinity.required…nodeSelectorTerms[{index}].{kind}[{number}]", expression
    for index, preference in enumerate(node.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        term = preference.get("preference") or {}
        for kind in ("matchExpressions", "matchFields"):
            for number, expression in enumerate(term.get(kind) or []):
                yield f"affinity.nodeAffinity.preferred…[{index}].preference.{kind}[{number}]", expression


def _node_selection(where: str, pod: dict[str, Any]) -> list[str]:
    section = rules()["node_selection"]
    allowed = set(section["allowed_keys"])
    refused = section["refused_keys"]
    found = []
    used: list[tuple[str, str, str | None]] = [
        (f"{where}.nodeSelector", key, str(value)) for key, value in (pod.get("nodeSelector") or {}).items()
    ]
    for path, expression in _affinity_terms(pod):
        values = expression.get("values") or []
        used.append((f"{where}.{path}", str(expression.get("key")), str(values[0]) if len(values) == 1 else None))
    for path, key, value in used:
        if key in refused:
            found.append(
                f"{path}: key {key} is refused by Autopilot ({section['constraint']}: {refused[key]['why']}; "
                f"{_cite(section, refused[key]['source'])})"
            )
        elif key not in allowed and not _tolerates(pod, key, value):
            found.append(
                f"{path}: key {key} is not one Autopilot admits for node selection ({section['constraint']}), and no "
                f"NoSchedule toleration of it asks for workload separation ({_cite(section)})"
            )
    return found


def _compute_class(where: str, pod: dict[str, Any]) -> list[str]:
    section = rules()["custom_compute_class"]
    selector = pod.get("nodeSelector") or {}
    chosen = selector.get("cloud.google.com/compute-class")
    if chosen is None or chosen in section["built_in"]:
        return []
    extra = sorted(set(selector) - set(section["companion_keys"]))
    return [f"{where}.nodeSelector: key {key} is not allowed beside the custom ComputeClass {chosen} ({_cite(section)})" for key in extra]


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]


def _requests(container: dict[str, Any]) -> dict[str, Any]:
    resources = container.get("resources") or {}
    # Kubernetes defaults a request to its limit.
    return {**(resources.get("limits") or {}), **(resources.get("requests") or {})}


def _gpu(where: str, pod: dict[str, Any]) -> list[str]:
    section = rules()["gpu"]
    asks = any(section["resource"] in _requests(c) for c in _containers(pod))
    selector = pod.get("nodeSelector") or {}
    if not asks or any(key in selector for key in section["selector_keys"]):
        return []
    return [
        f"{where}.nodeSelector: a pod requesting {section['resource']} must select "
        f"{' or '.join(section['selector_keys'])} ({section['constraint']}; {_cite(section)})"
    ]


def _resources(where: str, pod: dict[str, Any]) -> list[str]:
    section = rules()["resources"]
    accelerator = (pod.get("nodeSelector") or {}).get("cloud.google.com/gke-accelerator")
    row = section["by_accelerator"].get(accelerator)
    if row is None:
        return _general_purpose(where, pod)
    found = []
    for resource, key in (("cpu", "max_cpu"), ("memory", "max_memory")):
        total = sum((quantity(str(_requests(c).get(resource, "0"))) for c in pod.get("containers") or []), quantity("0"))
        if total > quantity(row[key]):
            found.append(
                f"{where}.containers[*].resources: {resource} {total.normalize():f} is above the {row[key]} Autopilot can give "
                f"a {accelerator} pod (the {row['ceiling_of']} machine; {_cite(section)}, {_cite(section, row['source'])})"
            )
    return found


def _general_purpose(where: str, pod: dict[str, Any]) -> list[str]:
    """A pod that selects no compute class, machine family or accelerator is a general-purpose pod (facts/gke.py)."""
    selector = pod.get("nodeSelector") or {}
    if any(key in selector for key in (gke.COMPUTE_CLASS_LABEL, gke.MACHINE_FAMILY_LABEL, gke.ACCELERATOR_LABEL)):
        return []
    found = []
    for resource, most in (("cpu", gke.GENERAL_PURPOSE_MAX_CPU), ("memory", gke.GENERAL_PURPOSE_MAX_MEMORY)):
        total = sum((quantity(str(_requests(c).get(resource, "0"))) for c in pod.get("containers") or []), quantity("0"))
        if total > most:
            found.append(
                f"{where}.containers[*].resources: {resource} {total.normalize():f} is above the {most.normalize():f} Autopilot "
                "gives a general-purpose pod (autogke-pod-limit-constraints; "
                "https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-resource-requests)"
            )
    return found


def _security(where: str, pod: dict[str, Any]) -> list[str]:
    section = rules()["security"]
    cite = _cite(section)
    found = [
        f"{where}.{name}: true is refused ({section['host_namespaces']['constraint']}; {cite})"
        for name in section["host_namespaces"]["fields"]
        if pod.get(name)
    ]
    host_paths = {v.get("name"): (v.get("hostPath") or {}).get("path", "") for v in pod.get("volumes") or [] if "hostPath" in v}
    prefixes = section["host_path"]["read_only_prefixes"]
    for name, path in host_paths.items():
        if not any(f"{path}/".startswith(prefix) for prefix in prefixes):
            found.append(f"{where}.volumes[{name}].hostPath: {path} is outside {prefixes} ({section['host_path']['constraint']}; {cite})")
    allowed = set(section["capabilities"]["allowed"])
    for container in _containers(pod):
        at = f"{where}.containers[{container.get('name')}]"
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"{at}.securityContext.privileged: true is refused ({section['privileged']}; {cite})")
        added = set((context.get("capabilities") or {}).get("add") or [])
        for capability in sorted(c for c in added if c.removeprefix("CAP_") not in allowed):
            constraint = section["capabilities"]["constraint"]
            found.append(f"{at}.securityContext.capabilities.add: {capability} is refused ({constraint}; {cite})")
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                found.append(f"{at}.ports: hostPort {port['hostPort']} is refused ({section['host_port']}; {cite})")
        for mount in container.get("volumeMounts") or []:
            if mount.get("name") in host_paths and not mount.get("readOnly"):
                found.append(
                    f"{at}.volumeMounts[{mount['name']}]: a hostPath mounted writable is refused "
                    f"({section['host_path']['constraint']}; {cite})"
                )
    return found


def _managed_namespace(item: Placed) -> list[str]:
    section = rules()["managed_namespaces"]
    if item.namespace not in section["namespaces"]:
        return []
    return [
        f"metadata.namespace: {item.namespace} is managed by GKE; creating a {item.kind} there is refused "
        f"({section['constraint']}; {_cite(section)})"
    ]


_WEBHOOK_CONFIGURATIONS = {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"}
# A webhook's or APIService's service port when it names none (admissionregistration/v1, apiregistration/v1).
_DEFAULT_SERVICE_PORT = 443


def _service_calls(item: Placed) -> Iterator[tuple[str, dict[str, Any]]]:
    """(field path, service reference) of every call the control plane makes to this object's backend."""
    if item.kind in _WEBHOOK_CONFIGURATIONS:
        for index, webhook in enumerate(item.manifest.get("webhooks") or []):
            service = (webhook.get("clientConfig") or {}).get("service")
            if service:
                yield f"webhooks[{index}].clientConfig.service", service
    elif item.kind == "APIService":
        service = (item.manifest.get("spec") or {}).get("service")
        if service:
            yield "spec.service", service


def _pod_port(objects: Sequence[Placed], service: Placed, port: int) -> int | None:
    """The pod port a Service sends ``port`` to: its number, or the named container port of the pods it selects."""
    entry = next((p for p in (service.manifest.get("spec") or {}).get("ports") or [] if p.get("port") == port), None)
    if entry is None:
        return None
    target = entry.get("targetPort", port)
    if isinstance(target, int):
        return target
    selector = (service.manifest.get("spec") or {}).get("selector") or {}
    for item in objects:
        labels = ((item.manifest.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
        if item.namespace != service.namespace or not selector or selector.items() - labels.items():
            continue
        for _, pod in pod_specs(item):
            for container in _containers(pod):
                for declared in container.get("ports") or []:
                    if declared.get("name") == target:
                        return int(declared["containerPort"])
    return None


def _control_plane_calls(objects: Sequence[Placed]) -> Iterator[tuple[Placed, str, str, int, int]]:
    """(caller, field path, Service, service port, pod port) of every call the control plane makes into a stack's pods."""
    services = {(o.namespace, o.name): o for o in objects if o.kind == "Service"}
    for item in objects:
        for where, reference in _service_calls(item):
            service = services.get((str(reference.get("namespace")), str(reference.get("name"))))
            port = int(reference.get("port", _DEFAULT_SERVICE_PORT))
            pod_port = None if service is None else _pod_port(objects, service, port)
            if service is not None and pod_port is not None:
                yield item, where, service.label().removeprefix("Service "), port, pod_port


def control_plane_ports(objects: Sequence[Placed]) -> dict[str, int]:
    """The pod port the control plane connects to, per webhook configuration or APIService."""
    return {item.label(): pod_port for item, _, _, _, pod_port in _control_plane_calls(objects)}


def _control_plane_reach(objects: Sequence[Placed]) -> list[str]:
    section = rules()["control_plane_calls"]
    opened = section["ports"]
    return [
        f"{item.label()} ({item.source}): {where}: the control plane calls {service} port {port}, which sends it to "
        f"pod port {pod_port}; GKE's firewall lets the control plane reach private nodes only on "
        f"{', '.join(map(str, opened))} ({_cite(section)})"
        for item, where, service, port, pod_port in _control_plane_calls(objects)
        if pod_port not in opened
    ]


def admission_problems(objects: Sequence[Placed]) -> list[str]:
    """Every refusal Autopilot's admission would give these objects; empty when all are admitted."""
    found = []
    for item in objects:
        own = _managed_namespace(item)
        for where, pod in pod_specs(item):
            own += [
                *_node_selection(where, pod),
                *_compute_class(where, pod),
                *_gpu(where, pod),
                *_resources(where, pod),
                *_security(where, pod),
            ]
        found += [f"{item.label()} ({item.source}): {problem}" for problem in own]
    return found + _control_plane_reach(objects)
