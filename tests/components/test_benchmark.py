"""The benchmark Job: the reference method, clients that follow the nodes, one summed result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from components.benchmark import (
    COMPUTE_CLASS,
    URL_FROM_ENV,
    benchmark_script,
    client_command,
    client_count,
    compute_class,
    job,
    server_root,
    summarizer,
)
from components.credentials import SecretRef
from plan.stack import BenchmarkSpec, benchmark_spec, plan_stack
from render.engine import Render, reveal
from render.validation import validate, validate_render
from stacks.problems import StackConfigError
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered
from workloads.benchmark_summary import RESULT_PREFIX, main, render_text, result_line, summarize

SERVICE = "http://vllm.llm-serving.svc.cluster.local:8000"
# The reference method (docs/reference.md): random prompts, ISL 1024, OSL 512, range ratio 0.5.
REFERENCE_WORKLOAD = {
    "--dataset-name=random",
    "--random-input-len=1024",
    "--random-output-len=512",
    "--random-range-ratio=0.5",
    "--random-prefix-len=0",
    "--ignore-eos",
    "--max-concurrency=1024",
    "--num-prompts=10240",
    "--percentile-metrics=ttft,tpot,itl",
    "--metric-percentiles=50,90,99",
    "--save-result",
    "--save-detailed",
}


def settings(labels: dict[str, str] | None = None, **changes: Any) -> BenchmarkSpec:
    """The benchmark's spec of a stack with ``changes``; its node count may be any, zero included."""
    chosen = StackSettings.model_validate({"project": "example-project", **changes})
    return benchmark_spec(chosen, labels or {}, chosen.benchmark.image)


def flag(command: list[str], name: str) -> str:
    values = [arg.split("=", 1)[1] for arg in command if arg.startswith(f"--{name}=")]
    assert len(values) == 1, f"--{name} given {len(values)} times"
    return values[0]


