"""Autoscaling on vLLM's queue with KEDA: bounds, target, idle to zero, and no tug of war with `pulumi up`."""

from __future__ import annotations

import re
from typing import Any

import pytest

from facts.metrics import series_problem
from facts.vllm import REQUESTS_RUNNING, REQUESTS_WAITING
from plan.estimates import cost_per_hour
from plan.stack import plan_stack
from render.chart import chart_objects
from render.engine import Render
from render.validation import validate_render
from stacks.problems import StackConfigError
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered

SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NIGHTLY = {"start": "0 22 * * 1-5", "end": "0 6 * * 2-6", "replicas": 12}


# Prod's 12 reserved nodes leave none spare for a rollout's surge replica: it replaces the fewest replicas in place.
IN_PLACE = {"keepServing": False}


def autoscaled(stack: str = "prod", **scaling: Any) -> Render:
    return render_with(stack, autoscaling={"enabled": True, **scaling}, rollout=IN_PLACE)


def scaled_object(render: Render) -> dict[str, Any]:
    spec: dict[str, Any] = render.one(SCALED_OBJECT).inputs["spec"]
    return spec


def test_the_scaled_object_drives_the_replicas_between_the_bounds_on_requests_running_and_waiting() -> None:
    render = autoscaled(minReplicas=0, maxReplicas=8, requestsPerReplica=1500, idleMinutes=20)
    spec = scaled_object(render)
    deployment = render.one(DEPLOYMENT).inputs
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment["metadata"]["name"]}
    assert (spec["minReplicaCount"], spec["maxReplicaCount"], spec["cooldownPeriod"]) == (0, 8, 20 * 60)
    (concurrency,) = [t for t in spec["triggers"] if t["type"] == "prometheus"]
    assert concurrency["metadata"]["threshold"] == "1500" and concurrency["metadata"]["activationThreshold"] == "0"
    # One series per data-parallel engine: the query sums both gauges over every pod of the stack.
    query = concurrency["metadata"]["query"]
    assert query == f'sum({REQUESTS_RUNNING}{{namespace="llm-serving"}}) + sum({REQUESTS_WAITING}{{namespace="llm-serving"}})'
    assert (
        concurrency["metadata"]["serverAddress"]
        == "https://monitoring.googleapis.com/v1/projects/llm-serving-prod/location/global/prometheus"
    )


def test_the_target_per_replica_defaults_to_the_reference_concurrency_per_node() -> None:
    (concurrency,) = [t for t in scaled_object(autoscaled())["triggers"] if t["type"] == "prometheus"]
    assert concurrency["metadata"]["threshold"] == "2000"


def test_fresh_replicas_get_their_cold_start_and_idle_minutes_and_scale_down_waits_as_long() -> None:
    render = render_with("prod", autoscaling={"enabled": True, "idleMinutes": 20}, serving={"coldStartMinutes": 30}, rollout=IN_PLACE)
    spec = scaled_object(render)
    assert spec["initialCooldownPeriod"] == (30 + 20) * 60
    behavior = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == (30 + 20) * 60
    assert behavior["scaleUp"]["stabilizationWindowSeconds"] == 0
    assert behavior["scaleUp"]["policies"] == [{"type": "Pods", "value": 12, "periodSeconds": 15}]


def test_batch_windows_wake_the_stack_from_zero() -> None:
    triggers = scaled_object(autoscaled(batchWindows=[NIGHTLY]))["triggers"]
    (window,) = [t for t in triggers if t["type"] == "cron"]
    assert window["metadata"] == {"timezone": "Etc/UTC", "start": "0 22 * * 1-5", "end": "0 6 * * 2-6", "desiredReplicas": "12"}


def test_pulumi_up_leaves_the_autoscalers_replica_count_alone() -> None:
    assert autoscaled().one(DEPLOYMENT).ignore_changes == ("spec.replicas",)
    assert rendered("prod").one(DEPLOYMENT).ignore_changes == ()


