"""The mutation script finds its equivalent mutants by text, so a renumbering cannot leave another mutant out."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib

import pytest

from dev import mutation
from render.engine import PROJECT_ROOT

INTERPOLATE = "plan.estimates.x__interpolate__mutmut_"


def listed(texts: dict[str, str]) -> dict[str, str]:
    """One source per equivalent of plan/estimates.py, each under a number of its own, plus a mutant that is not one."""
    items = [e for e in mutation.EQUIVALENT if e.function.startswith("plan.estimates.")]
    found = {f"{e.function}__mutmut_{100 + i}": f"def f():\n    {e.text}\n" for i, e in enumerate(items)}
    return {**found, **texts}


def test_equivalents_are_found_by_their_text_whatever_their_number() -> None:
    found = mutation.equivalents("plan/estimates.py", listed({INTERPOLATE + "1": "if nodes <= points[0]: return 1.0"}))
    assert INTERPOLATE + "1" not in found
    assert len(found) == len([e for e in mutation.EQUIVALENT if e.function.startswith("plan.estimates.")])


def test_an_equivalent_whose_text_is_gone_stops_the_run() -> None:
    texts = listed({})
    texts.pop(next(name for name, text in texts.items() if "raise AssertionError(None)" in text))
    with pytest.raises(SystemExit, match=r"raise AssertionError\(None\).*matches 0 mutants"):
        mutation.equivalents("plan/estimates.py", texts)


def test_an_equivalent_text_two_mutants_hold_stops_the_run() -> None:
    with pytest.raises(SystemExit, match="matches 2 mutants"):
        mutation.equivalents("plan/estimates.py", listed({INTERPOLATE + "999": "raise AssertionError(None)"}))


def test_a_module_without_equivalents_leaves_nothing_out() -> None:
    assert mutation.equivalents("render/promql.py", {"render.promql.x_query__mutmut_1": "raise ValueError(None)"}) == set()


def test_a_mutants_run_runs_the_listed_timeline_tests_that_the_test_command_leaves_out() -> None:
    listed = ("tests/preflight/test_drain_run.py",)
    section = tomllib.loads(mutation.mutmut_section("preflight/drain.py", [], listed))["tool"]["mutmut"]
    assert section["pytest_add_cli_args_test_selection"] == list(listed)
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", *section["pytest_add_cli_args"], *listed]
    done = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"^\d+ tests? collected", done.stdout, re.MULTILINE) and "deselected" not in done.stdout, done.stdout
