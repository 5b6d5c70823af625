"""The Inference Gateway: an endpoint-picker chart per model, Gateway and HTTPRoute to the InferencePools.

With several models, one InferencePool and endpoint picker per model (an endpoint picker serves one pool),
the body-based router that copies a request body's `model` into a header, and one route rule per model
matching that header (docs/architecture.md, "Routing").

Used when a stack sets ``routing: gateway``. It costs 31-37% of throughput
against round-robin ClusterIP (docs/reference.md) and earns its keep
only with uneven load or shared prefixes.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.manifests import Manifest, guaranteed
from components.options import child_options
from plan.stack import GatewaySpec, InferencePoolSpec

CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
# Published from config/charts/body-based-routing at each release, with the release's version.
ROUTER_CHART = "oci://registry.k8s.io/gateway-api-inference-extension/charts/body-based-routing"
# The release name the upstream guides install it as.
ROUTER = "body-based-router"
# Set by the body-based router from the body's `model` (pkg/bbr/handlers/request.go, modelHeader).
MODEL_HEADER = "X-Gateway-Model-Name"
CRD_MANIFEST = "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/{version}/v1-manifests.yaml"
GATEWAY = "inference-gateway"
ROUTE = "vllm"
UPSTREAM_REGISTRY = "registry.k8s.io"
GATEWAY_CLASSES = {"internal": "gke-l7-rilb", "external": "gke-l7-regional-external-managed"}
# GKE installs the InferencePool CRDs from 1.34.0-gke.1626000; a bare "1.34"
# cannot promise that patch, so auto-install below 1.35.
GKE_INSTALLS_CRDS_FROM_MINOR = 35


def installs_crds(spec: GatewaySpec) -> bool:
    mode = spec.install_crds
    return mode == "always" or (mode == "auto" and spec.cluster_minor < GKE_INSTALLS_CRDS_FROM_MINOR)


def endpoint_picker_values(spec: GatewaySpec, pool: InferencePoolSpec) -> dict[str, Any]:
    """Chart values; every key is one the pinned chart version reads (tested against its key list)."""
    port = spec.port
    values: dict[str, Any] = {
        "inferencePool": {"modelServers": {"matchLabels": pool.selector}, "targetPorts": [{"number": port}]},
        "inferenceExtension": {
            # More than one replica is leader election (standby), not more capacity.
            "replicas": spec.endpoint_picker_replicas,
            # The chart default (4 CPU / 8Gi) crashed under ~8K connections.
            "resources": guaranteed({"cpu": spec.endpoint_picker_cpu, "memory": spec.endpoint_picker_memory}),
            # Renders the EPP's PodMonitoring with provider gke (monitoring.gke was removed in v1.3.0).
            "monitoring": {"prometheus": {"enabled": True}},
        },
        "provider": {"name": "gke", "gke": {"autopilot": True}},
    }
    if spec.chart_version == "v1.4.0":
        # v1.4.0 takes the HealthCheckPolicy's port from here; v1.5.0 from targetPorts.
        values["inferencePool"]["targetPortNumber"] = port
    if spec.image_registry != UPSTREAM_REGISTRY:
        # The endpoint picker through the stack's mirror of registry.k8s.io; v1.5.0 renamed the keys.
        image = (
            {"hub": f"{spec.image_registry}/gateway-api-inference-extension"}
            if spec.chart_version == "v1.4.0"
            else {"registry": spec.image_registry}
        )
        values["inferenceExtension"]["image"] = image
    return values


def router_values(spec: GatewaySpec) -> dict[str, Any]:
    """The body-based router's chart values: GKE's GCPRoutingExtension on the stack's Gateway (its templates/gke.yaml)."""
    values: dict[str, Any] = {"provider": {"name": "gke"}, "inferenceGateway": {"name": GATEWAY}}
    if spec.image_registry != UPSTREAM_REGISTRY:
        # Through the stack's mirror of registry.k8s.io; v1.5.0 renamed the keys as the endpoint picker's.
        image = (
            {"hub": f"{spec.image_registry}/gateway-api-inference-extension"}
            if spec.chart_version == "v1.4.0"
            else {"registry": spec.image_registry}
        )
        values["bbr"] = {"image": image}
    return values


def gateway_manifest(spec: GatewaySpec) -> dict[str, Any]:
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {
            "name": GATEWAY,
            "namespace": spec.namespace,
            "labels": spec.labels,
            # Waits for the load balancer, not just the object; a missing proxy-only
            # subnet or API shows up here as a timeout.
            "annotations": {
                "pulumi.com/waitFor": "condition=Programmed",
                "pulumi.com/timeoutSeconds": str(spec.programmed_timeout_minutes * 60),
            },
        },
        "spec": {
            "gatewayClassName": GATEWAY_CLASSES[spec.exposure],
            "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}],
        },
    }


def route_rule(pool: InferencePoolSpec, *, by_model: bool) -> dict[str, Any]:
    """Every request to the pool, or with several models those whose body names the pool's model."""
    match: dict[str, Any] = {"path": {"type": "PathPrefix", "value": "/"}}
    if by_model:
        match["headers"] = [{"type": "Exact", "name": MODEL_HEADER, "value": pool.served_name}]
    return {
        "matches": [match],
        # No `timeouts`: GKE's Gateway controller does not accept them (the route
        # would not be Accepted); the GCPBackendPolicy carries the backend timeout.
        "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": pool.name}],
    }


