"""Gateway routing: API, proxy-only subnet, CRDs, endpoint picker, Gateway and route, in order."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
import yaml

from components.gateway import backend_timeout, endpoint_picker_values, installs_crds
from facts.naming import REPLICAS, selector_labels
from plan.stack import GatewaySpec, plan_stack
from render.engine import PROJECT_ROOT, Registration, Render, reveal, stack_settings
from render.files import flatten, plan
from render.validation import validate_render
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered

CHART_KEYS = yaml.safe_load((PROJECT_ROOT / "render" / "vendor" / "schemas" / "charts" / "inferencepool.yaml").read_text())["versions"]
GATEWAY_TYPES = (
    "llm:gateway:InferenceGateway",
    "llm:gateway:ProxySubnet",
    "kubernetes:helm.sh/v4:Chart",
    "kubernetes:gateway.networking.k8s.io/v1:Gateway",
    "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
)


def gateway_spec(settings: StackSettings) -> GatewaySpec:
    spec = plan_stack(settings.model_copy(update={"routing": "gateway"}), "any").gateway
    assert spec is not None
    return spec


def chart_reads(version: str, key: str) -> bool:
    keys: list[str] = CHART_KEYS[version]["keys"]
    return key in keys or any(k.endswith(".*") and key.startswith(k[:-1]) for k in keys)


def chart(render: Render) -> Registration:
    return render.one("kubernetes:helm.sh/v4:Chart")


def test_gateway_render_lists_api_subnet_chart_gateway_route_in_dependency_order() -> None:
    render = rendered("gateway")
    api = render.one("gcp:projects/service:Service", "networkservices")
    subnet = render.one("gcp:compute/subnetwork:Subnetwork", "proxy-only")
    endpoint_picker = chart(render)
    gateway = render.one("kubernetes:gateway.networking.k8s.io/v1:Gateway")
    route = render.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")
    ordered = [api, subnet, endpoint_picker, gateway, route]
    positions = [render.resources.index(r) for r in ordered]
    assert positions == sorted(positions)
    assert render.depends_on(gateway, api) and render.depends_on(gateway, subnet)
    assert render.depends_on(route, gateway) and render.depends_on(route, endpoint_picker)
    lines = plan(render).splitlines()
    in_plan = [next(i for i, line in enumerate(lines) if r.type in line and f" {r.name} " in f"{line} ") for r in ordered]
    assert in_plan == sorted(in_plan)


def test_the_proxy_only_subnet_is_regional_managed_proxy_and_active() -> None:
    subnet = rendered("gateway").one("gcp:compute/subnetwork:Subnetwork", "proxy-only").inputs
    assert (subnet["purpose"], subnet["role"], subnet["ipCidrRange"]) == ("REGIONAL_MANAGED_PROXY", "ACTIVE", "10.129.0.0/23")


def test_an_existing_proxy_only_subnet_is_used_instead_of_a_new_one() -> None:
    render = render_with("gateway", gateway={"existingProxySubnet": "shared-proxy-only"})
    assert render.by_type("gcp:compute/subnetwork:Subnetwork") == [render.one("gcp:compute/subnetwork:Subnetwork", "nodes")]
    # The lookup fails the preview when the named subnet does not exist.
    assert (
        "gcp:compute/getSubnetwork:getSubnetwork",
        {"name": "shared-proxy-only", "project": "llm-serving-gateway", "region": "europe-west4"},
    ) in render.invokes


def test_chart_values_select_the_vllm_pods_on_the_vllm_port() -> None:
    values = chart(rendered("gateway")).inputs["values"]
    assert values["inferencePool"]["modelServers"]["matchLabels"] == selector_labels("gateway")
    deployment = rendered("gateway").one("kubernetes:apps/v1:Deployment", "vllm").inputs
    assert selector_labels("gateway").items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    port = deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert values["inferencePool"]["targetPorts"] == [{"number": port}]
    assert values["inferencePool"]["targetPortNumber"] == port


def test_chart_values_run_one_sized_endpoint_picker_with_gke_monitoring() -> None:
    endpoint_picker = chart(rendered("gateway")).inputs
    assert (endpoint_picker["chart"], endpoint_picker["version"], endpoint_picker["name"]) == (
        "oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool",
        "v1.4.0",
        REPLICAS,
    )
    values = endpoint_picker["values"]
    assert values["provider"] == {"name": "gke", "gke": {"autopilot": True}}
    resources = {"cpu": "10", "memory": "16Gi"}
    assert values["inferenceExtension"]["resources"] == {"requests": resources, "limits": resources}
    assert values["inferenceExtension"]["replicas"] == 1
    assert values["inferenceExtension"]["monitoring"] == {"prometheus": {"enabled": True}}


@pytest.mark.parametrize("version", ["v1.4.0", "v1.5.0"])
def test_every_chart_value_set_is_read_by_the_pinned_chart(version: str) -> None:
    settings = StackSettings.model_validate({"project": "example-project", "routing": "gateway", "gateway": {"chartVersion": version}})
    spec = gateway_spec(settings)
    unread = [key for key in flatten(endpoint_picker_values(spec, spec.pools[0])) if not chart_reads(version, key)]
    assert unread == []


def test_the_chart_key_list_catches_a_removed_key() -> None:
    assert not chart_reads("v1.4.0", "inferenceExtension.monitoring.gke.enabled")


def test_the_route_sends_to_the_inference_pool_and_leaves_timeouts_to_the_backend_policy() -> None:
    render = rendered("gateway")
    route = render.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute").inputs["spec"]
    rule = route["rules"][0]
    assert rule["backendRefs"] == [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": REPLICAS}]
    assert "timeouts" not in rule
    assert route["parentRefs"] == [{"name": render.one("kubernetes:gateway.networking.k8s.io/v1:Gateway").inputs["metadata"]["name"]}]


def test_the_backend_timeout_reaches_the_charts_backend_policy() -> None:
    transform = backend_timeout(900)
    policy = {
        "apiVersion": "networking.gke.io/v1",
        "kind": "GCPBackendPolicy",
        "spec": {"default": {"timeoutSec": 300, "logging": {"enabled": True}}},
    }
    changed = transform(
        pulumi.ResourceTransformArgs(
            custom=True, type_="kubernetes:networking.gke.io/v1:GCPBackendPolicy", name="p", props=policy, opts=pulumi.ResourceOptions()
        )
    )
    assert isinstance(changed, pulumi.ResourceTransformResult)
    props: dict[str, Any] = dict(changed.props)
    assert props["spec"]["default"] == {"timeoutSec": 900, "logging": {"enabled": True}}
    other = transform(
        pulumi.ResourceTransformArgs(custom=True, type_="kubernetes:apps/v1:Deployment", name="d", props={}, opts=pulumi.ResourceOptions())
    )
    assert other is None


def test_the_gateway_is_internal_by_default_and_waits_for_programmed() -> None:
    gateway = rendered("gateway").one("kubernetes:gateway.networking.k8s.io/v1:Gateway")
    assert gateway.inputs["spec"]["gatewayClassName"] == "gke-l7-rilb"
    assert gateway.inputs["metadata"]["annotations"]["pulumi.com/waitFor"] == "condition=Programmed"
    assert gateway.custom_timeouts["create"] == "15m"


def test_an_external_gateway_needs_the_opt_in_and_uses_the_external_class() -> None:
    render = render_with("gateway", gateway={"exposure": "external"}, allowPublicExposure=True)
    assert (
        render.one("kubernetes:gateway.networking.k8s.io/v1:Gateway").inputs["spec"]["gatewayClassName"]
        == "gke-l7-regional-external-managed"
    )


@pytest.mark.parametrize(
    ("version", "mode", "expected"), [("1.35", "auto", False), ("1.34", "auto", True), ("1.35", "always", True), ("1.33", "never", False)]
)
def test_crds_are_installed_only_when_the_cluster_does_not(version: str, mode: str, expected: bool) -> None:
    settings = StackSettings.model_validate(
        {"project": "example-project", "cluster": {"version": version}, "gateway": {"installCrds": mode}}
    )
    assert installs_crds(gateway_spec(settings)) is expected


def test_installed_crds_come_before_the_chart_and_match_its_release() -> None:
    render = render_with("gateway", gateway={"installCrds": "always"})
    crds = render.one("kubernetes:yaml/v2:ConfigFile")
    assert crds.inputs["file"].endswith("/v1.4.0/v1-manifests.yaml")
    assert render.depends_on(chart(render), crds)


def test_the_gateway_stack_validates_against_the_vendored_crds() -> None:
    render = rendered("gateway")
    checks = validate_render(render)
    assert checks.count("CRD gateway.networking.k8s.io/v1") == 2


def test_outputs_give_the_gateway_address_and_the_overhead_in_the_estimate() -> None:
    outputs = reveal(rendered("gateway").outputs)
    assert outputs["gatewayAddress"]
    assert "Inference Gateway overhead" in outputs["estimates"]["basis"]


def test_a_stack_renders_the_gateway_exactly_when_its_routing_is_gateway(stack: str) -> None:
    render = rendered(stack)
    routed = stack_settings(stack).routing == "gateway"
    # An autoscaled stack has KEDA's chart too: only the endpoint picker's is the gateway's.
    found = {t for t in GATEWAY_TYPES if any(r.name != "keda" for r in render.by_type(t))}
    assert found == (set(GATEWAY_TYPES) if routed else set())
    assert any(r.name == "networkservices" for r in render.resources) == routed


def test_switching_routing_leaves_deployment_cache_and_cluster_unchanged() -> None:
    clusterip, gateway = render_with("gateway", routing="clusterip"), rendered("gateway")

    def kept(render: Render) -> dict[str, Any]:
        owners = {
            r.urn
            for r in render.resources
            if r.type in ("llm:platform:Cluster", "llm:storage:ModelCache", "llm:serving:ReplicaSet", "llm:platform:Network")
        }
        return {r.urn: r.inputs for r in render.resources if r.parent in owners}

    assert kept(clusterip) == kept(gateway)


def test_scaled_to_zero_the_gateway_keeps_its_address_but_runs_no_endpoint_picker() -> None:
    render = render_with("gateway", nodes=0)
    assert render.by_type("kubernetes:helm.sh/v4:Chart") == []
    assert render.by_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute") == []
    assert render.one("kubernetes:gateway.networking.k8s.io/v1:Gateway")
