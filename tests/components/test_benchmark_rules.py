"""The benchmark on a hand-made spec: its script run under bash against stand-in tools, its objects, and ``Benchmark`` alone."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from components.benchmark import Benchmark, benchmark_script, client_command, compute_class, job, server_root, summarizer
from components.credentials import SecretRef
from plan.stack import BenchmarkSpec
from tests.components.alone import registered

LABELS = {"team": "ml", "stack": "dev"}
SPEC = BenchmarkSpec(
    namespace="serving",
    labels=LABELS,
    run=3,
    clients_per_node=1,
    concurrency_per_client=700,
    prompts_per_client=5000,
    machine_type="c4-standard-32",
    input_tokens=2048,
    output_tokens=256,
    range_ratio=0.25,
    served_name="qwen",
    model_id="Qwen/Qwen3-8B",
    nodes=2,
    image="vllm/vllm-openai:v0.18.1",
    zone="us-central1-c",
)
SERVER = "http://vllm.serving.svc.cluster.local:8123"
API_KEY = SecretRef("api-key")
HF_TOKEN = SecretRef("hf-token")


def test_a_client_runs_the_configured_workload_with_its_own_seed_and_result_file() -> None:
    assert client_command(SPEC, 1, SERVER) == [
        "vllm",
        "bench",
        "serve",
        "--backend=openai",
        f"--base-url={SERVER}",
        "--model=qwen",
        "--tokenizer=Qwen/Qwen3-8B",
        "--dataset-name=random",
        "--random-input-len=2048",
        "--random-output-len=256",
        "--random-range-ratio=0.25",
        "--random-prefix-len=0",
        # Run 3, client 1: seeds of a run are run x 1,000,000 + client.
        "--seed=3000001",
        "--num-prompts=5000",
        "--max-concurrency=700",
        "--ignore-eos",
        "--temperature=0",
        "--percentile-metrics=ttft,tpot,itl",
        "--metric-percentiles=50,90,99",
        "--disable-tqdm",
        "--save-result",
        "--save-detailed",
        "--result-dir=/results",
        "--result-filename=client-1.json",
    ]


@pytest.mark.parametrize(("url", "root"), [(f"{SERVER}/v1", SERVER), (f"{SERVER}/v1/", SERVER), (f"{SERVER}/", SERVER), (SERVER, SERVER)])
def test_the_clients_get_the_servers_root(url: str, root: str) -> None:
    assert server_root(url) == root


@dataclass(frozen=True)
class Run:
    code: int
    output: str
    calls: list[str]


def run_script(
    tmp_path: Path,
    spec: BenchmarkSpec = SPEC,
    *,
    ready_after: int = 1,
    failing_seeds: tuple[int, ...] = (),
    silent_seeds: tuple[int, ...] = (),
    summary_exit: int = 0,
    base_url: str = SERVER,
    environment: dict[str, str] | None = None,
) -> Run:
    """The Job's script under bash: its results folder in ``tmp_path``, python3, vllm and sleep stand-ins that log each call."""
    tools = tmp_path / "bin"
    tools.mkdir()
    log = tmp_path / "calls.log"
    results = tmp_path / "results"
    attempts = tmp_path / "attempts"
    stand_ins = {
        # The readiness check answers from the given attempt on; the summary prints its arguments.
        "python3": f"""if [ "$1" = "-c" ]; then
  case "$2" in *'"/v1/models"'*) echo "check $3" >> {log};; *) echo "check of something else" >> {log};; esac
  echo x >> {attempts}
  [ "$(wc -l < {attempts})" -ge {ready_after} ] || exit 1
  exit 0
fi
echo "python3 $*" >> {log}
echo "summary of $(($# - 1)) results"
exit {summary_exit}
""",
        # A client writes its result unless its seed is one told to fail, or to finish without saving one.
        "vllm": f"""echo "vllm $*" >> {log}
for arg in "$@"; do
  case "$arg" in
    --seed=*) seed=${{arg#--seed=}};;
    --result-dir=*) dir=${{arg#--result-dir=}};;
    --result-filename=*) file=${{arg#--result-filename=}};;
  esac
done
for failing in {" ".join(str(s) for s in failing_seeds)}; do
  if [ "$seed" = "$failing" ]; then echo "client with seed $seed broke"; exit 2; fi
done
for silent in {" ".join(str(s) for s in silent_seeds)}; do
  if [ "$seed" = "$silent" ]; then exit 0; fi
done
echo '{{}}' > "$dir/$file"
""",
        "sleep": f'echo "sleep $*" >> {log}\n',
    }
    for name, body in stand_ins.items():
        path = tools / name
        path.write_text("#!/bin/bash\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    script = benchmark_script(spec, base_url).replace("/results", str(results))
    env = {"PATH": f"{tools}:{os.environ['PATH']}", **(environment or {})}
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=60, check=False)
    calls = log.read_text().splitlines() if log.exists() else []
    return Run(done.returncode, done.stdout + done.stderr, calls)


