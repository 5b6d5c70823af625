"""Gateway routing with several models: a pool and endpoint picker per model, the body-based router, one route by model."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
import yaml

from components.gateway import MODEL_HEADER, ROUTER, router_values
from components.observability import charts
from plan.stack import StackPlan, plan_stack
from render.chart import chart_objects
from render.cluster_model import Sourced, check_cluster, cluster_objects, problems
from render.engine import PROJECT_ROOT, Render, stack_settings
from render.files import flatten
from render.validation import validate_render
from stacks.settings import StackSettings
from tests.conftest import render_with

ROUTER_KEYS = yaml.safe_load((PROJECT_ROOT / "render" / "vendor" / "schemas" / "charts" / "body-based-routing.yaml").read_text())[
    "versions"
]
# The rag stack's models through the Gateway; its embedding model needs the endpoint picker that parses embeddings.
GATEWAY = {"routing": "gateway", "gateway": {"chartVersion": "v1.5.0"}}


def routed() -> Render:
    return render_with("rag", **GATEWAY)


def routed_plan() -> StackPlan:
    values = stack_settings("rag").model_dump(by_alias=True, exclude_unset=True)
    return plan_stack(StackSettings.model_validate(values | GATEWAY), "rag")


def objects(render: Render, kind: str, chart: str = "") -> list[dict[str, Any]]:
    """The objects of that kind the charts create; of one chart (inferencepool, body-based-routing) when named."""
    return [item.manifest for item in chart_objects(render) if item.manifest["kind"] == kind and f"({chart}" in item.source]


def deployments(render: Render) -> dict[str, dict[str, Any]]:
    """The model's Deployments by name: the program's own, not the charts'."""
    return {r.inputs["metadata"]["name"]: r.inputs for r in render.by_type("kubernetes:apps/v1:Deployment")}


def test_each_model_gets_its_own_pool_and_endpoint_picker_selecting_its_pods() -> None:
    render = routed()
    models = deployments(render)
    pools = {pool["metadata"]["name"]: pool["spec"] for pool in objects(render, "InferencePool")}
    assert set(pools) == set(models) and len(pools) == 2
    for name, pool in pools.items():
        assert pool["selector"]["matchLabels"] == models[name]["spec"]["selector"]["matchLabels"]
        assert pool["endpointPickerRef"]["name"] == f"{name}-epp"
    pickers = {d["metadata"]["name"] for d in objects(render, "Deployment", "inferencepool")}
    assert pickers == {f"{name}-epp" for name in models}
    # GKE's health check and backend policy of each pool, as the chart renders them for provider gke.
    for kind in ("HealthCheckPolicy", "GCPBackendPolicy"):
        targets = {p["spec"]["targetRef"]["name"] for p in objects(render, kind) if p["spec"]["targetRef"]["kind"] == "InferencePool"}
        assert targets == set(models)


def test_one_route_sends_each_served_name_to_its_models_pool_and_nothing_else() -> None:
    render = routed()
    (route,) = render.by_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")
    served = {model.replicas.served_name: model.name for model in routed_plan().served}
    rules = route.inputs["spec"]["rules"]
    assert len(rules) == len(served) == 2
    sent = {}
    for rule in rules:
        ((match,),) = [rule["matches"]]
        ((header,),) = [match["headers"]]
        assert (header["name"], header["type"]) == (MODEL_HEADER, "Exact")
        ((backend,),) = [rule["backendRefs"]]
        assert backend["kind"] == "InferencePool"
        sent[header["value"]] = backend["name"]
    assert sent == served


def test_the_body_based_router_attaches_to_the_gateway_once() -> None:
    render = routed()
    charts = [r for r in render.by_type("kubernetes:helm.sh/v4:Chart") if r.name == ROUTER]
    assert len(charts) == 1
    assert charts[0].inputs["chart"].endswith("/charts/body-based-routing")
    ((extension,),) = [objects(render, "GCPRoutingExtension")]
    gateway = render.one("kubernetes:gateway.networking.k8s.io/v1:Gateway").inputs["metadata"]["name"]
    assert [t["name"] for t in extension["spec"]["targetRefs"]] == [gateway]
    (chain,) = extension["spec"]["extensionChains"]
    (callout,) = chain["extensions"]
    service = {s["metadata"]["name"]: s for s in objects(render, "Service", "body-based-routing")}[callout["backendRef"]["name"]]
    assert callout["backendRef"]["port"] == service["spec"]["ports"][0]["port"]
    route = render.one("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")
    assert render.depends_on(route, charts[0])


def test_every_object_of_the_two_model_gateway_holds_against_the_vendored_crds_and_the_cluster_model() -> None:
    render = routed()
    checks = validate_render(render)
    # Two pools, their two policies each, the router's GCPRoutingExtension and health check.
    assert checks.count("CRD inference.networking.k8s.io/v1") == 2
    assert checks.count("CRD networking.gke.io/v1") == 6
    assert checks.count("CRD gateway.networking.k8s.io/v1") == 2
    check_cluster(render)


@pytest.mark.parametrize("version", ["v1.4.0", "v1.5.0"])
def test_every_router_value_set_is_read_by_the_pinned_chart(version: str) -> None:
    settings = StackSettings.model_validate({"project": "example-project", "routing": "gateway", "gateway": {"chartVersion": version}})
    spec = plan_stack(settings, "any").gateway
    assert spec is not None and spec.image_registry != "registry.k8s.io"
    keys: list[str] = ROUTER_KEYS[version]["keys"]
    unread = [key for key in flatten(router_values(spec)) if key not in keys]
    assert unread == []


def test_a_model_scaled_to_zero_has_no_pool_and_no_rule() -> None:
    config = stack_settings("rag").models
    assert config is not None
    entries = [entry.model_dump(by_alias=True, exclude_unset=True, exclude={"autoscaling"}) for entry in config]
    entries[1]["nodes"] = 0
    render = render_with("rag", models=entries, autoscaling={"enabled": False}, **GATEWAY)
    serving = {name for name, d in deployments(render).items() if d["spec"]["replicas"] > 0}
    assert len(serving) == 1
    (route,) = render.by_type("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute")
    assert {rule["backendRefs"][0]["name"] for rule in route.inputs["spec"]["rules"]} == serving
    assert {pool["metadata"]["name"] for pool in objects(render, "InferencePool")} == serving


def test_each_models_pool_has_its_own_endpoint_picker_chart() -> None:
    plan = routed_plan()
    assert plan.observability is not None and plan.observability.gateway
    pools = {title: queries for title, queries in charts(plan.observability) if "Endpoint picker" in title}
    assert len(pools) == len(plan.served) == 2
    for model in plan.served:
        (queries,) = [queries for title, queries in pools.items() if title.startswith(f"{model.name}: ")]
        assert all(f'name="{model.name}"' in query for query in queries)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda spec: spec["targetRefs"][0].update(name="gone"), "target Gateway gone does not exist"),
        (lambda spec: spec["extensionChains"][0]["extensions"][0]["backendRef"].update(name="gone"), "callout Service gone does not exist"),
    ],
    ids=["gateway", "service"],
)
def test_the_render_refuses_a_router_extension_naming_what_the_stack_lacks(change: Callable[[dict[str, Any]], None], expected: str) -> None:
    objects = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in cluster_objects(routed())]
    assert problems(objects) == []
    (extension,) = [o for o in objects if o.kind == "GCPRoutingExtension"]
    change(extension.manifest["spec"])
    assert [p for p in problems(objects) if expected in p] != []
