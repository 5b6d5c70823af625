"""The in-cluster benchmark: parallel ``vllm bench serve`` clients on a dedicated CPU node.

It follows the reference method (docs/reference.md): random
prompts of the stack's workload (input 1024, output 512, range ratio 0.5), no
prompt prefix shared within or across clients, several clients of ~1K
concurrency each on one 16-vCPU C4 node, their throughputs summed. The Job's
log ends with the sum and the TTFT, TPOT and ITL percentiles over every
request, as a table and as one ``BENCHMARK_RESULT {json}`` line
(``workloads/benchmark_summary.py``).

Pure builders make the client command lines, the script and the manifests;
``Benchmark`` only registers them.
"""

from __future__ import annotations

import shlex
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.credentials import SecretRef
from components.manifests import Manifest, guaranteed
from components.options import child_options
from components.programs import Program, program
from facts import gke
from plan.stack import BenchmarkSpec
from workloads import benchmark_summary as summarize

NAME = "benchmark"
COMPUTE_CLASS = "benchmark"
SUMMARY = "benchmark-summary"
SUMMARY_SOURCE = "workloads/benchmark_summary.py"
SUMMARY_DIR = "/opt/benchmark"
RESULT_DIR = "/results"
# The Job hands the server's URL to its script in this variable, so a gateway
# address known only after deployment never enters the builders.
URL_VARIABLE = "BASE_URL"
URL_FROM_ENV = "${" + URL_VARIABLE + "}"
# The script waits at most 60 x 10 s for the server to answer.
READY_ATTEMPTS = 60
READY_INTERVAL_SECONDS = 10
# The wait, the C4 node's provisioning (a few minutes) and the run: the
# reference's clients finish 10,240 prompts each in ~4 minutes (~83 requests/s
# per node); an hour leaves room for slower profiles and the gateway.
DEADLINE_MINUTES = 60
# Seeds of one run are run * SEEDS_PER_RUN + client index: clients never share
# prompts, and a rerun never replays prompts the servers may still have cached.
# Above the most clients a stack can ask for (16 per node x 1000 nodes).
SEEDS_PER_RUN = 1_000_000
# A c4-standard-16 has 16 vCPUs and 60 GB, of which GKE keeps some for the
# system. Requests above half the node keep any other pod of this size off it,
# and leave room for GKE's DaemonSets: the clients get the node alone.
CPU = "14"
MEMORY = "48Gi"
# Each client's detailed result (every gap and text of 10,240 requests) is ~100-200 MB.
EPHEMERAL_STORAGE = "10Gi"

# Exits 0 once GET <url>/v1/models answers; sends the API key when there is one.
_MODELS_ANSWER = """\
import os, sys, urllib.request
request = urllib.request.Request(sys.argv[1] + "/v1/models")
key = os.environ.get("OPENAI_API_KEY")
if key:
    request.add_header("Authorization", "Bearer " + key)
try:
    urllib.request.urlopen(request, timeout=10)
except Exception as error:
    print("not ready yet:", error)
    sys.exit(1)
"""


def client_count(spec: BenchmarkSpec) -> int:
    """Clients follow the serving nodes: ~2,000 concurrent requests per node in the reference."""
    return spec.clients_per_node * spec.nodes


def server_root(url: str) -> str:
    """What ``--base-url`` takes: the server's root, since the clients append ``/v1/completions`` themselves."""
    return url.rstrip("/").removesuffix("/v1")


def seed(spec: BenchmarkSpec, index: int) -> int:
    return spec.run * SEEDS_PER_RUN + index


def result_file(index: int) -> str:
    return f"client-{index}.json"


