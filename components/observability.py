"""The stack's dashboard and alerts in Cloud Monitoring, on what Managed Prometheus collects.

vLLM's metrics (the replicas' PodMonitoring), GKE's DCGM GPU metrics, GKE's
kube-state Deployment metrics and, in gateway mode, the endpoint picker's pool
metrics. Every query is PromQL; pure builders make the queries, the dashboard
JSON and the alert conditions, and ``Observability`` only registers them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.options import child_options
from facts import vllm
from facts.naming import NAME_LABEL
from plan.estimates import MEASURED_CONCURRENCY_PER_NODE
from plan.stack import ObservabilitySpec, WatchedModel
from workloads.batch import layout

COLUMNS = 48
TILE_WIDTH = 24
TILE_HEIGHT = 16
WINDOW = "5m"
AVAILABLE = "kube_deployment_status_replicas_available"
DESIRED = "kube_deployment_spec_replicas"
POOL_METRICS = ("inference_pool_average_queue_size", "inference_pool_average_kv_cache_utilization", "inference_pool_ready_pods")


def _on(spec: ObservabilitySpec) -> str:
    return f'namespace="{spec.namespace}"'


@dataclass(frozen=True)
class _Scope:
    """The series one model's charts and alerts read: vLLM's (``engine``) and its Deployment's (``deployment``)."""

    engine: str
    deployment: str
    # What a chart title or alert name says of the model; empty for a one-model stack.
    title: str
    suffix: str
    watched: WatchedModel


def _scopes(spec: ObservabilitySpec) -> list[_Scope]:
    """The stack's one model, or each of its models filtered by its served name and Deployment."""
    if not spec.models:
        one = WatchedModel(spec.deployment, "", spec.expected_tokens_per_replica, spec.cold_start_minutes, spec.alerting)
        return [_Scope(_on(spec), f'{_on(spec)},deployment="{spec.deployment}"', "", "", one)]
    return [
        _Scope(
            f'{_on(spec)},model_name="{model.served_name}"',
            f'{_on(spec)},deployment="{model.deployment}"',
            f"{model.deployment}: ",
            f"-{model.deployment}",
            model,
        )
        for model in spec.models
    ]


def _rate(metric: str, where: str) -> str:
    return f"sum(rate({metric}{{{where}}}[{WINDOW}]))"


def _quantile(q: float, histogram: str, where: str) -> str:
    return f"histogram_quantile({q}, sum by (le) (rate({histogram}_bucket{{{where}}}[{WINDOW}])))"


def _replicas(metric: str, scope: _Scope) -> str:
    return f"sum({metric}{{{scope.deployment}}})"


def tokens_per_second(where: str) -> str:
    return f"{_rate(f'{vllm.PROMPT_TOKENS}_total', where)} + {_rate(f'{vllm.GENERATION_TOKENS}_total', where)}"


def _model_charts(scope: _Scope) -> list[tuple[str, list[str]]]:
    on = scope.engine
    return [
        ("Tokens/s: prompt, generation", [_rate(f"{vllm.PROMPT_TOKENS}_total", on), _rate(f"{vllm.GENERATION_TOKENS}_total", on)]),
        ("Requests running, waiting", [f"sum({vllm.REQUESTS_RUNNING}{{{on}}})", f"sum({vllm.REQUESTS_WAITING}{{{on}}})"]),
        ("KV-cache usage, highest engine", [f"max({vllm.KV_CACHE_USAGE}{{{on}}})"]),
        (
            "Time to first token (s): p50, p99",
            [_quantile(0.5, vllm.TTFT_HISTOGRAM, on), _quantile(0.99, vllm.TTFT_HISTOGRAM, on)],
        ),
        (
            "Time per output token (s): p50, p99",
            [
                _quantile(0.5, vllm.TPOT_HISTOGRAM, on),
                _quantile(0.99, vllm.TPOT_HISTOGRAM, on),
            ],
        ),
        (
            "Inter-token latency (s): p50, p99",
            [_quantile(0.5, vllm.ITL_HISTOGRAM, on), _quantile(0.99, vllm.ITL_HISTOGRAM, on)],
        ),
        ("Preemptions/s", [_rate(f"{vllm.PREEMPTIONS}_total", on)]),
        (
            "Speculative decoding: accepted / draft tokens",
            [f"{_rate(f'{vllm.SPEC_DECODE_ACCEPTED_TOKENS}_total', on)} / {_rate(f'{vllm.SPEC_DECODE_DRAFT_TOKENS}_total', on)}"],
        ),
    ]