def test_the_operator_reads_metrics_with_its_own_workload_identity() -> None:
    render = autoscaled()
    binding = render.one("gcp:serviceaccount/iAMMember:IAMMember", "keda-workload-identity").inputs
    assert binding["role"] == "roles/iam.workloadIdentityUser"
    assert binding["member"] == "serviceAccount:llm-serving-prod.svc.id.goog[keda/keda-operator]"
    assert render.one("gcp:projects/iAMMember:IAMMember", "keda-reads-metrics").inputs["role"] == "roles/monitoring.viewer"
    auth = render.one("kubernetes:keda.sh/v1alpha1:TriggerAuthentication").inputs
    assert auth["spec"] == {"podIdentity": {"provider": "gcp"}}
    chart = render.one("kubernetes:helm.sh/v4:Chart").inputs
    annotations = chart["values"]["serviceAccount"]["operator"]["annotations"]
    # The Google account's email, unknown offline.
    assert "iam.gke.io/gcp-service-account" in annotations
    # podIdentity.gcp would add a node selector Autopilot refuses.
    assert "podIdentity" not in chart["values"]


def test_the_scaling_objects_validate_against_kedas_crds() -> None:
    checks = validate_render(autoscaled(batchWindows=[NIGHTLY]))
    assert checks.count("CRD keda.sh/v1alpha1") == 2


def test_an_autoscaled_gateway_stack_keeps_its_endpoint_picker_at_zero_nodes() -> None:
    render = render_with("gateway", nodes=0, autoscaling={"enabled": True, "maxReplicas": 4})
    # The inferencepool chart itself, not any chart (KEDA's is one too): its pool and picker Deployment.
    pickers = [c for c in render.by_type("kubernetes:helm.sh/v4:Chart") if str(c.inputs["chart"]).endswith("/inferencepool")]
    assert len(pickers) == 1
    kinds = {o.manifest["kind"] for o in chart_objects(render) if o.source.startswith("chart vllm (inferencepool")}
    assert {"InferencePool", "Deployment"} <= kinds
    # Scaled to zero by config instead, the stack drops the picker: the case above is not a default.
    idle = render_with("gateway", nodes=0)
    assert not [c for c in idle.by_type("kubernetes:helm.sh/v4:Chart") if str(c.inputs["chart"]).endswith("/inferencepool")]


def test_estimates_show_the_cost_at_the_fewest_and_most_replicas() -> None:
    settings = StackSettings.model_validate({"project": "example-project", "nodes": 4, "autoscaling": {"enabled": True, "maxReplicas": 12}})
    stack = plan_stack(settings, "test")
    figures, costs = stack.estimate.as_output(), stack.costing
    assert figures["costPerHourRange"] == {"fewest": cost_per_hour(costs, 0), "most": cost_per_hour(costs, 12)}
    assert (
        "costPerHourRange"
        not in plan_stack(
            settings.model_copy(update={"autoscaling": settings.autoscaling.model_copy(update={"enabled": False})}), "test"
        ).estimate.as_output()
    )


@pytest.mark.parametrize(
    ("scaling", "key", "allowed"),
    [
        ({"minReplicas": 5, "maxReplicas": 4}, "autoscaling.minReplicas", "above the maximum"),
        ({"batchWindows": [{**NIGHTLY, "replicas": 20}]}, "autoscaling.batchWindows[0].replicas", "above the maximum"),
        ({"batchWindows": [{**NIGHTLY, "start": "at ten"}]}, "autoscaling.batchWindows[0].start", "cron"),
    ],
)
def test_scaling_bounds_that_cannot_hold_are_refused(scaling: dict[str, Any], key: str, allowed: str) -> None:
    with pytest.raises(StackConfigError) as error:
        autoscaled(**scaling)
    assert key in str(error.value) and allowed in str(error.value)


def test_every_metric_the_scaler_reads_is_one_vllm_0_18_1_exports() -> None:
    for trigger in scaled_object(autoscaled())["triggers"]:
        if trigger["type"] == "prometheus":
            metrics = re.findall(r"(vllm:[a-z_]+)", trigger["metadata"]["query"])
            assert metrics and all(series_problem(metric) is None for metric in metrics)
