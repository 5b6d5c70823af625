"""The dashboard and alerts: every query real PromQL on exported metrics, no alert at zero nodes."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import promql_parser
import pytest

from components.observability import alerts
from facts import naming
from plan.stack import plan_stack
from render.engine import PROJECT_ROOT, Render, reveal
from render.promql import PromQLError, check_monitoring, metric_names, problems
from stacks.problems import StackConfigError
from stacks.settings import StackSettings
from tests.conftest import STACKS, render_with, rendered

DASHBOARD = "gcp:monitoring/dashboard:Dashboard"
ALERT = "gcp:monitoring/alertPolicy:AlertPolicy"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CHANNEL = "projects/llm-serving-prod/notificationChannels/123456"


def board(render: Render) -> dict[str, Any]:
    layout: dict[str, Any] = json.loads(render.one(DASHBOARD).inputs["dashboardJson"])
    return layout


def titles(render: Render) -> list[str]:
    return [tile["widget"]["title"] for tile in board(render)["mosaicLayout"]["tiles"]]


@pytest.mark.parametrize("stack", STACKS)
def test_every_query_of_every_stack_is_promql_on_exported_metrics(stack: str) -> None:
    assert check_monitoring(rendered(stack)) >= 20


def test_the_dashboard_shows_what_an_operator_needs_and_its_url_is_an_output() -> None:
    shown = " | ".join(titles(rendered("prod")))
    for topic in ("Tokens/s", "running, waiting", "KV-cache", "first token", "per output token", "Inter-token", "Preemptions"):
        assert topic in shown
    for topic in ("Speculative decoding", "GPU utilisation", "GPU memory", "GPU power", "Replicas: ready, desired"):
        assert topic in shown
    assert "Endpoint picker" not in shown and "Endpoint picker" in " | ".join(titles(rendered("gateway")))
    assert reveal(rendered("prod").outputs)["dashboardUrl"].startswith("https://console.cloud.google.com/monitoring/dashboards/")


def test_latency_charts_read_histogram_buckets_for_p50_and_p99() -> None:
    queries = [
        d["timeSeriesQuery"]["prometheusQuery"]
        for t in board(rendered("dev"))["mosaicLayout"]["tiles"]
        for d in t["widget"]["xyChart"]["dataSets"]
    ]
    ttft = [q for q in queries if "time_to_first_token" in q]
    assert {q.split(",")[0] for q in ttft} == {"histogram_quantile(0.5", "histogram_quantile(0.99"}
    assert all(metric_names(q) == {"vllm:time_to_first_token_seconds_bucket"} for q in ttft)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("sum(vllm:num_requests_wating)", "no vLLM, DCGM, kube-state, endpoint-picker, KEDA or batch-runner metric"),
        ("sum(rate(vllm:prompt_tokens[5m]))", "is a counter; query vllm:prompt_tokens_total"),
        ("histogram_quantile(0.9, rate(vllm:time_to_first_token_seconds[5m]))", "is a histogram"),
        ("avg(DCGM_FI_DEV_XID_ERRORS)", "no vLLM, DCGM"),
        ("sum(rate(vllm:prompt_tokens_total[5m])", "is not PromQL"),
    ],
    ids=["misspelt", "counter without _total", "histogram without _bucket", "not exported by GKE's DCGM", "broken"],
)
def test_a_misspelt_metric_or_broken_promql_is_caught(query: str, expected: str) -> None:
    assert any(expected in problem for problem in problems(query))


def test_the_render_fails_on_a_broken_query_naming_where_it_is() -> None:
    render = render_with("dev")
    policy = next(r for r in render.by_type(ALERT) if r.name == "queue-depth")
    policy.inputs["conditions"][0]["conditionPrometheusQueryLanguage"]["query"] = "sum(vllm:num_requests_wating) > 1"
    with pytest.raises(PromQLError, match="alert queue-depth: vllm:num_requests_wating"):
        check_monitoring(render)


def test_a_dashboard_of_the_wrong_shape_fails_the_render() -> None:
    render = render_with("dev")
    layout = board(render)
    layout["mosaicLayout"]["tiles"][0]["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]["promQL"] = "x"
    render.one(DASHBOARD).inputs["dashboardJson"] = json.dumps(layout)
    with pytest.raises(PromQLError, match=r'dashboard dashboard: .*has no field named "promQL"'):
        check_monitoring(render)


def test_a_stack_scaled_to_zero_registers_no_alert_and_keeps_its_dashboard() -> None:
    idle = render_with("prod", nodes=0)
    assert idle.by_type(ALERT) == [] and idle.by_type(DASHBOARD)
    assert len(rendered("prod").by_type(ALERT)) == 5


def test_alert_queries_read_only_series_a_serving_stack_has() -> None:
    # Autoscaled to zero the policies stay; then no vLLM series exists and desired replicas are 0,
    # so each condition compares nothing, or 0 < 0: none can fire.
    for policy in render_with("prod", autoscaling={"enabled": True}, rollout={"keepServing": False}).by_type(ALERT):
        query = policy.inputs["conditions"][0]["conditionPrometheusQueryLanguage"]["query"]
        names = metric_names(query)
        assert names and all(n.startswith(("vllm:", "kube_deployment_")) for n in names), query
        if policy.name == "replicas-not-ready":
            assert "kube_deployment_spec_replicas" in query and " < " in query


def test_the_throughput_alert_follows_the_stacks_own_estimate_and_needs_load() -> None:
    query = next(r for r in rendered("prod").by_type(ALERT) if r.name == "throughput-low").inputs["conditions"][0][
        "conditionPrometheusQueryLanguage"
    ]["query"]
    assert f"< on() ({round(1_103_941 / 12 * 0.5)} * " in query and "vllm:num_requests_running" in query
    unmeasured = render_with("prod", serving={"maxNumSeqs": 4096})
    assert "throughput-low" not in {r.name for r in unmeasured.by_type(ALERT)}


def test_notification_channels_reach_every_policy_and_bad_ones_are_refused() -> None:
    render = render_with("prod", observability={"notificationChannels": [CHANNEL], "minutes": 5})
    for policy in render.by_type(ALERT):
        assert policy.inputs["notificationChannels"] == [CHANNEL]
        assert policy.inputs["conditions"][0]["conditionPrometheusQueryLanguage"]["duration"] == "300s"
        assert "What to do:" in policy.inputs["documentation"]["content"]
    with pytest.raises(StackConfigError, match=r"llm:observability.notificationChannels\[0\]: 'oncall@example.com'"):
        render_with("prod", observability={"notificationChannels": ["oncall@example.com"]})


def alert_query(render: Render, name: str) -> str:
    policy = next(r for r in render.by_type(ALERT) if r.name == name)
    query: str = policy.inputs["conditions"][0]["conditionPrometheusQueryLanguage"]["query"]
    return query


def test_replicas_not_ready_waits_for_a_cold_start_without_progress() -> None:
    query = alert_query(render_with("prod", serving={"coldStartMinutes": 30}), "replicas-not-ready")
    # Fewer available than desired, and neither count moved for a whole cold-start budget:
    # a scale-up or a rollout round changes them well within it.
    assert "kube_deployment_status_replicas_available" in query and " < " in query
    assert "changes(kube_deployment_status_replicas_available" in query and "changes(kube_deployment_spec_replicas" in query
    assert query.count("[30m]") == 2


def test_throughput_low_expects_the_replicas_running_now_and_only_under_their_full_load() -> None:
    query = alert_query(rendered("prod"), "throughput-low")
    per_replica = 1_103_941 / 12
    available = 'sum(kube_deployment_status_replicas_available{namespace="llm-serving",deployment="vllm"})'
    # Below half of what the Ready replicas make at the reference load...
    assert f"< on() ({round(per_replica * 0.5)} * {available})" in query
    # ... and only while they run at least the reference's ~2,000 requests each.
    assert f'sum(vllm:num_requests_running{{namespace="llm-serving"}}) >= on() (2000 * {available})' in query


def _comparison(query: str) -> tuple[str, float]:
    """The operator and the number on the right of a query's last comparison with a number."""
    tree = promql_parser.parse(query)
    while isinstance(tree, promql_parser.BinaryExpr):
        if isinstance(tree.rhs, promql_parser.NumberLiteral):
            return str(tree.op), float(tree.rhs.val)
        tree = tree.lhs
    raise AssertionError(f"{query!r} compares with no number")


