"""PromQL checked offline: parsed by a real PromQL parser, every metric it reads one that is exported.

``promql-parser`` (PyPI; Python bindings of the Rust parser GreptimeDB uses)
parses each query; the walk collects the metric names its selectors read, and
``facts.metrics.series_problem`` holds them to vLLM's, GKE's DCGM and
kube-state, and the endpoint picker's lists.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import promql_parser
from google.cloud.monitoring_dashboard_v1.types import dashboard
from google.protobuf import json_format

from facts.metrics import series_problem
from facts.vllm import DEFAULT_RELEASE
from render.engine import Render

_CHILDREN = ("lhs", "rhs", "expr", "args", "param", "vector_selector")


class PromQLError(ValueError):
    pass


def _selectors(node: Any) -> Iterator[Any]:
    if type(node).__name__ == "VectorSelector":
        yield node
    for attribute in _CHILDREN:
        child = getattr(node, attribute, None)
        for item in child if isinstance(child, list) else [child]:
            if item is not None and type(item).__module__.startswith("promql_parser"):
                yield from _selectors(item)


def metric_names(query: str) -> set[str]:
    """The metric names ``query`` reads; raises ``PromQLError`` when it does not parse."""
    try:
        tree = promql_parser.parse(query)
    except ValueError as error:
        raise PromQLError(f"{query!r} is not PromQL: {error}") from None
    names: set[str] = set()
    for selector in _selectors(tree):
        if selector.name:
            names.add(str(selector.name))
    return names


def problems(query: str, release: str = DEFAULT_RELEASE) -> list[str]:
    """What is wrong with a query: it does not parse, or reads a metric nothing exports (vLLM at ``release``)."""
    try:
        names = metric_names(query)
    except PromQLError as error:
        return [str(error)]
    return [problem for name in sorted(names) if (problem := series_problem(name, release))]


DASHBOARD_TYPE = "gcp:monitoring/dashboard:Dashboard"
ALERT_TYPE = "gcp:monitoring/alertPolicy:AlertPolicy"
SCALED_OBJECT_TYPE = "kubernetes:keda.sh/v1alpha1:ScaledObject"


def stack_queries(render: Render) -> list[tuple[str, str]]:
    """(where, PromQL) of every query the stack registers: dashboard charts, alert conditions, scaler triggers."""
    found: list[tuple[str, str]] = []
    for board in render.by_type(DASHBOARD_TYPE):
        layout = json.loads(board.inputs["dashboardJson"])
        for tile in layout["mosaicLayout"]["tiles"]:
            widget = tile["widget"]
            found += [
                (f"dashboard chart {widget['title']!r}", d["timeSeriesQuery"]["prometheusQuery"]) for d in widget["xyChart"]["dataSets"]
            ]
    for policy in render.by_type(ALERT_TYPE):
        for condition in policy.inputs["conditions"]:
            found.append((f"alert {policy.name}", condition["conditionPrometheusQueryLanguage"]["query"]))
    for scaler in render.by_type(SCALED_OBJECT_TYPE):
        for trigger in scaler.inputs["spec"]["triggers"]:
            if trigger["type"] == "prometheus":
                found.append((f"scaler trigger {trigger['name']}", trigger["metadata"]["query"]))
    return found


def dashboard_problem(text: str) -> str | None:
    """Why Cloud Monitoring would refuse a dashboard's JSON, read by the Dashboards API's own types; None if it reads."""
    try:
        json_format.Parse(text, dashboard.Dashboard.pb()(), ignore_unknown_fields=False)
    except json_format.ParseError as error:
        return str(error)
    return None


def check_monitoring(render: Render) -> int:
    """Raises ``PromQLError`` naming every broken query or dashboard; returns how many queries were checked.

    vLLM's metrics are those of the release the stack serves (its ``vllmVersion`` output).
    """
    release = str(render.outputs.get("vllmVersion", DEFAULT_RELEASE))
    found = [f"{where}: {problem}" for where, query in stack_queries(render) for problem in problems(query, release)]
    for board in render.by_type(DASHBOARD_TYPE):
        problem = dashboard_problem(board.inputs["dashboardJson"])
        if problem:
            found.append(f"dashboard {board.name}: {problem}")
    if found:
        raise PromQLError(f"{len(found)} monitoring problem(s):\n" + "\n".join(f"  - {p}" for p in found))
    return len(stack_queries(render))
