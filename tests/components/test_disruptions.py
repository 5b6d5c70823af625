"""Replicas stop gracefully and voluntary disruptions take them one at a time."""

from __future__ import annotations

from typing import Any

import pytest

from facts.gke import SPOT_GRACE_SECONDS
from render.engine import Render
from render.validation import validate
from stacks.problems import StackConfigError
from tests.conftest import render_with, rendered

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CLUSTER = "gcp:container/cluster:Cluster"


def pod(render: Render) -> dict[str, Any]:
    spec: dict[str, Any] = render.one(DEPLOYMENT).inputs["spec"]["template"]["spec"]
    return spec


def drain_of(render: Render) -> tuple[int, int, int]:
    """(preStop sleep, vLLM shutdown timeout, grace period) of the replica pods."""
    spec = pod(render)
    container = spec["containers"][0]
    pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
    (timeout,) = [int(a.split("=", 1)[1]) for a in container["command"] if a.startswith("--shutdown-timeout=")]
    return pre_stop, timeout, spec["terminationGracePeriodSeconds"]


@pytest.mark.parametrize(
    ("stack", "changes"),
    [("prod", {}), ("dev", {}), ("dev", {"capacity": {"mode": "flex-start"}}), ("prod", {"drain": {"preStopSeconds": 5}})],
    ids=["reservation", "spot", "flex-start", "shortest-prestop"],
)
def test_the_grace_period_covers_the_pause_vllms_shutdown_timeout_and_its_teardown(stack: str, changes: dict[str, Any]) -> None:
    pre_stop, timeout, grace = drain_of(render_with(stack, **changes) if changes else rendered(stack))
    # vLLM 0.26.0 took 4-7 s from SIGTERM to exit with nothing in flight (tests/real_runs/).
    assert pre_stop + timeout + 7 <= grace
    # The port closes at SIGTERM: the pause must outlast the pod's removal from endpoints.
    assert pre_stop >= 5


def test_spot_pods_drain_within_spots_25_seconds_and_others_get_the_configured_drain() -> None:
    assert drain_of(rendered("dev")) == (5, 13, SPOT_GRACE_SECONDS)
    fallback = {"mode": "fallback", "fallback": ["reservation", "spot"], "reservation": {"name": "a4-llm-serving"}}
    assert drain_of(render_with("dev", capacity=fallback))[2] == SPOT_GRACE_SECONDS
    # A reference request: ~5.6 s to the first token + 512 x 46 ms, so about 29 s.
    pre_stop, timeout, grace = drain_of(rendered("prod"))
    assert timeout >= 5.6 + 512 * 0.046
    assert (pre_stop, grace) == (10, pre_stop + timeout + 7)


def test_the_disruption_budget_selects_exactly_the_replica_pods_one_at_a_time() -> None:
    render = rendered("prod")
    budget = render.one("kubernetes:policy/v1:PodDisruptionBudget").inputs
    template = render.one(DEPLOYMENT).inputs["spec"]["template"]
    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["selector"]["matchLabels"].items() <= template["metadata"]["labels"].items()
    assert budget["spec"]["selector"] == render.one(DEPLOYMENT).inputs["spec"]["selector"]
    assert validate(budget, "1.35") == "Kubernetes 1.35"


BATCH = {"name": "batch-december", "startTime": "2026-12-01T00:00:00Z", "endTime": "2026-12-20T00:00:00Z"}
WINDOW = {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T10:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}


def test_the_maintenance_window_and_batch_exclusion_reach_the_cluster() -> None:
    render = render_with("prod", cluster={"deletionProtection": True, "maintenance": {"window": WINDOW, "exclusions": [BATCH]}})
    policy = render.one(CLUSTER).inputs["maintenancePolicy"]
    assert policy["recurringWindow"] == WINDOW
    (exclusion,) = policy["maintenanceExclusions"]
    assert exclusion["exclusionName"] == "batch-december"
    assert (exclusion["startTime"], exclusion["endTime"]) == (BATCH["startTime"], BATCH["endTime"])
    # The default scope keeps the batch's nodes: no minor and no node upgrades.
    assert exclusion["exclusionOptions"] == {"scope": "NO_MINOR_OR_NODE_UPGRADES"}
    # No window and no exclusions: no policy, GKE picks the time (production stacks must set a window).
    assert "maintenancePolicy" not in rendered("dev").one(CLUSTER).inputs


@pytest.mark.parametrize(
    ("exclusion", "key", "allowed"),
    [
        ({**BATCH, "scope": "no-node-upgrades"}, "scope", "no-minor-or-node-upgrades"),
        ({**BATCH, "scope": "no-upgrades", "endTime": "2027-01-15T00:00:00Z"}, "endTime", "30 days"),
        ({**BATCH, "endTime": "2026-11-01T00:00:00Z"}, "endTime", "after startTime"),
    ],
)
def test_exclusions_gke_would_refuse_are_refused(exclusion: dict[str, Any], key: str, allowed: str) -> None:
    with pytest.raises(StackConfigError) as error:
        render_with("dev", cluster={"deletionProtection": False, "maintenance": {"exclusions": [exclusion]}})
    assert f"cluster.maintenance.exclusions[0].{key}" in str(error.value) and allowed in str(error.value)
