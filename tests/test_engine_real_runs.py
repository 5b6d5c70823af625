"""What the real runs of the engine measured (tests/real_runs/), held against the pod the program renders.

Each run is the preflight of a stack on one H100 with vLLM 0.26.0 (its README names the command and the
machine). Readiness, the JIT caches, the drain and the cold-start estimate rely on their figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from components.replicas import WARM_UP_TIMEOUT_SECONDS
from facts.vllm import (
    FIRST_ANSWER_COMPILE_CACHE_ONLY_SECONDS,
    FIRST_ANSWER_SECONDS,
    JIT_CACHE_FOLDERS,
    SHUTDOWN_TEARDOWN_SECONDS,
    START_ALL_CACHES_SECONDS,
    START_COLD_SECONDS,
    START_COMPILE_CACHE_ONLY_SECONDS,
)
from workloads.cold_start.phases import Breakdown, read_log

REAL_RUNS = Path(__file__).resolve().parent / "real_runs"
RUNS = sorted(path for path in REAL_RUNS.iterdir() if (path / "report.json").is_file())
DEV = REAL_RUNS / "2026-11-26-h100-dev"
# The home folders a start writes, by the variable that moves each (the run's own cache_dirs table names them).
HOME_JIT_CACHES = {".triton/cache": "TRITON_CACHE_DIR", ".cache/flashinfer": "FLASHINFER_WORKSPACE_BASE"}
# vLLM's usage-stats file (vllm/usage/usage_lib.py), not a compiler's cache.
HOME_NOT_CACHES = {".config/vllm"}


def report(run: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run / "report.json").read_text(encoding="utf-8"))
    return loaded


def starts() -> list[tuple[Path, dict[str, Any]]]:
    return [(run, start) for run in RUNS for start in report(run)["starts"]]


def test_the_engines_measured_start_is_the_real_dev_runs() -> None:
    by_mode = {start["mode"]: start for start in report(DEV)["starts"]}
    assert round(by_mode["cold"]["ready_s"]) == START_COLD_SECONDS
    assert round(by_mode["compile-cache"]["ready_s"]) == START_COMPILE_CACHE_ONLY_SECONDS
    assert round(by_mode["all-caches"]["ready_s"]) == START_ALL_CACHES_SECONDS
    assert round(by_mode["compile-cache"]["first_answer_after_ready_s"]) == FIRST_ANSWER_COMPILE_CACHE_ONLY_SECONDS
    # The longest first answer of any real start sizes the startup probe.
    assert round(max(start["first_answer_after_ready_s"] for _, start in starts())) == FIRST_ANSWER_SECONDS


@pytest.mark.parametrize(("run", "start"), starts(), ids=[f"{run.name}/{start['name']}" for run, start in starts()])
def test_every_real_first_answer_fits_the_startup_probe(run: Path, start: dict[str, Any]) -> None:
    assert start["first_answer_after_ready_s"] < WARM_UP_TIMEOUT_SECONDS
    # The project's parser reads the same wait from the log: the first answer after the server started.
    breakdown = Breakdown(pod=run.name)
    read_log(breakdown, (run / start["log"]).read_text(encoding="utf-8").splitlines())
    first_answer = dict(breakdown.phases())["first answer"]
    assert first_answer is not None and first_answer < WARM_UP_TIMEOUT_SECONDS
    assert first_answer == pytest.approx(start["first_answer_after_ready_s"], abs=2)


@pytest.mark.parametrize("run", RUNS, ids=[run.name for run in RUNS])
def test_every_real_teardown_fits_the_time_the_grace_leaves_it(run: Path) -> None:
    exits = [report(run)["clean_exit_s"]] + [s["sigterm_to_exit_idle_s"] for s in report(run)["starts"] if s.get("sigterm_to_exit_idle_s")]
    assert exits and max(exits) <= SHUTDOWN_TEARDOWN_SECONDS


@pytest.mark.parametrize("run", RUNS, ids=[run.name for run in RUNS])
def test_every_jit_cache_a_real_start_wrote_in_the_home_is_moved_to_the_shared_cache(run: Path) -> None:
    home = {row["folder"] for row in report(run)["caches"].values() if row["root"] == "home"}
    assert home, "the run lists no folder of the home"
    assert home <= HOME_JIT_CACHES.keys() | HOME_NOT_CACHES, home - HOME_JIT_CACHES.keys() - HOME_NOT_CACHES
    assert {HOME_JIT_CACHES[folder] for folder in home - HOME_NOT_CACHES} <= JIT_CACHE_FOLDERS.keys()
