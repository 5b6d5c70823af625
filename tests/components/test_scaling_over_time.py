"""What the rendered ScaledObject does over time, in the scaling model of KEDA v2.20.2 and the HPA."""

from __future__ import annotations

import math
import re
from datetime import datetime
from functools import cache
from itertools import pairwise
from typing import Any

from render.simulations.scaling import (
    BATCH_CLIENTS,
    HPA_SYNC_SECONDS,
    REFERENCE_COLD_START_SECONDS,
    REFERENCE_REQUESTS_PER_NODE,
    Step,
    Trace,
    batch_tail,
    deploy_with_no_traffic,
    idle_to_zero,
    ramp_from_one_replica,
    reference_serving,
    scaling_timeline,
    simulate,
    steady_batch,
    window_ending_mid_batch,
)
from tests.conftest import render_with

NODES = 12
IDLE_MINUTES = 15
POLL_SECONDS = 30
# A window from 22:00 to 23:00 that closes an hour into a 3-hour batch.
WINDOW = {"start": "0 22 * * *", "end": "0 23 * * *", "replicas": NODES}
NEED = math.ceil(BATCH_CLIENTS / REFERENCE_REQUESTS_PER_NODE)


@cache
def scaled_object(with_window: bool = False) -> dict[str, Any]:
    """The prod stack's ScaledObject, autoscaled up to its 12 nodes."""
    windows = [WINDOW] if with_window else []
    render = render_with(
        "prod", autoscaling={"enabled": True, "idleMinutes": IDLE_MINUTES, "batchWindows": windows}, rollout={"keepServing": False}
    )
    found: dict[str, Any] = render.one("kubernetes:keda.sh/v1alpha1:ScaledObject").inputs
    return found


def run(trace: Trace, with_window: bool = False) -> list[Step]:
    return simulate(scaled_object(with_window), reference_serving(drain_seconds=35), trace)


def flaps(steps: list[Step], within_seconds: int = 30 * 60) -> list[int]:
    """Seconds at which replicas were removed and then added again within ``within_seconds``."""
    found = []
    for before, step in pairwise(steps):
        if step.desired < before.desired:
            later = [s for s in steps if step.second < s.second <= step.second + within_seconds]
            if any(s.desired > step.desired for s in later):
                found.append(step.second)
    return found


def test_a_stack_deployed_with_no_traffic_keeps_its_replicas_for_idle_minutes_once_ready() -> None:
    steps = run(deploy_with_no_traffic(NODES))
    kept = [s for s in steps if s.second <= REFERENCE_COLD_START_SECONDS + IDLE_MINUTES * 60]
    assert {s.desired for s in kept} == {NODES}
    assert steps[-1].desired == 0


def test_a_steady_batch_keeps_the_replicas_its_load_needs_and_never_flaps() -> None:
    steps = run(steady_batch(NODES))
    assert min(s.desired for s in steps) >= NEED
    assert flaps(steps) == []


def test_a_batch_window_that_closes_mid_batch_leaves_the_batch_its_replicas() -> None:
    steps = run(window_ending_mid_batch(NODES, datetime(2026, 1, 5, 22, 0)), with_window=True)
    assert min(s.desired for s in steps) >= NEED
    assert flaps(steps) == []


def test_a_ramp_from_one_replica_reaches_the_need_within_a_cold_start_and_holds_it() -> None:
    steps = run(ramp_from_one_replica())
    reached = next(s.second for s in steps if s.ready >= NEED)
    assert reached <= REFERENCE_COLD_START_SECONDS + 5 * 60
    assert all(s.desired >= NEED for s in steps if s.second >= reached)


def test_an_idle_stack_reaches_zero_only_after_idle_minutes() -> None:
    steps = run(idle_to_zero(NODES))
    zero = next(s.second for s in steps if s.desired == 0)
    assert IDLE_MINUTES * 60 <= zero <= IDLE_MINUTES * 60 + POLL_SECONDS


def test_the_tail_of_a_batch_lets_replicas_go_without_adding_any_back() -> None:
    steps = run(batch_tail(NODES))
    last_load = max(s.second for s in steps if s.outstanding > 0)
    zero = next(s.second for s in steps if s.desired == 0)
    assert flaps(steps) == []
    assert last_load + IDLE_MINUTES * 60 - POLL_SECONDS <= zero <= last_load + IDLE_MINUTES * 60 + POLL_SECONDS + HPA_SYNC_SECONDS


def test_the_render_prints_the_replicas_over_the_standard_batch_only_when_the_stack_autoscales() -> None:
    timeline = scaling_timeline(render_with("prod", autoscaling={"enabled": True}, rollout={"keepServing": False}))
    rows = [line.split() for line in timeline.splitlines() if re.match(r"\s+\d+:\d\d ", line)]
    desired = [int(row[1]) for row in rows]
    assert desired[0] == NODES and desired[-1] == 0 and rows[0][0] == "0:00"
    # The replicas never dip during the batch: the first row at zero comes after its 3 hours.
    assert all(d == NODES for d in desired[: desired.index(0)])
    assert scaling_timeline(render_with("prod")) == ""
