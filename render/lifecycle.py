"""A stack's life, judged offline: created from nothing, and destroyed.

A static render judges each object as it stands; a real `pulumi up` also meets
what exists at the moment of each call. ``creation_waves`` is the order Pulumi
follows from the dependency graph (a wave's resources are created in parallel
once the waves before it are done), and ``creation_problems`` checks each
resource's preconditions at its point in that order: its API is on, the CRD of
a custom resource is installed, its namespace exists, a Gateway's proxy-only
subnet exists, and an alert condition does not ask Cloud Monitoring for metrics
no replica has sent yet. ``destroy`` is what `pulumi destroy` deletes, in its
order, or where it stops. Sources: docs/reference.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.apis import serving_api
from components.gateway import CRD_MANIFEST, GKE_INSTALLS_CRDS_FROM_MINOR
from render.chart import CHART_TYPE, chart_objects
from render.engine import Registration, Render, redact
from render.files import is_manifest
from render.validation import kubernetes_version

LIFECYCLE_FILE = "lifecycle.txt"
SERVICE_TYPE = "gcp:projects/service:Service"
CONFIG_FILE_TYPE = "kubernetes:yaml/v2:ConfigFile"
ALERT_POLICY_TYPE = "gcp:monitoring/alertPolicy:AlertPolicy"
# API groups whose CRDs GKE installs in every Autopilot cluster of the versions the settings accept:
# Gateway API (gatewayApiConfig), GKE's own policies, Managed Prometheus, ComputeClass, volume snapshots.
GKE_INSTALLED_GROUPS = {
    "gateway.networking.k8s.io",
    "networking.gke.io",
    "monitoring.googleapis.com",
    "cloud.google.com",
    "snapshot.storage.k8s.io",
}
INFERENCE_GROUPS = {"inference.networking.k8s.io", "inference.networking.x-k8s.io"}
BUILT_IN_GROUPS = {
    "",
    "apps",
    "batch",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "networking.k8s.io",
    "autoscaling",
    "admissionregistration.k8s.io",
    "apiregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
}


def _edges(render: Render, registration: Registration) -> set[str]:
    """What a resource waits for: its dependencies, its parent and its provider."""
    provider = registration.provider.rsplit("::", 1)[0] if registration.provider else ""
    known = {r.urn for r in render.resources}
    return {urn for urn in (*registration.dependencies, registration.parent, provider) if urn in known}


def creation_waves(render: Render) -> list[list[Registration]]:
    """Resources in the order Pulumi can create them from nothing; each wave after every resource it waits for."""
    pending = {r.urn: _edges(render, r) for r in render.resources}
    by_urn = {r.urn: r for r in render.resources}
    waves: list[list[Registration]] = []
    while pending:
        ready = sorted(urn for urn, waits in pending.items() if not waits & pending.keys())
        if not ready:
            raise ValueError("dependency cycle among: " + ", ".join(sorted(pending)))
        waves.append([by_urn[urn] for urn in ready])
        for urn in ready:
            del pending[urn]
    return waves


def _group(manifest: dict[str, object]) -> str:
    api = str(manifest.get("apiVersion", ""))
    return api.rsplit("/", 1)[0] if "/" in api else ""


def _charts(render: Render, release: str) -> list[Registration]:
    """The chart registrations of a Helm release."""
    return [r for r in render.by_type(CHART_TYPE) if (r.inputs.get("name") or r.name) == release]


def _crd_installers(render: Render) -> dict[str, list[Registration]]:
    """API group -> the chart or manifest file resources that install its CRDs."""
    installers: dict[str, list[Registration]] = {}
    for item in chart_objects(render):
        if item.manifest.get("kind") == "CustomResourceDefinition":
            group = str((item.manifest.get("spec") or {}).get("group", ""))
            charts = _charts(render, item.release)
            installers.setdefault(group, []).extend(charts)
    for manifest_file in render.by_type(CONFIG_FILE_TYPE):
        # The InferencePool release manifest installs the inference CRDs.
        if str(manifest_file.inputs.get("file", "")).startswith(CRD_MANIFEST.split("{version}")[0]):
            for group in INFERENCE_GROUPS:
                installers.setdefault(group, []).append(manifest_file)
    return installers


def _api_problems(render: Render) -> list[str]:
    services = {r.inputs.get("service"): r for r in render.by_type(SERVICE_TYPE)}
    found = []
    for resource in render.resources:
        if not resource.custom or not resource.type.startswith("gcp:") or resource.type == SERVICE_TYPE:
            continue
        api = serving_api(resource.type)
        label = f"{resource.type} {resource.name}"
        if api is None:
            found.append(f"{label}: no API is known for its type; add its module to components/apis.py SERVING_API")
        elif api not in services:
            found.append(f"{label}: needs {api}, which the stack never enables (components/apis.py)")
        elif not render.depends_on(resource, services[api]):
            found.append(f"{label}: may be created before {api} is enabled: it does not wait for that API")
    for gateway in (r for r in render.resources if is_manifest(r) and r.inputs.get("kind") == "Gateway"):
        label = f"Gateway {gateway.inputs['metadata'].get('name')}"
        if not str((gateway.inputs.get("spec") or {}).get("gatewayClassName", "")).startswith("gke-l7"):
            continue
        load_balancing = services.get("networkservices.googleapis.com")
        if load_balancing is None or not render.depends_on(gateway, load_balancing):
            found.append(f"{label}: GKE's Gateway controller needs networkservices.googleapis.com enabled first; it stays unprogrammed")
        proxies = [s for s in render.by_type("gcp:compute/subnetwork:Subnetwork") if s.inputs.get("purpose") == "REGIONAL_MANAGED_PROXY"]
        looked_up = any(token == "gcp:compute/getSubnetwork:getSubnetwork" for token, _ in render.invokes)
        if not looked_up and not any(render.depends_on(gateway, proxy) for proxy in proxies):
            found.append(f"{label}: a regional Gateway needs the VPC's proxy-only subnet first; it stays unprogrammed without one")
    return found


def _alert_problems(render: Render) -> list[str]:
    found = []
    for policy in render.by_type(ALERT_POLICY_TYPE):
        for condition in policy.inputs.get("conditions") or []:
            promql = condition.get("conditionPrometheusQueryLanguage")
            if promql is not None and promql.get("disableMetricValidation") is not True:
                found.append(
                    f"AlertPolicy {policy.name}: its PromQL condition is created before any replica has been scraped; "
                    "Cloud Monitoring refuses a condition on metrics it has not seen unless disableMetricValidation is true"
                )
    return found


def _created(render: Render) -> list[tuple[Registration, dict[str, Any], str]]:
    """Every Kubernetes object with the registration that creates it: the program's own, and each chart's."""
    created = [(r, r.inputs, "") for r in render.resources if is_manifest(r)]
    for item in chart_objects(render):
        charts = _charts(render, item.release)
        created.extend((chart, item.manifest, f" ({item.source})") for chart in charts)
    return created


def _kubernetes_problems(render: Render) -> list[str]:
    installers = _crd_installers(render)
    namespaces = {r.inputs["metadata"]["name"]: r for r in render.resources if is_manifest(r) and r.inputs.get("kind") == "Namespace"}
    # Where GKE installs the InferencePool CRDs itself, as the gateway component decides it.
    inference_built_in = int(kubernetes_version(render).split(".")[1]) >= GKE_INSTALLS_CRDS_FROM_MINOR
    found = []
    for creator, manifest, source in _created(render):
        label = f"{manifest.get('kind')} {(manifest.get('metadata') or {}).get('name')}{source}"
        group = _group(manifest)
        built_in = group in BUILT_IN_GROUPS or group in GKE_INSTALLED_GROUPS or (group in INFERENCE_GROUPS and inference_built_in)
        if not built_in:
            sources = installers.get(group, [])
            if not sources:
                found.append(f"{label}: no CRD for {group} exists when it is created: neither GKE nor the stack installs one")
            elif not any(creator is installer or render.depends_on(creator, installer) for installer in sources):
                found.append(f"{label}: may be created before the CRD of {group} ({sources[0].name}) is installed")
        namespace = (manifest.get("metadata") or {}).get("namespace")
        if namespace in namespaces and creator is not namespaces[namespace] and not render.depends_on(creator, namespaces[namespace]):
            found.append(f"{label}: may be created before its namespace {namespace}")
    return found


def creation_problems(render: Render) -> list[str]:
    """What a first `pulumi up` from nothing would trip on, given what exists at each call; empty when nothing."""
    return [*_api_problems(render), *_alert_problems(render), *_kubernetes_problems(render)]


@dataclass(frozen=True)
class Destroy:
    """What `pulumi destroy` does: deletes in order, or stops at protected resources and deletes nothing."""

    deletes: list[Registration]
    # Protected: the destroy's preview fails on them, before any delete.
    refused: list[Registration]
    # retainOnDelete: dropped from the stack, left in place (and billing).
    retained: list[Registration]

    def summary(self) -> str:
        if self.refused:
            names = ", ".join(f"{r.type.split(':')[-1]} {r.name}" for r in self.refused)
            return f"destroy stops at {len(self.refused)} protected resource(s) ({names}); deletes nothing"
        kept = f"; leaves {len(self.retained)} in place: " + ", ".join(r.name for r in self.retained) if self.retained else ""
        return f"destroy deletes {len(self.deletes)} resources, dependents first{kept}"


def destroy(render: Render) -> Destroy:
    """Pulumi deletes in reverse dependency order; a protected resource fails the preview, so nothing goes."""
    resources = [r for r in render.resources if r.custom]
    refused = [r for r in resources if r.protect]
    retained = [r for r in resources if r.retain_on_delete]
    if refused:
        return Destroy([], refused, retained)
    order = [r for wave in reversed(creation_waves(render)) for r in wave if r.custom]
    return Destroy(order, [], retained)


def lifecycle_text(render: Render) -> str:
    """The creation order from nothing, what a destroy does, and what stays after a scale to zero."""
    waves = [
        names for wave in creation_waves(render) if (names := [f"{r.type.split(':')[-1]} {r.name}" for r in wave if r.custom or r.remote])
    ]
    lines = [f"creation order from nothing: {len(waves)} waves (a wave's resources are created in parallel)"]
    lines.extend(f"  {number:>2}. " + ", ".join(names) for number, names in enumerate(waves, 1))
    lines.append(f"{destroy(render).summary()}")
    outputs = redact(render.outputs)
    # With several models, their total: the cluster fee and what else they share once, each one's cache listed.
    idle = (outputs.get("estimatesTotal") or outputs.get("estimates") or {}).get("whenIdle")
    if isinstance(idle, dict):
        keeps = ", ".join(f"{item} {_dollars(cost, 4)}" for item, cost in idle["keeps"].items())
        lines.append(f"after a scale to zero: {_dollars(idle['costPerHour'], 2)}/h keeps billing ({keeps})")
    return "\n".join(lines) + "\n"


def _dollars(value: float | None, digits: int) -> str:
    return "an unknown amount" if value is None else f"${value:,.{digits}f}"


class LifecycleError(ValueError):
    pass


def check_lifecycle(render: Render) -> None:
    """Raises ``LifecycleError`` listing every creation problem."""
    found = creation_problems(render)
    if found:
        raise LifecycleError(f"{len(found)} lifecycle problem(s):\n" + "\n".join(f"  - {p}" for p in found))
