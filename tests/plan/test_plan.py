"""The plan decides once what components must agree on, and each component sees only its spec."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from config.settings import StackSettings
from plan.stack import plan_stack
from render.engine import PROJECT_ROOT

COMPONENTS = PROJECT_ROOT / "components"
# Shared by every component on purpose: resource options and the manifest resource.
SHARED = {"components.options", "components.manifests", "components.credentials", "components.workload_identity"}


def settings(**values: Any) -> StackSettings:
    return StackSettings.model_validate({"project": "example-project", **values})


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    return found | {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}


def test_no_component_imports_another_component() -> None:
    for path in sorted(COMPONENTS.glob("*.py")):
        own = f"components.{path.stem}"
        siblings = {m for m in imported_modules(path) if m.startswith("components.") and m not in SHARED | {own}}
        assert siblings == set(), f"{path.name} imports {sorted(siblings)}"


def test_scaled_to_zero_is_decided_once_for_every_component() -> None:
    idle = plan_stack(settings(nodes=0, routing="gateway", benchmark={"enabled": True}), "dev")
    assert idle.scaled_to_zero
    assert idle.replicas.replicas == 0
    assert idle.gateway is not None and not idle.gateway.serving
    assert idle.benchmark is None

    busy = plan_stack(settings(nodes=2, routing="gateway", benchmark={"enabled": True}), "dev")
    assert not busy.scaled_to_zero
    assert busy.gateway is not None and busy.gateway.serving
    assert busy.benchmark is not None and busy.benchmark.nodes == 2


def test_replicas_mount_the_claim_the_cache_makes_and_the_pool_picks_the_replica_pods() -> None:
    stack = plan_stack(settings(routing="gateway"), "dev")
    assert stack.cache is not None and stack.replicas.cache == stack.cache.mount
    assert stack.replicas.cache.claim == stack.cache.names.reader
    assert stack.replicas.cache.model_path == f"{stack.replicas.cache.folder}/{stack.cache.key}"
    assert stack.gateway is not None and stack.gateway.pool_selector == stack.replicas.selector

    uncached = plan_stack(settings(cache={"enabled": False}), "dev")
    assert uncached.cache is None and uncached.replicas.cache is None


def test_every_spec_carries_the_stack_labels() -> None:
    stack = plan_stack(settings(routing="gateway", benchmark={"enabled": True}, labels={"team": "ml"}), "Dev.Stack")
    assert stack.labels == {"app": "llm-serving", "managed-by": "pulumi", "stack": "dev-stack", "team": "ml"}
    assert stack.cache is not None and stack.gateway is not None and stack.benchmark is not None
    labelled = (stack.capacity.labels, stack.replicas.labels, stack.cache.labels, stack.gateway.labels, stack.benchmark.labels)
    assert all(labels == stack.labels for labels in labelled)