def container(manifest: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = manifest["spec"]["template"]["spec"]["containers"][0]
    return found


# Two clients' results as vLLM saves them with --save-detailed (times in seconds).
# The second has no "latencies", as vLLM releases before per-request latencies.
CLIENT_A = {
    "duration": 10.0,
    "completed": 2,
    "failed": 0,
    "total_input_tokens": 2048,
    "total_output_tokens": 8,
    "request_throughput": 0.25,
    "output_throughput": 400.0,
    "total_token_throughput": 1200.0,
    "ttfts": [0.5, 1.0],
    "itls": [[0.25, 0.25], [0.125, 0.125, 0.125, 0.125]],
    "latencies": [1.0, 1.5],
    "output_lens": [3, 5],
    "errors": ["", ""],
}
CLIENT_B = {
    "duration": 12.0,
    "completed": 2,
    "failed": 1,
    "total_input_tokens": 2000,
    "total_output_tokens": 3,
    "request_throughput": 0.5,
    "output_throughput": 250.0,
    "total_token_throughput": 800.0,
    "ttfts": [2.0, 0.0, 0.5],
    "itls": [[0.5], [], []],
    "output_lens": [2, 0, 1],
    "errors": ["", "Bad Gateway", ""],
}


def test_clients_follow_the_node_count_by_default() -> None:
    assert client_count(settings(nodes=1)) == 2
    assert client_count(settings(nodes=12)) == 24
    assert client_count(settings(nodes=3, benchmark={"clientsPerNode": 4})) == 12


def test_every_client_runs_the_reference_workload_against_the_served_model() -> None:
    chosen = settings(nodes=2, model={"servedName": "qwen"})
    for index in range(client_count(chosen)):
        command = client_command(chosen, index, SERVICE)
        assert command[:3] == ["vllm", "bench", "serve"]
        assert set(command) >= REFERENCE_WORKLOAD
        assert flag(command, "backend") == "openai"
        assert flag(command, "base-url") == SERVICE
        assert flag(command, "model") == "qwen"
        assert flag(command, "tokenizer") == "Qwen/Qwen3.5-27B-FP8"
        assert flag(command, "result-filename") == f"client-{index}.json"


def test_workload_settings_reach_every_client() -> None:
    chosen = settings(workload={"inputTokens": 2048, "outputTokens": 128, "rangeRatio": 0.2}, serving={"maxModelLen": 4096})
    command = client_command(chosen, 0, SERVICE)
    lengths = [flag(command, name) for name in ("random-input-len", "random-output-len", "random-range-ratio")]
    assert lengths == ["2048", "128", "0.2"]


def test_no_two_clients_share_a_seed_within_or_across_runs() -> None:
    seeds = [
        flag(client_command(settings(nodes=12, benchmark={"run": run}), index, SERVICE), "seed") for run in (1, 2) for index in range(24)
    ]
    assert len(set(seeds)) == len(seeds) == 48


def test_the_clients_get_the_server_root_since_they_append_v1_themselves() -> None:
    assert server_root(f"{SERVICE}/v1") == SERVICE
    assert server_root(f"{SERVICE}/v1/") == SERVICE
    assert server_root("http://10.0.0.7") == "http://10.0.0.7"


def test_the_summary_sums_throughput_across_clients() -> None:
    summary = summarize([CLIENT_A, CLIENT_B])
    assert summary["clients"] == 2
    assert summary["total_token_throughput"] == 2000.0
    assert summary["output_throughput"] == 650.0
    assert summary["request_throughput"] == 0.75
    assert (summary["completed"], summary["failed"]) == (4, 1)
    assert (summary["total_input_tokens"], summary["total_output_tokens"]) == (4048, 11)
    assert summary["longest_duration_s"] == 12.0


def test_latency_percentiles_cover_every_successful_request_of_every_client() -> None:
    summary = summarize([CLIENT_A, CLIENT_B])
    # TTFT of the four successful requests: 500, 500, 1000, 2000 ms (the failed one is left out).
    assert summary["ttft_ms"] == pytest.approx({"mean": 1000.0, "p50": 750.0, "p90": 1700.0, "p99": 1970.0})
    # TPOT = (latency - TTFT) / (output tokens - 1): 250, 125 and 500 ms; one token has no TPOT.
    # Client B's latencies are its TTFT plus its gaps.
    assert summary["tpot_ms"] == pytest.approx({"mean": 875 / 3, "p50": 250.0, "p90": 450.0, "p99": 495.0})
    # Every gap of every request: 4 x 125, 2 x 250 and 500 ms.
    assert summary["itl_ms"] == pytest.approx({"mean": 1500 / 7, "p50": 125.0, "p90": 350.0, "p99": 485.0})


def test_a_run_with_no_successful_request_reports_no_latency() -> None:
    failed = {**CLIENT_B, "ttfts": [0.0], "itls": [[]], "output_lens": [0], "errors": ["timeout"], "completed": 0}
    summary = summarize([failed])
    assert summary["ttft_ms"] == {"mean": None, "p50": None, "p90": None, "p99": None}
    assert "-" in render_text(summary)


def test_results_saved_without_per_request_data_are_refused() -> None:
    brief = {key: value for key, value in CLIENT_A.items() if key not in ("ttfts", "itls")}
    with pytest.raises(ValueError, match="--save-detailed"):
        summarize([brief])


def test_the_log_shows_a_table_then_ends_with_one_json_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = []
    for index, result in enumerate((CLIENT_A, CLIENT_B)):
        path = tmp_path / f"client-{index}.json"
        path.write_text(json.dumps(result))
        paths.append(str(path))
    assert main(paths) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert any(line.startswith("TTFT") for line in lines)
    assert sum(line.startswith(RESULT_PREFIX) for line in lines) == 1
    prefix, payload = lines[-1].split(" ", 1)
    assert prefix == RESULT_PREFIX
    assert json.loads(payload) == json.loads(json.dumps(summarize([CLIENT_A, CLIENT_B])))
    assert result_line(summarize([CLIENT_A])).startswith(f"{RESULT_PREFIX} {{")


def test_the_table_shows_the_summed_throughput_and_warns_of_failed_requests() -> None:
    text = render_text(summarize([CLIENT_A, CLIENT_B]))
    assert "2,000.00" in text
    assert "WARNING: 1 requests failed" in text


def test_the_script_waits_a_bounded_time_then_runs_every_client_at_once() -> None:
    script = benchmark_script(settings(nodes=3), SERVICE)
    assert script.startswith("set -euo pipefail\n")
    assert "for attempt in $(seq 1 60)" in script and "sleep 10" in script
    # Checks GET <server>/v1/models; only an answer ends the wait early.
    assert f"{SERVICE}; then ready=1; break; fi" in script and '"/v1/models"' in script
    assert "did not answer" in script and "exit 1" in script
    started = [line for line in script.splitlines() if line.startswith("vllm bench serve") and line.endswith("&")]
    assert len(started) == 6
    assert 'wait "${pids[$index]}"' in script
    assert "python3 /opt/benchmark/workloads/benchmark_summary.py" in script


def test_the_script_never_traces_its_commands_and_is_valid_bash() -> None:
    script = benchmark_script(settings(nodes=2), URL_FROM_ENV)
    assert "set -x" not in script and "xtrace" not in script
    subprocess.run(["bash", "-n", "-c", script], check=True)
    assert '--base-url="${BASE_URL}"' in script


def test_a_stack_scaled_to_zero_has_no_benchmark_to_run() -> None:
    chosen = StackSettings.model_validate({"project": "example-project", "nodes": 0, "benchmark": {"enabled": True}})
    assert plan_stack(chosen, "dev").benchmark is None
    with pytest.raises(ValueError, match="llm:nodes is 0"):
        benchmark_script(settings(nodes=0), SERVICE)


def test_the_job_takes_a_dedicated_c4_node_and_is_never_retried() -> None:
    manifest = job(settings(labels={"app": "llm"}, benchmark={"run": 3}), SERVICE, None, None)
    assert manifest["metadata"]["name"] == "benchmark-3"
    spec = manifest["spec"]
    assert spec["backoffLimit"] == 0
    assert 0 < spec["activeDeadlineSeconds"] <= 2 * 3600
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["nodeSelector"] == {"cloud.google.com/compute-class": COMPUTE_CLASS}
    resources = container(manifest)["resources"]
    assert resources["requests"] == resources["limits"]
    assert int(resources["requests"]["cpu"]) > 16 / 2
    assert container(manifest)["image"] == "vllm/vllm-openai:v0.18.1"


def test_the_job_reads_the_server_url_and_credentials_from_its_environment() -> None:
    manifest = job(settings(), SERVICE, SecretRef("vllm-api-key"), SecretRef("hf-token"))
    env = container(manifest)["env"]
    assert {"name": "BASE_URL", "value": SERVICE} in env
    assert {"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "value"}}} in env
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "value"}}} in env
    command = container(manifest)["command"]
    assert command[:2] == ["bash", "-c"] and '"${BASE_URL}"' in command[2]
    assert SERVICE not in command[2]
    names = {e["name"] for e in container(job(settings(), SERVICE, None, None))["env"]}
    assert not names & {"OPENAI_API_KEY", "HF_TOKEN"}


