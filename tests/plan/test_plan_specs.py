"""The plan's batch, compile-cache and cold-start specs, and the bucket names it derives, on hand-made settings.

Expectations are worked out here from the settings and the platform's rules: Cloud Storage bucket names
(3-63 of a-z, 0-9 and '-', never "google"; cloud.google.com/storage/docs/buckets#naming), Google service
account ids (6-30 characters), the reference figures and list prices. None is read back from the plan.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import Any

import pytest

from plan.stack import (
    CompileCacheMount,
    FutureReservation,
    Maintenance,
    MaintenanceExclusion,
    MaintenanceWindow,
    Reservation,
    StackPlan,
    plan_stack,
)
from stacks.settings import StackSettings

# A config.json for model ids the catalogue lacks (llm:model.config): the 27B's.
OWN_CONFIG = "facts/data/models/Qwen--Qwen3.5-27B-FP8/config.json"

PROJECT = "example-project"  # 15 characters: the bucket-name boundaries below count on it
MIRROR = f"europe-west4-docker.pkg.dev/{PROJECT}/docker-hub"
# A bucket name as Cloud Storage takes it, kept to the characters the stack's names use.
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
# A Google service account id: 6-30 characters, a letter first, no dash last.
ACCOUNT_ID = re.compile(r"^[a-z][-a-z0-9]{4,28}[a-z0-9]$")
BATCH: dict[str, Any] = {"nodes": 0, "autoscaling": {"enabled": True, "maxReplicas": 8}, "batch": {"enabled": True}}
WINDOW = {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}
# The Hyperdisk ML cache a stack keeps by default, per hour: 100 GiB, 2,400 MiB/s and its snapshot.
CACHE_PER_HOUR = (100 * 0.08 + 2400 * 0.12 + 100 * 0.05) / 730
CLUSTER_FEE = 0.10


def plan(stack: str = "test", **values: Any) -> StackPlan:
    return plan_stack(StackSettings.model_validate({"project": PROJECT, **values}), stack)


def digest(text: str) -> str:
    """The naming scheme's hash: the first 8 hex digits of the name's sha256."""
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def assert_bucket_name(name: str) -> None:
    assert BUCKET_NAME.match(name), name
    assert "google" not in name


def per_million(cost_per_hour: float, tokens_per_second: float) -> float:
    return cost_per_hour / (tokens_per_second * 3600) * 1_000_000


# --- the batch bucket's name ----------------------------------------------------------------


def test_a_batch_stack_names_its_bucket_after_the_project_and_the_stack() -> None:
    stack = plan("dev", **BATCH)
    assert stack.batch is not None and stack.batch.bucket == "example-project-dev-batch"
    # The autoscaler wakes the replicas on inputs in that same bucket.
    assert stack.autoscaling is not None and stack.autoscaling.batch_bucket == "example-project-dev-batch"


def test_the_batch_bucket_is_named_after_the_stacks_label_value() -> None:
    # Pulumi stack names may hold '.' and capitals; the label value has neither.
    stack = plan("Dev.Stack", **BATCH)
    assert stack.batch is not None and stack.batch.bucket == "example-project-dev-stack-batch"


def test_a_bucket_name_of_exactly_63_characters_stays_readable() -> None:
    # 15 (project) + 1 + 41 + 6 ("-batch") = 63.
    name = "a" * 41
    stack = plan(name, **BATCH)
    assert stack.batch is not None and stack.batch.bucket == f"{PROJECT}-{name}-batch"
    assert len(stack.batch.bucket) == 63
    assert_bucket_name(stack.batch.bucket)


def test_a_stack_name_one_character_too_long_is_hashed_into_the_bucket_name() -> None:
    # 15 + 1 + 42 + 6 = 64: one past Cloud Storage's limit.
    name = "a" * 42
    assert len(f"{PROJECT}-{name}-batch") == 64
    stack = plan(name, **BATCH)
    assert stack.batch is not None and stack.batch.bucket == f"{PROJECT}-{digest(name)}-batch"
    assert_bucket_name(stack.batch.bucket)


@pytest.mark.parametrize(
    ("stack", "label"),
    [
        # An underscore is a label character the stack's readable bucket names do not use.
        ("Prod_EU", "prod_eu"),
        # Bucket names may not contain "google", wherever it is.
        ("google", "google"),
        ("my-google-batch", "my-google-batch"),
    ],
)
def test_a_stack_name_a_bucket_name_may_not_hold_is_hashed(stack: str, label: str) -> None:
    batch = plan(stack, **BATCH).batch
    assert batch is not None and batch.bucket == f"{PROJECT}-{digest(label)}-batch"
    assert_bucket_name(batch.bucket)


def test_hashed_bucket_names_differ_between_stacks() -> None:
    first, second = plan("a" * 42, **BATCH).batch, plan("b" * 42, **BATCH).batch
    assert first is not None and second is not None and first.bucket != second.bucket


def test_a_stack_without_batches_has_no_bucket_runner_or_batch_charts() -> None:
    stack = plan("dev", nodes=0, autoscaling={"enabled": True, "maxReplicas": 8})
    assert stack.batch is None
    assert stack.autoscaling is not None and stack.autoscaling.batch_bucket is None
    assert stack.observability is not None and not stack.observability.batch
    batched = plan("dev", **BATCH).observability
    assert batched is not None and batched.batch


# --- the batch runner's spec ------------------------------------------------------------------


def test_the_batch_spec_carries_each_setting_it_is_made_of() -> None:
    stack = plan(
        "batch",
        nodes=0,
        region="us-central1",
        zone="us-central1-b",
        labels={"team": "ml"},
        cluster={"namespace": "serving"},
        serving={"port": 8080},
        model={"servedName": "qwen"},
        autoscaling={"enabled": True, "maxReplicas": 12, "requestsPerReplica": 1500, "pollSeconds": 45},
        batch={"enabled": True, "finishedRetentionDays": 30},
        capacity={"mode": "spot", "pricePerNodeHour": 40.0},
    )
    batch = stack.batch
    assert batch is not None
    assert (batch.project, batch.region, batch.namespace) == (PROJECT, "us-central1", "serving")
    assert batch.labels == {"app": "llm-serving", "managed-by": "pulumi", "stack": "batch", "team": "ml"}
    assert batch.bucket == "example-project-batch-batch"
    assert batch.finished_retention_days == 30
    # The runner uses the cache's download image, through the region's Docker Hub mirror.
    assert batch.image == "us-central1-docker.pkg.dev/example-project/docker-hub/library/python:3.12.7-slim-bookworm"
    assert batch.deployment == "vllm"
    assert batch.serving_url == "http://vllm.serving.svc.cluster.local:8080/v1"
    assert batch.served_model == "qwen"
    assert (batch.concurrency_per_replica, batch.max_replicas, batch.poll_seconds) == (1500, 12, 45)
    # 12 replicas at the reference's 1,000 requests/s per 12 nodes, with 1.5x headroom: 1,500 requests/s,
    # at 700 per worker.
    assert batch.workers == 3
    assert batch.price_per_replica_hour == 40.0
    # 12 nodes at $40, the cluster fee and the idle cache, over the reference's 1,103,941 tok/s on 12 nodes.
    cost = round(12 * 40.0 + CLUSTER_FEE + CACHE_PER_HOUR, 2)
    assert batch.estimated_usd_per_million_tokens is not None
    assert math.isclose(batch.estimated_usd_per_million_tokens, per_million(cost, 1_103_941), abs_tol=0.0005)
    assert not batch.protect


def test_the_batch_runner_reports_a_wake_against_one_from_zero_to_the_most_replicas() -> None:
    spec = plan(**BATCH).batch
    assert spec is not None and spec.expected_cold_start is not None
    # A batch wakes the stack from zero to maxReplicas (8 here), the image streamed from the region's mirror (30 s).
    assert spec.expected_cold_start.replicas == 8
    assert spec.expected_cold_start.image.seconds == 30


def test_the_batch_runner_serves_the_model_id_when_no_served_name_is_set() -> None:
    batch = plan(**BATCH).batch
    assert batch is not None and batch.served_model == "Qwen/Qwen3.5-27B-FP8"


def test_the_batch_runner_pulls_its_image_directly_without_the_mirror() -> None:
    batch = plan(**BATCH, registry={"enabled": False}, cache={"downloadImage": "python:3.13.1-slim"}).batch
    assert batch is not None and batch.image == "python:3.13.1-slim"


def test_the_batch_report_prices_a_replica_hour_at_the_list_price_of_spot() -> None:
    # 8 Spot nodes at $32.61 list price, the cluster fee and the idle cache, over 740,192 tok/s on 8 nodes.
    batch = plan(**BATCH).batch
    assert batch is not None and batch.price_per_replica_hour == 32.61
    cost = round(8 * 32.61 + CLUSTER_FEE + CACHE_PER_HOUR, 2)
    assert batch.estimated_usd_per_million_tokens is not None
    assert math.isclose(batch.estimated_usd_per_million_tokens, per_million(cost, 740_192), abs_tol=0.0005)
    assert batch.workers == 2  # 8 x 1000/12 x 1.5 = 1,000 requests/s at 700 per worker


def test_the_batch_report_has_no_price_for_flex_start_without_a_configured_one() -> None:
    batch = plan(**BATCH, capacity={"mode": "flex-start"}).batch
    assert batch is not None and batch.price_per_replica_hour is None and batch.estimated_usd_per_million_tokens is None


def test_a_production_stack_protects_its_batch_bucket() -> None:
    batch = plan(**BATCH, production=True, cluster={"maintenance": {"window": WINDOW}}).batch
    assert batch is not None and batch.protect


# --- the shared compile cache ----------------------------------------------------------------


def test_the_compile_cache_spec_carries_the_stacks_project_region_namespace_and_labels() -> None:
    stack = plan(
        "dev", region="us-central1", zone="us-central1-b", labels={"team": "ml"}, cluster={"name": "serving-a", "namespace": "serving"}
    )
    spec = stack.compile_cache
    assert spec is not None
    assert (spec.project, spec.region, spec.namespace) == (PROJECT, "us-central1", "serving")
    assert spec.labels == {"app": "llm-serving", "managed-by": "pulumi", "stack": "dev", "team": "ml"}
    assert spec.account_id == "serving-a-compile"
    # The replicas mount the cluster's bucket at /compile-cache as their own Kubernetes account, "vllm".
    mount = CompileCacheMount("example-project-serving-a-compile-cache", "/compile-cache", "vllm")
    assert spec.mount == mount
    assert stack.replicas.compile_cache == mount


def test_vllms_switch_turns_the_compile_cache_off_for_the_plan_and_the_replicas() -> None:
    stack = plan(serving={"env": {"VLLM_DISABLE_COMPILE_CACHE": "1"}})
    assert stack.compile_cache is None and stack.replicas.compile_cache is None


def test_vllms_default_of_zero_keeps_the_compile_cache_on() -> None:
    stack = plan(serving={"env": {"VLLM_DISABLE_COMPILE_CACHE": "0"}})
    assert stack.compile_cache is not None
    assert stack.replicas.compile_cache == CompileCacheMount("example-project-llm-serving-compile-cache", "/compile-cache", "vllm")


@pytest.mark.parametrize(
    ("cluster", "account"),
    [
        ("a", "a-compile"),
        # 22 + 8 ("-compile") = 30: the whole id fits.
        ("c" * 22, "c" * 22 + "-compile"),
        # 23 + 8 = 31: the first 21 characters and a hash of the whole (tests/plan/test_derived_names.py).
        ("c" * 23, "c" * 21 + "-"),
        ("c" * 40, "c" * 21 + "-"),
    ],
)
def test_the_compile_caches_account_id_is_the_cluster_name_and_compile_or_its_hashed_head(cluster: str, account: str) -> None:
    spec = plan(cluster={"name": cluster}).compile_cache
    assert spec is not None and spec.account_id.startswith(account)
    assert len(spec.account_id) == min(30, len(cluster) + len("-compile"))
    assert ACCOUNT_ID.match(spec.account_id)


def test_a_compile_cache_bucket_name_of_exactly_63_characters_stays_readable() -> None:
    # 15 (project) + 1 + 33 + 14 ("-compile-cache") = 63.
    cluster = "c" * 33
    spec = plan(cluster={"name": cluster}).compile_cache
    assert spec is not None and spec.mount.bucket == f"{PROJECT}-{cluster}-compile-cache"
    assert len(spec.mount.bucket) == 63
    assert_bucket_name(spec.mount.bucket)


@pytest.mark.parametrize("length", [34, 40])
def test_a_cluster_name_too_long_for_the_compile_cache_bucket_is_hashed(length: int) -> None:
    # 15 + 1 + 34 + 14 = 64: one past Cloud Storage's limit; 40 is the longest cluster name.
    cluster = "c" * length
    assert len(f"{PROJECT}-{cluster}-compile-cache") > 63
    spec = plan(cluster={"name": cluster}).compile_cache
    assert spec is not None and spec.mount.bucket == f"{PROJECT}-compile-cache-{digest(cluster)}"
    assert_bucket_name(spec.mount.bucket)


@pytest.mark.parametrize("cluster", ["google-llm", "llm-on-google"])
def test_a_cluster_name_holding_google_gives_a_compile_cache_bucket_cloud_storage_accepts(cluster: str) -> None:
    # Cloud Storage refuses bucket names that contain "google" (cloud.google.com/storage/docs/buckets#naming).
    spec = plan(cluster={"name": cluster}).compile_cache
    assert spec is not None and spec.mount.bucket == f"{PROJECT}-compile-cache-{digest(cluster)}"
    assert "google" not in spec.mount.bucket
    assert_bucket_name(spec.mount.bucket)


# --- the replicas' image and the expected cold start ---------------------------------------


def test_the_replicas_pull_the_vllm_image_through_the_mirror_and_directly_without_it() -> None:
    assert plan().replicas.image == f"{MIRROR}/vllm/vllm-openai:v0.18.1"
    assert plan(registry={"enabled": False}).replicas.image == "vllm/vllm-openai:v0.18.1"


def test_the_cold_start_streams_the_image_from_the_regions_mirror_and_pulls_it_whole_without() -> None:
    # GKE streams images from Artifact Registry only: 30 s for the guide's 5.4 GB image, 191 s pulled whole.
    mirrored = plan(nodes=2).estimate.cold_start
    assert mirrored is not None and mirrored.image.seconds == 30.0
    direct = plan(nodes=2, registry={"enabled": False}).estimate.cold_start
    assert direct is not None and direct.image.seconds == 191.0


def test_the_cold_start_is_a_wake_to_the_most_replicas_at_the_stacks_node_price() -> None:
    listed = plan(nodes=0, autoscaling={"enabled": True, "maxReplicas": 6}).estimate.cold_start
    assert listed is not None and listed.replicas == 6 and listed.price_per_node_hour == 32.61
    configured = plan(nodes=2, capacity={"mode": "spot", "pricePerNodeHour": 40.0}).estimate.cold_start
    assert configured is not None and configured.replicas == 2 and configured.price_per_node_hour == 40.0
    unpriced = plan(nodes=2, capacity={"mode": "flex-start"}).estimate.cold_start
    assert unpriced is not None and unpriced.price_per_node_hour is None


def test_a_stack_that_never_serves_expects_no_cold_start() -> None:
    assert plan(nodes=0).estimate.cold_start is None


def test_the_maintenance_window_and_each_exclusion_reach_the_cluster_with_gkes_scope_names() -> None:
    exclusions = [
        {"name": "batch-week", "startTime": "2026-02-01T00:00:00Z", "endTime": "2026-02-08T00:00:00Z"},
        {"name": "freeze", "startTime": "2026-03-01T00:00:00Z", "endTime": "2026-03-10T00:00:00Z", "scope": "no-upgrades"},
    ]
    maintenance = plan(cluster={"maintenance": {"window": WINDOW, "exclusions": exclusions}}).cluster.maintenance
    assert maintenance.window == MaintenanceWindow(WINDOW["startTime"], WINDOW["endTime"], WINDOW["recurrence"])
    assert maintenance.exclusions == (
        MaintenanceExclusion("batch-week", "2026-02-01T00:00:00Z", "2026-02-08T00:00:00Z", "NO_MINOR_OR_NODE_UPGRADES"),
        MaintenanceExclusion("freeze", "2026-03-01T00:00:00Z", "2026-03-10T00:00:00Z", "NO_UPGRADES"),
    )
    assert plan().cluster.maintenance == Maintenance(None, ())


def test_the_capacity_spec_carries_the_steps_the_reservation_and_the_calendar_request() -> None:
    create = {"name": "a4-calendar", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z", "nodes": 4}
    capacity = plan(
        capacity={
            "mode": "fallback",
            "fallback": ["reservation", "spot"],
            "reservation": {"name": "a4-calendar", "project": "shared-capacity", "create": create},
        },
    ).capacity
    assert (capacity.mode, capacity.steps) == ("fallback", ("reservation", "spot"))
    assert capacity.reservation == Reservation("a4-calendar", "shared-capacity")
    assert capacity.future_reservation == FutureReservation("a4-calendar", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", 4)
    spot = plan(capacity={"mode": "spot"}).capacity
    assert (spot.steps, spot.reservation, spot.future_reservation) == (("spot",), None, None)


def test_the_benchmark_spec_carries_the_benchmark_and_workload_settings() -> None:
    bench = {
        "enabled": True,
        "run": 3,
        "clientsPerNode": 4,
        "concurrencyPerClient": 256,
        "promptsPerClient": 999,
        "machineType": "c4-standard-32",
    }
    spec = plan(
        nodes=2,
        benchmark=bench,
        workload={"inputTokens": 1000, "outputTokens": 300, "rangeRatio": 0.25},
        model={"id": "Qwen/Qwen3-8B", "servedName": "chat", "config": OWN_CONFIG},
    ).benchmark
    assert spec is not None
    assert (spec.run, spec.clients_per_node, spec.concurrency_per_client, spec.prompts_per_client) == (3, 4, 256, 999)
    assert spec.machine_type == "c4-standard-32"
    assert (spec.input_tokens, spec.output_tokens, spec.range_ratio) == (1000, 300, 0.25)
    assert (spec.served_name, spec.model_id, spec.nodes) == ("chat", "Qwen/Qwen3-8B", 2)
