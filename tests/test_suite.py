"""The test command: the suite shares the cores of the machine it runs on."""

from __future__ import annotations

import tomllib

from render.engine import PROJECT_ROOT
from tests.conftest import readme_command


def test_the_readme_test_command_runs_the_suite_on_two_workers_of_a_pinned_xdist() -> None:
    command = readme_command("test-command")
    assert command[:3] == ["uv", "run", "pytest"]
    assert "-n" in command and command[command.index("-n") + 1] == "2"
    dev = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["dependency-groups"]["dev"]
    assert any(requirement.startswith("pytest-xdist==") for requirement in dev)
