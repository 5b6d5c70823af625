"""The engine and the PromQL as the preflight reads them from a render: the files the real runs read."""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight.rendered import EngineSpec, RenderReadError, engine_spec, flag_names, flag_value, queries, read_engine, vllm_reads
from render.promql import metric_names
from tests.preflight.runs import BATCH, DEV, RUNS, report

# The series counted in the rendered PromQL of dev and batch, all read from vLLM.
ELEVEN = {
    "vllm:generation_tokens_total",
    "vllm:inter_token_latency_seconds_bucket",
    "vllm:kv_cache_usage_perc",
    "vllm:num_preemptions_total",
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:prompt_tokens_total",
    "vllm:request_time_per_output_token_seconds_bucket",
    "vllm:spec_decode_num_accepted_tokens_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:time_to_first_token_seconds_bucket",
}


def dev_engine() -> EngineSpec:
    return read_engine(DEV / "rendered")


def test_the_engine_is_the_deployments_vllm_serve_with_its_flags_in_order() -> None:
    spec = dev_engine()
    assert spec.launcher == ("vllm", "serve")
    assert spec.model_path == "/models/qwen3-5-27b-fp8-36bbd8e7"
    assert [*spec.launcher, spec.model_path, *spec.flags] == report(DEV)["rendered"]["command"]
    assert spec.served_name == "Qwen/Qwen3.5-27B-FP8"
    assert spec.flag("--data-parallel-size") == "8"


def test_the_pods_drain_settings_are_read_with_the_engine() -> None:
    spec = dev_engine()
    assert (spec.grace_seconds, spec.prestop_sleep_seconds, spec.shutdown_timeout) == (25, 5.0, 20.0)
    assert spec.gpus == 8
    assert spec.env["VLLM_CACHE_ROOT"] == "/compile-cache"
    assert {m.path: m.kind for m in spec.mounts}["/compile-cache"] == "csi"
    assert spec.shm_bytes == 64 * 2**30


def test_dev_and_batch_render_the_same_engine_command_and_environment() -> None:
    dev, batch = dev_engine(), read_engine(BATCH / "rendered")
    assert (dev.flags, dev.env) == (batch.flags, batch.env)


def test_a_deployment_without_vllm_serve_is_refused() -> None:
    deployment = {
        "metadata": {"name": "runner"},
        "spec": {"template": {"spec": {"containers": [{"name": "x", "command": ["python3", "run.py"]}]}}},
    }
    with pytest.raises(RenderReadError, match="runs no `vllm serve`"):
        engine_spec(deployment)


def test_a_folder_without_a_render_says_to_render_first(tmp_path: Path) -> None:
    with pytest.raises(RenderReadError, match="render the stack first"):
        read_engine(tmp_path)


def test_a_secret_variable_is_named_but_has_no_value() -> None:
    deployment = {
        "metadata": {"name": "vllm"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "command": ["vllm", "serve", "m"],
                            "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                        }
                    ]
                }
            }
        },
    }
    spec = engine_spec(deployment)
    assert spec.env_from_refs == ("HF_TOKEN",) and spec.env == {}
    assert spec.grace_seconds == 30


@pytest.mark.parametrize(
    ("flags", "name", "value"),
    [
        (["--port=8000"], "--port", "8000"),
        (["--port", "9000"], "--port", "9000"),
        (["--port=1", "--port=2"], "--port", "2"),
        (["--enable-prefix-caching"], "--enable-prefix-caching", ""),
        (["--portable=1"], "--port", None),
    ],
)
def test_a_flag_value_is_read_as_argparse_reads_it(flags: list[str], name: str, value: str | None) -> None:
    assert flag_value(flags, name) == value


def test_minus_o3_is_the_optimization_level_flag() -> None:
    assert flag_names(["-O3", "--max-model-len=2560", "--enable-prefix-caching"]) == ["-O", "--max-model-len", "--enable-prefix-caching"]


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_the_stack_reads_eleven_vllm_series_in_each_real_runs_render(run: Path) -> None:
    assert set(vllm_reads(queries(run / "rendered"))) == ELEVEN


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_the_series_read_from_the_text_are_those_a_promql_parser_finds(run: Path) -> None:
    found = queries(run / "rendered")
    parsed = {name for _, query in found for name in metric_names(query) if name.startswith("vllm:")}
    assert set(vllm_reads(found)) == parsed


def test_each_series_says_where_the_stack_reads_it() -> None:
    reads = vllm_reads(queries(BATCH / "rendered"))
    assert any(where.startswith("scaler vllm trigger concurrency") for where in reads["vllm:num_requests_running"])
    assert "alert time-to-first-token" in reads["vllm:time_to_first_token_seconds_bucket"]
