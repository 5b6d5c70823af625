"""The rules across sections (stacks/settings.py) on hand-made settings, without a render: each at and just past its bound.

Spot gives a pod 25 s and vLLM tears down in 7 s (docs/config-rules.md), Autopilot gives a general-purpose pod at most
30 vCPU and 110 GiB, and a calendar reservation holds the replicas only if it has a node for each, plus the surge one.
"""

from __future__ import annotations

from typing import Any

import pytest

from facts.gcp import a4_zones
from facts.vllm import TTFT_HISTOGRAM, facts
from stacks.settings import StackSettings, known_keys
from tests.stacks.handed import problem

PROJECT = "example-project"
CALENDAR = {"name": "a4", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z"}
# Off Spot, so that only the rule under test can refuse; a spare node for the lone replica's surge.
ON_RESERVATION = {"mode": "reservation", "reservation": {"name": "a4", "nodes": 2}}


def settings(**changes: Any) -> StackSettings:
    return StackSettings.model_validate({"project": PROJECT, **changes})


def calendar(nodes: int) -> dict[str, Any]:
    return {"mode": "reservation", "reservation": {"name": "a4", "create": {**CALENDAR, "nodes": nodes}}}


# --- A drain that must fit Spot's 25 s: pause + vLLM's drain + 7 s of teardown.


def test_on_spot_a_drain_left_unset_gets_the_shortest_pause_and_the_rest() -> None:
    assert settings().drain.on_spot() == (5, 13)


@pytest.mark.parametrize(
    ("drain", "key", "value", "parts", "allowed"),
    [
        ({"shutdownTimeoutSeconds": 14}, "shutdownTimeoutSeconds", 14, "preStopSeconds 5 + shutdownTimeoutSeconds 14", "at most 13"),
        ({"preStopSeconds": 19}, "preStopSeconds", 19, "preStopSeconds 19 + shutdownTimeoutSeconds -1", "at most 18"),
        (
            {"preStopSeconds": 10, "shutdownTimeoutSeconds": 9},
            "shutdownTimeoutSeconds",
            9,
            "preStopSeconds 10 + shutdownTimeoutSeconds 9",
            "at most 8",
        ),
    ],
)
def test_a_drain_one_second_past_spots_grace_is_refused(drain: dict[str, int], key: str, value: int, parts: str, allowed: str) -> None:
    assert problem(drain=drain) == (
        f"llm:drain.{key}: {value} does not fit Spot's 25 s grace (capacity may place the replicas on Spot): {parts} + vLLM's 7 s "
        f"teardown; allowed: {allowed}"
    )


@pytest.mark.parametrize(
    ("drain", "on_spot"),
    [
        ({"shutdownTimeoutSeconds": 13}, (5, 13)),
        ({"preStopSeconds": 18}, (18, 0)),
        ({"preStopSeconds": 10, "shutdownTimeoutSeconds": 8}, (10, 8)),
        ({}, (5, 13)),
    ],
)
def test_a_drain_that_just_fits_spots_grace_is_taken(drain: dict[str, int], on_spot: tuple[int, int]) -> None:
    assert settings(drain=drain).drain.on_spot() == on_spot


def test_a_spot_step_of_a_fallback_holds_the_drain_to_spots_grace() -> None:
    fallback = {"mode": "fallback", "fallback": ["flex-start", "spot"]}
    assert "llm:drain.shutdownTimeoutSeconds: 14 does not fit" in problem(capacity=fallback, drain={"shutdownTimeoutSeconds": 14})


@pytest.mark.parametrize("capacity", [ON_RESERVATION, {"mode": "flex-start"}, {"mode": "fallback", "fallback": ["flex-start"]}])
def test_without_spot_the_drain_may_be_long(capacity: dict[str, Any]) -> None:
    drain = settings(capacity=capacity, drain={"preStopSeconds": 120, "shutdownTimeoutSeconds": 3600}).drain
    assert drain.grace_seconds() == 120 + 3600 + 7


# --- A created calendar reservation must hold every replica the stack may run.


@pytest.mark.parametrize(
    ("changes", "needed"),
    [
        # One replica kept serving through a rollout: the new one starts on a second node first.
        ({}, 2),
        ({"nodes": 3}, 3),
        ({"autoscaling": {"enabled": True, "maxReplicas": 3}}, 4),
        ({"autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 3}}, 3),
        ({"autoscaling": {"enabled": True, "maxReplicas": 3}, "rollout": {"keepServing": False}}, 3),
        ({"autoscaling": {"enabled": True}, "nodes": 5}, 6),
    ],
)
def test_a_calendar_reservation_holds_the_replicas_and_the_surge_one(changes: dict[str, Any], needed: int) -> None:
    assert settings(capacity=calendar(needed), **changes).capacity.reservation is not None
    message = problem(capacity=calendar(needed - 1), **changes)
    assert message.startswith(f"llm:capacity.reservation.create.nodes: {needed - 1} cannot hold the replicas: the stack may run ")
    assert message.endswith(f"so reserve at least {needed} nodes")


def test_the_refusal_names_the_surge_replica_only_when_there_is_one() -> None:
    assert problem(capacity=calendar(1)) == (
        "llm:capacity.reservation.create.nodes: 1 cannot hold the replicas: the stack may run 1 (nodes, or autoscaling.maxReplicas) "
        "plus the surge replica a rollout starts before stopping the lone one, so reserve at least 2 nodes"
    )
    assert problem(capacity=calendar(2), nodes=3) == (
        "llm:capacity.reservation.create.nodes: 2 cannot hold the replicas: the stack may run 3 (nodes, or autoscaling.maxReplicas), "
        "so reserve at least 3 nodes"
    )


def test_a_stack_scaled_to_zero_needs_no_surge_node() -> None:
    assert settings(capacity=calendar(1), nodes=0).max_replicas == 0


@pytest.mark.parametrize(
    "capacity",
    [
        # A reservation of unstated size (never surged on here), and a calendar one beside other capacity.
        {"mode": "reservation", "reservation": {"name": "a4"}},
        {"mode": "fallback", "fallback": ["reservation", "flex-start"], "reservation": {"name": "a4", "create": {**CALENDAR, "nodes": 1}}},
    ],
)
def test_only_a_created_reservation_as_the_only_capacity_must_hold_the_replicas(capacity: dict[str, Any]) -> None:
    assert settings(capacity=capacity, nodes=12).nodes == 12


# --- The batch runner: runnerCpu and runnerMemory times its workers, against 30 vCPU and 110 GiB.

# 40 replicas need 8 workers (facts/batch_sizing.py): 30 / 8 = 3.75 vCPU and 110 / 8 = 13.75 GiB each at most.
WIDE_BATCH = {"autoscaling": {"enabled": True, "maxReplicas": 40}}


def test_a_runner_at_autopilots_general_purpose_maximum_is_taken() -> None:
    taken = settings(**WIDE_BATCH, batch={"enabled": True, "runnerCpu": "3750m", "runnerMemory": "14080Mi"})
    assert (taken.batch.runner_cpu, taken.batch.runner_memory) == ("3750m", "14080Mi")


def test_a_runner_just_past_the_cpu_maximum_is_refused() -> None:
    assert problem(**WIDE_BATCH, batch={"enabled": True, "runnerCpu": "3751m"}) == (
        "llm:batch.runnerCpu: '3751m' times the runner's 8 workers (for up to 40 replicas) is above the 30 vCPU Autopilot gives a "
        "general-purpose pod; lower it to 3.75 or less"
    )


def test_a_runner_just_past_the_memory_maximum_is_refused() -> None:
    assert problem(**WIDE_BATCH, batch={"enabled": True, "runnerMemory": "14081Mi"}) == (
        "llm:batch.runnerMemory: '14081Mi' times the runner's 8 workers (for up to 40 replicas) is above the 110Gi Autopilot gives a "
        "general-purpose pod; lower it to 13.8Gi or less"
    )


def test_one_worker_serves_a_few_replicas() -> None:
    batch = {"enabled": True, "runnerCpu": "30", "runnerMemory": "110Gi"}
    assert settings(autoscaling={"enabled": True, "maxReplicas": 4}, batch=batch).batch.runner_cpu == "30"
    assert "llm:batch.runnerCpu: '30' times the runner's 2 workers (for up to 6 replicas)" in problem(
        autoscaling={"enabled": True, "maxReplicas": 6}, batch=batch
    )


def test_without_a_batch_the_runner_is_not_sized() -> None:
    # 1000 replicas would need 179 workers of 1 vCPU: no runner runs without batch.enabled.
    assert settings(autoscaling={"enabled": True, "maxReplicas": 1000}).batch.runner_cpu == "1"


def test_a_batch_needs_autoscaling() -> None:
    assert problem(batch={"enabled": True}) == (
        "llm:batch.enabled: true needs autoscaling.enabled: true (KEDA wakes the replicas and the runner); turn both on"
    )


# --- The benchmark's shortest prompt: floor(inputTokens x (1 - rangeRatio)) must be at least 1.


def test_the_shortest_prompt_of_one_token_is_taken() -> None:
    assert settings(benchmark={"enabled": True}, workload={"inputTokens": 4, "rangeRatio": 0.75}).workload.input_tokens == 4


def test_a_prompt_that_could_be_empty_is_refused() -> None:
    assert problem(benchmark={"enabled": True}, workload={"inputTokens": 3, "rangeRatio": 0.75}) == (
        "llm:workload.inputTokens: 3 is too short for vLLM's random dataset at rangeRatio 0.75: its shortest prompt would have no "
        "token; use at least 4"
    )


def test_without_the_benchmark_short_prompts_are_taken() -> None:
    assert settings(workload={"inputTokens": 1, "rangeRatio": 0.75}).workload.input_tokens == 1


# --- The other rules across sections, each at and just past its bound.


def test_the_context_may_equal_the_longest_request_and_not_fall_below_it() -> None:
    # 1024 and 512 tokens, each up to +50%: 1536 + 768.
    assert settings(serving={"maxModelLen": 2304}).serving.max_model_len == 2304
    assert problem(serving={"maxModelLen": 2303}) == (
        "llm:serving.maxModelLen: 2303 is below the workload's longest request (2304 tokens: input 1024 and output 512, each up to "
        "+50%); raise it to at least 2304"
    )


def test_the_ttft_objective_must_be_below_the_largest_bucket() -> None:
    largest = facts("0.18.1").largest_bucket(TTFT_HISTOGRAM)
    assert settings(observability={"ttftP99Seconds": largest - 0.5}).observability.ttft_p99_seconds == largest - 0.5
    assert problem(observability={"ttftP99Seconds": largest}).startswith(
        f"llm:observability.ttftP99Seconds: {largest} is not below the largest bucket of {TTFT_HISTOGRAM} in vLLM 0.18.1 ({largest:g} s)"
    )


@pytest.mark.parametrize(("low", "high"), [(2, 2), (0, 1)])
def test_the_fewest_replicas_may_equal_the_most(low: int, high: int) -> None:
    assert settings(autoscaling={"enabled": True, "minReplicas": low, "maxReplicas": high}).max_replicas == high


def test_the_fewest_replicas_may_not_pass_the_most() -> None:
    assert problem(autoscaling={"enabled": True, "minReplicas": 3, "maxReplicas": 2}) == (
        "llm:autoscaling.minReplicas: 3 is above the maximum (2); lower it or raise maxReplicas"
    )
    # Without maxReplicas the most is `nodes`.
    assert problem(nodes=2, autoscaling={"enabled": True, "minReplicas": 3}).startswith(
        "llm:autoscaling.minReplicas: 3 is above the maximum (2)"
    )


def test_a_batch_window_may_keep_the_most_replicas_and_no_more() -> None:
    window = {"start": "0 22 * * 1-5", "end": "0 6 * * 2-6"}
    scaling = {"enabled": True, "maxReplicas": 3}
    assert settings(autoscaling={**scaling, "batchWindows": [{**window, "replicas": 3}]}).max_replicas == 3
    assert problem(autoscaling={**scaling, "batchWindows": [{**window, "replicas": 1}, {**window, "replicas": 4}]}) == (
        "llm:autoscaling.batchWindows[1].replicas: 4 is above the maximum (3)"
    )


@pytest.mark.parametrize(
    ("changes", "fewest", "surge", "most"),
    [
        ({"nodes": 3}, 3, 0, 3),
        ({"nodes": 1}, 1, 1, 1),
        ({"nodes": 0}, 0, 1, 0),
        ({"nodes": 2}, 2, 0, 2),
        ({"nodes": 1, "rollout": {"keepServing": False}}, 1, 0, 1),
        ({"nodes": 0, "autoscaling": {"enabled": True}}, 1, 1, 1),
        ({"nodes": 4, "autoscaling": {"enabled": True, "minReplicas": 2, "maxReplicas": 6}}, 2, 0, 6),
    ],
)
def test_the_replica_counts_a_rollout_meets(changes: dict[str, Any], fewest: int, surge: int, most: int) -> None:
    chosen = settings(**changes)
    assert (chosen.fewest_replicas, chosen.surge_replicas, chosen.max_replicas) == (fewest, surge, most)


@pytest.mark.parametrize(("nodes", "refused"), [(0, False), (1000, False), (-1, True), (1001, True)])
def test_the_node_count_runs_from_0_to_1000(nodes: int, refused: bool) -> None:
    if refused:
        assert problem(nodes=nodes) == f"llm:nodes: {nodes} is out of range; use 0 (scaled to zero) up to 1000 A4 nodes"
    else:
        assert settings(nodes=nodes).nodes == nodes


# --- Warnings: a zone not known to offer A4.


def test_a_zone_known_to_offer_a4_gets_no_warning() -> None:
    assert settings().warnings("llm") == []


def test_a_zone_not_known_to_offer_a4_names_the_known_ones_in_its_region() -> None:
    known = a4_zones()
    (warning,) = settings(zone="europe-west4-a").warnings("llm")
    assert warning == (
        f"llm:zone: 'europe-west4-a' is not among the zones known to offer a4-highgpu-8g (list of {known.as_of}; in europe-west4: "
        "europe-west4-b); A4 nodes may never come. Check https://cloud.google.com/compute/docs/gpus/gpu-regions-zones"
    )


def test_every_known_zone_of_the_region_is_named() -> None:
    (warning,) = settings(region="us-west3", zone="us-west3-a").warnings("llm")
    assert "; in us-west3: us-west3-b, us-west3-c); A4 nodes may never come." in warning


def test_a_region_without_a_known_zone_names_every_known_one() -> None:
    known = a4_zones()
    (warning,) = settings(region="me-central2", zone="me-central2-a").warnings("ns")
    assert warning.startswith("ns:zone: 'me-central2-a' is not among")
    assert f"(list of {known.as_of}; anywhere: {', '.join(known.zones)}); A4 nodes may never come." in warning


# --- The keys each section accepts, for spelling hints.


def test_known_keys_name_every_section_by_its_path_and_alias() -> None:
    table = known_keys()
    assert {"project", "nodes", "allowPublicExposure", "serving", "capacity"} <= set(table[()])
    assert {"maxModelLen", "extraArgs", "enablePrefixCaching"} <= set(table[("serving",)])
    # Optional sections and tuples of sections are walked too.
    assert set(table[("capacity", "reservation", "create")]) == {"name", "startTime", "endTime", "nodes"}
    assert set(table[("cluster", "maintenance", "exclusions")]) == {"name", "startTime", "endTime", "scope"}
    assert set(table[("autoscaling", "batchWindows")]) == {"start", "end", "timezone", "replicas"}
    assert ("serving", "maxModelLen") not in table