def test_each_alert_opens_above_its_configured_threshold() -> None:
    thresholds = {"waitingRequests": 100, "kvCacheUsage": 0.8, "ttftP99Seconds": 12.5}
    settings = StackSettings.model_validate({"project": "example-project", "nodes": 2, "observability": thresholds})
    spec = plan_stack(settings, "test").observability
    assert spec is not None
    found = {alert.name: alert.query for alert in alerts(spec)}
    assert _comparison(found["queue-depth"]) == (">", 100)
    assert _comparison(found["kv-cache-full"]) == (">", 0.8)
    assert _comparison(found["time-to-first-token"]) == (">", 12.5)
    # Below half of 95,000 tok/s per replica (the 2-node reference: 190,000 / 2).
    assert "< on() (47500 * " in found["throughput-low"]


def test_a_misspelt_metric_on_the_right_hand_side_is_caught() -> None:
    found = problems("sum(vllm:num_requests_running) > on() sum(vllm:num_requests_wating)")
    assert len(found) == 1 and "vllm:num_requests_wating" in found[0]
    assert problems("sum(vllm:num_requests_running) > on() sum(vllm:num_requests_waiting)") == []


def test_a_stalled_batch_and_a_failing_trigger_each_have_an_alert_quiet_otherwise() -> None:
    render = render_with("prod", autoscaling={"enabled": True}, batch={"enabled": True}, rollout={"keepServing": False})
    policies = {
        policy.name: policy.inputs["conditions"][0]["conditionPrometheusQueryLanguage"]["query"] for policy in render.by_type(ALERT)
    }
    stalled, failing = policies["batch-stalled"], policies["scaler-errors"]
    # Files waiting (KEDA's own count of input/, not the runner's: a runner that never starts exports nothing),
    # nothing in flight, replicas up.
    assert (
        "keda_scaler_metrics_value" in stalled
        and "batch_in_flight_requests" in stalled
        and "kube_deployment_status_replicas_available" in stalled
    )
    assert "keda_scaler_detail_errors_total" in failing
    # KEDA's operator exports them only with its metrics on, and Managed Prometheus scrapes it.
    keda = next(r for r in render.resources if r.type == "kubernetes:helm.sh/v4:Chart")
    assert keda.inputs["values"]["prometheus"]["operator"]["enabled"] is True
    monitoring = render.one("kubernetes:monitoring.googleapis.com/v1:PodMonitoring", "keda-operator").inputs
    assert monitoring["spec"]["selector"]["matchLabels"] == {"app": "keda-operator"}
    assert [endpoint["port"] for endpoint in monitoring["spec"]["endpoints"]] == ["metrics"]


