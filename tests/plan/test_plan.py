"""The plan decides once what components must agree on, and each component sees only its spec."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import typing
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pydantic import BaseModel

from plan import stack as plan_module
from plan.stack import StackPlan, plan_stack
from render.engine import PROJECT_ROOT
from stacks.settings import StackSettings

COMPONENTS = PROJECT_ROOT / "components"
# Shared by every component on purpose: resource options and the manifest resource.
SHARED = {"components.options", "components.manifests", "components.credentials", "components.workload_identity", "components.programs"}


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


def sections_in(spec: type, path: str = "StackPlan") -> list[str]:
    """The fields reachable from ``spec`` whose type is a settings section, as ``Spec.field`` paths."""
    found: list[str] = []
    for field in dataclasses.fields(spec):
        hint = typing.get_type_hints(spec)[field.name]
        for kind in (hint, *typing.get_args(hint)):
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                found.append(f"{path}.{field.name}")
            elif isinstance(kind, type) and dataclasses.is_dataclass(kind):
                found.extend(sections_in(kind, f"{path}.{field.name}"))
    return found


def test_the_check_finds_a_section_carried_by_a_spec() -> None:
    @dataclasses.dataclass(frozen=True)
    class Carrier:
        profile: StackSettings | None

    assert sections_in(Carrier, "Carrier") == ["Carrier.profile"]


def test_no_spec_carries_a_settings_section() -> None:
    # A spec carries what its component reads; a whole section would let it read any key of it.
    assert sections_in(StackPlan) == []


def test_no_component_reads_the_settings() -> None:
    for path in sorted(COMPONENTS.glob("*.py")):
        read = {m for m in imported_modules(path) if m == "stacks" or m.startswith("stacks.")}
        assert read == set(), f"{path.name} imports {sorted(read)}: a component takes a spec from plan_stack"


def test_every_component_takes_a_spec_from_the_plan() -> None:
    specs = {name for name, value in vars(plan_module).items() if isinstance(value, type) and dataclasses.is_dataclass(value)}
    for path in sorted(COMPONENTS.glob("*.py")):
        module = importlib.import_module(f"components.{path.stem}")
        for component in vars(module).values():
            if isinstance(component, type) and issubclass(component, pulumi.ComponentResource) and component.__module__ == module.__name__:
                parameters = list(inspect.signature(component.__init__).parameters.values())
                # self, the resource name, then the spec.
                assert parameters[2].annotation in specs, f"{component.__name__} takes {parameters[2].name}: {parameters[2].annotation}"


def test_the_estimates_read_what_the_plan_built_not_the_settings() -> None:
    # The plan is computed once, in one direction: settings -> plan_stack -> estimates, never back.
    for name in ("estimates", "cold_start_estimate"):
        path = PROJECT_ROOT / "plan" / f"{name}.py"
        back = {m for m in imported_modules(path) if m.split(".")[0] == "stacks" or m == "plan.stack"}
        assert back == set(), f"plan/{name}.py imports {sorted(back)}"


def test_scaled_to_zero_is_decided_once_for_every_component() -> None:
    idle = plan_stack(settings(nodes=0, routing="gateway", benchmark={"enabled": True}), "dev")
    assert idle.scaled_to_zero
    assert idle.replicas.replicas == 0
    assert idle.gateway is not None and not idle.gateway.pools
    assert idle.benchmark is None

    busy = plan_stack(settings(nodes=2, routing="gateway", benchmark={"enabled": True}), "dev")
    assert not busy.scaled_to_zero
    assert busy.gateway is not None and busy.gateway.pools
    assert busy.benchmark is not None and busy.benchmark.nodes == 2


def test_replicas_mount_the_claim_the_cache_makes_and_the_pool_picks_the_replica_pods() -> None:
    stack = plan_stack(settings(routing="gateway"), "dev")
    assert stack.cache is not None and stack.replicas.cache == stack.cache.mount
    assert stack.replicas.cache.claim == stack.cache.names.reader
    assert stack.replicas.cache.model_path == f"{stack.replicas.cache.folder}/{stack.cache.key}"
    assert stack.gateway is not None and [pool.selector for pool in stack.gateway.pools] == [stack.replicas.selector]

    uncached = plan_stack(settings(cache={"enabled": False}), "dev")
    assert uncached.cache is None and uncached.replicas.cache is None


def test_every_spec_carries_the_stack_labels() -> None:
    stack = plan_stack(settings(routing="gateway", benchmark={"enabled": True}, labels={"team": "ml"}), "Dev.Stack")
    assert stack.labels == {"app": "llm-serving", "managed-by": "pulumi", "stack": "dev-stack", "team": "ml"}
    assert stack.cache is not None and stack.gateway is not None and stack.benchmark is not None
    labelled = (stack.capacity.labels, stack.replicas.labels, stack.cache.labels, stack.gateway.labels, stack.benchmark.labels)
    assert all(labels == stack.labels for labels in labelled)


def test_the_composition_root_hands_the_settings_only_to_the_plan() -> None:
    # The provider and the outputs compose from specs, like the components: settings reach nothing past plan_stack.
    tree = ast.parse((PROJECT_ROOT / "__main__.py").read_text())
    read: list[ast.expr] = [node for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr == "settings"]
    read += [node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == "settings"]
    planned = [
        argument
        for call in ast.walk(tree)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "plan_stack"
        for argument in call.args
    ]
    assert planned and all(node in planned for node in read), [ast.unparse(node) for node in read if node not in planned]


LAYERS = ("facts", "stacks", "plan", "components")


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_imports_flow_from_facts_to_config_to_plan_to_components_never_back(layer: str) -> None:
    above = LAYERS[LAYERS.index(layer) + 1 :]
    for path in sorted((PROJECT_ROOT / layer).rglob("*.py")):
        back = {m for m in imported_modules(path) if m.split(".")[0] in above}
        assert back == set(), f"{path.relative_to(PROJECT_ROOT)} imports {sorted(back)}"
