"""The vLLM replica set: the reference engine, one pod per node, sized for a long cold start."""

from __future__ import annotations

from typing import Any

import pytest

from components.replicas import engine_args
from facts.models import catalogue_folder, facts_in
from facts.naming import selector_labels
from facts.vllm import DEFAULT_RELEASE, facts
from plan.stack import engine_profile
from render.engine import Render, Secret, render_stack, stack_settings
from stacks.serving import ServingProfile
from tests.conftest import render_with, rendered

# The tuned flags of the reference deployment, flag for flag (docs/reference.md).
REFERENCE_FLAGS = [
    "--data-parallel-size=8",
    "--max-model-len=2560",
    "--max-num-batched-tokens=16384",
    "--kv-cache-dtype=fp8_e4m3",
    "--gpu-memory-utilization=0.92",
    "--enable-prefix-caching",
    "--enable-chunked-prefill",
    "--attention-backend=FLASHINFER",
    "-O3",
    '--speculative-config={"method":"mtp","num_speculative_tokens":1}',
    "--mamba-cache-mode=align",
    "--mamba-block-size=8",
]

# The catalogue's hybrid MTP model: every flag of the table applies to it.
QWEN = facts_in(catalogue_folder("Qwen/Qwen3.5-27B-FP8"), "Qwen/Qwen3.5-27B-FP8")


def deployment(render: Render) -> dict[str, Any]:
    inputs: dict[str, Any] = render.one("kubernetes:apps/v1:Deployment", "vllm").inputs
    return inputs


def container(render: Render) -> dict[str, Any]:
    found: dict[str, Any] = deployment(render)["spec"]["template"]["spec"]["containers"][0]
    return found


def test_dev_engine_command_line_matches_the_reference_flag_for_flag() -> None:
    command = container(rendered("dev"))["command"]
    assert command[:2] == ["vllm", "serve"]
    flags = command[3:]
    served = ["--served-model-name=Qwen/Qwen3.5-27B-FP8", "--host=0.0.0.0", "--port=8000"]
    # dev runs on Spot: 25 s of grace, 5 of them for endpoints to drop the pod and 7 for vLLM's teardown.
    drain = ["--shutdown-timeout=13"]
    # The reference's 8192 sequences do not start on a current vLLM: the count is the memory plan's (docs/memory.md).
    seqs = [f"--max-num-seqs={stack_settings('dev').max_num_seqs}"]
    assert sorted(flags) == sorted(REFERENCE_FLAGS + served + drain + seqs)


def test_dev_engine_environment_counts_cuda_graph_memory() -> None:
    env = {e["name"]: e.get("value") for e in container(rendered("dev"))["env"]}
    assert env["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"] == "1"


def test_profile_changes_reach_the_command_line() -> None:
    args = engine_args(
        engine_profile(ServingProfile(mtp_tokens=0, attention_backend=None, extra_args=("--seed=7",)), QWEN, 256), "/m", "name"
    )
    assert not any(a.startswith(("--speculative-config", "--attention-backend")) for a in args)
    assert args[-1] == "--seed=7"


def test_the_image_is_pinned_and_overridable() -> None:
    registry = "europe-west4-docker.pkg.dev/llm-serving-dev/docker-hub"
    assert container(rendered("dev"))["image"] == f"{registry}/vllm/vllm-openai:v0.18.1"
    changed = render_with("dev", serving={"image": "vllm/vllm-openai:v0.33.0"})
    assert container(changed)["image"] == f"{registry}/vllm/vllm-openai:v0.33.0"
    direct = render_with("dev", serving={"image": "vllm/vllm-openai:v0.33.0"}, registry={"enabled": False})
    assert container(direct)["image"] == "vllm/vllm-openai:v0.33.0"


def test_prod_runs_twelve_replicas_on_the_reservation() -> None:
    render = rendered("prod")
    spec = deployment(render)["spec"]
    assert spec["replicas"] == 12
    selector = spec["template"]["spec"]["nodeSelector"]
    assert selector["cloud.google.com/reservation-name"] == "a4-llm-serving"
    assert selector["cloud.google.com/reservation-affinity"] == "specific"


def test_a_rollout_needs_no_extra_gpu_node_and_replaces_rollout_parallelism_replicas_at_once() -> None:
    strategy = deployment(rendered("prod"))["spec"]["strategy"]
    assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 4}}
    one_by_one = deployment(render_with("prod", rollout={"parallelism": 1}))["spec"]["strategy"]
    assert one_by_one["rollingUpdate"]["maxUnavailable"] == 1


def test_probes_and_timeouts_allow_a_25_minute_cold_start() -> None:
    render = rendered("dev")
    probe = container(render)["startupProbe"]
    assert probe["periodSeconds"] * probe["failureThreshold"] >= 25 * 60
    assert deployment(render)["spec"]["progressDeadlineSeconds"] > 25 * 60
    timeouts = render.one("kubernetes:apps/v1:Deployment", "vllm").custom_timeouts
    assert timeouts["create"] == timeouts["update"] == "35m"


