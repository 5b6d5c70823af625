"""The benchmark scripts measure what the goals are set on, and judge a figure other work on the machine hardly moves."""

from __future__ import annotations

from pathlib import Path

from dev.benchmarks import render_gateway, render_times
from tests.conftest import readme_command


def test_render_times_judges_the_readmes_render_command(tmp_path: Path) -> None:
    shown = readme_command("render-command")
    for stack in render_times.GOALS:
        timed = render_times.commands(stack, tmp_path)
        assert timed["readme"] == [*shown[:-1], stack, "--out", str(tmp_path)]


def test_render_times_never_writes_bytecode_as_on_ci() -> None:
    assert render_times.environment()["PYTHONDONTWRITEBYTECODE"] == "1"


def test_the_gateway_benchmark_alternates_the_two_renders_after_a_warm_up_of_each() -> None:
    calls: list[str] = []
    render_gateway.compare(lambda: calls.append("without charts"), lambda: calls.append("with charts"), runs=3)
    assert calls == ["without charts", "with charts"] * 4


def test_the_gateway_benchmark_judges_median_cpu_time_so_one_disturbed_run_does_not_move_it() -> None:
    before = render_gateway.Timings(wall=[1.0, 1.0, 1.0], cpu=[1.0, 1.0, 1.0])
    # Other work on the cores stretched every wall time and one run's CPU time (caches lost).
    after = render_gateway.Timings(wall=[5.0, 5.0, 5.0], cpu=[1.5, 9.0, 1.5])
    assert render_gateway.ratio(before, after) == 1.5
