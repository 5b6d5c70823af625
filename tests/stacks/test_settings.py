"""Bad config fails before anything is registered, naming the key, the value and what is allowed."""

from __future__ import annotations

from typing import Any

import pytest

from render.engine import Render, render_stack
from stacks.loading import Stack, StackSecrets
from stacks.problems import StackConfigError
from stacks.settings import StackSettings
from tests.conftest import stack_file_config

WINDOW = {"startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z"}

BAD_CONFIGS: list[tuple[str, dict[str, Any], list[str]]] = [
    ("misspelled top-level key", {"llm:node": 2}, ["llm:node: unknown key", "did you mean 'nodes'"]),
    (
        "misspelled nested key",
        {"llm:capacity": {"mode": "spot", "flexstart": {}}},
        ["llm:capacity.flexstart: unknown key", "did you mean 'flexStart'"],
    ),
    ("negative node count", {"llm:nodes": -1}, ["llm:nodes: -1", "0 (scaled to zero) up to 1000"]),
    ("node count not a number", {"llm:nodes": "twelve"}, ["llm:nodes: 'twelve'", "valid integer"]),
    ("unknown routing", {"llm:routing": "nodeport"}, ["llm:routing: 'nodeport'", "use one of: clusterip, gateway"]),
    (
        "on-demand capacity",
        {"llm:capacity": {"mode": "on-demand"}},
        ["llm:capacity.mode: 'on-demand' is not available for A4 (a4-highgpu-8g); use one of: spot, reservation, flex-start, fallback"],
    ),
    ("unknown capacity mode", {"llm:capacity": {"mode": "preemptible"}}, ["llm:capacity.mode: 'preemptible' is not a capacity mode"]),
    (
        "reservation without a name",
        {"llm:capacity": {"mode": "reservation"}},
        ["llm:capacity.reservation: is required when capacity.mode is reservation; set reservation.name"],
    ),
    (
        "fallback step unknown",
        {"llm:capacity": {"mode": "fallback", "fallback": ["spot", "on-demand"]}},
        ["llm:capacity.fallback[1]: 'on-demand'"],
    ),
    (
        "max model length below the workload",
        {"llm:serving": {"maxModelLen": 2048}},
        ["llm:serving.maxModelLen: 2048 is below the workload's longest request (2304 tokens", "raise it to at least 2304"],
    ),
    (
        "data parallel other than the node's GPUs",
        {"llm:serving": {"dataParallelSize": 4}},
        ["llm:serving.dataParallelSize: 4 must equal the GPUs of one A4 node (8)"],
    ),
    (
        "unpinned image",
        {"llm:serving": {"image": "vllm/vllm-openai:latest"}},
        ["llm:serving.image: 'vllm/vllm-openai:latest' is not pinned"],
    ),
    ("zone outside the region", {"llm:zone": "us-central1-b"}, ["llm:zone: 'us-central1-b' is not in region europe-west4"]),
    ("overlapping ranges", {"llm:network": {"podCidr": "10.0.0.0/14"}}, ["llm:network.podCidr: '10.0.0.0/14' overlaps nodeCidr"]),
    ("public range", {"llm:network": {"nodeCidr": "8.8.0.0/20"}}, ["llm:network.nodeCidr: '8.8.0.0/20' is a public range"]),
    ("bad project id", {"llm:project": "My_Project"}, ["llm:project: 'My_Project' is not a GCP project id"]),
    ("missing project", {"llm:project": None}, ["llm:project: is required; set it with `pulumi config set project <value>`"]),
    ("bad label", {"llm:labels": {"Team": "ml"}}, ["llm:labels.Team: 'Team' is not a label key"]),
    (
        "token in plain text",
        {"llm:hfToken": "hf_abc"},
        ["llm:hfToken: holds a credential in plain text", "pulumi config set --secret hfToken"],
    ),
    (
        "cluster version out of range",
        {"llm:cluster": {"version": "1.29"}},
        ["llm:cluster.version: '1.29' is too old for B200 on Autopilot"],
    ),
    (
        "external gateway without opt-in",
        {"llm:gateway": {"exposure": "external"}},
        ["llm:gateway.exposure: 'external' exposes the model to the internet"],
    ),
    (
        "production without deletion protection",
        {"llm:production": True, "llm:cluster": {"deletionProtection": False}},
        ["llm:cluster.deletionProtection: false must be true on a production stack"],
    ),
    (
        "flex-start longer than 7 days",
        {"llm:capacity": {"mode": "flex-start", "flexStart": {"maxRunHours": 200}}},
        ["llm:capacity.flexStart.maxRunHours: 200 is out of range"],
    ),
    ("replica cpu not a quantity", {"llm:serving": {"cpu": "lots"}}, ["llm:serving.cpu: 'lots' is not a Kubernetes quantity"]),
    (
        "endpoint picker memory not a quantity",
        {"llm:gateway": {"endpointPickerMemory": "16GB"}},
        ["llm:gateway.endpointPickerMemory: '16GB'"],
    ),
    (
        "proxy-only subnet inside the node range",
        {"llm:routing": "gateway", "llm:gateway": {"proxySubnetCidr": "10.0.2.0/23"}},
        ["llm:gateway.proxySubnetCidr: '10.0.2.0/23' overlaps network.nodeCidr (10.0.0.0/20)"],
    ),
    ("label value with a leading dash", {"llm:labels": {"team": "-ml"}}, ["llm:labels.team: '-ml' is not a label value"]),
    (
        "benchmark node too small",
        {"llm:benchmark": {"machineType": "c4-standard-8"}},
        ["llm:benchmark.machineType: 'c4-standard-8' is too small"],
    ),
    ("cache smaller than the weights", {"llm:cache": {"sizeGi": 20}}, ["llm:cache.sizeGi: 20"]),
    (
        "future reservation without a node count",
        {
            "llm:capacity": {
                "mode": "reservation",
                "reservation": {
                    "name": "r",
                    "create": {"name": "r", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z"},
                },
            }
        },
        ["llm:capacity.reservation.create.nodes: is required"],
    ),
]


@pytest.mark.parametrize(("case", "changes", "expected"), BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_fails_with_a_clear_error_and_registers_nothing(case: str, changes: dict[str, Any], expected: list[str]) -> None:
    config = stack_file_config("dev")
    for key, value in changes.items():
        if value is None:
            config.pop(key)
        else:
            config[key] = value
    record = Render(stack="dev")
    with pytest.raises(StackConfigError) as failure:
        render_stack("dev", config=config, record=record)
    message = str(failure.value)
    for fragment in expected:
        assert fragment in message, f"{case}: {fragment!r} not in:\n{message}"
    assert record.resources == [], f"{case}: registered {[r.name for r in record.resources]}"


def test_every_problem_is_reported_at_once() -> None:
    config = {**stack_file_config("dev"), "llm:nodes": -3, "llm:routing": "nodeport"}
    with pytest.raises(StackConfigError) as failure:
        render_stack("dev", config=config)
    assert len(failure.value.problems) == 2


def test_defaults_reproduce_the_reference_deployment() -> None:
    settings = StackSettings.model_validate({"project": "example-project"})
    assert settings.model.id == "Qwen/Qwen3.5-27B-FP8"
    assert (settings.region, settings.zone) == ("europe-west4", "europe-west4-b")
    assert settings.cluster.release_channel == "rapid"
    assert settings.routing == "clusterip"
    assert settings.serving.image == "vllm/vllm-openai:v0.18.1"
    assert (settings.serving.max_model_len, settings.serving.gpu_memory_utilization, settings.serving.max_num_seqs) == (2560, 0.92, None)
    assert (settings.workload.input_tokens, settings.workload.output_tokens, settings.workload.range_ratio) == (1024, 512, 0.5)


def test_the_reference_max_model_length_fits_the_reference_workload_with_little_room() -> None:
    settings = StackSettings.model_validate({"project": "example-project"})
    assert settings.workload.longest_request == 2304 <= settings.serving.max_model_len


def test_plain_scalars_from_the_cli_are_converted() -> None:
    # `pulumi config set nodes 3` stores the string "3".
    config = {**stack_file_config("dev"), "llm:nodes": "3", "llm:cluster": {"deletionProtection": "false"}}
    render = render_stack("dev", config=config)
    assert render.one("gcp:container/cluster:Cluster").inputs["deletionProtection"] is False


def test_stack_labels_are_valid_label_values_whatever_the_stack_name() -> None:
    settings = StackSettings.model_validate({"project": "example-project", "labels": {"team": "ml"}})
    stack = Stack(name="Team.Prod", settings=settings, secrets=StackSecrets(hf_token=None, api_key=None))
    assert stack.labels == {"app": "llm-serving", "managed-by": "pulumi", "stack": "team-prod", "team": "ml"}


def test_a_scalar_that_only_looks_like_json_is_refused_naming_its_key() -> None:
    with pytest.raises(StackConfigError) as error:
        render_stack("dev", config={**stack_file_config("dev"), "llm:routing": "["})
    assert "llm:routing" in str(error.value) and "'['" in str(error.value)
