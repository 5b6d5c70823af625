"""Which series a query may name: every source's metrics by kind, and Prometheus' suffix for each kind.

The names and kinds are those of facts/data/ and workloads/batch/layout.py, written out here.
"""

from __future__ import annotations

import pytest

from facts.metrics import exported, series_problem

SOURCES = "no vLLM, DCGM, kube-state, endpoint-picker, KEDA or batch-runner metric of this name"


def test_every_source_is_in_the_table_with_its_kind() -> None:
    table = exported()
    assert table["vllm:num_requests_waiting"] == "gauge" and table["vllm:prompt_tokens"] == "counter"
    assert table["vllm:time_to_first_token_seconds"] == "histogram"
    assert table["DCGM_FI_DEV_GPU_UTIL"] == "gauge"
    assert table["kube_deployment_spec_replicas"] == "gauge"
    assert table["inference_pool_average_queue_size"] == "gauge"
    assert table["keda_scaler_detail_errors"] == "counter"
    # The runner's gauges, and its counters by their name without _total.
    assert table["batch_backlog_requests"] == table["batch_in_flight_requests"] == table["batch_waiting_files"] == "gauge"
    assert table["batch_done_requests"] == table["batch_failed_requests"] == "counter"
    assert "batch_done_requests_total" not in table


def test_vllms_metrics_are_those_of_the_release_asked_for() -> None:
    assert "vllm:admission_rejections" not in exported()
    assert exported("0.33.0")["vllm:admission_rejections"] == "counter"


@pytest.mark.parametrize(
    "series",
    [
        "vllm:num_requests_waiting",
        "vllm:prompt_tokens_total",
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:time_to_first_token_seconds_sum",
        "vllm:time_to_first_token_seconds_count",
        "DCGM_FI_DEV_GPU_UTIL",
        "keda_scaler_detail_errors_total",
        "batch_done_requests_total",
        "batch_backlog_requests",
    ],
)
def test_a_series_a_source_exports_has_no_problem(series: str) -> None:
    assert series_problem(series) is None


@pytest.mark.parametrize(
    ("series", "problem"),
    [
        ("vllm:prompt_tokens", "vllm:prompt_tokens: vllm:prompt_tokens is a counter; query vllm:prompt_tokens_total"),
        (
            "vllm:time_to_first_token_seconds",
            "vllm:time_to_first_token_seconds: vllm:time_to_first_token_seconds is a histogram; query "
            "vllm:time_to_first_token_seconds_bucket or vllm:time_to_first_token_seconds_sum or vllm:time_to_first_token_seconds_count",
        ),
        (
            "vllm:num_requests_waiting_total",
            "vllm:num_requests_waiting_total: vllm:num_requests_waiting is a gauge; query vllm:num_requests_waiting",
        ),
    ],
)
def test_a_series_without_its_kinds_suffix_names_the_series_to_query(series: str, problem: str) -> None:
    assert series_problem(series) == problem


def test_a_name_no_source_exports_is_refused_naming_the_sources() -> None:
    assert (
        series_problem("vllm:num_request_waiting")
        == f"vllm:num_request_waiting: {SOURCES} (vLLM 0.18.1; facts/data/, workloads/batch/layout.py)"
    )
    assert series_problem("vllm:admission_rejections_total") == (
        f"vllm:admission_rejections_total: {SOURCES} (vLLM 0.18.1; facts/data/, workloads/batch/layout.py)"
    )
    assert series_problem("vllm:admission_rejections_total", "0.33.0") is None
