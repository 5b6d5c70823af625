"""Each spec field of the plan against the key it comes from, on settings that set every key away from its default.

A field the plan dropped, swapped or left at its default would still read right on the default settings; here every
key holds a value of its own, so each field can only match when it was carried. The expected values are the
settings written out again, or worked out here from them (minutes to seconds, nodes times GPUs, a mirrored name),
never read back from the plan.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from facts.models import catalogue_folder, facts_in
from plan.stack import BatchWindow, StackPlan, plan_stack
from stacks.settings import StackSettings

# A config.json for model ids the catalogue lacks (llm:model.config): the 27B's.
OWN_CONFIG = "facts/data/models/Qwen--Qwen3.5-27B-FP8/config.json"

PROJECT = "other-project-7"
MIRROR = f"us-central1-docker.pkg.dev/{PROJECT}"
LABELS = {"app": "llm-serving", "managed-by": "pulumi", "stack": "full", "team": "research"}
WINDOW = {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
CHANNEL = f"projects/{PROJECT}/notificationChannels/123"
# Every key away from its default, where the rules allow it together (a gateway stack that autoscales and runs batches).
FULL: dict[str, Any] = {
    "project": PROJECT,
    "region": "us-central1",
    "zone": "us-central1-b",
    "nodes": 3,
    "routing": "gateway",
    "production": True,
    "allowPublicExposure": True,
    "allowPublicNodes": True,
    "allowOpenControlPlane": True,
    "labels": {"team": "research"},
    "network": {"name": "serving-net", "nodeCidr": "10.10.0.0/20", "podCidr": "10.20.0.0/14", "serviceCidr": "10.30.0.0/20"},
    "cluster": {
        "name": "serving-cluster",
        "releaseChannel": "regular",
        "version": "1.34",
        "namespace": "serving",
        "maintenance": {"window": WINDOW},
        "privateNodes": False,
        "authorizedNetworks": ["203.0.113.0/24"],
    },
    "capacity": {
        "mode": "reservation",
        "reservation": {"name": "a4-held", "project": "shared-capacity", "nodes": 7},
        "pricePerNodeHour": 50.0,
    },
    "model": {"id": "Qwen/Qwen3.5-27B", "revision": "abc123", "servedName": "chat", "config": OWN_CONFIG},
    "serving": {
        "image": "vllm/vllm-openai:v0.26.0",
        "port": 9000,
        "maxModelLen": 4096,
        "maxNumBatchedTokens": 8192,
        "maxNumSeqs": 256,
        "kvCacheDtype": "fp8",
        "gpuMemoryUtilization": 0.9,
        "enablePrefixCaching": False,
        "enableChunkedPrefill": False,
        "attentionBackend": "FLASH_ATTN",
        "optimizationLevel": 2,
        "mtpTokens": 2,
        "mambaCacheMode": "none",
        "mambaBlockSize": 16,
        "extraArgs": ["--seed=7"],
        "env": {"VLLM_LOGGING_LEVEL": "DEBUG"},
        "coldStartMinutes": 40,
        "cpu": "150",
        "memory": "1500Gi",
    },
    "cache": {
        "sizeGi": 200,
        "throughputMibps": 1200,
        "downloadMethod": "hf",
        "downloadMachineFamily": "c3",
        "downloadImage": "python:3.13.1-slim",
        "downloadRetries": 5,
        "downloadDeadlineMinutes": 90,
        "pricePerGibMonth": 0.1,
        "pricePerMibpsMonth": 0.2,
        "snapshotPricePerGibMonth": 0.03,
    },
    "gateway": {
        "exposure": "external",
        "proxySubnetCidr": "10.40.0.0/23",
        "installCrds": "always",
        "chartVersion": "v1.5.0",
        "backendTimeoutSeconds": 600,
        "endpointPickerCpu": "6",
        "endpointPickerMemory": "8Gi",
        "endpointPickerReplicas": 2,
        "programmedTimeoutMinutes": 20,
        "pricePerVcpuHour": 0.05,
        "pricePerGibHour": 0.006,
        "loadBalancerPricePerHour": 0.03,
    },
    "autoscaling": {
        "enabled": True,
        "minReplicas": 1,
        "maxReplicas": 6,
        "requestsPerReplica": 500,
        "idleMinutes": 20,
        "pollSeconds": 45,
        "batchWindows": [{"start": "0 22 * * 1-5", "end": "0 6 * * 2-6", "timezone": "Europe/Amsterdam", "replicas": 4}],
    },
    "observability": {
        "notificationChannels": [CHANNEL],
        "minutes": 5,
        "waitingRequests": 100,
        "kvCacheUsage": 0.9,
        "ttftP99Seconds": 20.0,
        "throughputFraction": 0.7,
    },
    "drain": {"preStopSeconds": 15, "shutdownTimeoutSeconds": 60},
    "batch": {"enabled": True, "finishedRetentionDays": 14, "runnerCpu": "2", "runnerMemory": "2Gi"},
}


def plan(values: dict[str, Any], stack: str = "full") -> StackPlan:
    return plan_stack(StackSettings.model_validate(values), stack)


def merged(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """``base`` with each section in ``changes`` updated key by key (a non-dict value replaces)."""
    result = dict(base)
    for key, value in changes.items():
        result[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return result


# Built for each test: the mutation run maps each function to the tests that call it, and a plan shared by
# the module would count as the first test's only.
@pytest.fixture
def full() -> StackPlan:
    return plan(FULL)


def test_the_provider_apis_and_outputs_carry_the_project_region_and_zone(full: StackPlan) -> None:
    assert (full.provider.project, full.provider.region, full.provider.zone) == (PROJECT, "us-central1", "us-central1-b")
    assert full.apis.project == PROJECT
    assert full.outputs.region == "us-central1" and full.outputs.vllm_version == "0.26.0"
    assert full.outputs.serving == {
        "nodes": 3,
        # One engine per GPU, eight GPUs per A4 node.
        "gpus": 24,
        "capacity": "reservation",
        "routing": "gateway",
        "model": "Qwen/Qwen3.5-27B@abc123",
        "image": "vllm/vllm-openai:v0.26.0",
    }


def test_the_network_is_the_configured_vpc_its_ranges_and_nat_only_for_private_nodes(full: StackPlan) -> None:
    network = full.network
    assert (network.project, network.region, network.name) == (PROJECT, "us-central1", "serving-net")
    assert (network.node_cidr, network.pod_cidr, network.service_cidr) == ("10.10.0.0/20", "10.20.0.0/14", "10.30.0.0/20")
    # Public nodes reach the internet themselves: no router and NAT.
    assert network.nat is False and network.protect is True
    private = plan({"project": PROJECT}).network
    assert private.nat is True and private.protect is False


def test_the_cluster_spec_carries_every_cluster_key_and_names_the_nodes_account_after_the_cluster(full: StackPlan) -> None:
    cluster = full.cluster
    assert (cluster.project, cluster.region, cluster.name) == (PROJECT, "us-central1", "serving-cluster")
    assert cluster.node_account == "serving-cluster-nodes"
    assert (cluster.release_channel, cluster.version, cluster.namespace) == ("regular", "1.34", "serving")
    assert cluster.deletion_protection is True and cluster.protect is True
    assert cluster.private_nodes is False and cluster.authorized_networks == ("203.0.113.0/24",)
    assert cluster.open_control_plane is True and cluster.labels == LABELS
    assert cluster.maintenance.window is not None and cluster.maintenance.window.start_time == "2026-01-03T02:00:00Z"


def test_a_cluster_without_deletion_protection_says_so() -> None:
    cluster = plan({"project": PROJECT, "cluster": {"deletionProtection": False}}).cluster
    assert cluster.deletion_protection is False and cluster.open_control_plane is False and cluster.protect is False
    assert cluster.private_nodes is True and cluster.authorized_networks == ()


def test_the_registry_and_credentials_are_the_stacks_own(full: StackPlan) -> None:
    assert full.registry is not None
    assert (full.registry.project, full.registry.region, full.registry.labels) == (PROJECT, "us-central1", LABELS)
    assert (full.credentials.namespace, full.credentials.labels) == ("serving", LABELS)
    assert plan(merged(FULL, registry={"enabled": False})).registry is None


def test_the_engine_profile_carries_every_serving_key(full: StackPlan) -> None:
    profile = full.replicas.profile
    assert (profile.port, profile.data_parallel_size, profile.max_model_len) == (9000, 8, 4096)
    assert (profile.max_num_batched_tokens, profile.max_num_seqs, profile.kv_cache_dtype) == (8192, 256, "fp8")
    assert profile.gpu_memory_utilization == 0.9
    assert profile.enable_prefix_caching is False and profile.enable_chunked_prefill is False
    assert (profile.attention_backend, profile.optimization_level, profile.mtp_tokens) == ("FLASH_ATTN", 2, 2)
    assert (profile.mamba_cache_mode, profile.mamba_block_size) == ("none", 16)
    assert profile.extra_args == ("--seed=7",) and profile.env == {"VLLM_LOGGING_LEVEL": "DEBUG"}
    assert (profile.cold_start_minutes, profile.cpu, profile.memory) == (40, "150", "1500Gi")


def test_the_engine_profile_defaults_are_the_reference_flags() -> None:
    profile = plan({"project": PROJECT}).replicas.profile
    assert profile.enable_prefix_caching is True and profile.enable_chunked_prefill is True
    assert (profile.kv_cache_dtype, profile.attention_backend) == ("fp8_e4m3", "FLASHINFER")
    # Not the reference's 8192: the memory plan's count, which starts on a current vLLM (docs/memory.md).
    assert profile.max_num_seqs == StackSettings.model_validate({"project": PROJECT}).max_num_seqs < 8192


def test_the_mamba_cache_mode_is_sent_only_to_a_release_that_acts_on_it() -> None:
    # vLLM 0.18.1 takes --mamba-cache-mode; 0.33.0 deprecates it as having no effect (facts/data/vllm/0.33.0.yaml).
    taken = plan({"project": PROJECT}).replicas.profile
    assert taken.mamba_cache_mode == "align"
    ignored = plan({"project": PROJECT, "serving": {"image": "vllm/vllm-openai:v0.33.0"}}).replicas.profile
    assert ignored.mamba_cache_mode is None and ignored.mamba_block_size == 8


def test_the_replicas_serve_the_configured_model_under_its_public_name(full: StackPlan) -> None:
    replicas = full.replicas
    assert (replicas.model_id, replicas.served_name) == ("Qwen/Qwen3.5-27B", "chat")
    assert replicas.image == f"{MIRROR}/docker-hub/vllm/vllm-openai:v0.26.0"
    assert (replicas.namespace, replicas.replicas, replicas.labels) == ("serving", 3, LABELS)
    # Off Spot: the configured pause and timeout, plus vLLM's 7 s teardown.
    assert (replicas.drain.pre_stop_seconds, replicas.drain.shutdown_timeout_seconds, replicas.drain.grace_seconds) == (15, 60, 82)


def test_the_cache_spec_carries_every_cache_key(full: StackPlan) -> None:
    cache = full.cache
    assert cache is not None
    assert (cache.namespace, cache.zone, cache.labels) == ("serving", "us-central1-b", LABELS)
    assert (cache.model_id, cache.revision, cache.size_gi, cache.throughput_mibps) == ("Qwen/Qwen3.5-27B", "abc123", 200, 1200)
    assert (cache.download_method, cache.download_machine_family) == ("hf", "c3")
    assert (cache.download_retries, cache.download_deadline_minutes) == (5, 90)
    assert cache.download_image == f"{MIRROR}/docker-hub/library/python:3.13.1-slim"
    assert cache.protect is True and cache.key.startswith("qwen3-5-27b-")


def test_the_autoscaling_spec_carries_every_autoscaling_key(full: StackPlan) -> None:
    scaling = full.autoscaling
    assert scaling is not None
    assert (scaling.requests_per_replica, scaling.idle_minutes, scaling.poll_seconds) == (500, 20, 45)
    assert (scaling.min_replicas, scaling.max_replicas, scaling.keda_version) == (1, 6, "2.20.2")
    assert scaling.batch_windows == (BatchWindow("0 22 * * 1-5", "0 6 * * 2-6", "Europe/Amsterdam", 4),)
    assert scaling.cold_start_seconds == 40 * 60
    assert scaling.image_registry == f"{MIRROR}/ghcr-io"
    # KEDA's Google account is named after the cluster: a fixed id is taken by the first stack of a project.
    assert scaling.account_id == "serving-cluster-keda"


def test_the_gateway_spec_carries_every_gateway_key(full: StackPlan) -> None:
    gateway = full.gateway
    assert gateway is not None
    assert (gateway.exposure, gateway.install_crds, gateway.chart_version) == ("external", "always", "v1.5.0")
    assert gateway.backend_timeout_seconds == 600
    assert (gateway.endpoint_picker_cpu, gateway.endpoint_picker_memory, gateway.endpoint_picker_replicas) == ("6", "8Gi", 2)
    assert (gateway.programmed_timeout_minutes, gateway.port, gateway.cluster_minor) == (20, 9000, 34)
    assert gateway.image_registry == f"{MIRROR}/registry-k8s-io"


def test_the_gateways_proxy_subnet_is_created_unless_an_existing_one_is_named(full: StackPlan) -> None:
    created = full.proxy_subnet
    assert created is not None
    assert (created.project, created.region, created.name, created.cidr) == (
        PROJECT,
        "us-central1",
        "serving-net-proxy-only",
        "10.40.0.0/23",
    )
    assert created.create is True
    existing = plan(merged(FULL, gateway={"existingProxySubnet": "shared-proxy"})).proxy_subnet
    assert existing is not None and existing.name == "shared-proxy" and existing.create is False
    assert plan(merged(FULL, routing="clusterip")).proxy_subnet is None


def test_the_batch_spec_carries_the_runners_size_and_its_idle_tail(full: StackPlan) -> None:
    batch = full.batch
    assert batch is not None
    assert (batch.runner_cpu, batch.runner_memory, batch.finished_retention_days) == ("2", "2Gi", 14)
    # KEDA's cooldown (idleMinutes) plus one poll: 20 min and 45 s.
    assert batch.idle_tail_seconds == 20 * 60 + 45
    assert (batch.concurrency_per_replica, batch.poll_seconds, batch.served_model) == (500, 45, "chat")
    assert batch.account_id == "serving-cluster-batch"


def test_observability_carries_every_observability_key(full: StackPlan) -> None:
    observed = full.observability
    assert observed is not None
    assert (observed.alert_minutes, observed.notification_channels, observed.waiting_requests) == (5, (CHANNEL,), 100)
    assert (observed.kv_cache_usage, observed.ttft_p99_seconds, observed.throughput_fraction) == (0.9, 20.0, 0.7)
    assert (observed.cold_start_minutes, observed.gateway, observed.batch) == (40, True, True)


def test_the_costing_reads_the_node_counts_prices_cache_and_gateway(full: StackPlan) -> None:
    costs = full.costing
    assert (costs.nodes, costs.max_replicas, costs.min_replicas, costs.price_per_node_hour) == (3, 6, 1, 50.0)
    assert costs.cache is not None
    assert (costs.cache.size_gi, costs.cache.throughput_mibps) == (200, 1200)
    assert (costs.cache.price_per_gib_month, costs.cache.price_per_mibps_month, costs.cache.snapshot_price_per_gib_month) == (
        0.1,
        0.2,
        0.03,
    )
    assert costs.gateway is not None
    assert (costs.gateway.endpoint_picker_cpu, costs.gateway.endpoint_picker_memory, costs.gateway.endpoint_picker_replicas) == (
        "6",
        "8Gi",
        2,
    )
    assert (costs.gateway.price_per_vcpu_hour, costs.gateway.price_per_gib_hour) == (0.05, 0.006)
    assert (costs.gateway.exposure, costs.gateway.load_balancer_price_per_hour) == ("external", 0.03)
    assert costs.unmeasured == "model Qwen/Qwen3.5-27B was not measured"


def test_the_costing_has_no_minimum_without_autoscaling_no_cache_when_off_and_no_gateway_on_clusterip() -> None:
    costs = plan({"project": PROJECT, "nodes": 2, "autoscaling": {"minReplicas": 2}, "cache": {"enabled": False}}).costing
    assert (costs.nodes, costs.max_replicas, costs.min_replicas) == (2, 2, None)
    assert costs.cache is None and costs.gateway is None


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({}, None),
        # What the estimates do not depend on keeps the reference.
        ({"serving": {"port": 9000, "coldStartMinutes": 40, "cpu": "150", "memory": "1500Gi"}}, None),
        ({"model": {"id": "Qwen/Qwen3.5-27B", "config": OWN_CONFIG}}, "model Qwen/Qwen3.5-27B was not measured"),
        ({"workload": {"outputTokens": 256}}, "workload differs from the reference (input 1024, output 512, range 0.5)"),
        ({"serving": {"maxNumSeqs": 512}}, "serving profile differs from the reference flags"),
    ],
)
def test_the_estimates_say_why_no_reference_figure_applies(values: dict[str, Any], reason: str | None) -> None:
    assert plan({"project": PROJECT, **values}).costing.unmeasured == reason


def test_the_expected_cold_start_reads_the_cache_the_stack_keeps(full: StackPlan) -> None:
    cold = full.estimate.cold_start
    assert cold is not None and cold.replicas == 6
    # The 27B's weights and MTP drafter (the config the stack names) read by 6 nodes sharing 1,200 MiB/s.
    model = facts_in(catalogue_folder("Qwen/Qwen3.5-27B-FP8"), "Qwen/Qwen3.5-27B-FP8")
    assert math.isclose(cold.weights.seconds or 0, (model.weight_bytes + model.mtp_weight_bytes) / (1200 / 6 * 2**20))
    assert cold.price_per_node_hour == 50.0


def test_a_wake_of_flex_start_nodes_has_no_node_figure() -> None:
    # The Dynamic Workload Scheduler's queue bounds no wait; Spot's nodes came in 5-6 min.
    flex = plan({"project": PROJECT, "capacity": {"mode": "flex-start"}}).estimate.cold_start
    assert flex is not None and flex.node.seconds is None
    spot = plan({"project": PROJECT}).estimate.cold_start
    assert spot is not None and spot.node.seconds == 5.5 * 60


def test_the_compile_cache_is_the_stacks_and_its_account_is_named_after_the_cluster(full: StackPlan) -> None:
    compile_cache = full.compile_cache
    assert compile_cache is not None
    assert (compile_cache.project, compile_cache.region, compile_cache.namespace) == (PROJECT, "us-central1", "serving")
    assert compile_cache.labels == LABELS and compile_cache.account_id == "serving-cluster-compile"
    assert (compile_cache.mount.folder, compile_cache.mount.service_account) == ("/compile-cache", "vllm")
    assert full.replicas.compile_cache == compile_cache.mount