def test_the_compute_class_asks_for_the_configured_machine_in_the_replicas_zone_and_nothing_else() -> None:
    spec = compute_class(settings())["spec"]
    assert spec["priorities"] == [{"machineType": "c4-standard-16", "location": {"zones": ["europe-west4-b"]}}]
    assert spec["nodePoolAutoCreation"] == {"enabled": True}
    assert spec["whenUnsatisfiable"] == "DoNotScaleUp"


def test_the_config_map_carries_the_summarizer_from_the_repository() -> None:
    data = summarizer().config_map("llm-serving", {})["data"]
    source = (Path(__file__).resolve().parents[2] / "workloads" / "benchmark_summary.py").read_text()
    assert data == {"workloads.benchmark_summary.py": source}
    pod = job(settings(), SERVICE, None, None)["spec"]["template"]["spec"]
    assert {"name": "benchmark-summary", "mountPath": "/opt/benchmark", "readOnly": True} in container(
        job(settings(), SERVICE, None, None)
    )["volumeMounts"]
    # Laid out at its repository path under the mount, where the script runs it.
    (volume,) = [v for v in pod["volumes"] if v["name"] == "benchmark-summary"]
    assert volume["configMap"]["items"] == [{"key": "workloads.benchmark_summary.py", "path": "workloads/benchmark_summary.py"}]


def test_the_manifests_validate_against_kubernetes_and_gkes_compute_class_crd() -> None:
    chosen = settings(labels={"app.kubernetes.io/part-of": "llm-serving"}, nodes=12)
    assert validate(job(chosen, SERVICE, SecretRef("vllm-api-key"), SecretRef("hf-token")), "1.35") == "Kubernetes 1.35"
    assert validate(summarizer().config_map("llm-serving", chosen.labels), "1.35") == "Kubernetes 1.35"
    assert validate(compute_class(chosen), "1.35") == "CRD cloud.google.com/v1"


