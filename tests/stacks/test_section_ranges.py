"""Every range and form a section checks alone, at its bounds and just past them, on hand-made settings; and the drain's times.

The bounds are the platform's and vLLM's (docs/config-rules.md, each field's description in stacks/): Hyperdisk ML takes
400 to 1,200,000 MiB/s; the pause before vLLM stops is at least the 5 s endpoint removal takes; Spot gives 25 s.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from stacks.batch import BatchSettings
from stacks.benchmark import BenchmarkSettings
from stacks.cache import CacheSettings
from stacks.drain import DrainSettings
from stacks.gateway import GatewaySettings
from stacks.model import ModelSettings
from stacks.network import NetworkSettings
from stacks.observability import ObservabilitySettings
from stacks.rollout import RolloutSettings
from stacks.workload import WorkloadSettings
from tests.stacks import handed

# A config.json for model ids the catalogue lacks (llm:model.config): the 27B's.
OWN_CONFIG = "facts/data/models/Qwen--Qwen3.5-27B-FP8/config.json"


def problems(section: str, **values: Any) -> list[str]:
    return handed.problems(**{section: values})


# (section's key, its model, key, values taken, values refused)
RANGES: list[tuple[str, type[BaseModel], str, tuple[Any, ...], tuple[Any, ...]]] = [
    ("cache", CacheSettings, "sizeGi", (40, 65536), (39, 65537)),
    ("cache", CacheSettings, "throughputMibps", (400, 1_200_000), (399, 1_200_001)),
    ("cache", CacheSettings, "downloadRetries", (0, 10), (-1, 11)),
    ("cache", CacheSettings, "downloadDeadlineMinutes", (5, 1440), (4, 1441)),
    ("cache", CacheSettings, "pricePerGibMonth", (0.0, 1.5), (-0.01,)),
    ("cache", CacheSettings, "pricePerMibpsMonth", (0.0, 1.5), (-0.01,)),
    ("cache", CacheSettings, "snapshotPricePerGibMonth", (0.0, 1.5), (-0.01,)),
    ("gateway", GatewaySettings, "backendTimeoutSeconds", (10, 3600), (9, 3601)),
    ("gateway", GatewaySettings, "endpointPickerReplicas", (1, 3), (0, 4)),
    ("gateway", GatewaySettings, "programmedTimeoutMinutes", (1, 60), (0, 61)),
    ("gateway", GatewaySettings, "pricePerVcpuHour", (0.0, 1.0), (-0.01,)),
    ("gateway", GatewaySettings, "pricePerGibHour", (0.0, 1.0), (-0.01,)),
    ("gateway", GatewaySettings, "loadBalancerPricePerHour", (0.0, 1.0), (-0.01,)),
    ("observability", ObservabilitySettings, "minutes", (1, 120), (0, 121)),
    ("observability", ObservabilitySettings, "waitingRequests", (1, 100_000), (0,)),
    ("observability", ObservabilitySettings, "kvCacheUsage", (0.01, 1.0), (0.0, 1.01)),
    ("observability", ObservabilitySettings, "ttftP99Seconds", (0.1, 30.0), (0.0, -1.0)),
    ("observability", ObservabilitySettings, "throughputFraction", (0.01, 1.0), (0.0, 1.01)),
    ("benchmark", BenchmarkSettings, "run", (1, 99), (0,)),
    ("benchmark", BenchmarkSettings, "clientsPerNode", (1, 16), (0, 17)),
    ("benchmark", BenchmarkSettings, "concurrencyPerClient", (1, 16000), (0, 16001)),
    ("benchmark", BenchmarkSettings, "promptsPerClient", (1, 10240), (0,)),
    ("batch", BatchSettings, "finishedRetentionDays", (1, 3650), (0, 3651)),
    ("rollout", RolloutSettings, "parallelism", (1, 1000), (0, 1001)),
    ("workload", WorkloadSettings, "inputTokens", (1, 1024), (0,)),
    ("workload", WorkloadSettings, "outputTokens", (1, 512), (0,)),
    ("workload", WorkloadSettings, "rangeRatio", (0.0, 0.99), (-0.01, 1.0)),
    ("drain", DrainSettings, "preStopSeconds", (5, 120), (4, 121)),
    ("drain", DrainSettings, "shutdownTimeoutSeconds", (0, 3600), (-1, 3601)),
]


@pytest.mark.parametrize(("section", "model", "key", "taken", "refused"), RANGES, ids=[f"{r[0]}.{r[2]}" for r in RANGES])
def test_each_range_takes_its_bounds_and_refuses_past_them(
    section: str, model: type[BaseModel], key: str, taken: tuple[Any, ...], refused: tuple[Any, ...]
) -> None:
    for value in taken:
        assert model.model_validate({key: value}).model_dump(by_alias=True)[key] == value
    for value in refused:
        found = problems(section, **{key: value})
        assert found[0].startswith(f"llm:{section}.{key}: {value} is not allowed: input should be"), found


# --- The drain's times.


def test_the_grace_off_spot_is_the_pause_the_drain_and_the_teardown() -> None:
    assert DrainSettings().grace_seconds() == 10 + 35 + 7
    assert DrainSettings(pre_stop_seconds=20, shutdown_timeout_seconds=100).grace_seconds() == 20 + 100 + 7


@pytest.mark.parametrize(
    ("given", "on_spot"),
    [
        # Unset: the shortest pause, 5 s, and what Spot's 25 s leave after 7 s of teardown.
        ({}, (5, 13)),
        ({"pre_stop_seconds": 8}, (8, 10)),
        ({"shutdown_timeout_seconds": 3}, (5, 3)),
        ({"pre_stop_seconds": 12, "shutdown_timeout_seconds": 6}, (12, 6)),
        # What the stack set is kept, even when it does not fit: the settings refuse it then.
        ({"pre_stop_seconds": 30}, (30, -12)),
    ],
)
def test_on_spot_the_drain_keeps_what_the_stack_set(given: dict[str, int], on_spot: tuple[int, int]) -> None:
    assert DrainSettings(**given).on_spot() == on_spot


# --- Forms.


def test_the_benchmark_node_must_hold_the_clients() -> None:
    assert BenchmarkSettings(machine_type="n2-standard-16").machine_type == "n2-standard-16"
    assert problems("benchmark", machineType="c4-standard-8") == [
        "llm:benchmark.machineType: 'c4-standard-8' is too small: the clients take 14 CPUs; use 16+ vCPUs"
    ]
    assert problems("benchmark", machineType="n2-highcpu-16") == [
        "llm:benchmark.machineType: 'n2-highcpu-16' has 16 GB, too little for the clients' 48Gi pod; use 56+ GB, e.g. c4-standard-16"
    ]
    assert problems("benchmark", machineType="zz9-standard-32")[0].startswith(
        "llm:benchmark.machineType: 'zz9-standard-32' is not a machine type whose size is known; use a predefined shape of "
    )


def test_the_benchmark_image_runs_a_release_with_facts() -> None:
    assert BenchmarkSettings(image="vllm/vllm-openai:v0.33.0").release == "0.33.0"
    assert problems("benchmark", image="vllm/vllm-openai:latest")[0].startswith(
        "llm:benchmark.image: 'vllm/vllm-openai:latest' is not pinned"
    )
    assert problems("benchmark", image="vllm/vllm-openai:v0.10.0")[0].startswith(
        "llm:benchmark.image: 'vllm/vllm-openai:v0.10.0' runs vLLM 0.10.0"
    )


@pytest.mark.parametrize("model_id", ["Qwen/Qwen3.5-27B-FP8", "org_1/name.v2-x"])
def test_a_hugging_face_model_id_is_taken(model_id: str) -> None:
    config = OWN_CONFIG
    assert ModelSettings(id=model_id, config=config).public_name == model_id


@pytest.mark.parametrize("model_id", ["Qwen3.5-27B", "a/b/c", "a/b c", "/name"])
def test_what_is_not_a_model_id_is_refused(model_id: str) -> None:
    assert problems("model", id=model_id) == [f"llm:model.id: {model_id!r} is not a Hugging Face model id such as Qwen/Qwen3.5-27B-FP8"]


@pytest.mark.parametrize("revision", ["", " ", "main branch", "main\n"])
def test_a_revision_with_space_is_refused(revision: str) -> None:
    assert problems("model", revision=revision) == [
        f"llm:model.revision: {revision!r} is not a revision; name a branch, tag or commit such as main"
    ]


def test_a_served_name_replaces_the_id_for_clients() -> None:
    assert ModelSettings(served_name="qwen").public_name == "qwen"
    assert ModelSettings(revision="0123abc").revision == "0123abc"


def test_the_network_ranges_must_be_disjoint() -> None:
    assert NetworkSettings(pod_cidr="10.16.0.0/14").pod_cidr == "10.16.0.0/14"
    assert problems("network", podCidr="10.0.0.0/14") == [
        "llm:network.podCidr: '10.0.0.0/14' overlaps nodeCidr (10.0.0.0/20); the ranges must be disjoint"
    ]
    assert problems("network", serviceCidr="10.4.0.0/20") == [
        "llm:network.serviceCidr: '10.4.0.0/20' overlaps podCidr (10.4.0.0/14); the ranges must be disjoint"
    ]


def test_a_network_name_of_up_to_56_characters() -> None:
    # `<name>-router` must fit Compute Engine's 63 characters (facts/naming.py).
    assert NetworkSettings(name="n" * 56).name == "n" * 56
    assert problems("network", name="n" * 57)[0].startswith(f"llm:network.name: '{'n' * 57}' is not a valid name")


def test_the_proxy_subnet_must_not_overlap_the_network() -> None:
    overlapping = {"proxySubnetCidr": "10.8.0.0/23"}
    assert handed.problems(routing="gateway", gateway=overlapping) == [
        "llm:gateway.proxySubnetCidr: '10.8.0.0/23' overlaps network.serviceCidr (10.8.0.0/20); choose a disjoint range"
    ]
    # An existing subnet, or clusterip routing, creates no proxy subnet.
    assert handed.parsed(gateway=overlapping).routing == "clusterip"
    existing = {**overlapping, "existingProxySubnet": "proxy-only"}
    assert handed.parsed(routing="gateway", gateway=existing).gateway.existing_proxy_subnet == "proxy-only"


def test_an_external_gateway_needs_the_opt_in() -> None:
    assert problems("gateway", exposure="external") == [
        "llm:gateway.exposure: 'external' exposes the model to the internet; set allowPublicExposure: true to opt in, or use internal"
    ]
    assert handed.parsed(allowPublicExposure=True, gateway={"exposure": "external"}).gateway.exposure == "external"


@pytest.mark.parametrize("channel", ["projects/example-project/notificationChannels/123", "projects/123456/notificationChannels/9"])
def test_a_notification_channel_by_project_id_or_number(channel: str) -> None:
    assert ObservabilitySettings(notification_channels=(channel,)).notification_channels == (channel,)


@pytest.mark.parametrize("channel", ["projects/x/notificationChannels/1", "projects/example-project/notificationChannels/abc", "channel-1"])
def test_what_is_not_a_notification_channel_is_refused(channel: str) -> None:
    assert problems("observability", notificationChannels=[channel]) == [
        f"llm:observability.notificationChannels[0]: {channel!r} is not a notification channel: "
        "projects/<project id or number>/notificationChannels/<id>"
    ]
