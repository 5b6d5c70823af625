"""Routine changes never touch stateful resources: a table of change -> what may change."""

from __future__ import annotations

from typing import Any

import pytest

from render.changes import Change, render_changes
from render.engine import Render
from tests.conftest import render_with, rendered

# Replacing any of these loses data or an expensive, slow-to-rebuild resource.
STATEFUL_COMPONENTS = ("llm:platform:Network", "llm:platform:Cluster", "llm:storage:ModelCache")

# The throughput alert follows the stack's own estimate, which engine flags, nodes and routing move.
THROUGHPUT_ALERT = ("gcp:monitoring/alertPolicy:AlertPolicy", "throughput-low")
ALERTS = {
    ("gcp:monitoring/alertPolicy:AlertPolicy", name)
    for name in ("replicas-not-ready", "queue-depth", "kv-cache-full", "time-to-first-token")
}

# change -> the resources (type, name) whose inputs it may alter; everything else must stay identical.
CHANGES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("engine flags", {"serving": {"maxNumSeqs": 4096, "mtpTokens": 0}}, {("kubernetes:apps/v1:Deployment", "vllm"), THROUGHPUT_ALERT}),
    ("node count", {"nodes": 4}, {("kubernetes:apps/v1:Deployment", "vllm"), THROUGHPUT_ALERT}),
    # Scaled to zero, the stack registers no alert policy (and its dashboard stays).
    ("scale to zero", {"nodes": 0}, {("kubernetes:apps/v1:Deployment", "vllm"), THROUGHPUT_ALERT, *ALERTS}),
    ("engine image", {"serving": {"image": "vllm/vllm-openai:v0.33.0"}}, {("kubernetes:apps/v1:Deployment", "vllm")}),
    ("capacity mode", {"capacity": {"mode": "flex-start"}}, {("kubernetes:apps/v1:Deployment", "vllm")}),
    # The replicas alert waits a cold start without progress before it opens.
    (
        "cold start budget",
        {"serving": {"coldStartMinutes": 40}},
        {("kubernetes:apps/v1:Deployment", "vllm"), ("gcp:monitoring/alertPolicy:AlertPolicy", "replicas-not-ready")},
    ),
    (
        "routing mode",
        {"routing": "gateway"},
        {
            ("gcp:projects/service:Service", "networkservices"),
            ("llm:gateway:ProxySubnet", "proxy-subnet"),
            ("gcp:compute/subnetwork:Subnetwork", "proxy-only"),
            ("llm:gateway:InferenceGateway", "gateway"),
            ("kubernetes:helm.sh/v4:Chart", "endpoint-picker"),
            ("kubernetes:gateway.networking.k8s.io/v1:Gateway", "inference-gateway"),
            ("kubernetes:gateway.networking.k8s.io/v1:HTTPRoute", "vllm"),
            ("gcp:monitoring/dashboard:Dashboard", "dashboard"),
            THROUGHPUT_ALERT,
        },
    ),
]


def by_identity(render: Render) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {(r.type, r.name, r.parent.rsplit("::", 1)[-1]): r.inputs for r in render.resources}


def stateful(render: Render) -> dict[str, Any]:
    owners = {r.urn for r in render.resources if r.type in STATEFUL_COMPONENTS}
    return {r.urn: r.inputs for r in render.resources if r.parent in owners}


@pytest.mark.parametrize(("change", "config", "allowed"), CHANGES, ids=[c[0] for c in CHANGES])
def test_a_routine_change_alters_only_what_it_should(change: str, config: dict[str, Any], allowed: set[tuple[str, str]]) -> None:
    before, after = rendered("dev"), render_with("dev", **config)
    assert stateful(after) == stateful(before), f"{change} touched a stateful resource"
    old, new = by_identity(before), by_identity(after)
    changed = {(key[0], key[1]) for key in old.keys() | new.keys() if old.get(key) != new.get(key)}
    assert changed, f"{change} changed nothing: the test would not notice a regression"
    assert changed <= allowed, f"{change} also changed {sorted(changed - allowed)}"


def test_the_stateful_set_is_not_empty() -> None:
    resources = stateful(rendered("dev"))
    assert len(resources) >= 9


# --- update or replace, by the providers' rules -----------------------------------------------

STATEFUL_TYPES = (
    "gcp:container/cluster:Cluster",
    "gcp:compute/network:Network",
    "gcp:compute/subnetwork:Subnetwork",
    "gcp:compute/futureReservation:FutureReservation",
    "kubernetes:core/v1:PersistentVolumeClaim",
    "kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot",
    "kubernetes:storage.k8s.io/v1:StorageClass",
    "kubernetes:core/v1:Namespace",
)
GPU_REPLICAS = ("kubernetes:apps/v1:Deployment", "vllm")
WINDOW = {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T10:00:00Z"}
ROUTINE: list[tuple[str, str, dict[str, Any], bool]] = [
    # (name, stack, change, whether it may roll the GPU replicas)
    ("labels", "prod", {"labels": {"env": "prod", "team": "research"}}, False),
    (
        "prices",
        "prod",
        {"capacity": {"mode": "reservation", "reservation": {"name": "a4-llm-serving", "nodes": 12}, "pricePerNodeHour": 70.0}},
        False,
    ),
    ("benchmark settings", "dev", {"benchmark": {"enabled": True, "clientsPerNode": 3}}, False),
    ("node count", "prod", {"nodes": 8}, False),
    ("scale to zero", "prod", {"nodes": 0}, False),
    ("routing", "dev", {"routing": "gateway"}, False),
    ("autoscaling", "prod", {"autoscaling": {"enabled": True, "minReplicas": 2}}, False),
    (
        "maintenance",
        "prod",
        {
            "cluster": {
                "deletionProtection": True,
                "maintenance": {"window": {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T10:00:00Z"}},
            }
        },
        False,
    ),
    ("engine flags", "prod", {"serving": {"maxNumSeqs": 4096}}, True),
]


def routine_changes(stack: str, config: dict[str, Any]) -> list[Change]:
    base = rendered(stack)
    return render_changes(base, render_with(stack, **config))


@pytest.mark.parametrize(("change", "stack", "config", "rolls"), ROUTINE, ids=[r[0] for r in ROUTINE])
def test_routine_changes_replace_no_stateful_resource_and_no_job(change: str, stack: str, config: dict[str, Any], rolls: bool) -> None:
    found = routine_changes(stack, config)
    # A price moves only the estimates; everything else must show up, or a regression would hide.
    assert bool(found) == (change != "prices"), [c.line() for c in found]
    harmful = [
        c.line() for c in found if c.action in ("replace", "refused", "delete") and (c.type in STATEFUL_TYPES or c.type.endswith(":Job"))
    ]
    assert harmful == []
    rolled = [c for c in found if (c.type, c.name) == GPU_REPLICAS and c.restarts_pods]
    assert bool(rolled) == rolls, f"{change}: GPU replicas {'rolled' if rolled else 'left alone'}"


def test_a_new_model_revision_makes_a_new_cache_beside_the_old_one() -> None:
    # On production the old cache is protected: tests/test_lifecycle.py shows that refusal.
    found = routine_changes("dev", {"model": {"id": "Qwen/Qwen3.5-27B-FP8", "revision": "0123abc"}})
    claims = [c for c in found if c.type == "kubernetes:core/v1:PersistentVolumeClaim"]
    assert {c.action for c in claims} == {"create", "delete"}
    assert not [c for c in found if c.action in ("replace", "refused")]