def _job_env(render: Render) -> dict[str, Any]:
    job = next(r for r in render.by_type("kubernetes:batch/v1:Job") if r.name.startswith("benchmark"))
    container = job.inputs["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_the_benchmark_is_opt_in() -> None:
    assert not any(r.name.startswith("benchmark") for r in rendered("dev").resources)


def test_an_enabled_benchmark_targets_the_service_after_the_replicas_are_ready() -> None:
    render = render_with("dev", benchmark={"enabled": True})
    job = render.one("kubernetes:batch/v1:Job", "benchmark-1")
    assert _job_env(render)["BASE_URL"] == "http://vllm.llm-serving.svc.cluster.local:8000"
    assert render.depends_on(job, render.one("kubernetes:apps/v1:Deployment", "vllm"))
    assert reveal(render.outputs)["benchmarkJob"] == "benchmark-1"
    validate_render(render)


def test_in_gateway_mode_the_benchmark_goes_through_the_gateway() -> None:
    render = render_with("gateway", benchmark={"enabled": True})
    job = render.one("kubernetes:batch/v1:Job", "benchmark-1")
    assert _job_env(render)["BASE_URL"] == "http://192.0.2.20"
    assert render.depends_on(job, render.one("kubernetes:gateway.networking.k8s.io/v1:Gateway"))


def test_no_benchmark_runs_while_scaled_to_zero() -> None:
    render = render_with("dev", nodes=0, benchmark={"enabled": True})
    assert not any(r.name.startswith("benchmark") for r in render.resources)


def test_a_finished_run_is_not_replaced_by_later_changes() -> None:
    job = render_with("dev", benchmark={"enabled": True}).one("kubernetes:batch/v1:Job", "benchmark-1")
    assert set(job.ignore_changes) == {"metadata", "spec"}


@pytest.mark.parametrize("machine", ["c4-highcpu-16", "c3-highcpu-22"])
def test_a_benchmark_machine_too_small_for_the_clients_pod_is_refused(machine: str) -> None:
    with pytest.raises(StackConfigError) as error:
        render_with("dev", benchmark={"enabled": True, "machineType": machine})
    assert f"llm:benchmark.machineType: '{machine}'" in str(error.value) and "48Gi" in str(error.value)


def test_a_larger_benchmark_machine_is_accepted() -> None:
    render_with("dev", benchmark={"enabled": True, "machineType": "c4-highmem-16"})


def test_the_benchmark_clients_run_in_the_replicas_zone() -> None:
    render = render_with("gateway", benchmark={"enabled": True}, zone="europe-west4-c")
    (compute_class,) = [r for r in render.by_type("kubernetes:cloud.google.com/v1:ComputeClass") if "bench" in r.inputs["metadata"]["name"]]
    assert [p["location"]["zones"] for p in compute_class.inputs["spec"]["priorities"]] == [["europe-west4-c"]]


def _row(label: str, value: str) -> str:
    """A row of the summary table: labels in one column, values right-aligned in the next."""
    return f"{label:<22}  {value:>16}"


def test_the_table_lays_out_every_figure_of_the_summary() -> None:
    # CLIENT_A and CLIENT_B summed (the figures of the two tests above), in the units each label names.
    assert render_text(summarize([CLIENT_A, CLIENT_B])) == "\n".join(
        [
            "benchmark summary",
            "-----------------",
            _row("clients", "2"),
            _row("successful requests", "4"),
            _row("failed requests", "1"),
            _row("input tokens", "4,048"),
            _row("output tokens", "11"),
            _row("longest client run (s)", "12.00"),
            _row("requests/s (sum)", "0.75"),
            _row("output tokens/s (sum)", "650.00"),
            _row("total tokens/s (sum)", "2,000.00"),
            "",
            "latency (ms, over all requests)",
            " " * 6 + "".join(column.rjust(14) for column in ("mean", "p50", "p90", "p99")),
            "TTFT  " + "".join(value.rjust(14) for value in ("1,000.00", "750.00", "1,700.00", "1,970.00")),
            "TPOT  " + "".join(value.rjust(14) for value in ("291.67", "250.00", "450.00", "495.00")),
            "ITL   " + "".join(value.rjust(14) for value in ("214.29", "125.00", "350.00", "485.00")),
            "",
            "WARNING: 1 requests failed; the figures above count only the successful ones",
        ]
    )


def test_a_figure_nothing_measured_shows_as_a_dash() -> None:
    failed = {**CLIENT_B, "ttfts": [0.0], "itls": [[]], "output_lens": [0], "errors": ["timeout"], "completed": 0, "failed": 1}
    lines = render_text(summarize([failed])).splitlines()
    assert lines[-4:-2] == ["TPOT  " + "-".rjust(14) * 4, "ITL   " + "-".rjust(14) * 4]


def test_a_single_request_is_every_percentile_of_itself() -> None:
    one = {**CLIENT_A, "ttfts": [0.5], "itls": [[0.25, 0.25]], "latencies": [1.0], "output_lens": [3], "errors": [""]}
    assert summarize([one])["ttft_ms"] == {"mean": 500.0, "p50": 500.0, "p90": 500.0, "p99": 500.0}


def test_the_result_line_is_compact_json_with_sorted_keys() -> None:
    assert result_line({"b": 1, "a": [1, 2]}) == f'{RESULT_PREFIX} {{"a":[1,2],"b":1}}'


def _saved(folder: Path, *results: dict[str, object]) -> list[str]:
    paths = []
    for index, result in enumerate(results):
        path = folder / f"client-{index}.json"
        path.write_text(json.dumps(result), encoding="utf-8")
        paths.append(str(path))
    return paths


def test_the_script_reads_the_files_its_command_line_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["benchmark_summary.py", *_saved(tmp_path, CLIENT_A, CLIENT_B)])
    assert main() == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1].split(" ", 1)[1])["clients"] == 2


