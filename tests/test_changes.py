"""Routine changes never touch stateful resources: a table of change -> what may change."""

from __future__ import annotations

from typing import Any

import pytest

from render.engine import Render
from tests.conftest import render_with, rendered

# Replacing any of these loses data or an expensive, slow-to-rebuild resource.
STATEFUL_COMPONENTS = ("llm:platform:Network", "llm:platform:Cluster", "llm:storage:ModelCache")

# change -> the resources (type, name) whose inputs it may alter; everything else must stay identical.
CHANGES: list[tuple[str, dict[str, Any], set[tuple[str, str]]]] = [
    ("engine flags", {"serving": {"maxNumSeqs": 4096, "mtpTokens": 0}}, {("kubernetes:apps/v1:Deployment", "vllm")}),
    ("node count", {"nodes": 4}, {("kubernetes:apps/v1:Deployment", "vllm")}),
    ("scale to zero", {"nodes": 0}, {("kubernetes:apps/v1:Deployment", "vllm")}),
    ("engine image", {"serving": {"image": "vllm/vllm-openai:v0.18.2"}}, {("kubernetes:apps/v1:Deployment", "vllm")}),
    ("capacity mode", {"capacity": {"mode": "flex-start"}}, {("kubernetes:apps/v1:Deployment", "vllm")}),
    ("cold start budget", {"serving": {"coldStartMinutes": 40}}, {("kubernetes:apps/v1:Deployment", "vllm")}),
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
