"""The offline PromQL check on hand-made queries and a hand-made render: which metrics a query reads, where each query lives."""

from __future__ import annotations

import json
from typing import Any

import pytest

from facts.vllm import DEFAULT_RELEASE
from render.engine import Render
from render.promql import (
    ALERT_TYPE,
    DASHBOARD_TYPE,
    SCALED_OBJECT_TYPE,
    PromQLError,
    check_monitoring,
    dashboard_problem,
    metric_names,
    problems,
    stack_queries,
)
from render.sdk import Registration
from tests.render.registrations import registration as plain_registration

OTHER_RELEASE = "0.26.0"


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("up", {"up"}),
        ("sum(rate(a_total[5m])) / sum(rate(b_total[5m]))", {"a_total", "b_total"}),
        ("histogram_quantile(0.99, sum by (le) (rate(c_bucket[5m])))", {"c_bucket"}),
        ("topk(scalar(d), e)", {"d", "e"}),
        ('count_values("value", g)', {"g"}),
        ("max_over_time(h[10m:1m])", {"h"}),
        ("-(i offset 5m)", {"i"}),
        ('{__name__=~"j.*"}', set()),
        ("1 + 2", set()),
    ],
    ids=["selector", "binary", "nested calls", "parameter", "string parameter", "subquery", "unary", "name by matcher", "numbers"],
)
def test_every_selector_in_a_query_is_found(query: str, names: set[str]) -> None:
    assert metric_names(query) == names


def test_a_query_that_does_not_parse_is_named_in_the_error() -> None:
    with pytest.raises(PromQLError, match=r"^'sum\(up' is not PromQL: \S"):
        metric_names("sum(up")
    (problem,) = problems("sum(up")
    assert problem.startswith("'sum(up' is not PromQL: ")


def test_each_unknown_metric_is_a_problem_in_name_order_with_the_release_read() -> None:
    found = problems("zz_missing + aa_missing + vllm:num_requests_running", OTHER_RELEASE)
    assert [p.split(":")[0] for p in found] == ["aa_missing", "zz_missing"]
    assert all(f"vLLM {OTHER_RELEASE};" in p for p in found)
    assert f"vLLM {DEFAULT_RELEASE};" in problems("aa_missing")[0]
    assert problems("sum(vllm:num_requests_running)") == []


def registration(type_: str, name: str, inputs: dict[str, Any]) -> Registration:
    return plain_registration(type_, name, inputs, stack="dev::llm")


def tile(title: str, *queries: str) -> dict[str, Any]:
    data_sets = [{"timeSeriesQuery": {"prometheusQuery": q}} for q in queries]
    return {"width": 6, "height": 4, "widget": {"title": title, "xyChart": {"dataSets": data_sets}}}


def dashboard(*tiles: dict[str, Any]) -> Registration:
    layout = {"displayName": "llm", "mosaicLayout": {"columns": 12, "tiles": list(tiles)}}
    return registration(DASHBOARD_TYPE, "dashboard", {"dashboardJson": json.dumps(layout)})


def alert(name: str, *queries: str) -> Registration:
    conditions = [{"conditionPrometheusQueryLanguage": {"query": q}} for q in queries]
    return registration(ALERT_TYPE, name, {"conditions": conditions})


def scaler(*triggers: dict[str, Any]) -> Registration:
    return registration(SCALED_OBJECT_TYPE, "vllm", {"spec": {"triggers": list(triggers)}})


def stack(*resources: Registration, outputs: dict[str, Any] | None = None) -> Render:
    return Render(stack="dev", resources=list(resources), outputs=outputs or {})


GOOD = "sum(vllm:num_requests_running)"


def test_every_chart_condition_and_prometheus_trigger_is_listed_with_where_it_is() -> None:
    render = stack(
        dashboard(tile("Load", GOOD, "sum(vllm:num_requests_waiting)"), tile("GPUs", "avg(DCGM_FI_DEV_GPU_UTIL)")),
        alert("queue-depth", "sum(vllm:num_requests_waiting) > 5", GOOD),
        scaler(
            {"type": "prometheus", "name": "queue", "metadata": {"query": "sum(vllm:num_requests_waiting)"}},
            {"type": "cpu", "name": "cpu", "metadata": {"value": "80"}},
        ),
        registration("kubernetes:apps/v1:Deployment", "vllm", {"spec": {}}),
    )
    assert stack_queries(render) == [
        ("dashboard chart 'Load'", GOOD),
        ("dashboard chart 'Load'", "sum(vllm:num_requests_waiting)"),
        ("dashboard chart 'GPUs'", "avg(DCGM_FI_DEV_GPU_UTIL)"),
        ("alert queue-depth", "sum(vllm:num_requests_waiting) > 5"),
        ("alert queue-depth", GOOD),
        ("scaler trigger queue", "sum(vllm:num_requests_waiting)"),
    ]
    assert check_monitoring(render) == 6


def test_a_dashboard_the_api_would_refuse_is_named() -> None:
    assert dashboard_problem(json.dumps({"displayName": "llm", "mosaicLayout": {"columns": 12}})) is None
    problem = dashboard_problem(json.dumps({"displayName": "llm", "mosaicLayot": {}}))
    assert problem is not None and "mosaicLayot" in problem


def test_every_broken_query_and_dashboard_is_named_at_once() -> None:
    board = dashboard(tile("Load", "sum(vllm:num_requests_wating)"))
    layout = json.loads(board.inputs["dashboardJson"])
    layout["mosaicLayout"]["tiles"][0]["widget"]["xyChart"]["dataSets"][0]["timeSeriesQuery"]["promQL"] = "x"
    board.inputs["dashboardJson"] = json.dumps(layout)
    render = stack(board, alert("queue-depth", "sum(up"), outputs={"vllmVersion": OTHER_RELEASE})
    with pytest.raises(PromQLError) as caught:
        check_monitoring(render)
    lines = str(caught.value).splitlines()
    assert lines[0] == "3 monitoring problem(s):"
    assert lines[1].startswith("  - dashboard chart 'Load': vllm:num_requests_wating: ") and f"vLLM {OTHER_RELEASE};" in lines[1]
    assert lines[2].startswith("  - alert queue-depth: 'sum(up' is not PromQL")
    assert lines[3].startswith("  - dashboard dashboard: ") and "promQL" in lines[3]