def test_the_script_waits_for_the_server_then_runs_every_client_and_sums_their_results(tmp_path: Path) -> None:
    run = run_script(tmp_path, ready_after=3)
    assert run.code == 0, run.output
    assert [call for call in run.calls if call.startswith("check")] == [f"check {SERVER}"] * 3
    assert [call for call in run.calls if call.startswith("sleep")] == ["sleep 10", "sleep 10"]
    clients = [call for call in run.calls if call.startswith("vllm ")]
    expected = [" ".join(client_command(SPEC, index, SERVER)).replace("/results", str(tmp_path / "results")) for index in (0, 1)]
    assert sorted(clients) == expected
    lines = run.output.splitlines()
    assert lines[0] == f"waiting for {SERVER}/v1/models"
    assert "starting 2 clients" in lines and "client 0 finished" in lines and "client 1 finished" in lines
    summary = run.calls[-1]
    results = tmp_path / "results"
    assert summary == f"python3 /opt/benchmark/workloads/benchmark_summary.py {results}/client-0.json {results}/client-1.json"
    assert lines[-1] == "summary of 2 results"


def test_a_server_that_never_answers_fails_the_run_after_ten_minutes(tmp_path: Path) -> None:
    run = run_script(tmp_path, ready_after=1000)
    assert run.code == 1
    assert len([call for call in run.calls if call.startswith("check")]) == 60
    assert len([call for call in run.calls if call.startswith("sleep")]) == 60
    assert "the server did not answer within 600 s" in run.output
    assert not [call for call in run.calls if call.startswith(("vllm", "python3 /opt"))]


def test_a_failed_client_fails_the_run_after_the_others_are_summed(tmp_path: Path) -> None:
    run = run_script(tmp_path, failing_seeds=(3_000_001,))
    assert run.code == 1
    lines = run.output.splitlines()
    assert "client 0 finished" in lines and "client 1 failed; the end of its log:" in lines
    assert "client with seed 3000001 broke" in lines
    assert "1 of 2 clients failed; the summary counts the others" in lines
    assert run.calls[-1].endswith(f"benchmark_summary.py {tmp_path}/results/client-0.json")


def test_no_result_at_all_fails_the_run_without_a_summary(tmp_path: Path) -> None:
    run = run_script(tmp_path, failing_seeds=(3_000_000, 3_000_001))
    assert run.code == 1 and "no client saved a result" in run.output
    assert "2 of 2 clients failed; the summary counts the others" in run.output
    assert not [call for call in run.calls if "benchmark_summary" in call]


def test_a_failed_summary_fails_the_run_with_its_code(tmp_path: Path) -> None:
    run = run_script(tmp_path, summary_exit=4)
    assert run.code == 4


def test_the_url_from_the_jobs_environment_reaches_the_check_and_the_clients(tmp_path: Path) -> None:
    run = run_script(tmp_path, base_url="${BASE_URL}", environment={"BASE_URL": "http://10.0.0.9:80"})
    assert run.code == 0, run.output
    assert [call for call in run.calls if call.startswith("check")] == ["check http://10.0.0.9:80"]
    assert all("--base-url=http://10.0.0.9:80 " in call for call in run.calls if call.startswith("vllm"))
    assert run.output.splitlines()[0] == "waiting for http://10.0.0.9:80/v1/models"


def test_one_client_per_node_times_the_clients_per_node() -> None:
    script = benchmark_script(replace(SPEC, nodes=3, clients_per_node=2), SERVER)
    assert "echo starting 6 clients" in script.splitlines()
    assert [line.split("--seed=")[1].split()[0] for line in script.splitlines() if line.startswith("vllm")] == [
        str(3_000_000 + index) for index in range(6)
    ]


def test_no_serving_node_no_benchmark() -> None:
    with pytest.raises(ValueError, match=r"^llm:benchmark needs at least one serving node; llm:nodes is 0$"):
        benchmark_script(replace(SPEC, nodes=0), SERVER)


def test_the_clients_node_is_the_configured_machine_in_the_replicas_zone() -> None:
    assert compute_class(SPEC) == {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": "benchmark", "labels": LABELS},
        "spec": {
            "description": "Benchmark clients on a dedicated c4-standard-32 node",
            "priorities": [{"machineType": "c4-standard-32", "location": {"zones": ["us-central1-c"]}}],
            "nodePoolAutoCreation": {"enabled": True},
            "whenUnsatisfiable": "DoNotScaleUp",
        },
    }


