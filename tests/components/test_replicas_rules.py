"""The replicas' command line, pod and objects on hand-made specs, and ``Replicas`` run alone under the mock engine."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from components.credentials import SecretRef
from components.replicas import Replicas, deployment, engine_args, pod_template, warm_up_command
from plan.stack import CacheMount, CompileCacheMount, Drain, EngineProfile, ReplicasSpec, Rollout, Scheduling
from render.engine import Render
from tests.components.alone import registered

PROFILE = EngineProfile(
    port=8123,
    tensor_parallel_size=1,
    data_parallel_size=4,
    expert_parallel=False,
    max_model_len=32768,
    max_num_batched_tokens=16384,
    max_num_seqs=384,
    kv_cache_dtype="fp8",
    gpu_memory_utilization=0.87,
    enable_prefix_caching=True,
    enable_chunked_prefill=True,
    attention_backend=None,
    optimization_level=3,
    mtp_tokens=0,
    mamba_cache_mode=None,
    mamba_block_size=None,
    extra_args=(),
    env={"VLLM_B": "2", "VLLM_A": "1"},
    cold_start_minutes=25,
    cpu="200",
    memory="1800Gi",
)
DRAIN = Drain(pre_stop_seconds=11, shutdown_timeout_seconds=50, grace_seconds=70)
SPOT = Scheduling(
    "spot",
    {"cloud.google.com/gke-spot": "true"},
    [{"key": "cloud.google.com/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
    may_run_on_spot=True,
)
CACHE = CacheMount(claim="model-cache-reader", folder="/models", model_path="/models/qwen-1234")
COMPILE = CompileCacheMount(bucket="example-compile-cache", folder="/compile-cache", service_account="vllm-compile-cache")
LABELS = {"app.kubernetes.io/name": "vllm", "team": "ml"}
SELECTOR = {"app.kubernetes.io/name": "vllm"}
SPEC = ReplicasSpec(
    name="vllm",
    namespace="serving",
    labels=LABELS,
    selector=SELECTOR,
    replicas=3,
    image="vllm/vllm-openai:v0.18.1",
    autoscaled=False,
    rollout=Rollout(max_surge=0, max_unavailable=2, rounds=2),
    profile=PROFILE,
    model_id="Qwen/Qwen3-8B",
    served_name="qwen",
    scheduling=SPOT,
    drain=DRAIN,
    cache=CACHE,
)
HF_TOKEN = SecretRef("hf-token")
API_KEY = SecretRef("api-key")


def test_the_command_line_carries_every_flag_of_the_profile() -> None:
    assert engine_args(PROFILE, "/models/qwen-1234", "qwen") == [
        "vllm",
        "serve",
        "/models/qwen-1234",
        "--served-model-name=qwen",
        "--host=0.0.0.0",
        "--port=8123",
        "--data-parallel-size=4",
        "--max-model-len=32768",
        "--max-num-batched-tokens=16384",
        "--max-num-seqs=384",
        "--kv-cache-dtype=fp8",
        "--gpu-memory-utilization=0.87",
        "--enable-prefix-caching",
        "--enable-chunked-prefill",
        "-O3",
    ]


def test_optional_flags_appear_only_when_set_and_extra_arguments_come_last() -> None:
    profile = replace(
        PROFILE,
        enable_prefix_caching=False,
        enable_chunked_prefill=False,
        attention_backend="FLASHINFER",
        optimization_level=2,
        mtp_tokens=3,
        mamba_cache_mode="align",
        mamba_block_size=256,
        extra_args=("--enforce-eager", "--seed=7"),
    )
    args = engine_args(profile, "Qwen/Qwen3-8B", "qwen", DRAIN)
    assert args[12:] == [
        "--no-enable-prefix-caching",
        "--no-enable-chunked-prefill",
        "--attention-backend=FLASHINFER",
        "-O2",
        '--speculative-config={"method":"mtp","num_speculative_tokens":3}',
        "--mamba-cache-mode=align",
        "--mamba-block-size=256",
        "--shutdown-timeout=50",
        "--enforce-eager",
        "--seed=7",
    ]


def container(spec: ReplicasSpec = SPEC, **secrets: SecretRef | None) -> dict[str, Any]:
    pod = pod_template(spec, hf_token=secrets.get("hf_token"), api_key=secrets.get("api_key"))
    (only,) = pod["spec"]["containers"]
    assert isinstance(only, dict)
    return only


def test_a_cached_replica_reads_its_weights_read_only_and_offline() -> None:
    pod = pod_template(SPEC, hf_token=HF_TOKEN, api_key=API_KEY)
    body = pod["spec"]
    assert body["volumes"] == [
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
        {"name": "model-cache", "persistentVolumeClaim": {"claimName": "model-cache-reader", "readOnly": True}},
    ]
    (engine,) = body["containers"]
    assert engine["volumeMounts"] == [
        {"name": "shm", "mountPath": "/dev/shm"},
        {"name": "model-cache", "mountPath": "/models", "readOnly": True},
    ]
    assert engine["command"][2] == "/models/qwen-1234" and "--shutdown-timeout=50" in engine["command"]
    # The token is not needed with a cache; the key comes from its Secret, never the command line.
    assert engine["env"] == [
        {"name": "VLLM_A", "value": "1"},
        {"name": "VLLM_B", "value": "2"},
        {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "api-key", "key": API_KEY.key}}},
        {"name": "HF_HUB_OFFLINE", "value": "1"},
    ]
    assert pod["metadata"] == {"labels": SELECTOR} and "serviceAccountName" not in body


def test_without_a_cache_the_weights_download_with_the_token() -> None:
    pod = pod_template(replace(SPEC, cache=None), hf_token=HF_TOKEN, api_key=None)["spec"]
    assert pod["volumes"] == [
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}},
        {"name": "downloads", "emptyDir": {}},
    ]
    engine = container(replace(SPEC, cache=None), hf_token=HF_TOKEN)
    assert engine["command"][2:4] == ["Qwen/Qwen3-8B", "--served-model-name=qwen"]
    assert engine["volumeMounts"][1] == {"name": "downloads", "mountPath": "/root/.cache/huggingface"}
    assert engine["env"][-1] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": HF_TOKEN.key}}}
    assert [e["name"] for e in engine["env"]] == ["VLLM_A", "VLLM_B", "HF_TOKEN"]
    assert [e["name"] for e in container(replace(SPEC, cache=None))["env"]] == ["VLLM_A", "VLLM_B"]


def test_the_pod_takes_eight_gpus_guaranteed_on_its_capacity_and_drains_in_its_grace() -> None:
    pod = pod_template(SPEC, hf_token=None, api_key=None)["spec"]
    assert pod["nodeSelector"] == {"cloud.google.com/gke-spot": "true"} and pod["tolerations"] == SPOT.tolerations
    assert pod["terminationGracePeriodSeconds"] == 70
    (engine,) = pod["containers"]
    amounts = {"nvidia.com/gpu": "8", "cpu": "200", "memory": "1800Gi", "ephemeral-storage": "100Gi"}
    assert engine["resources"] == {"requests": amounts, "limits": amounts}
    assert engine["lifecycle"] == {"preStop": {"sleep": {"seconds": 11}}}
    assert (engine["name"], engine["image"]) == ("vllm", "vllm/vllm-openai:v0.18.1")
    assert engine["ports"] == [{"name": "http", "containerPort": 8123, "protocol": "TCP"}]
    plain = Scheduling("reservation", {"cloud.google.com/reservation-name": "a4"})
    assert "tolerations" not in pod_template(replace(SPEC, scheduling=plain), hf_token=None, api_key=None)["spec"]


def test_started_means_every_engine_answered_and_then_health_decides() -> None:
    engine = container()
    assert engine["startupProbe"] == {
        "exec": {"command": warm_up_command(PROFILE, "qwen")},
        "periodSeconds": 10,
        "timeoutSeconds": 2 * 122,
        # 25 minutes of 10-second periods.
        "failureThreshold": 150,
    }
    health = {"httpGet": {"path": "/health", "port": "http"}}
    assert engine["readinessProbe"] == {**health, "periodSeconds": 5, "timeoutSeconds": 5, "failureThreshold": 3}
    assert engine["livenessProbe"] == {**health, "periodSeconds": 15, "timeoutSeconds": 10, "failureThreshold": 4}
    command = warm_up_command(PROFILE, "qwen")
    assert command[:2] == ["python3", "-c"] and command[3:] == ["http://127.0.0.1:8123/v1/completions", "qwen", "4"]


@pytest.mark.parametrize(("finish", "code"), [("length", 0), (None, 1)])
def test_the_warm_up_script_passes_only_when_each_completion_finished(finish: str | None, code: int, tmp_path: Any) -> None:
    """The probe's program run against a local server that answers as vLLM's completions API does."""
    server = tmp_path / "server.py"
    server.write_text(
        "import http.server, json, sys\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_POST(self):\n"
        "        body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))\n"
        "        assert body == {'model': 'qwen', 'prompt': 'Hello', 'max_tokens': 1}, body\n"
        f"        answer = json.dumps({{'choices': [{{'finish_reason': {finish!r}}}]}}).encode()\n"
        "        self.send_response(200); self.send_header('Content-Length', str(len(answer))); self.end_headers()\n"
        "        self.wfile.write(answer)\n"
        "    def log_message(self, *args): pass\n"
        "s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)\n"
        "print(s.server_address[1], flush=True)\n"
        "s.serve_forever()\n"
    )
    with subprocess.Popen([sys.executable, str(server)], stdout=subprocess.PIPE, text=True) as running:
        try:
            assert running.stdout is not None
            port = int(running.stdout.readline())
            command = warm_up_command(replace(PROFILE, port=port), "qwen")
            done = subprocess.run([sys.executable, *command[1:]], timeout=30, check=False)
            assert done.returncode == code
        finally:
            running.kill()


def test_the_compile_cache_is_a_fuse_bucket_every_jit_cache_lives_in() -> None:
    pod = pod_template(replace(SPEC, compile_cache=COMPILE), hf_token=None, api_key=None)
    body = pod["spec"]
    assert body["serviceAccountName"] == "vllm-compile-cache"
    assert body["volumes"][-1] == {
        "name": "compile-cache",
        "csi": {
            "driver": "gcsfuse.csi.storage.gke.io",
            "volumeAttributes": {
                "bucketName": "example-compile-cache",
                "mountOptions": "implicit-dirs,precondition-errors=false,write:global-max-blocks:16",
            },
        },
    }
    (engine,) = body["containers"]
    assert engine["volumeMounts"][-1] == {"name": "compile-cache", "mountPath": "/compile-cache"}
    assert engine["env"][2:] == [
        {"name": "HF_HUB_OFFLINE", "value": "1"},
        {"name": "VLLM_CACHE_ROOT", "value": "/compile-cache"},
        {"name": "FLASHINFER_WORKSPACE_BASE", "value": "/compile-cache/flashinfer"},
        {"name": "TORCHINDUCTOR_CACHE_DIR", "value": "/compile-cache/torchinductor"},
        {"name": "TRITON_CACHE_DIR", "value": "/compile-cache/triton"},
    ]
    assert pod["metadata"] == {
        "labels": SELECTOR,
        "annotations": {
            "gke-gcsfuse/volumes": "true",
            "gke-gcsfuse/memory-request": "1536Mi",
            "gke-gcsfuse/memory-limit": "1536Mi",
            "gke-gcsfuse/cpu-request": "1",
            "gke-gcsfuse/cpu-limit": "1",
        },
    }


def test_the_deployment_rolls_in_rounds_each_given_a_cold_start_and_a_node() -> None:
    template = {"metadata": {"labels": SELECTOR}}
    assert deployment(SPEC, template) == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "vllm", "namespace": "serving", "labels": LABELS},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": SELECTOR},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 2}},
            "progressDeadlineSeconds": (25 + 10) * 60,
            "template": template,
        },
    }


def replicas_alone(spec: ReplicasSpec, made: list[Replicas] | None = None) -> Render:
    """``Replicas`` after an API it is told to wait for, as the stack registers it."""

    def program() -> None:
        api = gcp.projects.Service("api", service="container.googleapis.com")
        replicas = Replicas(
            "vllm",
            spec,
            hf_token=HF_TOKEN,
            api_key=API_KEY,
            kubernetes=k8s.Provider("cluster"),
            opts=pulumi.ResourceOptions(depends_on=[api]),
        )
        (made if made is not None else []).append(replicas)

    return registered(program)


def test_the_replicas_register_their_deployment_service_monitoring_and_budget() -> None:
    render = replicas_alone(SPEC)
    component = render.one("llm:serving:ReplicaSet", "vllm")
    cluster = render.one("pulumi:providers:kubernetes").urn
    found = render.one("kubernetes:apps/v1:Deployment", "vllm")
    assert found.inputs["spec"]["template"] == json.loads(json.dumps(pod_template(SPEC, hf_token=HF_TOKEN, api_key=API_KEY)))
    # A round is a cold start and a node: 35 minutes; two rounds for an update.
    assert found.custom_timeouts == {"create": "35m", "update": "70m"} and found.ignore_changes == ()
    service = render.one("kubernetes:core/v1:Service", "vllm").inputs
    assert service["metadata"] == {
        "name": "vllm",
        "namespace": "serving",
        "labels": LABELS,
        "annotations": {"pulumi.com/skipAwait": "true"},
    }
    assert service["spec"] == {
        "type": "ClusterIP",
        "selector": SELECTOR,
        "ports": [{"name": "http", "port": 8123, "targetPort": "http", "protocol": "TCP"}],
    }
    monitoring = render.one("kubernetes:monitoring.googleapis.com/v1:PodMonitoring", "vllm").inputs
    assert monitoring["metadata"] == {"name": "vllm-replicas", "namespace": "serving", "labels": LABELS}
    assert monitoring["spec"] == {
        "selector": {"matchLabels": SELECTOR},
        "endpoints": [{"port": "http", "path": "/metrics", "interval": "30s"}],
    }
    budget = render.one("kubernetes:policy/v1:PodDisruptionBudget", "vllm").inputs
    assert budget["metadata"] == {"name": "vllm", "namespace": "serving", "labels": LABELS}
    assert budget["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": SELECTOR}}
    children = [r for r in render.resources if r.type.startswith("kubernetes:")]
    assert len(children) == 4 and all(r.parent == component.urn and r.provider.startswith(cluster) for r in children)
    api = render.one("gcp:projects/service:Service").urn
    assert api in component.dependencies and all(api in r.dependencies for r in children)


def test_replicas_without_a_cache_download_with_the_stacks_token_and_serve_at_their_url() -> None:
    made: list[Replicas] = []
    render = replicas_alone(replace(SPEC, cache=None), made)
    env = render.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": HF_TOKEN.key}}} in env
    assert made[0].url == "http://vllm.serving.svc.cluster.local:8123/v1"


def test_an_autoscaled_deployment_leaves_its_replica_count_to_the_autoscaler() -> None:
    render = replicas_alone(replace(SPEC, autoscaled=True, rollout=Rollout(max_surge=1, max_unavailable=0, rounds=3)))
    found = render.one("kubernetes:apps/v1:Deployment", "vllm")
    assert found.ignore_changes == ("spec.replicas",) and found.custom_timeouts == {"create": "35m", "update": "105m"}
