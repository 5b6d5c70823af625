"""The guardrails read GKE's names, A4's facts and the program's own names from the one place the program keeps each."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import pytest

import policy.rules
from facts import gke, naming
from render.engine import PROJECT_ROOT


def _facts(home: types.ModuleType) -> dict[str, str | int]:
    return {name: value for name, value in vars(home).items() if name.isupper() and isinstance(value, (str, int))}


def _restated(source: str, home: types.ModuleType = gke) -> list[str]:
    """Literals of a module that repeat a fact of ``home`` (facts/gke.py), as ``line: value``."""
    facts = _facts(home)
    texts = {value for value in facts.values() if isinstance(value, str)}
    tree = ast.parse(source)
    found = [f"{node.lineno}: {node.value!r}" for node in ast.walk(tree) if isinstance(node, ast.Constant) and node.value in texts]
    # A number (the GPUs of a node) restated under the program's own name.
    found += [
        f"{node.lineno}: {target.id} = {node.value.value!r}"
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id in facts
    ]
    return found


def test_the_check_finds_a_restated_fact() -> None:
    assert _restated(f"GPUS_PER_NODE = {gke.GPUS_PER_NODE}\nLABEL = {gke.SPOT_LABEL!r}\n") == [
        f"2: {gke.SPOT_LABEL!r}",
        f"1: GPUS_PER_NODE = {gke.GPUS_PER_NODE}",
    ]


@pytest.mark.parametrize("home", [gke, naming], ids=["facts/gke.py", "facts/naming.py"])
def test_the_guardrails_restate_none_of_the_programs_facts(home: types.ModuleType) -> None:
    assert _restated(Path(policy.rules.__file__).read_text(), home) == []


def test_the_check_finds_a_restated_name_of_the_program() -> None:
    source = f"PREFIX = {naming.MODEL_CACHE_PREFIX!r}\nLABELS = ({naming.APP_LABEL!r},)\n"
    assert _restated(source, naming) == [f"1: {naming.MODEL_CACHE_PREFIX!r}", f"2: {naming.APP_LABEL!r}"]


def test_the_settings_refuse_the_labels_the_plan_sets() -> None:
    # The settings' rule and the plan's labels are one list: a label the plan adds is refused as a stack label.
    settings_source = (PROJECT_ROOT / "stacks" / "settings.py").read_text()
    assert _restated(settings_source, naming) == []


def test_the_pack_imports_the_programs_facts_when_the_cli_runs_it_from_its_own_folder() -> None:
    # As the Pulumi CLI runs the pack: its own folder, the project's .venv, no project root on the path.
    script = (
        "import runpy, sys, pulumi_policy\n"
        "pulumi_policy.PolicyPack = lambda *args, **kwargs: None\n"
        "runpy.run_path('__main__.py', run_name='__main__')\n"
        "print(sys.modules['facts.gke'].__file__)\n"
    )
    ran = subprocess.run([sys.executable, "-I", "-c", script], cwd=PROJECT_ROOT / "policy", capture_output=True, text=True, check=False)
    assert ran.returncode == 0, ran.stderr
    assert Path(ran.stdout.strip()) == PROJECT_ROOT / "facts" / "gke.py"