def charts(spec: ObservabilitySpec) -> list[tuple[str, list[str]]]:
    """(title, PromQL queries) of each chart, in order: each model's rows, then the GPUs and the replicas."""
    scopes = _scopes(spec)
    found = [(scope.title + title, queries) for scope in scopes for title, queries in _model_charts(scope)]
    found += [
        ("GPU utilisation (%), mean", ["avg(DCGM_FI_DEV_GPU_UTIL)"]),
        ("GPU memory used (MiB), total", ["sum(DCGM_FI_DEV_FB_USED)"]),
        ("GPU power (W), total", ["sum(DCGM_FI_DEV_POWER_USAGE)"]),
    ]
    found += [(f"{scope.title}Replicas: ready, desired", [_replicas(AVAILABLE, scope), _replicas(DESIRED, scope)]) for scope in scopes]
    if spec.batch:
        found += [
            (
                "Batch: lines left, in flight, files waiting",
                [f"sum({metric}{{{_on(spec)}}})" for metric in (layout.BACKLOG, layout.IN_FLIGHT, layout.WAITING_FILES)],
            ),
            ("Batch requests/s: done, failed", [_rate(layout.DONE, _on(spec)), _rate(layout.FAILED, _on(spec))]),
        ]
    if spec.gateway:
        found += [
            (
                f"{scope.title}Endpoint picker: pool queue, KV cache, ready pods",
                [f"max({metric}{{{_pool(spec, scope)}}})" for metric in POOL_METRICS],
            )
            for scope in scopes
        ]
    return found


def _pool(spec: ObservabilitySpec, scope: _Scope) -> str:
    """The endpoint picker's series of the scope's pool: with several models each model's pool, named as its
    replica set; the picker labels them `name` (poolLabels in pkg/epp/metrics/metrics.go)."""
    return f'{_on(spec)},name="{scope.watched.deployment}"' if spec.models else _on(spec)


