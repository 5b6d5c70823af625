"""Every workloads/ program reaches the cluster one way: a ConfigMap of its files (components/programs.py)."""

from __future__ import annotations

from typing import Any

import pytest

from components.programs import REPOSITORY
from tests.conftest import rendered

SOURCES = {path.relative_to(REPOSITORY).as_posix(): path.read_text(encoding="utf-8") for path in REPOSITORY.glob("workloads/**/*.py")}


def _containers(inputs: dict[str, Any]) -> list[dict[str, Any]]:
    spec = inputs.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    return [*pod.get("containers", []), *pod.get("initContainers", [])]


@pytest.mark.parametrize("stack", ["dev", "prod", "gateway", "batch"])
def test_no_container_carries_a_workloads_program_on_its_command_line(stack: str) -> None:
    for resource in rendered(stack).resources:
        for container in _containers(resource.inputs):
            for argument in [*container.get("command", []), *container.get("args", [])]:
                shipped = [path for path, text in SOURCES.items() if text.strip() and text.strip() in str(argument)]
                assert not shipped, f"{resource.name} ships {shipped} on its command line"
