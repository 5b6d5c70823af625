"""What a reviewer reads: the estimate's change first, the value as written, every subcommand named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from render.cli import main
from render.files import plan, write
from stacks.problems import StackConfigError
from tests.conftest import render_with, rendered


def test_render_diff_puts_the_estimates_change_first(capsys: pytest.CaptureFixture[str]) -> None:
    main(["diff", "dev", "prod"])
    out = capsys.readouterr().out
    assert out.startswith("estimates:\n")
    head = out[: out.index("resource changes")]
    # One Spot node at $32.61, twelve reserved at $88.93; both + $0.10 cluster fee + $0.41 of Hyperdisk ML (100 GiB, 2,400 MiB/s).
    assert "costPerHour: 33.12 -> 1067.67" in head and "tokensPerSecond: 95317 -> 1103941" in head


def test_an_unchanged_estimate_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    main(["diff", "dev", "dev"])
    assert capsys.readouterr().out.startswith("estimates: unchanged\n")


def test_a_fractional_node_count_is_shown_as_written() -> None:
    with pytest.raises(StackConfigError) as error:
        render_with("dev", nodes=2.5)
    assert "llm:nodes: 2.5 is not allowed" in str(error.value)


def test_render_help_names_the_diff_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "python -m render diff" in capsys.readouterr().out


def test_the_cluster_endpoint_of_an_offline_render_is_in_the_stacks_region() -> None:
    render = render_with("dev", region="us-central1", zone="us-central1-b")
    assert ".us-central1.gke.goog" in render.outputs["clusterEndpoint"]


# A plan and a diff are read by people: values as YAML writes them, never a Python repr.
PYTHON_REPR = re.compile(r"\bNone\b|\bTrue\b|\bFalse\b|\{'|\['")


def test_a_stack_without_some_estimates_shows_them_as_null_in_the_plan_and_the_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Flex-start has no reference price: no cost per hour, no dollars per million tokens, no upper cost.
    flex = render_with("dev", capacity={"mode": "flex-start"}, autoscaling={"enabled": True, "maxReplicas": 2})
    assert flex.outputs["estimates"]["costPerHour"] is None
    shown = plan(flex)
    assert "costPerHour: null" in shown and not PYTHON_REPR.search(shown)
    write(flex, tmp_path / "flex")
    write(rendered("dev"), tmp_path / "dev")
    main(["diff", str(tmp_path / "dev"), str(tmp_path / "flex")])
    estimates = capsys.readouterr().out.split("resource changes")[0]
    assert "costPerHour: 33.12 -> null" in estimates and not PYTHON_REPR.search(estimates)