def test_the_job_runs_once_on_the_benchmark_node_with_the_url_and_credentials_in_its_environment() -> None:
    manifest = job(SPEC, SERVER, API_KEY, HF_TOKEN)
    assert manifest["metadata"] == {
        "name": "benchmark-3",
        "namespace": "serving",
        "labels": {**LABELS, "app.kubernetes.io/component": "benchmark"},
        "annotations": {"pulumi.com/skipAwait": "true"},
    }
    assert (manifest["spec"]["backoffLimit"], manifest["spec"]["activeDeadlineSeconds"]) == (0, 3600)
    template = manifest["spec"]["template"]
    assert template["metadata"] == {"labels": {"app.kubernetes.io/component": "benchmark"}}
    pod = template["spec"]
    assert pod["restartPolicy"] == "Never" and pod["nodeSelector"] == {"cloud.google.com/compute-class": "benchmark"}
    assert pod["volumes"] == [summarizer().volume(), {"name": "results", "emptyDir": {}}]
    amounts = {"cpu": "14", "memory": "48Gi", "ephemeral-storage": "10Gi"}
    (container,) = pod["containers"]
    assert container == {
        "name": "benchmark",
        "image": "vllm/vllm-openai:v0.18.1",
        "command": ["bash", "-c", benchmark_script(SPEC, "${BASE_URL}")],
        "env": [
            {"name": "BASE_URL", "value": SERVER},
            {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
            {"name": "OPENAI_API_KEY", "valueFrom": {"secretKeyRef": {"name": "api-key", "key": API_KEY.key}}},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": HF_TOKEN.key}}},
        ],
        "resources": {"requests": amounts, "limits": amounts},
        "volumeMounts": [summarizer().mount(), {"name": "results", "mountPath": "/results"}],
    }
    bare = job(SPEC, SERVER, None, None)["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in bare] == ["BASE_URL", "HF_HUB_DISABLE_TELEMETRY"]


def test_the_benchmark_registers_its_node_class_and_summarizer_before_its_job() -> None:
    def program() -> None:
        api = gcp.projects.Service("api", service="container.googleapis.com")
        Benchmark(
            "benchmark",
            SPEC,
            base_url=pulumi.Output.from_input(f"{SERVER}/v1"),
            api_key=None,
            hf_token=None,
            kubernetes=k8s.Provider("cluster"),
            opts=pulumi.ResourceOptions(depends_on=[api]),
        )

    render = registered(program)
    component = render.one("llm:serving:Benchmark", "benchmark").urn
    node_class = render.one("kubernetes:cloud.google.com/v1:ComputeClass", "compute-class")
    assert node_class.inputs == compute_class(SPEC)
    summary = render.one("kubernetes:core/v1:ConfigMap", "summary")
    assert summary.inputs["metadata"] == {"name": "benchmark-summary", "namespace": "serving", "labels": LABELS}
    assert summary.inputs["data"] == summarizer().files()
    found = render.one("kubernetes:batch/v1:Job", "benchmark-3")
    assert found.inputs["spec"]["template"]["spec"]["containers"][0]["env"][0] == {"name": "BASE_URL", "value": SERVER}
    assert found.ignore_changes == ("metadata", "spec")
    assert node_class.urn in found.dependencies and summary.urn in found.dependencies
    api = render.one("gcp:projects/service:Service").urn
    cluster = render.one("pulumi:providers:kubernetes").urn
    children = [r for r in render.resources if r.parent == component]
    assert api in render.one("llm:serving:Benchmark").dependencies
    assert len(children) == 3 and all(api in r.dependencies and r.provider.startswith(cluster) for r in children)
    assert json.loads(json.dumps(found.inputs["metadata"]))["name"] == "benchmark-3"


def test_clients_that_finish_without_a_result_fail_the_run(tmp_path: Path) -> None:
    run = run_script(tmp_path, silent_seeds=(3_000_000, 3_000_001))
    assert run.code == 1 and "no client saved a result" in run.output
    assert not [call for call in run.calls if "benchmark_summary" in call]


def test_one_node_with_one_client_runs_it(tmp_path: Path) -> None:
    run = run_script(tmp_path, replace(SPEC, nodes=1))
    assert run.code == 0, run.output
    assert "starting 1 clients" in run.output.splitlines()
    assert len([call for call in run.calls if call.startswith("vllm ")]) == 1


def test_the_benchmarks_job_gets_the_api_key_and_the_hugging_face_token() -> None:
    def program() -> None:
        Benchmark(
            "benchmark",
            SPEC,
            base_url=pulumi.Output.from_input(f"{SERVER}/v1"),
            api_key=API_KEY,
            hf_token=HF_TOKEN,
            kubernetes=k8s.Provider("cluster"),
        )

    found = registered(program).one("kubernetes:batch/v1:Job", "benchmark-3")
    env = found.inputs["spec"]["template"]["spec"]["containers"][0]["env"]
    assert [e["name"] for e in env] == ["BASE_URL", "HF_HUB_DISABLE_TELEMETRY", "OPENAI_API_KEY", "HF_TOKEN"]
    assert env[2]["valueFrom"]["secretKeyRef"]["name"] == "api-key" and env[3]["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
