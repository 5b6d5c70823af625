"""A user's own stack files: the tests over every stack judge each one by its settings, never by its name.

Runs the tests parametrized over the stack files on a copy of the project that
also holds a copy of each committed stack under a new name and one with its
routing switched, as a user adding ``Pulumi.<theirs>.yaml`` would, and one stack on each documented
capacity path (``tests/test_capacity_paths.py``), so every every-stack test meets each path. It runs
those tests six more times (about 30 s), so it has its own marker, ``own_stacks``,
and its own step in ``.ci/run``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from render.engine import PROJECT_ROOT
from tests.conftest import STACKS
from tests.test_capacity_paths import DOCUMENTED_CAPACITY

# The token -k selects the copies' tests by; no test name contains it.
OWN = "userstack"
SWITCHED_ROUTING = {"clusterip": "gateway", "gateway": "clusterip"}
ROUTING = re.compile(r"^(  llm:routing: )(\w+)$", re.MULTILINE)


def own_stacks(root: Path) -> dict[str, str]:
    """File name -> text of each user's stack: each committed stack renamed, again with its routing switched,
    and one on each documented capacity path (the committed stacks in turn as its base)."""
    files: dict[str, str] = {}
    for stack in switchable(root):
        text = (root / f"Pulumi.{stack}.yaml").read_text()
        files[f"Pulumi.{OWN}-{stack}.yaml"] = text
        switched, count = ROUTING.subn(lambda m: m.group(1) + SWITCHED_ROUTING[m.group(2)], text)
        assert count == 1, f"Pulumi.{stack}.yaml: no llm:routing line to switch"
        files[f"Pulumi.{OWN}-{stack}-switched.yaml"] = switched
    for stack in sorted(set(STACKS) - set(switchable(root))):
        files[f"Pulumi.{OWN}-{stack}.yaml"] = (root / f"Pulumi.{stack}.yaml").read_text()
    for index, (path, capacity) in enumerate(sorted(DOCUMENTED_CAPACITY.items())):
        stack_file = yaml.safe_load((root / f"Pulumi.{STACKS[index % len(STACKS)]}.yaml").read_text())
        stack_file["config"]["llm:capacity"] = capacity
        files[f"Pulumi.{OWN}-{path}.yaml"] = yaml.safe_dump(stack_file, sort_keys=False)
    return files


def switchable(root: Path) -> list[str]:
    """The committed stacks whose routing may switch alone: the stack of several models serves an embedding model,
    which through the Gateway also needs gateway.chartVersion v1.5.0 (docs/architecture.md)."""
    return [stack for stack in STACKS if "llm:models" not in yaml.safe_load((root / f"Pulumi.{stack}.yaml").read_text())["config"]]


def test_the_copies_keep_the_settings_but_the_switched_ones_change_only_routing() -> None:
    files = own_stacks(PROJECT_ROOT)
    assert len(files) == len(STACKS) + len(switchable(PROJECT_ROOT)) + len(DOCUMENTED_CAPACITY)
    for stack in set(STACKS) - set(switchable(PROJECT_ROOT)):
        assert files[f"Pulumi.{OWN}-{stack}.yaml"] == (PROJECT_ROOT / f"Pulumi.{stack}.yaml").read_text()
    for stack in switchable(PROJECT_ROOT):
        original = (PROJECT_ROOT / f"Pulumi.{stack}.yaml").read_text()
        assert files[f"Pulumi.{OWN}-{stack}.yaml"] == original
        switched = files[f"Pulumi.{OWN}-{stack}-switched.yaml"]
        assert switched != original and ROUTING.sub("", switched) == ROUTING.sub("", original)
    committed = [yaml.safe_load((PROJECT_ROOT / f"Pulumi.{stack}.yaml").read_text())["config"] for stack in STACKS]
    for path, capacity in DOCUMENTED_CAPACITY.items():
        config = yaml.safe_load(files[f"Pulumi.{OWN}-{path}.yaml"])["config"]
        # The capacity is the path's; everything else is a committed stack's.
        assert config.pop("llm:capacity") == capacity
        assert any(config == {key: value for key, value in base.items() if key != "llm:capacity"} for base in committed)


@pytest.mark.own_stacks
def test_every_stack_test_passes_on_a_users_own_stacks(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT_ROOT, project, ignore=shutil.ignore_patterns(".git", ".venv", "build", "node_modules", "__pycache__"))
    for name, text in own_stacks(PROJECT_ROOT).items():
        (project / name).write_text(text)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", OWN, "tests"],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:]
    # Each of the users' stacks went through the every-stack tests.
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed and int(passed.group(1)) >= 10 * len(own_stacks(PROJECT_ROOT)), run.stdout[-2000:]