def _position(index: int) -> dict[str, int]:
    """A tile's place; zero coordinates are left out, as the API returns them (else every `up` shows a diff)."""
    place = {"xPos": (index % 2) * TILE_WIDTH, "yPos": (index // 2) * TILE_HEIGHT}
    return {axis: value for axis, value in place.items() if value}


def dashboard(spec: ObservabilitySpec) -> dict[str, Any]:
    """The Cloud Monitoring dashboard (its JSON form), two charts a row."""
    tiles = [
        {
            **_position(index),
            "width": TILE_WIDTH,
            "height": TILE_HEIGHT,
            "widget": {
                "title": title,
                "xyChart": {
                    "dataSets": [{"timeSeriesQuery": {"prometheusQuery": query}, "plotType": "LINE"} for query in queries],
                },
            },
        }
        for index, (title, queries) in enumerate(charts(spec))
    ]
    return {"displayName": f"LLM serving: {spec.stack}", "mosaicLayout": {"columns": COLUMNS, "tiles": tiles}}


@dataclass(frozen=True)
class Alert:
    name: str
    query: str
    means: str
    action: str


def alerts(spec: ObservabilitySpec) -> list[Alert]:
    """The alert conditions; each reads only series a serving stack has, so none fires at zero replicas.

    With several models each model has its own, named after it and filtered by it, while it may serve."""
    found: list[Alert] = []
    for scope in _scopes(spec):
        if scope.watched.alerting:
            found += [Alert(f"{alert.name}{scope.suffix}", alert.query, alert.means, alert.action) for alert in _model_alerts(spec, scope)]
    return found


def _model_alerts(spec: ObservabilitySpec, scope: _Scope) -> list[Alert]:
    available, desired = _replicas(AVAILABLE, scope), _replicas(DESIRED, scope)
    on, watched = scope.engine, scope.watched
    stuck = f"{watched.cold_start_minutes}m"
    found = [
        Alert(
            "replicas-not-ready",
            # Fewer available than desired and neither count moved for a whole cold-start budget: a
            # scale-up or a rollout round makes a replica Ready (or changes the count) well within it.
            f"{available} < {desired}"
            f" and on() sum(changes({AVAILABLE}{{{scope.deployment}}}[{stuck}])) == 0"
            f" and on() sum(changes({DESIRED}{{{scope.deployment}}}[{stuck}])) == 0",
            f"Fewer replicas are available than the Deployment asks for, with no progress for {watched.cold_start_minutes} minutes.",
            f"kubectl -n NAMESPACE describe pods -l {NAME_LABEL}={watched.deployment}: Pending means no A4 capacity; "
            "CrashLoopBackOff means read the vLLM log.",
        ),
        Alert(
            "queue-depth",
            f"sum({vllm.REQUESTS_WAITING}{{{on}}}) > {spec.waiting_requests}",
            "Requests are waiting faster than the replicas take them.",
            "Add replicas (nodes, or autoscaling.maxReplicas), or slow the clients.",
        ),
        Alert(
            "kv-cache-full",
            f"max({vllm.KV_CACHE_USAGE}{{{on}}}) > {spec.kv_cache_usage}",
            "An engine's KV cache is nearly full: it preempts requests and throughput falls.",
            "Lower serving.maxNumSeqs, or check serving.maxModelLen against the requests.",
        ),
        Alert(
            "time-to-first-token",
            f"{_quantile(0.99, vllm.TTFT_HISTOGRAM, on)} > {spec.ttft_p99_seconds}",
            f"The p99 time to first token is above its objective ({spec.ttft_p99_seconds} s).",
            "Check the queue and KV-cache charts; add replicas if both are high.",
        ),
    ]
    if spec.batch:
        # KEDA's own count of input/ on the runner's ScaledObject (the runner exports nothing if it never starts),
        # by ScaledObject name: Managed Prometheus' target label namespace is KEDA's.
        waiting = f'sum(keda_scaler_metrics_value{{scaledObject="{layout.RUNNER}"}})'
        in_flight = f"(sum({layout.IN_FLIGHT}{{{_on(spec)}}}) or on() vector(0))"
        scaled = f"{watched.deployment}|{layout.RUNNER}"
        found += [
            Alert(
                "batch-stalled",
                f"{waiting} > 0 and on() {in_flight} == 0 and on() {available} > 0",
                "Batch files wait under input/ and replicas are up, but no batch request is in flight: the replicas bill for nothing.",
                f"kubectl -n NAMESPACE get pods -l {NAME_LABEL}={layout.RUNNER}; kubectl -n NAMESPACE logs deploy/{layout.RUNNER}. "
                "A pod not starting or crash-looping names its cause there.",
            ),
            Alert(
                "scaler-errors",
                f'sum(rate(keda_scaler_detail_errors_total{{scaledObject=~"{scaled}"}}[{WINDOW}])) > 0',
                "A KEDA trigger of the stack keeps failing (a 403 listing the batch bucket, a failing query). Its fallback "
                "lets the stack return to zero, but a failing wake trigger wakes nothing.",
                "kubectl -n NAMESPACE describe scaledobject; kubectl -n keda logs deploy/keda-operator.",
            ),
        ]
    if watched.expected_tokens_per_replica:
        floor = round(watched.expected_tokens_per_replica * spec.throughput_fraction)
        # Against the replicas Ready now, and only while each runs the load the estimate was measured
        # at: lighter traffic makes fewer tokens/s without anything being wrong.
        found.append(
            Alert(
                "throughput-low",
                f"({tokens_per_second(on)}) < on() ({floor} * {available})"
                f" and on() sum({vllm.REQUESTS_RUNNING}{{{on}}}) >= on() ({MEASURED_CONCURRENCY_PER_NODE} * {available})",
                f"At full load, tokens/s fell below {spec.throughput_fraction:.0%} of the estimate for the replicas running.",
                "Compare GPU utilisation and preemptions; a replica on a slow or failing node shows up there.",
            )
        )
    return found


class Observability(pulumi.ComponentResource):
    """Registers the dashboard and, while the stack may serve, its alert policies."""

    REGISTERS = (gcp.monitoring.Dashboard, gcp.monitoring.AlertPolicy)

    def __init__(self, name: str, spec: ObservabilitySpec, *, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm:observability:Observability", name, None, opts)
        child = child_options(self, opts)
        board = gcp.monitoring.Dashboard(
            "dashboard", project=spec.project, dashboard_json=json.dumps(dashboard(spec), sort_keys=True), opts=child
        )
        self.dashboard_url = board.id.apply(
            lambda path: f"https://console.cloud.google.com/monitoring/dashboards/builder/{path.rsplit('/', 1)[-1]}?project={spec.project}"
        )
        for alert in alerts(spec):
            gcp.monitoring.AlertPolicy(
                alert.name,
                project=spec.project,
                display_name=f"{spec.stack}: {alert.name}",
                combiner="OR",
                conditions=[
                    gcp.monitoring.AlertPolicyConditionArgs(
                        display_name=alert.name,
                        condition_prometheus_query_language=gcp.monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgs(
                            query=alert.query,
                            duration=f"{spec.alert_minutes * 60}s",
                            evaluation_interval="60s",
                            # Cloud Monitoring refuses a condition on metrics it has not seen yet;
                            # on a first `up` no replica has been scraped (docs/reference.md).
                            disable_metric_validation=True,
                        ),
                    )
                ],
                documentation=gcp.monitoring.AlertPolicyDocumentationArgs(
                    content=f"{alert.means}\n\nWhat to do: {alert.action.replace('NAMESPACE', spec.namespace)}", mime_type="text/markdown"
                ),
                notification_channels=list(spec.notification_channels),
                user_labels=spec.labels,
                opts=child,
            )
        self.register_outputs({"dashboardUrl": self.dashboard_url})
