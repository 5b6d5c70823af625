"""The dashboard's charts and the alert conditions on a hand-made spec, and ``Observability`` run alone under the mock engine."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.observability import Observability, alerts, charts, dashboard
from plan.stack import ObservabilitySpec
from render.engine import Render
from tests.components.alone import registered

LABELS = {"team": "ml", "stack": "dev"}
SPEC = ObservabilitySpec(
    project="example-project",
    stack="dev",
    namespace="serving",
    labels=LABELS,
    deployment="vllm-a",
    alert_minutes=7,
    notification_channels=("projects/example-project/notificationChannels/42",),
    waiting_requests=250,
    kv_cache_usage=0.9,
    ttft_p99_seconds=2.5,
    throughput_fraction=0.6,
    gateway=False,
    expected_tokens_per_replica=None,
    cold_start_minutes=25,
    alerting=True,
)
ON = 'namespace="serving"'
AVAILABLE = 'sum(kube_deployment_status_replicas_available{namespace="serving",deployment="vllm-a"})'
DESIRED = 'sum(kube_deployment_spec_replicas{namespace="serving",deployment="vllm-a"})'
PROMPT = 'sum(rate(vllm:prompt_tokens_total{namespace="serving"}[5m]))'
GENERATION = 'sum(rate(vllm:generation_tokens_total{namespace="serving"}[5m]))'


def quantile(q: str, histogram: str) -> str:
    return f'histogram_quantile({q}, sum by (le) (rate({histogram}_bucket{{namespace="serving"}}[5m])))'


SERVING_CHARTS = [
    ("Tokens/s: prompt, generation", [PROMPT, GENERATION]),
    ("Requests running, waiting", [f"sum(vllm:num_requests_running{{{ON}}})", f"sum(vllm:num_requests_waiting{{{ON}}})"]),
    ("KV-cache usage, highest engine", [f"max(vllm:kv_cache_usage_perc{{{ON}}})"]),
    (
        "Time to first token (s): p50, p99",
        [quantile("0.5", "vllm:time_to_first_token_seconds"), quantile("0.99", "vllm:time_to_first_token_seconds")],
    ),
    (
        "Time per output token (s): p50, p99",
        [quantile("0.5", "vllm:request_time_per_output_token_seconds"), quantile("0.99", "vllm:request_time_per_output_token_seconds")],
    ),
    (
        "Inter-token latency (s): p50, p99",
        [quantile("0.5", "vllm:inter_token_latency_seconds"), quantile("0.99", "vllm:inter_token_latency_seconds")],
    ),
    ("Preemptions/s", [f"sum(rate(vllm:num_preemptions_total{{{ON}}}[5m]))"]),
    (
        "Speculative decoding: accepted / draft tokens",
        [
            f"sum(rate(vllm:spec_decode_num_accepted_tokens_total{{{ON}}}[5m]))"
            f" / sum(rate(vllm:spec_decode_num_draft_tokens_total{{{ON}}}[5m]))"
        ],
    ),
    ("GPU utilisation (%), mean", ["avg(DCGM_FI_DEV_GPU_UTIL)"]),
    ("GPU memory used (MiB), total", ["sum(DCGM_FI_DEV_FB_USED)"]),
    ("GPU power (W), total", ["sum(DCGM_FI_DEV_POWER_USAGE)"]),
    ("Replicas: ready, desired", [AVAILABLE, DESIRED]),
]


def test_a_serving_stack_charts_vllm_the_gpus_and_its_replicas() -> None:
    assert charts(SPEC) == SERVING_CHARTS


def test_a_batch_stack_charts_the_runners_progress_and_a_gateway_stack_its_pool() -> None:
    found = charts(replace(SPEC, batch=True, gateway=True))
    assert found[: len(SERVING_CHARTS)] == SERVING_CHARTS
    assert found[len(SERVING_CHARTS) :] == [
        (
            "Batch: lines left, in flight, files waiting",
            [f"sum(batch_backlog_requests{{{ON}}})", f"sum(batch_in_flight_requests{{{ON}}})", f"sum(batch_waiting_files{{{ON}}})"],
        ),
        (
            "Batch requests/s: done, failed",
            [f"sum(rate(batch_done_requests_total{{{ON}}}[5m]))", f"sum(rate(batch_failed_requests_total{{{ON}}}[5m]))"],
        ),
        (
            "Endpoint picker: pool queue, KV cache, ready pods",
            [
                f"max(inference_pool_average_queue_size{{{ON}}})",
                f"max(inference_pool_average_kv_cache_utilization{{{ON}}})",
                f"max(inference_pool_ready_pods{{{ON}}})",
            ],
        ),
    ]


def test_the_dashboard_lays_out_two_charts_a_row_leaving_zero_coordinates_out() -> None:
    board = dashboard(SPEC)
    assert board["displayName"] == "LLM serving: dev" and board["mosaicLayout"]["columns"] == 48
    tiles = board["mosaicLayout"]["tiles"]
    assert len(tiles) == len(SERVING_CHARTS)
    assert [(tile.get("xPos"), tile.get("yPos")) for tile in tiles[:5]] == [(None, None), (24, None), (None, 16), (24, 16), (None, 32)]
    assert all((tile["width"], tile["height"]) == (24, 16) for tile in tiles)
    assert tiles[1]["widget"] == {
        "title": "Requests running, waiting",
        "xyChart": {
            "dataSets": [
                {"timeSeriesQuery": {"prometheusQuery": f"sum(vllm:num_requests_running{{{ON}}})"}, "plotType": "LINE"},
                {"timeSeriesQuery": {"prometheusQuery": f"sum(vllm:num_requests_waiting{{{ON}}})"}, "plotType": "LINE"},
            ]
        },
    }


def test_a_serving_stack_alerts_on_replicas_queue_kv_cache_and_first_token() -> None:
    found = {alert.name: alert for alert in alerts(SPEC)}
    assert list(found) == ["replicas-not-ready", "queue-depth", "kv-cache-full", "time-to-first-token"]
    stuck = found["replicas-not-ready"]
    assert stuck.query == (
        f"{AVAILABLE} < {DESIRED}"
        ' and on() sum(changes(kube_deployment_status_replicas_available{namespace="serving",deployment="vllm-a"}[25m])) == 0'
        ' and on() sum(changes(kube_deployment_spec_replicas{namespace="serving",deployment="vllm-a"}[25m])) == 0'
    )
    assert stuck.means == "Fewer replicas are available than the Deployment asks for, with no progress for 25 minutes."
    assert stuck.action == (
        "kubectl -n NAMESPACE describe pods -l app.kubernetes.io/name=vllm-a: Pending means no A4 capacity; "
        "CrashLoopBackOff means read the vLLM log."
    )
    assert found["queue-depth"].query == f"sum(vllm:num_requests_waiting{{{ON}}}) > 250"
    assert found["queue-depth"].means == "Requests are waiting faster than the replicas take them."
    assert found["queue-depth"].action == "Add replicas (nodes, or autoscaling.maxReplicas), or slow the clients."
    assert found["kv-cache-full"].query == f"max(vllm:kv_cache_usage_perc{{{ON}}}) > 0.9"
    assert found["kv-cache-full"].means == "An engine's KV cache is nearly full: it preempts requests and throughput falls."
    assert found["kv-cache-full"].action == "Lower serving.maxNumSeqs, or check serving.maxModelLen against the requests."
    first = found["time-to-first-token"]
    assert first.query == f"{quantile('0.99', 'vllm:time_to_first_token_seconds')} > 2.5"
    assert first.means == "The p99 time to first token is above its objective (2.5 s)."
    assert first.action == "Check the queue and KV-cache charts; add replicas if both are high."


def test_a_batch_stack_alerts_when_files_wait_while_replicas_idle_and_when_a_trigger_fails() -> None:
    found = {alert.name: alert for alert in alerts(replace(SPEC, batch=True))}
    assert list(found) == ["replicas-not-ready", "queue-depth", "kv-cache-full", "time-to-first-token", "batch-stalled", "scaler-errors"]
    stalled = found["batch-stalled"]
    assert stalled.query == (
        'sum(keda_scaler_metrics_value{scaledObject="batch-runner"}) > 0'
        f" and on() (sum(batch_in_flight_requests{{{ON}}}) or on() vector(0)) == 0"
        f" and on() {AVAILABLE} > 0"
    )
    assert stalled.means == (
        "Batch files wait under input/ and replicas are up, but no batch request is in flight: the replicas bill for nothing."
    )
    assert stalled.action == (
        "kubectl -n NAMESPACE get pods -l app.kubernetes.io/name=batch-runner; kubectl -n NAMESPACE logs deploy/batch-runner. "
        "A pod not starting or crash-looping names its cause there."
    )
    errors = found["scaler-errors"]
    assert errors.query == 'sum(rate(keda_scaler_detail_errors_total{scaledObject=~"vllm-a|batch-runner"}[5m])) > 0'
    assert errors.means == (
        "A KEDA trigger of the stack keeps failing (a 403 listing the batch bucket, a failing query). Its fallback "
        "lets the stack return to zero, but a failing wake trigger wakes nothing."
    )
    assert errors.action == "kubectl -n NAMESPACE describe scaledobject; kubectl -n keda logs deploy/keda-operator."
    assert "throughput-low" not in found


def test_with_an_estimate_an_alert_watches_full_load_throughput_against_it() -> None:
    (low,) = [a for a in alerts(replace(SPEC, expected_tokens_per_replica=10_001)) if a.name == "throughput-low"]
    # 60% of 10,001 tokens/s per replica, rounded; only while each replica runs the measured 2,000 requests.
    assert low.query == (
        f"({PROMPT} + {GENERATION}) < on() (6001 * {AVAILABLE})"
        f" and on() sum(vllm:num_requests_running{{{ON}}}) >= on() (2000 * {AVAILABLE})"
    )
    assert low.means == "At full load, tokens/s fell below 60% of the estimate for the replicas running."
    assert low.action == "Compare GPU utilisation and preemptions; a replica on a slow or failing node shows up there."


def observability_alone(spec: ObservabilitySpec) -> Render:
    def program() -> None:
        api = gcp.projects.Service("api", service="monitoring.googleapis.com")
        Observability("observability", spec, opts=pulumi.ResourceOptions(depends_on=[api]))

    return registered(program)


def test_the_dashboard_and_each_alert_are_registered_in_the_project() -> None:
    render = observability_alone(SPEC)
    component = render.one("llm:observability:Observability", "observability")
    api = render.one("gcp:projects/service:Service").urn
    board = render.one("gcp:monitoring/dashboard:Dashboard", "dashboard")
    assert board.inputs["project"] == "example-project"
    assert json.loads(board.inputs["dashboardJson"]) == dashboard(SPEC)
    assert board.inputs["dashboardJson"] == json.dumps(dashboard(SPEC), sort_keys=True)
    policies = render.by_type("gcp:monitoring/alertPolicy:AlertPolicy")
    # Sorted: the SDK registers resources from a thread pool, so their order varies under load.
    assert sorted(p.name for p in policies) == ["kv-cache-full", "queue-depth", "replicas-not-ready", "time-to-first-token"]
    queue = render.one("gcp:monitoring/alertPolicy:AlertPolicy", "queue-depth").inputs
    assert queue == {
        "project": "example-project",
        "displayName": "dev: queue-depth",
        "combiner": "OR",
        "conditions": [
            {
                "displayName": "queue-depth",
                "conditionPrometheusQueryLanguage": {
                    "query": f"sum(vllm:num_requests_waiting{{{ON}}}) > 250",
                    "duration": "420s",
                    "evaluationInterval": "60s",
                    "disableMetricValidation": True,
                },
            }
        ],
        "documentation": {
            "content": "Requests are waiting faster than the replicas take them.\n\n"
            "What to do: Add replicas (nodes, or autoscaling.maxReplicas), or slow the clients.",
            "mimeType": "text/markdown",
        },
        "notificationChannels": ["projects/example-project/notificationChannels/42"],
        "userLabels": LABELS,
    }
    stuck = render.one("gcp:monitoring/alertPolicy:AlertPolicy", "replicas-not-ready").inputs["documentation"]["content"]
    assert "What to do: kubectl -n serving describe pods" in stuck
    assert api in component.dependencies
    for child in [board, *policies]:
        assert child.parent == component.urn and api in child.dependencies


def test_a_stack_that_cannot_serve_gets_the_dashboard_and_no_alert() -> None:
    render = observability_alone(replace(SPEC, alerting=False))
    assert render.by_type("gcp:monitoring/alertPolicy:AlertPolicy") == []
    assert len(render.by_type("gcp:monitoring/dashboard:Dashboard")) == 1


def test_the_dashboards_address_is_its_builder_page_in_the_project() -> None:
    urls: list[str] = []

    def program() -> None:
        found = Observability("observability", SPEC)
        found.dashboard_url.apply(urls.append)

    registered(program, DashboardIds())
    # The provider's id of a dashboard is its resource name; the builder page takes its last segment.
    assert urls == ["https://console.cloud.google.com/monitoring/dashboards/builder/0b1c-2d3e?project=example-project"]


class DashboardIds(pulumi.runtime.Mocks):
    """Gives a dashboard the id the provider gives it: projects/<number>/dashboards/<id>."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        return "projects/123456789/dashboards/0b1c-2d3e", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, []
