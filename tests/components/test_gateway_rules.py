"""The Inference Gateway's objects and chart values on hand-made specs, its transforms, and ``InferenceGateway`` alone."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from components.gateway import (
    InferenceGateway,
    _address,
    backend_timeout,
    endpoint_picker_values,
    fixed_health_check_port,
    gateway_manifest,
    installs_crds,
    route_manifest,
)
from plan.stack import GatewaySpec, InferencePoolSpec
from render.engine import Render
from tests.components.alone import registered

LABELS = {"team": "ml", "stack": "gateway"}
SELECTOR = {"app.kubernetes.io/name": "vllm"}
SPEC = GatewaySpec(
    namespace="serving",
    labels=LABELS,
    exposure="internal",
    install_crds="auto",
    chart_version="v1.5.0",
    backend_timeout_seconds=900,
    endpoint_picker_cpu="6",
    endpoint_picker_memory="12Gi",
    endpoint_picker_replicas=2,
    programmed_timeout_minutes=17,
    pools=(InferencePoolSpec(name="vllm", served_name="Qwen/Qwen3.5-27B-FP8", selector=SELECTOR),),
    port=8123,
    cluster_minor=35,
)
POOL = SPEC.pools[0]
MIRROR = "europe-docker.pkg.dev/example-project/k8s"


@pytest.mark.parametrize(
    ("mode", "minor", "installs"),
    [("auto", 34, True), ("auto", 35, False), ("auto", 36, False), ("always", 36, True), ("never", 33, False)],
)
def test_the_crds_are_installed_where_gke_does_not_install_them(mode: str, minor: int, installs: bool) -> None:
    assert installs_crds(replace(SPEC, install_crds=mode, cluster_minor=minor)) is installs


def test_the_endpoint_picker_serves_the_pool_of_the_replicas_on_their_port() -> None:
    amounts = {"cpu": "6", "memory": "12Gi"}
    assert endpoint_picker_values(SPEC, POOL) == {
        "inferencePool": {"modelServers": {"matchLabels": SELECTOR}, "targetPorts": [{"number": 8123}]},
        "inferenceExtension": {
            "replicas": 2,
            "resources": {"requests": amounts, "limits": amounts},
            "monitoring": {"prometheus": {"enabled": True}},
        },
        "provider": {"name": "gke", "gke": {"autopilot": True}},
    }


def test_each_chart_version_takes_the_port_and_the_mirror_under_its_own_keys() -> None:
    old = endpoint_picker_values(replace(SPEC, chart_version="v1.4.0", image_registry=MIRROR), POOL)
    assert old["inferencePool"]["targetPortNumber"] == 8123
    assert old["inferenceExtension"]["image"] == {"hub": f"{MIRROR}/gateway-api-inference-extension"}
    new = endpoint_picker_values(replace(SPEC, image_registry=MIRROR), POOL)
    assert "targetPortNumber" not in new["inferencePool"] and new["inferenceExtension"]["image"] == {"registry": MIRROR}


@pytest.mark.parametrize(("exposure", "gateway_class"), [("internal", "gke-l7-rilb"), ("external", "gke-l7-regional-external-managed")])
def test_the_gateway_waits_until_its_load_balancer_is_programmed(exposure: str, gateway_class: str) -> None:
    assert gateway_manifest(replace(SPEC, exposure=exposure)) == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {
            "name": "inference-gateway",
            "namespace": "serving",
            "labels": LABELS,
            "annotations": {"pulumi.com/waitFor": "condition=Programmed", "pulumi.com/timeoutSeconds": str(17 * 60)},
        },
        "spec": {"gatewayClassName": gateway_class, "listeners": [{"name": "http", "protocol": "HTTP", "port": 80}]},
    }


def test_the_route_sends_every_path_to_the_pool() -> None:
    assert route_manifest(SPEC) == {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "vllm", "namespace": "serving", "labels": LABELS},
        "spec": {
            "parentRefs": [{"name": "inference-gateway"}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                    "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "vllm"}],
                }
            ],
        },
    }


def transformed(transform: pulumi.ResourceTransform, type_: str, props: dict[str, Any]) -> dict[str, Any] | None:
    options = pulumi.ResourceOptions(protect=True)
    result = transform(pulumi.ResourceTransformArgs(True, type_, "object", props, options))
    assert result is None or isinstance(result, pulumi.ResourceTransformResult)
    if result is None:
        return None
    # The object keeps the options the chart gave it.
    assert result.opts is options
    return dict(result.props)


POLICY = "kubernetes:networking.gke.io/v1:GCPBackendPolicy"
HEALTH = "kubernetes:networking.gke.io/v1:HealthCheckPolicy"


def test_the_backend_policy_gets_the_stacks_timeout_and_keeps_the_rest() -> None:
    props = {
        "metadata": {"name": "vllm"},
        "spec": {"targetRef": {"name": "vllm"}, "default": {"timeoutSec": 300, "logging": {"enabled": True}}},
    }
    assert transformed(backend_timeout(900), POLICY, props) == {
        "metadata": {"name": "vllm"},
        "spec": {"targetRef": {"name": "vllm"}, "default": {"timeoutSec": 900, "logging": {"enabled": True}}},
    }
    assert transformed(backend_timeout(900), POLICY, {"metadata": {}}) == {"metadata": {}, "spec": {"default": {"timeoutSec": 900}}}
    assert transformed(backend_timeout(900), HEALTH, props) is None


def test_a_health_check_on_a_fixed_port_says_so_and_nothing_else_is_touched() -> None:
    check = {"type": "HTTP", "httpHealthCheck": {"port": 8123, "requestPath": "/health"}}
    props = {"metadata": {"name": "vllm"}, "spec": {"targetRef": {"name": "vllm"}, "default": {"timeoutSec": 5, "config": check}}}
    assert transformed(fixed_health_check_port(), HEALTH, props) == {
        "metadata": {"name": "vllm"},
        "spec": {
            "targetRef": {"name": "vllm"},
            "default": {
                "timeoutSec": 5,
                "config": {
                    "type": "HTTP",
                    "httpHealthCheck": {"port": 8123, "requestPath": "/health", "portSpecification": "USE_FIXED_PORT"},
                },
            },
        },
    }
    chosen = {"spec": {"default": {"config": {"httpHealthCheck": {"port": 1, "portSpecification": "USE_SERVING_PORT"}}}}}
    for unchanged in ({}, {"spec": {"default": {"config": {"httpHealthCheck": {"requestPath": "/"}}}}}, chosen):
        assert transformed(fixed_health_check_port(), HEALTH, unchanged) is None
    assert transformed(fixed_health_check_port(), POLICY, props) is None


@pytest.mark.parametrize(
    ("status", "address"),
    [
        ({"addresses": [{"type": "IPAddress", "value": "10.1.2.3"}, {"value": "10.9.9.9"}]}, "10.1.2.3"),
        ({"addresses": []}, ""),
        ({}, ""),
        (None, ""),
    ],
)
def test_the_address_is_the_gateways_first_one_or_empty_until_it_has_one(status: dict[str, Any] | None, address: str) -> None:
    assert _address(status) == address


def gateway_alone(spec: GatewaySpec, addresses: list[str] | None = None) -> Render:
    def program() -> None:
        api = gcp.projects.Service("api", service="networkservices.googleapis.com")
        subnet = gcp.compute.Subnetwork("proxy-only", ip_cidr_range="10.129.0.0/23", network="default", region="us-central1")
        found = InferenceGateway(
            "gateway",
            spec,
            prerequisites=[subnet],
            kubernetes=k8s.Provider("cluster"),
            opts=pulumi.ResourceOptions(depends_on=[api]),
        )
        found.address.apply((addresses if addresses is not None else []).append)

    return registered(program)


def test_a_serving_gateway_installs_the_chart_after_its_crds_and_routes_to_the_pool() -> None:
    addresses: list[str] = []
    render = gateway_alone(replace(SPEC, cluster_minor=34), addresses)
    component = render.one("llm:gateway:InferenceGateway", "gateway")
    api, subnet = render.one("gcp:projects/service:Service").urn, render.one("gcp:compute/subnetwork:Subnetwork").urn
    crds = render.one("kubernetes:yaml/v2:ConfigFile", "inferencepool-crds")
    assert crds.inputs["file"] == (
        "https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/v1.5.0/v1-manifests.yaml"
    )
    chart = render.one("kubernetes:helm.sh/v4:Chart", "endpoint-picker")
    inputs = chart.inputs
    assert inputs["chart"] == "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool"
    assert (inputs["version"], inputs["name"], inputs["namespace"]) == ("v1.5.0", "vllm", "serving")
    assert inputs["values"] == endpoint_picker_values(SPEC, POOL)
    assert crds.urn in chart.dependencies and len(chart.transforms) == 2
    policy = {"spec": {"default": {"config": {"httpHealthCheck": {"port": 8123}}}}}
    backend, health = chart.transforms
    assert transformed(backend, POLICY, {}) == {"spec": {"default": {"timeoutSec": 900}}}
    assert transformed(health, HEALTH, policy) == {
        "spec": {"default": {"config": {"httpHealthCheck": {"port": 8123, "portSpecification": "USE_FIXED_PORT"}}}}
    }
    gateway = render.one("kubernetes:gateway.networking.k8s.io/v1:Gateway", "inference-gateway")
    assert gateway.inputs["spec"] == gateway_manifest(SPEC)["spec"]
    assert gateway.custom_timeouts == {"create": "17m", "update": "17m"}
    assert subnet in gateway.dependencies and chart.urn in gateway.dependencies
    route = render.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "vllm")
    assert route.inputs["spec"] == route_manifest(SPEC)["spec"]
    assert gateway.urn in route.dependencies and chart.urn in route.dependencies
    cluster = render.one("pulumi:providers:kubernetes").urn
    assert api in component.dependencies
    for child in (crds, chart, gateway, route):
        assert child.parent == component.urn and child.provider.startswith(cluster) and api in child.dependencies
    assert addresses == ["192.0.2.20"]


def test_a_gateway_scaled_to_zero_keeps_its_address_without_picker_or_route() -> None:
    render = gateway_alone(replace(SPEC, pools=()))
    assert render.by_type("kubernetes:helm.sh/v4:Chart") == [] and render.by_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute") == []
    assert render.by_type("kubernetes:yaml/v2:ConfigFile") == []
    assert len(render.by_type("kubernetes:gateway.networking.k8s.io/v1:Gateway")) == 1
