"""Settings GCP, GKE or vLLM accept at first and refuse later are refused before anything registers.

One table per class of mistake; each rule and its public source: docs/config-rules.md. The error names
the key, the value and what is allowed; the unusual but valid settings beside them are taken.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from facts.naming import batch_bucket_name, compile_cache_bucket
from render.validation import validate_render
from tests.conftest import render_with, stack_file_config
from tests.stacks.test_platform_rules import refusal, with_changes

CALENDAR = {"name": "a4-llm-serving", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z"}


def calendar(nodes: int) -> dict[str, Any]:
    return {"mode": "reservation", "reservation": {"name": "a4-llm-serving", "create": {**CALENDAR, "nodes": nodes}}}


BATCH = {"autoscaling": {"enabled": True, "minReplicas": 0, "maxReplicas": 4}, "batch": {"enabled": True}}
# Up to 40 replicas: the runner pod runs 8 workers (facts/batch_sizing.py).
WIDE_BATCH = {"autoscaling": {"enabled": True, "minReplicas": 0, "maxReplicas": 40}, "batch": {"enabled": True}}

REFUSED: list[tuple[str, str, dict[str, Any], list[str]]] = [
    # The batch runner's pod against Autopilot's general-purpose maximum (30 vCPU, 110 GiB).
    ("runner", "dev", {**WIDE_BATCH, "batch": {"enabled": True, "runnerCpu": "4"}}, ["llm:batch.runnerCpu", "'4'", "8 workers", "30"]),
    ("runner", "dev", {**WIDE_BATCH, "batch": {"enabled": True, "runnerMemory": "16Gi"}}, ["llm:batch.runnerMemory", "'16Gi'", "110Gi"]),
    ("runner", "dev", {**BATCH, "batch": {"enabled": True, "runnerMemory": "512m"}}, ["llm:batch.runnerMemory", "'512m'", "Mi"]),
    ("memory", "dev", {"serving": {"memory": "1800000m"}}, ["llm:serving.memory", "'1800000m'", "Gi"]),
    ("memory", "gateway", {"gateway": {"endpointPickerMemory": "16000m"}}, ["llm:gateway.endpointPickerMemory", "'16000m'"]),
    # Names GCP refuses.
    ("names", "dev", {"project": "my-google-serving"}, ["llm:project", "'my-google-serving'", "google"]),
    ("names", "dev", {"project": "g00gle-serving"}, ["llm:project", "'g00gle-serving'", "google"]),
    ("names", "dev", {"project": "goog-serving"}, ["llm:project", "'goog-serving'", "goog"]),
    ("names", "dev", {"project": "ssl-serving-01"}, ["llm:project", "'ssl-serving-01'", "ssl"]),
    # Capacity that cannot hold the replicas.
    ("capacity", "prod", {"capacity": calendar(8)}, ["llm:capacity.reservation.create.nodes", "8", "12"]),
    (
        "capacity",
        "dev",
        {"capacity": calendar(2), "autoscaling": {"enabled": True, "maxReplicas": 3}},
        ["llm:capacity.reservation.create.nodes", "2", "3"],
    ),
    # One replica kept serving: the new one starts on a second node before the old stops.
    ("capacity", "dev", {"capacity": calendar(1)}, ["llm:capacity.reservation.create.nodes", "1", "2", "surge"]),
    # A drain that cannot fit Spot's 25 s with vLLM's 7 s of teardown, and a pause shorter than endpoint removal.
    (
        "drain",
        "dev",
        {"drain": {"shutdownTimeoutSeconds": 20}},
        ["llm:drain.shutdownTimeoutSeconds", "20", "Spot's 25 s", "teardown", "at most 13"],
    ),
    (
        "drain",
        "dev",
        {
            "capacity": {"mode": "fallback", "fallback": ["reservation", "spot"], "reservation": {"name": "a4"}},
            "drain": {"preStopSeconds": 19},
        },
        ["llm:drain.preStopSeconds", "19", "at most 18"],
    ),
    ("drain", "prod", {"drain": {"preStopSeconds": 0}}, ["llm:drain.preStopSeconds", "0", "5"]),
    # Environment the program owns, and values vLLM reads as numbers.
    ("env", "dev", {"serving": {"env": {"VLLM_CACHE_ROOT": "/tmp/cache"}}}, ["llm:serving.env.VLLM_CACHE_ROOT", "set by the program"]),
    ("env", "dev", {"serving": {"env": {"HF_HUB_OFFLINE": "0"}}}, ["llm:serving.env.HF_HUB_OFFLINE", "set by the program"]),
    ("env", "dev", {"serving": {"env": {"TRITON_CACHE_DIR": "/tmp/t"}}}, ["llm:serving.env.TRITON_CACHE_DIR", "set by the program"]),
    (
        "env",
        "dev",
        {"serving": {"env": {"FLASHINFER_WORKSPACE_BASE": "/tmp/f"}}},
        ["llm:serving.env.FLASHINFER_WORKSPACE_BASE", "set by the program"],
    ),
    (
        "env",
        "dev",
        {"serving": {"env": {"VLLM_DISABLE_COMPILE_CACHE": "true"}}},
        ["llm:serving.env.VLLM_DISABLE_COMPILE_CACHE", "'true'", "0 or 1"],
    ),
    (
        "env",
        "dev",
        {"serving": {"env": {"VLLM_ENGINE_ITERATION_TIMEOUT_S": "60s"}}},
        ["VLLM_ENGINE_ITERATION_TIMEOUT_S", "'60s'", "integer"],
    ),
    ("env", "dev", {"serving": {"env": {"VLLM_LOG_STATS_INTERVAL": "often"}}}, ["VLLM_LOG_STATS_INTERVAL", "'often'", "number"]),
    # Ranges.
    ("ranges", "dev", {"cache": {"throughputMibps": 1_200_001}}, ["llm:cache.throughputMibps", "1200001", "1200000"]),
    # Both ends of each range the settings compare.
    ("ranges", "dev", {"cache": {"throughputMibps": 399}}, ["llm:cache.throughputMibps", "399", "400"]),
    ("ranges", "dev", {"nodes": 1001}, ["llm:nodes", "1001", "1000"]),
    ("ranges", "dev", {"cache": {"sizeGi": 65537}}, ["llm:cache.sizeGi", "65537", "65536"]),
    (
        "ranges",
        "dev",
        {"benchmark": {"enabled": True, "machineType": "n2-highcpu-16"}},
        ["llm:benchmark.machineType", "'n2-highcpu-16'", "GB"],
    ),
    (
        "ranges",
        "dev",
        {"benchmark": {"enabled": True, "machineType": "zz9-standard-32"}},
        ["llm:benchmark.machineType", "'zz9-standard-32'"],
    ),
    # A size the series does not offer (C4 has 16 and 24 vCPUs, no 17): GKE could not create the node.
    (
        "ranges",
        "dev",
        {"benchmark": {"enabled": True, "machineType": "c4-standard-17"}},
        ["llm:benchmark.machineType", "'c4-standard-17'", "predefined shape"],
    ),
    (
        "ranges",
        "dev",
        {"benchmark": {"enabled": True}, "workload": {"inputTokens": 1, "outputTokens": 512, "rangeRatio": 0.5}},
        ["llm:workload.inputTokens", "1", "random"],
    ),
]


@pytest.mark.parametrize(("case", "stack", "changes", "expected"), REFUSED, ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)])
def test_a_mistaken_setting_is_refused_at_its_key_before_anything_registers(
    case: str, stack: str, changes: dict[str, Any], expected: list[str]
) -> None:
    message, record = refusal(stack, with_changes(stack, changes))
    assert message.startswith("StackConfigError: stack configuration has"), f"{case}: {message}"
    for fragment in expected:
        assert fragment in message, f"{case}: {fragment!r} not in {message}"
    assert record.resources == []


TAKEN: list[tuple[str, dict[str, Any]]] = [
    ("dev", {**BATCH, "batch": {"enabled": True, "runnerCpu": "2", "runnerMemory": "1536Mi"}}),
    ("dev", {**WIDE_BATCH, "batch": {"enabled": True, "runnerCpu": "3", "runnerMemory": "13Gi"}}),
    ("prod", {"capacity": calendar(12)}),
    ("dev", {"capacity": calendar(2)}),
    ("dev", {"serving": {"env": {"VLLM_DISABLE_COMPILE_CACHE": "1", "VLLM_LOG_STATS_INTERVAL": "2.5"}}}),
    ("dev", {"cache": {"throughputMibps": 1_200_000}}),
    ("dev", {"benchmark": {"enabled": True, "machineType": "n2-standard-16"}}),
    ("dev", {"project": "goodle-serving"}),
]


@pytest.mark.parametrize(("stack", "changes"), TAKEN)
def test_unusual_but_valid_settings_are_taken(stack: str, changes: dict[str, Any]) -> None:
    assert validate_render(render_with(stack, **changes))


@pytest.mark.parametrize("name", ["google-models", "my-g00gle-x", "googel-batch", "goog-x", "x-gogle-y", "g0ogle"])
def test_bucket_names_cloud_storage_refuses_are_found(name: str) -> None:
    from facts.gcp import bucket_name_problem

    assert bucket_name_problem(name) is not None


@pytest.mark.parametrize("part", ["google", "g00gle", "goog1e", "gooogle", "prod"])
def test_every_bucket_the_stack_derives_is_one_cloud_storage_takes(part: str) -> None:
    from facts.gcp import bucket_name_problem

    for name in (compile_cache_bucket("llm-serving-prod", part), batch_bucket_name("llm-serving-prod", part)):
        assert bucket_name_problem(name) is None, name


def service_account_id_problem(account_id: str) -> str | None:
    """Why IAM refuses ``account_id``, or None: 6 to 30 characters of [a-z]([-a-z0-9]*[a-z0-9]) (IAM API,
    CreateServiceAccountRequest.accountId; docs/config-rules.md)."""
    if not 6 <= len(account_id) <= 30:
        return f"{len(account_id)} characters"
    return None if re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])", account_id) else "not [a-z]([-a-z0-9]*[a-z0-9])"


# Cluster names up to GKE's 40 characters: the stack derives account ids from them (cut at 30).
LONG_CLUSTERS = ("llm-serving-europe-west4-production-a", "llm-serving-europe-west4-" + "b" * 15)


@pytest.mark.parametrize("cluster", ["llm", "llm-serving", "llm-serving-europe-west4", "a" * 40, *LONG_CLUSTERS])
def test_every_service_account_id_the_stack_derives_is_one_iam_takes(cluster: str) -> None:
    render = render_with("batch", cluster={"name": cluster})
    for account in render.by_type("gcp:serviceaccount/account:Account"):
        assert service_account_id_problem(account.inputs["accountId"]) is None, account.inputs["accountId"]


@pytest.mark.parametrize("account_id", ["nodes", "a" * 31, "1-nodes", "llm-nodes-", "llm_nodes", "LLM-nodes"])
def test_service_account_ids_iam_refuses_are_found(account_id: str) -> None:
    assert service_account_id_problem(account_id) is not None


def test_the_engine_sets_no_variable_the_settings_do_not_know_the_program_sets() -> None:
    # A variable the program adds must be refused in serving.env: two entries of one name fail server-side apply.
    from stacks.serving import CREDENTIAL_VARIABLES, PROGRAM_VARIABLES

    variants: list[tuple[dict[str, Any], dict[str, str]]] = [
        ({}, {}),
        ({"cache": {"enabled": False}}, {}),
        ({"serving": {"env": {"VLLM_DISABLE_COMPILE_CACHE": "1"}}}, {"VLLM_DISABLE_COMPILE_CACHE": "1"}),
    ]
    for changes, env in variants:
        render = render_with("dev", **changes)
        deployment = next(r for r in render.by_type("kubernetes:apps/v1:Deployment") if r.inputs["metadata"]["name"] == "vllm")
        names = {e["name"] for e in deployment.inputs["spec"]["template"]["spec"]["containers"][0]["env"]}
        given = {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", *env, *stack_file_config("dev").get("llm:serving", {}).get("env", {})}
        assert names - given <= set(PROGRAM_VARIABLES) | set(CREDENTIAL_VARIABLES), names - given


def test_a_general_purpose_pod_above_autopilots_maximum_is_caught_by_the_render() -> None:
    from render.autopilot import admission_problems
    from render.cluster_model import cluster_objects

    render = render_with("dev", **BATCH)
    runner = next(r for r in render.by_type("kubernetes:apps/v1:Deployment") if r.inputs["metadata"]["name"] == "batch-runner")
    assert admission_problems(cluster_objects(render)) == []
    resources = runner.inputs["spec"]["template"]["spec"]["containers"][0]["resources"]
    for part in ("requests", "limits"):
        resources[part]["cpu"] = "31"
    found = admission_problems(cluster_objects(render))
    assert any("cpu 31 is above the 30 Autopilot gives a general-purpose pod" in p for p in found), found