def _selected(action: str) -> dict[str, str]:
    """The labels the alert's `kubectl ... pods -l name=value` picks pods by."""
    (selector,) = re.findall(r"pods -l (\S+?)[:;]", action)
    return dict(pair.split("=") for pair in selector.split(","))


def test_what_an_alert_tells_an_operator_to_run_picks_the_stacks_pods() -> None:
    render = rendered("batch")
    actions = {r.name: r.inputs["documentation"]["content"] for r in render.by_type(ALERT)}
    pods = {r.inputs["metadata"]["name"]: r.inputs["spec"]["template"]["metadata"]["labels"] for r in render.by_type(DEPLOYMENT)}
    for alert, deployment in (("replicas-not-ready", "vllm"), ("batch-stalled", "batch-runner")):
        selected = _selected(actions[alert])
        assert selected.items() <= pods[deployment].items(), (alert, selected)
        others = [name for name, labels in pods.items() if name != deployment and selected.items() <= labels.items()]
        assert others == [], alert


def test_no_component_spells_a_label_the_plan_names() -> None:
    # Spelt once, in facts/naming.py: a literal elsewhere (an alert's kubectl hint) would drift from the pods' labels.
    for module in (PROJECT_ROOT / "components").glob("*.py"):
        tree = ast.parse(module.read_text())
        texts = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)]
        assert [text for text in texts if naming.NAME_LABEL in text] == [], module.name
