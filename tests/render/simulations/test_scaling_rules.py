"""The scaling model's parts, one at a time, as the HPA controller and KEDA's source define them (no stack render).

Sources: kubernetes ``pkg/controller/podautoscaler/horizontal.go`` (calculateScaleUpLimitWithScalingRules,
calculateScaleDownLimitWithBehaviors, getReplicasChangePerPeriod, normalizeDesiredReplicasWithBehaviors),
``pkg/apis/autoscaling/v2/defaults.go`` (behavior defaults), KEDA v2.20.2 ``pkg/scalers/cron_scaler.go``, and the
reference deployment of docs/reference.md (16-minute cold start, 2,000 requests per node, 83 completions/s).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from facts.naming import REPLICAS
from render.engine import Render
from render.simulations.scaling import (
    Step,
    _drain_seconds,
    _Hpa,
    _normalize_with_behavior,
    _rules,
    _scale_down_limit,
    _scale_up_limit,
    _table,
    _within_window,
    batch_from_zero,
    batch_tail,
    deploy_with_no_traffic,
    idle_to_zero,
    ramp_from_one_replica,
    reference_serving,
    replicas_scaled_object,
    scaling_timeline,
    standard_batch,
    steady_batch,
    window_ending_mid_batch,
)
from tests.render.registrations import registration


def pods(value: int, period: int = 60) -> dict[str, Any]:
    return {"type": "Pods", "value": value, "periodSeconds": period}


def percent(value: int, period: int = 60) -> dict[str, Any]:
    return {"type": "Percent", "value": value, "periodSeconds": period}


# --- rate limits -------------------------------------------------------------------------


def test_a_scale_up_limit_adds_to_the_count_before_the_period_by_the_selected_policy() -> None:
    rules = {"selectPolicy": "Max", "policies": [pods(4), percent(100)]}
    assert _scale_up_limit(3, [], rules, 100.0) == 7  # max(3 + 4, ceil(3 x 2))
    assert _scale_up_limit(5, [], rules, 100.0) == 10
    assert _scale_up_limit(5, [], {**rules, "selectPolicy": "Min"}, 100.0) == 9
    assert _scale_up_limit(3, [], {"selectPolicy": "Max", "policies": [percent(50)]}, 100.0) == 5  # ceil(4.5)
    # Replicas added within the period count against it; an event exactly one period ago does not.
    events = [(50.0, 2), (40.0, 5)]
    assert _scale_up_limit(5, events, {"selectPolicy": "Max", "policies": [pods(4)]}, 100.0) == 7  # (5 - 2) + 4
    assert _scale_up_limit(5, [], {"selectPolicy": "Disabled", "policies": [pods(4)]}, 100.0) == 5


def test_a_scale_down_limit_takes_from_the_count_before_the_period_by_the_selected_policy() -> None:
    rules = {"selectPolicy": "Max", "policies": [pods(2), percent(50)]}
    assert _scale_down_limit(10, [], rules, 100.0) == 5  # Max lets the most go: min(10 - 2, 10 x 0.5)
    assert _scale_down_limit(10, [], {**rules, "selectPolicy": "Min"}, 100.0) == 8
    assert _scale_down_limit(5, [], {"selectPolicy": "Max", "policies": [percent(50)]}, 100.0) == 2  # floor(2.5)
    events = [(50.0, 3), (40.0, 4)]
    assert _scale_down_limit(7, events, {"selectPolicy": "Max", "policies": [pods(2)]}, 100.0) == 8  # (7 + 3) - 2
    assert _scale_down_limit(7, [], {"selectPolicy": "Disabled", "policies": [pods(2)]}, 100.0) == 7


def test_behavior_rules_default_per_direction() -> None:
    assert _rules(None, "scaleUp") == {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [pods(4, 15), percent(100, 15)],
    }
    assert _rules(None, "scaleDown") == {"stabilizationWindowSeconds": 300, "selectPolicy": "Max", "policies": [percent(100, 15)]}
    given = {"scaleDown": {"stabilizationWindowSeconds": 60, "policies": [pods(1)]}, "scaleUp": {"selectPolicy": "Min"}}
    assert _rules(given, "scaleDown") == {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [pods(1)]}
    assert _rules(given, "scaleUp")["selectPolicy"] == "Min" and _rules(given, "scaleUp")["stabilizationWindowSeconds"] == 0
    assert _rules({"scaleUp": None}, "scaleUp")["policies"] == [pods(4, 15), percent(100, 15)]


def test_with_behavior_the_recommendation_is_stabilized_then_rate_limited_then_bounded() -> None:
    behavior = {"scaleDown": {"stabilizationWindowSeconds": 60, "policies": [pods(1, 15)]}, "scaleUp": {"policies": [pods(2, 15)]}}
    hpa = _Hpa(recommendations=[(0.0, 8), (50.0, 6)])
    # Down: the highest recommendation within 60 s (6 at 50 s; 8 at 0 s is older), one pod per 15 s.
    assert _normalize_with_behavior(hpa, behavior, 8, 2, 1, 10, 100.0) == 7
    assert hpa.recommendations == [(50.0, 6), (100.0, 2)]
    # Up: no window, two pods per 15 s, within the maximum.
    assert _normalize_with_behavior(_Hpa(), behavior, 3, 9, 1, 10, 100.0) == 5
    assert _normalize_with_behavior(_Hpa(), behavior, 9, 20, 1, 10, 100.0) == 10
    # Down to the stabilized value when the policy allows more, never below the minimum.
    wide = {"scaleDown": {"stabilizationWindowSeconds": 0, "policies": [percent(100, 15)]}}
    assert _normalize_with_behavior(_Hpa(), wide, 8, 2, 3, 10, 100.0) == 3
    assert _normalize_with_behavior(_Hpa(), wide, 8, 8, 3, 10, 100.0) == 8
    # A window at its edge: a recommendation exactly `window` old is out.
    edge = _Hpa(recommendations=[(40.0, 8)])
    assert _normalize_with_behavior(edge, wide | {"scaleDown": {"stabilizationWindowSeconds": 60}}, 8, 2, 1, 10, 100.0) == 2


# --- cron windows ------------------------------------------------------------------------


def test_a_cron_window_is_open_between_its_start_and_its_end_in_its_time_zone() -> None:
    window = {"start": "0 9 * * 1-5", "end": "0 17 * * 1-5", "timezone": "Europe/Berlin", "desiredReplicas": "2"}
    berlin_ten = datetime.fromisoformat("2026-01-05T09:00:00+00:00")  # a Monday, 10:00 in Berlin
    assert _within_window(window, berlin_ten)
    assert not _within_window(window, datetime.fromisoformat("2026-01-05T16:30:00+00:00"))  # 17:30 in Berlin
    assert not _within_window(window, datetime.fromisoformat("2026-01-05T07:30:00+00:00"))  # 08:30 in Berlin
    utc = {"start": "0 9 * * *", "end": "0 17 * * *"}
    assert _within_window(utc, datetime.fromisoformat("2026-01-05T16:30:00+00:00"))
    assert not _within_window(utc, datetime.fromisoformat("2026-01-05T08:30:00+00:00"))


# --- the traces and the reference serving --------------------------------------------------


def test_the_reference_replica_is_docs_reference_deployment() -> None:
    serving = reference_serving(45)
    assert (serving.cold_start_seconds, serving.requests_per_replica, serving.drain_seconds) == (960, 2000, 45)
    assert serving.request_seconds == pytest.approx(2000 / 83)


def test_each_trace_starts_where_its_name_says() -> None:
    quiet = deploy_with_no_traffic(3)
    assert (quiet.seconds, quiet.replicas, quiet.warm, quiet.clients(0), quiet.requests, quiet.runner) == (7200, 3, False, 0, None, False)
    assert deploy_with_no_traffic(3, 60).seconds == 60
    ramp = ramp_from_one_replica()
    assert (ramp.seconds, ramp.replicas, ramp.warm, ramp.clients(100)) == (3600, 1, True, 24_000)
    assert ramp_from_one_replica(60).seconds == 60
    steady = steady_batch(12)
    assert (steady.seconds, steady.replicas, steady.warm, steady.clients(5000)) == (3 * 3600, 12, True, 24_000)
    tail = batch_tail(4)
    assert (tail.seconds, tail.replicas, tail.warm, tail.requests, tail.clients(0)) == (7200, 4, True, 10 * 60 * 4 * 83, 24_000)
    assert batch_tail(4, 5, 60).requests == 5 * 60 * 4 * 83 and batch_tail(4, 5, 60).seconds == 60
    idle = idle_to_zero(2)
    assert (idle.seconds, idle.replicas, idle.warm, idle.clients(0)) == (7200, 2, True, 0)
    assert idle_to_zero(2, 60).seconds == 60
    start = datetime(2026, 1, 5, 22, 0)
    window = window_ending_mid_batch(6, start)
    assert (window.seconds, window.replicas, window.warm, window.clock, window.clients(0)) == (3 * 3600, 6, True, start, 24_000)
    wake = batch_from_zero(500)
    assert (wake.seconds, wake.replicas, wake.warm, wake.requests, wake.runner, wake.clients(0)) == (4 * 3600, 0, True, 500, True, 0)
    assert batch_from_zero(500, 60).seconds == 60
    standard = standard_batch(300)
    assert (standard.seconds, standard.replicas, standard.warm, standard.requests) == (3 * 3600 + 300 + 900, 1, True, None)
    assert standard.clients(3 * 3600 - 1) == 24_000 and standard.clients(3 * 3600) == 0
    assert len({quiet.name, ramp.name, steady.name, tail.name, idle.name, window.name, wake.name, standard.name}) == 8


# --- the render's timeline ---------------------------------------------------------------


def test_the_table_shows_a_row_where_the_counts_or_the_load_change_or_requests_are_aborted() -> None:
    steps = [
        Step(0, 1, 1, 2000, 0),
        Step(15, 1, 1, 1500, 0),
        Step(3600, 3, 1, 2000, 0),
        Step(3615, 3, 1, 2000, 2),
        Step(3630, 3, 1, 0, 0),
        Step(3645, 3, 1, 0, 0),
    ]
    assert _table(steps) == [
        "    time  desired  ready  requests  aborted",
        "    0:00        1      1     2,000        0",
        "    1:00        3      1     2,000        0",
        "    1:00        3      1     2,000        2",
        "    1:00        3      1         0        0",
    ]
    assert _table([Step(36_000 + 59 * 60, 1, 0, 12_345, 1_234)])[1] == "   10:59        1      0    12,345    1,234"


def deployment(name: str, *args: str) -> Any:
    containers = [{"name": "sidecar"}, {"name": "main", "args": list(args)}]
    return registration("kubernetes:apps/v1:Deployment", name, {"spec": {"template": {"spec": {"containers": containers}}}})


def scaled(target: str, *triggers: dict[str, Any], cooldown: int | None = None) -> Any:
    spec: dict[str, Any] = {"scaleTargetRef": {"name": target}, "minReplicaCount": 0, "maxReplicaCount": 4, "triggers": list(triggers)}
    if cooldown is not None:
        spec["cooldownPeriod"] = cooldown
    return registration("kubernetes:keda.sh/v1alpha1:ScaledObject", target, {"spec": spec})


RUNNING = {"type": "prometheus", "metadata": {"query": "sum(vllm:num_requests_running)", "threshold": "2000", "activationThreshold": "0"}}


def test_the_drain_is_the_replicas_shutdown_timeout_else_zero() -> None:
    assert _drain_seconds(Render("dev", [deployment("other", "--port=1"), deployment(REPLICAS, "--x", "--shutdown-timeout=45")])) == 45
    assert _drain_seconds(Render("dev", [deployment(REPLICAS, "--shutdown-timeout=45s")])) == 0
    assert _drain_seconds(Render("dev", [])) == 0


def test_the_replicas_scaled_object_is_the_one_that_targets_the_replicas() -> None:
    mine = scaled(REPLICAS, RUNNING)
    assert replicas_scaled_object(Render("dev", [scaled("batch-runner", RUNNING), mine])) == mine.inputs
    assert replicas_scaled_object(Render("dev", [scaled("batch-runner", RUNNING)])) is None


def test_a_stack_that_does_not_autoscale_has_no_timeline() -> None:
    assert scaling_timeline(Render("dev", [deployment(REPLICAS)])) == ""


def test_the_timeline_runs_the_standard_batch_with_the_stacks_cooldown_and_the_wake_when_a_bucket_wakes_it() -> None:
    render = Render("dev", [deployment(REPLICAS, "--shutdown-timeout=30"), scaled(REPLICAS, RUNNING, cooldown=120)])
    text = scaling_timeline(render)
    lines = text.splitlines()
    assert lines[:3] == [
        "scaling: 24,000 concurrent requests for 3 h from one Ready replica, then none",
        "  (a model of KEDA v2.20.2 and the HPA; the reference's 16-minute cold start and 83 completions/s per Ready replica,"
        " 2,000 requests running per Ready replica)",
        "    time  desired  ready  requests  aborted",
    ]
    # At 0 s the one replica runs its 2,000 (the threshold: one replica's worth); the other 22,000 wait, uncounted.
    assert lines[3] == "    0:00        1      1    24,000        0"
    assert text.endswith("\n") and "batch wake" not in text
    # The run ends 15 minutes after the cooldown that follows the batch: at zero replicas.
    assert lines[-1].split()[1:3] == ["0", "0"]
    woken = scaling_timeline(Render("dev", [scaled(REPLICAS, RUNNING, {"type": "gcp-storage", "metadata": {"targetObjectCount": "1"}})]))
    wake = woken.splitlines()
    (at,) = [i for i, line in enumerate(wake) if line.startswith("batch wake")]
    assert wake[at] == (
        "batch wake: a 100,000-line file copied to input/ at zero replicas; the runner sends 2,000 per Ready replica and holds the rest"
    )
    assert wake[at + 1] == "    time  desired  ready  requests  aborted"
    assert wake[at + 2] == "    0:00        1      0         0        0"
