"""The compile cache, measured on real starts: before and after the render put every JIT cache under it."""

from __future__ import annotations

from pathlib import Path

from tests.preflight.runs import DEV, JIT_CACHES, report, start

JIT_VARIABLES = ("TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE", "TORCHINDUCTOR_CACHE_DIR")


def _env(run: Path) -> dict[str, str]:
    env: dict[str, str] = report(run)["rendered"]["env"]
    return env


def test_the_later_run_rendered_every_jit_cache_under_the_compile_cache() -> None:
    env = _env(JIT_CACHES)
    assert all(env[name].startswith(env["VLLM_CACHE_ROOT"] + "/") for name in JIT_VARIABLES)
    assert not any(name in _env(DEV) for name in JIT_VARIABLES)


def test_a_start_that_keeps_only_the_compile_cache_is_warm_once_every_jit_cache_is_in_it() -> None:
    before, after = start(DEV, "2-compile-cache"), start(JIT_CACHES, "2-compile-cache")
    # Before: 247 s to Ready and 103 s more to a first answer, Triton and FlashInfer compiling again.
    assert before["ready_s"] > 200 and before["first_answer_after_ready_s"] > 90
    # After: the same start reads every kernel back, as the all-caches start did before (64 s, 1 s).
    assert after["ready_s"] < 90 and after["first_answer_after_ready_s"] < 5
    assert start(JIT_CACHES, "1-cold")["first_answer_after_ready_s"] > 90