def test_no_file_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "argv", ["benchmark_summary.py"])
    assert main() == 2
    assert capsys.readouterr() == ("", "usage: benchmark_summary.py CLIENT_RESULT.json ...\n")


def test_results_without_per_request_data_fail_the_run_and_say_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    brief = {key: value for key, value in CLIENT_A.items() if key != "itls"}
    assert main(_saved(tmp_path, brief)) == 1
    assert capsys.readouterr() == ("", "cannot summarize: no per-request data (itls); run the clients with --save-detailed\n")


def test_a_run_in_which_nothing_completed_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    failed = {**CLIENT_B, "ttfts": [0.0], "itls": [[]], "output_lens": [0], "errors": ["timeout"], "completed": 0, "failed": 1}
    assert main(_saved(tmp_path, failed)) == 1
    assert capsys.readouterr().out.splitlines()[-1].startswith(RESULT_PREFIX)


def test_a_saved_latency_is_used_over_the_first_token_and_its_gaps() -> None:
    # Newer vLLM saves each request's latency, which may end after the last gap (the response's close).
    saved = {**CLIENT_A, "ttfts": [0.5], "itls": [[0.25, 0.25]], "latencies": [2.0], "output_lens": [3], "errors": [""]}
    assert summarize([saved])["tpot_ms"]["mean"] == 750.0  # (2.0 - 0.5) s over 2 tokens


def test_a_request_that_failed_after_some_tokens_is_left_out() -> None:
    cut = {**CLIENT_A, "ttfts": [0.5, 4.0], "itls": [[0.25, 0.25], [0.1]], "latencies": [1.0, 4.1], "errors": ["", "stream cut"]}
    assert summarize([cut])["ttft_ms"] == {"mean": 500.0, "p50": 500.0, "p90": 500.0, "p99": 500.0}


def test_results_without_errors_count_every_request_with_tokens() -> None:
    # Older vLLM saves no "errors" list.
    bare = {key: value for key, value in CLIENT_A.items() if key != "errors"}
    assert summarize([bare])["ttft_ms"]["mean"] == 750.0  # 500 and 1000 ms


def test_every_missing_per_request_list_is_named() -> None:
    brief = {key: value for key, value in CLIENT_A.items() if key not in ("ttfts", "itls")}
    with pytest.raises(ValueError, match=r"^no per-request data \(ttfts, itls\); run the clients with --save-detailed$"):
        summarize([brief])


def test_figures_a_client_did_not_report_add_nothing() -> None:
    quiet = {"completed": 0, "ttfts": [], "itls": [], "output_lens": []}
    short = {**quiet, "duration": 0.5, "request_throughput": 0.0}
    summary = summarize([quiet, short])
    assert summary["longest_duration_s"] == 0.5
    assert (summary["request_throughput"], summary["output_throughput"], summary["total_token_throughput"]) == (0.0, 0.0, 0.0)
