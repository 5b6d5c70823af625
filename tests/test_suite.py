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


def test_the_timeline_command_runs_what_the_test_command_leaves_out() -> None:
    # The README's two commands together run every test but the lint and own-stacks ones, which .ci/run runs itself.
    command = readme_command("timeline-command")
    assert command[:3] == ["uv", "run", "pytest"] and command[command.index("-m") + 1] == "timeline"
    addopts = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "and not timeline'" in addopts