def client_command(spec: BenchmarkSpec, index: int, base_url: str) -> list[str]:
    """The ``vllm bench serve`` command line of client ``index`` (flags of vllm/benchmarks/serve.py, v0.18)."""
    return [
        "vllm",
        "bench",
        "serve",
        # The completions API at <base_url>/v1/completions, streamed.
        "--backend=openai",
        f"--base-url={base_url}",
        # The name the server answers to; prompts are built with the model's own tokenizer.
        f"--model={spec.served_name}",
        f"--tokenizer={spec.model_id}",
        "--dataset-name=random",
        f"--random-input-len={spec.input_tokens}",
        f"--random-output-len={spec.output_tokens}",
        f"--random-range-ratio={spec.range_ratio}",
        # No shared prefix: the reference measured with 0% prefix-cache hits.
        "--random-prefix-len=0",
        f"--seed={seed(spec, index)}",
        f"--num-prompts={spec.prompts_per_client}",
        f"--max-concurrency={spec.concurrency_per_client}",
        # Every request generates its drawn output length.
        "--ignore-eos",
        # Greedy, as the reference ran; newer vLLM otherwise takes the model's sampling defaults.
        "--temperature=0",
        "--percentile-metrics=ttft,tpot,itl",
        "--metric-percentiles=" + ",".join(str(p) for p in summarize.PERCENTILES),
        # Progress bars would fill the client logs.
        "--disable-tqdm",
        # Per-request data, which the summary needs for percentiles over all clients.
        "--save-result",
        "--save-detailed",
        f"--result-dir={RESULT_DIR}",
        f"--result-filename={result_file(index)}",
    ]


def _word(arg: str) -> str:
    """One shell word; the Job's URL variable alone is left for the shell to expand."""
    if URL_FROM_ENV not in arg:
        return shlex.quote(arg)
    return f'"{URL_FROM_ENV}"'.join(shlex.quote(part) if part else "" for part in arg.split(URL_FROM_ENV))


def benchmark_script(spec: BenchmarkSpec, base_url: str) -> str:
    """The Job's bash script: wait for the server, run every client at once, sum their results.

    ``base_url`` is the server's root, or ``URL_FROM_ENV`` to read it from the Job's environment.
    It never traces commands (``set -x``): the API key is in the environment.
    """
    count = client_count(spec)
    if count < 1:
        raise ValueError("llm:benchmark needs at least one serving node; llm:nodes is 0")
    summary = summarizer().path_of(SUMMARY_SOURCE)
    lines = [
        "set -euo pipefail",
        f"mkdir -p {RESULT_DIR}",
        f"echo waiting for {_word(base_url)}/v1/models",
        "ready=0",
        f"for attempt in $(seq 1 {READY_ATTEMPTS}); do",
        f"  if python3 -c {shlex.quote(_MODELS_ANSWER)} {_word(base_url)}; then ready=1; break; fi",
        f"  sleep {READY_INTERVAL_SECONDS}",
        "done",
        'if [ "$ready" != 1 ]; then',
        f'  echo "the server did not answer within {READY_ATTEMPTS * READY_INTERVAL_SECONDS} s"',
        "  exit 1",
        "fi",
        f"echo starting {count} clients",
        "pids=()",
    ]
    for index in range(count):
        command = " ".join(_word(arg) for arg in client_command(spec, index, base_url))
        lines += [f"{command} > {RESULT_DIR}/client-{index}.log 2>&1 &", 'pids+=("$!")']
    lines += [
        "failed=0",
        "results=()",
        'for index in "${!pids[@]}"; do',
        '  if wait "${pids[$index]}"; then',
        '    echo "client $index finished"',
        "  else",
        "    failed=$((failed + 1))",
        '    echo "client $index failed; the end of its log:"',
        f'    tail -n 50 "{RESULT_DIR}/client-$index.log" || true',
        "  fi",
        f'  if [ -f "{RESULT_DIR}/client-$index.json" ]; then results+=("{RESULT_DIR}/client-$index.json"); fi',
        "done",
        f'if [ "$failed" -gt 0 ]; then echo "$failed of {count} clients failed; the summary counts the others"; fi',
        # The summary's JSON line is the last line of the log.
        "summarized=0",
        'if [ "${#results[@]}" -gt 0 ]; then',
        f'  python3 {summary} "${{results[@]}}" || summarized=$?',
        "else",
        '  echo "no client saved a result"',
        "  summarized=1",
        "fi",
        'if [ "$failed" -gt 0 ]; then exit 1; fi',
        'exit "$summarized"',
    ]
    return "\n".join(lines) + "\n"