def route_manifest(spec: GatewaySpec) -> dict[str, Any]:
    """One route; with several models one rule per model and no other, so a request naming none is not routed."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": ROUTE, "namespace": spec.namespace, "labels": spec.labels},
        "spec": {
            "parentRefs": [{"name": GATEWAY}],
            "rules": [route_rule(pool, by_model=spec.by_model) for pool in spec.pools],
        },
    }


def programmed_timeout(spec: GatewaySpec) -> str:
    return f"{spec.programmed_timeout_minutes}m"


def backend_timeout(seconds: int) -> pulumi.ResourceTransform:
    """Sets the chart's GCPBackendPolicy timeout: the chart fixes it at 300 s and has no value for it."""

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ != "kubernetes:networking.gke.io/v1:GCPBackendPolicy":
            return None
        props: dict[str, Any] = dict(args.props)
        spec: dict[str, Any] = dict(props.get("spec") or {})
        spec["default"] = {**(spec.get("default") or {}), "timeoutSec": seconds}
        return pulumi.ResourceTransformResult(props={**props, "spec": spec}, opts=args.opts)

    return transform


def fixed_health_check_port() -> pulumi.ResourceTransform:
    """Names the port choice of the chart's HealthCheckPolicy, which sets a port but not `portSpecification`.

    GKE's HealthCheckPolicy CRD takes a `port` only with `portSpecification: USE_FIXED_PORT`
    (its CEL rules; docs/reference.md), and the chart (v1.4.0, v1.5.0 on HTTP) leaves it out.
    """

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if args.type_ != "kubernetes:networking.gke.io/v1:HealthCheckPolicy":
            return None
        props: dict[str, Any] = dict(args.props)
        spec: dict[str, Any] = dict(props.get("spec") or {})
        default: dict[str, Any] = dict(spec.get("default") or {})
        config: dict[str, Any] = dict(default.get("config") or {})
        check: dict[str, Any] | None = config.get("httpHealthCheck")
        if not check or "port" not in check or "portSpecification" in check:
            return None
        config["httpHealthCheck"] = {**check, "portSpecification": "USE_FIXED_PORT"}
        spec["default"] = {**default, "config": config}
        return pulumi.ResourceTransformResult(props={**props, "spec": spec}, opts=args.opts)

    return transform


class InferenceGateway(pulumi.ComponentResource):
    """Registers CRDs (when needed), the endpoint-picker charts, the Gateway, the body-based router and the route.

    ``prerequisites`` are the API and proxy-only subnet the Gateway must never precede.
    """

    # Without it the Gateway's load balancer stays unprogrammed, silently (docs/reference.md).
    USES = ("networkservices.googleapis.com",)

    def __init__(
        self,
        name: str,
        spec: GatewaySpec,
        *,
        prerequisites: list[pulumi.Resource],
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:gateway:InferenceGateway", name, None, opts)
        base = child_options(self, opts, kubernetes)
        chart_after: list[pulumi.Resource] = []
        if installs_crds(spec):
            chart_after.append(
                k8s.yaml.v2.ConfigFile("inferencepool-crds", file=CRD_MANIFEST.format(version=spec.chart_version), opts=base)
            )
        chart: list[pulumi.Resource] = [
            k8s.helm.v4.Chart(
                # A one-model stack keeps its resource name (renaming would replace it).
                f"endpoint-picker-{pool.name}" if spec.by_model else "endpoint-picker",
                chart=CHART,
                version=spec.chart_version,
                # The chart names the InferencePool after the release: the model's replica set name.
                name=pool.name,
                namespace=spec.namespace,
                values=endpoint_picker_values(spec, pool),
                opts=pulumi.ResourceOptions.merge(
                    base,
                    pulumi.ResourceOptions(
                        depends_on=chart_after, transforms=[backend_timeout(spec.backend_timeout_seconds), fixed_health_check_port()]
                    ),
                ),
            )
            for pool in spec.pools
        ]
        wait = programmed_timeout(spec)
        self.gateway = Manifest(
            GATEWAY,
            gateway_manifest(spec),
            pulumi.ResourceOptions.merge(
                base,
                pulumi.ResourceOptions(
                    depends_on=[*prerequisites, *chart], custom_timeouts=pulumi.CustomTimeouts(create=wait, update=wait)
                ),
            ),
            outputs=("status",),
        )
        if spec.by_model and chart:
            # Its GCPRoutingExtension attaches to the Gateway; the route matches the header it sets.
            chart.append(
                k8s.helm.v4.Chart(
                    ROUTER,
                    chart=ROUTER_CHART,
                    version=spec.chart_version,
                    name=ROUTER,
                    namespace=spec.namespace,
                    values=router_values(spec),
                    opts=pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[self.gateway])),
                )
            )
        if chart:
            Manifest(
                ROUTE,
                route_manifest(spec),
                pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[self.gateway, *chart])),
            )
        self.address: pulumi.Output[str] = self.gateway.output("status").apply(_address)
        self.register_outputs({"address": self.address})


def _address(status: dict[str, Any] | None) -> str:
    addresses = (status or {}).get("addresses") or [{}]
    return str(addresses[0].get("value", ""))
