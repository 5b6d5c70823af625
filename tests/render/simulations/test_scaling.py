"""The scaling model: KEDA v2.20.2 and the HPA, as their source behaves, on hand-made ScaledObjects."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from facts.vllm import REQUESTS_RUNNING, REQUESTS_WAITING
from render.simulations.scaling import (
    DOWNSCALE_STABILIZATION_SECONDS,
    HPA_SYNC_SECONDS,
    Serving,
    Step,
    Trace,
    simulate,
)

SERVING = Serving(cold_start_seconds=600, requests_per_replica=100, request_seconds=20, drain_seconds=30)


def scaled_object(*triggers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"spec": {"minReplicaCount": 0, "maxReplicaCount": 10, "pollingInterval": 30, "triggers": list(triggers), **spec}}


def prometheus(metric: str, threshold: int) -> dict[str, Any]:
    return {"type": "prometheus", "metadata": {"query": f"sum({metric})", "threshold": str(threshold), "activationThreshold": "0"}}


def first(steps: list[Step], desired: int, after: int = -1) -> int:
    return next(step.second for step in steps if step.desired == desired and step.second > after)


def test_a_new_scaled_object_without_initial_cooldown_drops_idle_replicas_at_its_first_poll() -> None:
    steps = simulate(scaled_object(prometheus(REQUESTS_RUNNING, 100)), SERVING, Trace("new", 600, lambda s: 0, 4, warm=False))
    assert steps[0].desired == 0


def test_initial_cooldown_holds_a_new_objects_replicas_then_lets_them_go() -> None:
    spec = scaled_object(prometheus(REQUESTS_RUNNING, 100), initialCooldownPeriod=1200)
    steps = simulate(spec, SERVING, Trace("new", 3600, lambda s: 0, 4, warm=False))
    assert 1200 <= first(steps, 0) <= 1200 + 30


def test_without_behavior_the_hpa_scales_down_after_its_five_minute_window_then_keda_to_zero_after_cooldown() -> None:
    spec = scaled_object(prometheus(REQUESTS_RUNNING, 100), cooldownPeriod=1800)
    steps = simulate(spec, SERVING, Trace("idle", 3600, lambda s: 0, 4, warm=True))
    assert DOWNSCALE_STABILIZATION_SECONDS <= first(steps, 1) <= DOWNSCALE_STABILIZATION_SECONDS + HPA_SYNC_SECONDS
    assert 1800 <= first(steps, 0) <= 1800 + 30


def test_without_behavior_a_scale_up_at_most_doubles_per_sync() -> None:
    steps = simulate(scaled_object(prometheus(REQUESTS_RUNNING, 100)), SERVING, Trace("ramp", 60, lambda s: 1000, 1, warm=True))
    # Only 100 run on the one Ready replica: running alone asks for one.
    assert [s.desired for s in steps][:2] == [1, 1]
    steps = simulate(scaled_object(prometheus(REQUESTS_WAITING, 100)), SERVING, Trace("ramp", 60, lambda s: 1000, 1, warm=True))
    # 900 waiting ask for 9: max(2 x 1, 4), then 8, then 9.
    assert [s.desired for s in steps][:3] == [4, 8, 9]


def test_a_value_within_ten_percent_of_the_target_keeps_the_count() -> None:
    both = prometheus(f"{REQUESTS_RUNNING}) + sum({REQUESTS_WAITING}", 100)
    steps = simulate(scaled_object(both), SERVING, Trace("steady", 600, lambda s: 430, 4, warm=True))
    assert {s.desired for s in steps} == {4}
    steps = simulate(scaled_object(both), SERVING, Trace("steady", 600, lambda s: 460, 4, warm=True))
    assert steps[0].desired == 5


def test_triggers_combine_by_their_highest_proposal_and_cron_windows_set_a_floor() -> None:
    window = {"type": "cron", "metadata": {"timezone": "Etc/UTC", "start": "0 12 * * *", "end": "0 13 * * *", "desiredReplicas": "6"}}
    spec = scaled_object(prometheus(REQUESTS_RUNNING, 100), window)
    steps = simulate(spec, SERVING, Trace("window", 7200, lambda s: 0, 0, warm=False, clock=datetime(2026, 1, 5, 11, 30)))
    assert first(steps, 1) == 1800 and first(steps, 6) > 1800
    # The window closes at 13:00; from its last active poll KEDA's default 5-minute cooldown runs.
    assert 5400 + 300 - 30 <= first(steps, 0, after=1800) <= 5400 + 300


def test_behavior_windows_and_policies_pace_the_changes() -> None:
    behavior = {
        "scaleUp": {"stabilizationWindowSeconds": 0, "policies": [{"type": "Pods", "value": 2, "periodSeconds": 60}]},
        "scaleDown": {"stabilizationWindowSeconds": 900, "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]},
    }
    spec = scaled_object(prometheus(REQUESTS_WAITING, 100), advanced={"horizontalPodAutoscalerConfig": {"behavior": behavior}})
    steps = simulate(spec, SERVING, Trace("ramp", 600, lambda s: 1000, 1, warm=True))
    # Two pods a minute.
    assert [s.desired for s in steps if s.second in (0, 60, 120)] == [3, 5, 7]
    spec["spec"]["cooldownPeriod"] = 7200
    steps = simulate(spec, SERVING, Trace("idle", 3600, lambda s: 0, 4, warm=True))
    # Nothing goes before the 15-minute window; then one pod per 5 minutes.
    assert 900 <= first(steps, 3) <= 900 + HPA_SYNC_SECONDS and first(steps, 2) - first(steps, 3) >= 300


def test_a_wake_signal_from_the_trace_brings_the_stack_back_from_zero() -> None:
    wake = {"type": "gcp-pubsub", "metadata": {"value": "1000", "activationValue": "0"}}
    spec = scaled_object(prometheus(REQUESTS_RUNNING, 100), wake)
    trace = Trace("wake", 1200, lambda s: 0, 0, warm=True, signals={"gcp-pubsub": lambda s: 3000.0 if s >= 300 else 0.0})
    steps = simulate(spec, SERVING, trace)
    assert steps[0].desired == 0 and first(steps, 3) <= 300 + 30 + HPA_SYNC_SECONDS


def test_removing_a_serving_replica_aborts_what_its_drain_cannot_finish() -> None:
    short_drain = Serving(cold_start_seconds=600, requests_per_replica=100, request_seconds=40, drain_seconds=10)
    steps = simulate(scaled_object(prometheus(REQUESTS_RUNNING, 100)), short_drain, Trace("shrink", 600, lambda s: 100, 4, warm=True))
    assert sum(s.aborted for s in steps) == round(3 * 100 / 4 * (1 - 10 / 40))


def test_a_query_on_a_series_the_model_does_not_know_is_refused_naming_it_at_every_simulation() -> None:
    unknown = scaled_object(prometheus("vllm:gpu_cache_usage_perc", 1))
    for _ in range(2):  # the second reads the first's parse
        with pytest.raises(ValueError, match=r"reads only sums of .*; query: sum\(vllm:gpu_cache_usage_perc\)"):
            simulate(unknown, SERVING, Trace("idle", 60, lambda s: 0, 1, warm=True))