def compute_class(spec: BenchmarkSpec) -> dict[str, Any]:
    """The benchmark's own node: exactly the configured C4 machine, or none."""
    return {
        "apiVersion": gke.COMPUTE_CLASS_API,
        "kind": "ComputeClass",
        "metadata": {"name": COMPUTE_CLASS, "labels": spec.labels},
        "spec": {
            "description": f"Benchmark clients on a dedicated {spec.machine_type} node",
            "priorities": [{"machineType": spec.machine_type, "location": {"zones": [spec.zone]}}],
            "nodePoolAutoCreation": {"enabled": True},
            # A smaller or shared machine would make the clients the bottleneck.
            "whenUnsatisfiable": "DoNotScaleUp",
        },
    }


def summarizer() -> Program:
    """``workloads/benchmark_summary.py``, shipped as every workloads/ program is (components/programs.py)."""
    return program(SUMMARY, (SUMMARY_SOURCE,), SUMMARY_DIR)


def job_name(spec: BenchmarkSpec) -> str:
    return f"{NAME}-{spec.run}"


def job(spec: BenchmarkSpec, base_url: pulumi.Input[str], api_key: SecretRef | None, hf_token: SecretRef | None) -> dict[str, Any]:
    """The benchmark Job; ``base_url`` (the server's root) reaches the script as ``$BASE_URL``."""
    component = {"app.kubernetes.io/component": NAME}
    env: list[dict[str, Any]] = [
        {"name": URL_VARIABLE, "value": base_url},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
    ]
    if api_key is not None:
        # vllm bench serve sends $OPENAI_API_KEY as a bearer token.
        env.append(api_key.env("OPENAI_API_KEY"))
    if hf_token is not None:
        # The clients download the model's tokenizer; gated models need the token.
        env.append(hf_token.env("HF_TOKEN"))
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name(spec),
            "namespace": spec.namespace,
            "labels": {**spec.labels, **component},
            # `pulumi up` does not wait for the run: a failed run (it is never retried) would
            # otherwise be awaited again by every later update. Its log holds the result.
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": {
            # A retry would mix two runs in one log; run again by raising llm:benchmark.run.
            "backoffLimit": 0,
            "activeDeadlineSeconds": DEADLINE_MINUTES * 60,
            "template": {
                "metadata": {"labels": component},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {gke.COMPUTE_CLASS_LABEL: COMPUTE_CLASS},
                    "containers": [
                        {
                            "name": NAME,
                            "image": spec.image,
                            "command": ["bash", "-c", benchmark_script(spec, URL_FROM_ENV)],
                            "env": env,
                            "resources": guaranteed({"cpu": CPU, "memory": MEMORY, "ephemeral-storage": EPHEMERAL_STORAGE}),
                            "volumeMounts": [
                                summarizer().mount(),
                                {"name": "results", "mountPath": RESULT_DIR},
                            ],
                        }
                    ],
                    "volumes": [
                        summarizer().volume(),
                        {"name": "results", "emptyDir": {}},
                    ],
                },
            },
        },
    }


class Benchmark(pulumi.ComponentResource):
    """Registers the benchmark's ComputeClass, its summarizer ConfigMap and the Job, which ``pulumi up`` awaits."""

    def __init__(
        self,
        name: str,
        spec: BenchmarkSpec,
        *,
        base_url: pulumi.Input[str],
        api_key: SecretRef | None,
        hf_token: SecretRef | None,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:serving:Benchmark", name, None, opts)
        base = child_options(self, opts, kubernetes)
        node_class = Manifest("compute-class", compute_class(spec), base)
        summary = Manifest("summary", summarizer().config_map(spec.namespace, spec.labels), base)
        # The Service URL ends in /v1; the clients want the root.
        root = pulumi.Output.from_input(base_url).apply(server_root)
        self.job_name = job_name(spec)
        self.job = Manifest(
            self.job_name,
            job(spec, root, api_key, hf_token),
            pulumi.ResourceOptions.merge(
                base,
                pulumi.ResourceOptions(
                    depends_on=[node_class, summary],
                    # A finished run is a record: a later change of nodes, labels or the
                    # gateway address must not replace and so re-run it. A new run number
                    # is a new Job with the new settings.
                    ignore_changes=["metadata", "spec"],
                ),
            ),
        )
        self.clients = client_count(spec)
        self.register_outputs({"job": self.job_name, "clients": self.clients})
