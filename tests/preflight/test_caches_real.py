"""The compile cache, measured on real starts: before and after the render put every JIT cache under it."""

from __future__ import annotations

from pathlib import Path

from preflight.rendered import engine_spec
from tests.conftest import rendered
from tests.preflight.runs import DEV, JIT_CACHES, log_lines, report, start
from workloads.cold_start.phases import Breakdown, read_log

JIT_VARIABLES = ("TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE", "TORCHINDUCTOR_CACHE_DIR")


def first_answer(run: Path, start_name: str) -> float:
    """The first answer after /health, as the project's cold-start parser reads it from the start's log."""
    breakdown = Breakdown(pod=run.name)
    read_log(breakdown, log_lines(run, start(run, start_name)["log"]))
    seconds = dict(breakdown.phases())["first answer"]
    assert seconds is not None
    return seconds


def test_the_render_puts_every_jit_cache_where_the_warm_run_had_it() -> None:
    deployment = next(r for r in rendered("dev").by_type("kubernetes:apps/v1:Deployment") if r.inputs["metadata"]["name"] == "vllm")
    env = engine_spec(deployment.inputs).env
    measured = report(JIT_CACHES)["rendered"]["env"]
    assert {name: env.get(name) for name in ("VLLM_CACHE_ROOT", *JIT_VARIABLES)} == {
        name: measured[name] for name in ("VLLM_CACHE_ROOT", *JIT_VARIABLES)
    }
    # The run before had none of them, and its start with only the compile cache compiled its kernels again.
    assert not any(name in report(DEV)["rendered"]["env"] for name in JIT_VARIABLES)


def test_a_start_that_keeps_only_the_compile_cache_is_warm_once_every_jit_cache_is_in_it() -> None:
    # Before: 103 s from /health to a first answer, Triton and FlashInfer compiling again; after: about 1 s,
    # as the all-caches start was; a cold start still compiles.
    assert first_answer(DEV, "2-compile-cache") > 90
    assert first_answer(JIT_CACHES, "2-compile-cache") < 5
    assert first_answer(JIT_CACHES, "1-cold") > 90