def test_an_update_may_take_a_cold_start_per_round_of_the_rollout() -> None:
    # 12 replicas, 4 at a time: 3 cold starts in a row on prod; one at a time: 12.
    timeouts = rendered("prod").one("kubernetes:apps/v1:Deployment", "vllm").custom_timeouts
    assert (timeouts["create"], timeouts["update"]) == ("35m", f"{3 * 35}m")
    one_by_one = render_with("prod", rollout={"parallelism": 1}).one("kubernetes:apps/v1:Deployment", "vllm").custom_timeouts
    assert one_by_one["update"] == f"{12 * 35}m"


def test_shared_memory_is_a_memory_backed_volume() -> None:
    pod = deployment(rendered("dev"))["spec"]["template"]["spec"]
    assert {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}} in pod["volumes"]
    assert {"name": "shm", "mountPath": "/dev/shm"} in container(rendered("dev"))["volumeMounts"]


def test_service_and_monitoring_select_the_replica_pods_on_the_vllm_port() -> None:
    render = rendered("dev")
    labels = selector_labels("dev")
    assert deployment(render)["spec"]["selector"]["matchLabels"] == labels
    assert labels.items() <= deployment(render)["spec"]["template"]["metadata"]["labels"].items()
    service = render.one("kubernetes:core/v1:Service", "vllm").inputs["spec"]
    assert service["type"] == "ClusterIP" and service["selector"] == labels
    assert service["ports"][0]["port"] == container(render)["ports"][0]["containerPort"] == 8000
    monitoring = render.one("kubernetes:monitoring.googleapis.com/v1:PodMonitoring").inputs["spec"]
    assert monitoring["selector"]["matchLabels"] == labels
    assert monitoring["endpoints"][0]["path"] == "/metrics"


def test_changing_the_port_moves_service_probes_and_container_together() -> None:
    render = render_with("dev", serving={"port": 9000})
    assert "--port=9000" in container(render)["command"]
    assert container(render)["ports"][0]["containerPort"] == 9000
    assert render.one("kubernetes:core/v1:Service", "vllm").inputs["spec"]["ports"][0]["port"] == 9000


def test_the_api_key_reaches_vllm_from_a_secret_and_stays_secret() -> None:
    render = render_stack("dev", secrets={"apiKey": "sk-test-key"})
    secret = render.one("kubernetes:core/v1:Secret", "vllm-api-key")
    assert isinstance(secret.inputs["stringData"], Secret)
    env = container(render)["env"]
    assert {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-api-key", "key": "value"}}} in env
    assert not any("sk-test-key" in str(arg) for arg in container(render)["command"])


def test_without_an_api_key_no_secret_is_created() -> None:
    assert rendered("dev").by_type("kubernetes:core/v1:Secret") == []


def test_switching_prefix_caching_or_chunked_prefill_off_reaches_vllm() -> None:
    # vLLM 0.18.1 turns both on by default: leaving the flag out would keep them on.
    profile = ServingProfile(
        enable_prefix_caching=False, enable_chunked_prefill=False, max_num_batched_tokens=8192, max_num_seqs=1024, mamba_cache_mode=None
    )
    args = engine_args(engine_profile(profile, QWEN, 1024), "m", "m")
    assert "--no-enable-prefix-caching" in args and "--no-enable-chunked-prefill" in args
    assert not {"--enable-prefix-caching", "--enable-chunked-prefill"} & set(args)
    known = facts(DEFAULT_RELEASE).serve_flags
    assert {"--no-enable-prefix-caching", "--no-enable-chunked-prefill"} <= known


@pytest.mark.parametrize(
    ("switches", "on", "off"),
    [
        # The mamba cache mode needs both on, so it goes with either.
        (
            {"enable_prefix_caching": False, "mamba_cache_mode": None, "mamba_block_size": None},
            "--enable-chunked-prefill",
            "--no-enable-prefix-caching",
        ),
        (
            {
                "enable_chunked_prefill": False,
                "max_num_batched_tokens": 8192,
                "max_num_seqs": 1024,
                "mamba_cache_mode": None,
                "mamba_block_size": None,
            },
            "--enable-prefix-caching",
            "--no-enable-chunked-prefill",
        ),
    ],
    ids=["prefix-caching-off", "chunked-prefill-off"],
)
def test_each_of_prefix_caching_and_chunked_prefill_switches_off_alone(switches: dict[str, Any], on: str, off: str) -> None:
    args = engine_args(engine_profile(ServingProfile(**switches), QWEN, 256), "m", "m")
    assert off in args and on in args
    assert off.replace("--no-", "--") not in args and on.replace("--", "--no-", 1) not in args
