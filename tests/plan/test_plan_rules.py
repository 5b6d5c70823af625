"""What the plan decides for each option: images, placement, drain, cache identity, rollouts, specs.

Expectations are the facts the plan must honour (Autopilot's selectors, Spot's 25 s of grace,
Kubernetes' 63-character names, the reference figures), written out here, not read from the code.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from plan.stack import StackPlan, plan_stack, registry_prefix
from stacks.settings import StackSettings

# A config.json for model ids the catalogue lacks (llm:model.config): the 27B's.
OWN_CONFIG = "facts/data/models/Qwen--Qwen3.5-27B-FP8/config.json"

GKE = "cloud.google.com"
RESERVATION = {"name": "a4-llm-serving"}


def plan(stack: str = "test", **values: Any) -> StackPlan:
    return plan_stack(StackSettings.model_validate({"project": "example-project", **values}), stack)


# --- images through the stack's Artifact Registry --------------------------------------------

MIRROR = "europe-west4-docker.pkg.dev/example-project"


@pytest.mark.parametrize(
    ("image", "pulled"),
    [
        ("vllm/vllm-openai:v0.18.1", f"{MIRROR}/docker-hub/vllm/vllm-openai:v0.18.1"),
        ("python:3.12.7-slim-bookworm", f"{MIRROR}/docker-hub/library/python:3.12.7-slim-bookworm"),
        ("docker.io/vllm/vllm-openai:v0.18.1", f"{MIRROR}/docker-hub/vllm/vllm-openai:v0.18.1"),
        ("registry.k8s.io/pause:3.10", f"{MIRROR}/registry-k8s-io/pause:3.10"),
        ("ghcr.io/org/tool:1", f"{MIRROR}/ghcr-io/org/tool:1"),
        ("quay.io/org/tool:1", "quay.io/org/tool:1"),
        ("localhost/tool:1", "localhost/tool:1"),
        ("registry.example:5000/tool:1", "registry.example:5000/tool:1"),
        # A host with a port and no dot is a registry too, not a Docker Hub user.
        ("registry:5000/tool:1", "registry:5000/tool:1"),
    ],
)
def test_images_are_pulled_through_the_mirror_of_their_registry(image: str, pulled: str) -> None:
    # The model cache's download image: any image, where the replicas' must be a vLLM release.
    cache = {"downloadImage": image}
    mirrored, direct = plan(cache=cache).cache, plan(cache=cache, registry={"enabled": False}).cache
    assert mirrored is not None and direct is not None
    assert mirrored.download_image == pulled
    assert direct.download_image == image


def test_the_mirror_of_docker_hub_is_the_default_prefix() -> None:
    settings = StackSettings.model_validate({"project": "example-project"})
    assert registry_prefix(settings) == f"{MIRROR}/docker-hub"
    assert registry_prefix(settings.model_copy(update={"registry": settings.registry.model_copy(update={"enabled": False})})) is None


def test_every_image_the_stack_pulls_goes_through_the_mirror_and_none_without_it() -> None:
    mirrored = plan(nodes=1, routing="gateway", benchmark={"enabled": True}, autoscaling={"enabled": True, "maxReplicas": 2})
    assert mirrored.cache is not None and mirrored.cache.download_image == f"{MIRROR}/docker-hub/library/python:3.12.7-slim-bookworm"
    assert mirrored.benchmark is not None and mirrored.benchmark.image.startswith(f"{MIRROR}/docker-hub/")
    assert mirrored.autoscaling is not None and mirrored.autoscaling.image_registry == f"{MIRROR}/ghcr-io"
    assert mirrored.gateway is not None and mirrored.gateway.image_registry == f"{MIRROR}/registry-k8s-io"
    direct = plan(
        nodes=1,
        routing="gateway",
        benchmark={"enabled": True},
        autoscaling={"enabled": True, "maxReplicas": 2},
        registry={"enabled": False},
    )
    assert direct.cache is not None and direct.cache.download_image == "python:3.12.7-slim-bookworm"
    assert direct.autoscaling is not None and direct.autoscaling.image_registry == "ghcr.io"
    assert direct.gateway is not None and direct.gateway.image_registry == "registry.k8s.io"


# --- labels ------------------------------------------------------------------------------


def test_a_stack_name_becomes_a_valid_label_value_of_at_most_63_characters() -> None:
    assert plan("Prod.EU_1").labels["stack"] == "prod-eu_1"
    assert plan("x" * 80).labels["stack"] == "x" * 63
    assert plan("prod").replicas.selector == {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "prod"}


# --- where GPU pods land ------------------------------------------------------------------

A4 = {f"{GKE}/gke-accelerator": "nvidia-b200", f"{GKE}/gke-gpu-driver-version": "latest", "topology.kubernetes.io/zone": "europe-west4-b"}


def test_spot_pods_select_and_tolerate_spot_in_the_stacks_zone() -> None:
    placement = plan(capacity={"mode": "spot"}).replicas.scheduling
    assert placement.node_selector == {**A4, f"{GKE}/gke-spot": "true"}
    assert placement.tolerations == [{"key": f"{GKE}/gke-spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    assert placement.may_run_on_spot


def test_flex_start_pods_ask_for_their_maximum_run_in_seconds() -> None:
    placement = plan(capacity={"mode": "flex-start", "flexStart": {"maxRunHours": 48}}).replicas.scheduling
    assert placement.node_selector == {**A4, f"{GKE}/gke-flex-start": "true", f"{GKE}/gke-max-run-duration-seconds": str(48 * 3600)}
    assert placement.tolerations == [] and not placement.may_run_on_spot


def test_reservation_pods_name_a_specific_reservation_and_its_project_when_shared() -> None:
    own = plan(capacity={"mode": "reservation", "reservation": {**RESERVATION, "nodes": 2}}).replicas.scheduling
    assert own.node_selector == {**A4, f"{GKE}/reservation-name": "a4-llm-serving", f"{GKE}/reservation-affinity": "specific"}
    assert not own.may_run_on_spot
    shared = plan(
        capacity={"mode": "reservation", "reservation": {**RESERVATION, "project": "shared-capacity", "nodes": 2}}
    ).replicas.scheduling
    assert shared.node_selector[f"{GKE}/reservation-project"] == "shared-capacity"


def test_fallback_pods_pick_only_the_compute_class_and_know_when_spot_is_a_step() -> None:
    with_spot = plan(capacity={"mode": "fallback", "fallback": ["reservation", "spot"], "reservation": RESERVATION})
    assert with_spot.replicas.scheduling.node_selector == {f"{GKE}/compute-class": "a4-fallback"}
    assert with_spot.replicas.scheduling.may_run_on_spot
    without = plan(capacity={"mode": "fallback", "fallback": ["reservation", "flex-start"], "reservation": RESERVATION})
    assert not without.replicas.scheduling.may_run_on_spot
    assert with_spot.capacity.scheduling == with_spot.replicas.scheduling


# --- drain: the pause, vLLM's drain and its teardown, within Spot's 25 s ---------------------


@pytest.mark.parametrize(
    ("capacity", "drain", "expected"),
    [
        # Off Spot: the configured pause and timeout, plus vLLM 0.26.0's measured teardown (4-7 s) before SIGKILL.
        ({"mode": "reservation", "reservation": {**RESERVATION, "nodes": 2}}, {}, (10, 35, 52)),
        ({"mode": "flex-start"}, {"preStopSeconds": 5, "shutdownTimeoutSeconds": 60}, (5, 60, 72)),
        # On Spot, 25 s in all: the shortest pause that covers endpoint removal, 7 s of teardown, the rest for vLLM.
        ({"mode": "spot"}, {}, (5, 13, 25)),
        ({"mode": "spot"}, {"preStopSeconds": 6, "shutdownTimeoutSeconds": 10}, (6, 10, 25)),
        ({"mode": "spot"}, {"preStopSeconds": 8}, (8, 10, 25)),
        ({"mode": "fallback", "fallback": ["spot"]}, {"preStopSeconds": 8, "shutdownTimeoutSeconds": 10}, (8, 10, 25)),
        ({"mode": "fallback", "fallback": ["flex-start"]}, {"preStopSeconds": 8, "shutdownTimeoutSeconds": 15}, (8, 15, 30)),
    ],
    ids=["reservation", "flex-start", "spot-default", "spot-shorter", "spot-pause-only", "fallback-spot", "fallback-no-spot"],
)
def test_the_drain_is_the_configured_one_cut_to_fit_spot(
    capacity: dict[str, Any], drain: dict[str, int], expected: tuple[int, ...]
) -> None:
    result = plan(capacity=capacity, drain=drain).replicas.drain
    assert (result.pre_stop_seconds, result.shutdown_timeout_seconds, result.grace_seconds) == expected


# --- the cache's identity -----------------------------------------------------------------


def test_the_cache_is_named_after_the_model_and_changes_only_with_model_revision_size_or_throughput() -> None:
    base = plan().cache
    assert base is not None
    readable, digest = base.key.rsplit("-", 1)
    assert readable == "qwen3-5-27b-fp8" and len(digest) == 8 and int(digest, 16) >= 0
    assert base.names.reader == base.names.snapshot == f"model-cache-{base.key}"
    assert base.names.writer == f"model-cache-{base.key}-writer"
    assert base.names.download == f"model-download-{base.key}"
    assert base.names.release == f"model-cache-{base.key}-release"
    assert base.mount.claim == base.names.reader and base.mount.folder == "/models"
    values: dict[str, Any]
    for values in ({"model": {"revision": "abc123"}}, {"cache": {"sizeGi": 200}}, {"cache": {"throughputMibps": 1200}}):
        other = plan(**values).cache
        assert other is not None and other.key != base.key and other.key.startswith("qwen3-5-27b-fp8-")
    for values in ({"nodes": 4}, {"serving": {"maxNumSeqs": 512}}, {"capacity": {"mode": "flex-start", "pricePerNodeHour": 1.0}}):
        same = plan(**values).cache
        assert same is not None and same.key == base.key


def test_a_long_model_id_still_gives_names_within_63_characters() -> None:
    cache = plan(model={"id": "org/" + "Very_Long.Model-" * 6, "config": OWN_CONFIG}).cache
    assert cache is not None
    # 32 characters of the readable name, less the trailing dash, then the digest.
    assert cache.key.rsplit("-", 1)[0] == "very-long-model-very-long-model"
    assert len(cache.names.writer) <= 63 and len(cache.names.release) <= 63


def test_production_protects_the_cache_and_the_state() -> None:
    window = {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
    prod = plan(production=True, cluster={"deletionProtection": True, "maintenance": {"window": window}})
    assert prod.protect_state and prod.cache is not None and prod.cache.protect
    dev = plan()
    assert not dev.protect_state and dev.cache is not None and not dev.cache.protect


# --- rollouts -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "surge", "unavailable", "rounds"),
    [
        ({"nodes": 12}, 0, 4, 3),
        ({"nodes": 4}, 0, 3, 2),
        ({"nodes": 2}, 0, 1, 2),
        ({"nodes": 1}, 1, 0, 1),
        ({"nodes": 12, "rollout": {"parallelism": 5}}, 0, 5, 3),
        ({"nodes": 1, "rollout": {"keepServing": False}}, 0, 4, 1),
        ({"nodes": 6, "rollout": {"keepServing": False, "parallelism": 4}}, 0, 4, 2),
        # Autoscaled: the fewest replicas that serve decide, the most decide the rounds.
        ({"nodes": 0, "autoscaling": {"enabled": True, "minReplicas": 0, "maxReplicas": 8}}, 1, 0, 8),
        ({"nodes": 2, "autoscaling": {"enabled": True, "minReplicas": 3, "maxReplicas": 9}}, 0, 2, 5),
        ({"nodes": 0}, 1, 0, 1),
    ],
)
def test_a_rollout_replaces_parallelism_replicas_per_round_keeping_one_serving(
    values: dict[str, Any], surge: int, unavailable: int, rounds: int
) -> None:
    result = plan(**values).replicas.rollout
    assert (result.max_surge, result.max_unavailable, result.rounds) == (surge, unavailable, rounds)


# --- the other specs -----------------------------------------------------------------------


def test_the_replicas_url_is_the_services_in_cluster_address_on_the_vllm_port() -> None:
    replicas = plan(serving={"port": 8080}, cluster={"namespace": "serving"}).replicas
    assert replicas.url == "http://vllm.serving.svc.cluster.local:8080/v1"
    assert (replicas.name, replicas.namespace, replicas.replicas) == ("vllm", "serving", 1)


def test_the_autoscaling_spec_carries_the_bounds_and_the_cold_start_in_seconds() -> None:
    stack = plan(nodes=0, serving={"coldStartMinutes": 30}, autoscaling={"enabled": True, "minReplicas": 1, "maxReplicas": 6})
    scaling = stack.autoscaling
    assert scaling is not None
    assert (scaling.min_replicas, scaling.max_replicas, scaling.cold_start_seconds) == (1, 6, 1800)
    assert (scaling.deployment, scaling.project, scaling.namespace) == ("vllm", "example-project", stack.replicas.namespace)
    assert stack.replicas.autoscaled and not plan(nodes=2).replicas.autoscaled
    assert plan(nodes=2).autoscaling is None


def test_the_gateway_spec_targets_the_vllm_port_on_the_clusters_minor() -> None:
    gateway = plan(routing="gateway", serving={"port": 9000}, cluster={"version": "1.35"}).gateway
    assert gateway is not None and (gateway.port, gateway.cluster_minor, len(gateway.pools)) == (9000, 35, 1)
    assert plan(routing="clusterip").gateway is None


def test_the_benchmark_runs_in_the_replicas_zone_against_their_node_count() -> None:
    bench = plan(nodes=3, region="us-central1", zone="us-central1-b", benchmark={"enabled": True}).benchmark
    assert bench is not None and (bench.nodes, bench.zone) == (3, "us-central1-b")
    assert plan(nodes=3).benchmark is None


def test_observability_expects_each_replica_to_make_the_reference_share() -> None:
    # 190,000 tok/s measured on 2 nodes: 95,000 per replica; 740,192 on 8: 92,524.
    two = plan(nodes=2).observability
    assert two is not None and two.expected_tokens_per_replica == 95_000 and two.alerting and not two.gateway
    batch = plan(nodes=0, autoscaling={"enabled": True, "maxReplicas": 8}).observability
    assert batch is not None and batch.expected_tokens_per_replica == 92_524
    gateway = plan(nodes=2, routing="gateway").observability
    assert gateway is not None and gateway.gateway and gateway.expected_tokens_per_replica == round(95_000 * (1 - 0.31))
    other = plan(nodes=2, model={"id": "Qwen/Qwen3.5-27B", "config": OWN_CONFIG}).observability
    assert other is not None and other.expected_tokens_per_replica is None
    idle = plan(nodes=0).observability
    assert idle is not None and not idle.alerting and idle.cold_start_minutes == 25
    assert plan(observability={"enabled": False}).observability is None


def test_the_estimate_of_the_plan_is_the_reference_at_the_stacks_nodes() -> None:
    assert plan(nodes=4).estimate.tokens_per_second == 376_074
    # Four Spot nodes, the cluster fee, the Hyperdisk ML cache (100 GiB, 2,400 MiB/s) and its snapshot.
    cache = (100 * 0.08 + 2400 * 0.12 + 100 * 0.05) / 730
    assert math.isclose(plan(nodes=4).estimate.cost_per_hour or 0, 4 * 32.61 + 0.10 + cache, abs_tol=0.01)


def test_every_spec_carries_the_stacks_own_namespace_project_zone_and_section() -> None:
    values: dict[str, Any] = {
        "nodes": 2,
        "region": "us-central1",
        "zone": "us-central1-b",
        "routing": "gateway",
        "cluster": {"namespace": "serving"},
        "benchmark": {"enabled": True, "clientsPerNode": 3},
        "autoscaling": {"enabled": True, "maxReplicas": 6},
        "gateway": {"backendTimeoutSeconds": 600},
        "observability": {"waitingRequests": 10},
        "workload": {"inputTokens": 512, "outputTokens": 256},
        "model": {"revision": "abc123"},
        "cache": {"sizeGi": 200},
        "capacity": {"mode": "flex-start", "pricePerNodeHour": 40.0},
    }
    settings = StackSettings.model_validate({"project": "example-project", **values})
    stack = plan_stack(settings, "Test")
    cache, gateway, bench, scaling, observed = stack.cache, stack.gateway, stack.benchmark, stack.autoscaling, stack.observability
    assert cache is not None and gateway is not None and bench is not None and scaling is not None and observed is not None
    assert {cache.namespace, gateway.namespace, bench.namespace, scaling.namespace, observed.namespace, stack.replicas.namespace} == {
        "serving"
    }
    assert (cache.zone, bench.zone, stack.capacity.zone) == ("us-central1-b",) * 3
    assert (stack.capacity.project, scaling.project, observed.project) == ("example-project",) * 3
    assert (cache.revision, cache.size_gi) == ("abc123", 200)
    assert gateway.backend_timeout_seconds == 600 and bench.clients_per_node == 3
    assert bench.input_tokens == 512 and scaling.max_replicas == 6
    assert observed.waiting_requests == 10 and observed.stack == "Test" and observed.deployment == "vllm"
    assert (stack.capacity.mode, stack.capacity.flex_start_max_run_hours) == ("flex-start", 168)
    assert scaling.labels == observed.labels == stack.labels
    assert stack.capacity.scheduling.mode == stack.replicas.scheduling.mode == "flex-start"
    assert plan(capacity={"mode": "fallback", "fallback": ["spot"]}).replicas.scheduling.mode == "fallback"
    assert plan(capacity={"mode": "spot"}).replicas.scheduling.mode == "spot"
