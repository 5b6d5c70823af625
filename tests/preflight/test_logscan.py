"""Every real log read with the preflight's scan and the project's cold-start parser.

The parser's readings of a real vLLM 0.26.0 cold start: the four misreads the real run found (the
weights phase held the imports, the drafter's compile was dropped, kernel JIT hid in the compile
phase, the V2 runner's loading line was missed) each have a test here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight import logscan
from tests.preflight.runs import BATCH, DEV, RUNS, log_lines
from workloads.cold_start.phases import Breakdown, read_log

STARTS = [(run, path.name) for run in RUNS for path in sorted(run.glob("*.log")) if not path.name.startswith("bench-")]


def project(run: Path, name: str) -> dict[str, object]:
    lines = log_lines(run, name)
    return logscan.parse_with_project(lines, logscan.started_at(lines))


@pytest.mark.parametrize(("run", "name"), STARTS, ids=[f"{r.name}/{n}" for r, n in STARTS])
def test_every_real_start_is_read_by_the_scan_and_the_project_parser(run: Path, name: str) -> None:
    lines = log_lines(run, name)
    scan = logscan.scan(lines)
    assert scan.markers["server start"] == ["http://0.0.0.0:8000"]
    assert scan.figures["kv cache memory"]
    # Every start of the real runs printed no ERROR line and no traceback.
    assert "error" not in scan.markers
    parsed = project(run, name)
    assert "error" not in parsed
    assert all(seconds is not None and seconds > 0 for seconds in parsed["phases"].values())  # type: ignore[attr-defined]


def test_the_cold_start_prints_both_compiles_and_the_profiling_run() -> None:
    scan = logscan.scan(log_lines(DEV, "1-cold.log"))
    assert scan.figures["torch.compile"] == [28.37, 11.11]
    assert scan.figures["profiling/warmup"] == [85.31, 0.21]
    assert scan.figures["weights"] == [0.07, 0.02]
    assert scan.figures["init engine"] == [248.7]
    assert scan.markers["gdn prefill"] == ["Triton/FLA"]
    assert scan.markers["cudagraph mode changed"] == ["PIECEWISE"]
    assert len(scan.markers["kernel JIT at inference"]) == 9
    assert "compile cache used" not in scan.markers


def test_a_start_with_the_compile_cache_loads_both_graphs_but_still_profiles_for_minutes() -> None:
    scan = logscan.scan(log_lines(DEV, "2-compile-cache.log"))
    assert len(scan.markers["compile cache used"]) == 4
    assert scan.figures["torch.compile"] == [1.34, 0.34]
    assert scan.figures["profiling/warmup"][0] > 80
    warm = logscan.scan(log_lines(DEV, "3-all-caches.log"))
    assert warm.figures["profiling/warmup"][0] < 1


def test_keeping_every_cache_of_a_cold_start_does_not_keep_its_triton_kernels() -> None:
    # batch: cold, then every folder kept; Inductor's kernels of the cold start were written under the compile
    # cache, and the start that loads the compiled graphs compiles them again into ~/.triton.
    scan = logscan.scan(log_lines(BATCH, "2-all-caches.log"))
    assert scan.figures["torch.compile"][0] < 2
    assert scan.figures["profiling/warmup"][0] > 80


def test_the_project_parser_reads_every_phase_of_the_real_cold_start() -> None:
    parsed = project(DEV, "1-cold.log")
    phases = parsed["phases"]
    assert list(phases) == [  # type: ignore[call-overload]
        "imports and config",
        "weights loaded",
        "torch.compile, profiling and kernel JIT",
        "FlashInfer JIT and KV cache",
        "CUDA graph capture",
        "server start",
        "first answer",
    ]
    # Together they span the log, from the first line to the first answer (122 s after Ready).
    assert sum(phases.values()) == pytest.approx(467.0, abs=1)  # type: ignore[attr-defined]
    vllm_seconds = {"CUDA graph capture": 3.0, "profiling and kernel JIT": 85.52, "torch.compile": 39.48, "weights": 0.85362}
    assert parsed["vllmSeconds"] == vllm_seconds
    assert parsed["compileCacheHit"] is False
    assert project(DEV, "2-compile-cache.log")["compileCacheHit"] is True


def test_a_log_without_stamps_cannot_be_placed_in_time() -> None:
    with pytest.raises(ValueError, match="no stamped line"):
        logscan.started_at(["INFO no stamp"])


def test_the_weights_phase_is_the_weights_not_the_imports_and_config_before_them() -> None:
    # vLLM loaded the weights in 0.07 + 0.02 s (0.85 s with the drafter's setup); 92 s before that were imports,
    # two config resolutions, the processor and the engine core's start.
    assert project(DEV, "1-cold.log")["phases"]["weights loaded"] < 5  # type: ignore[index]


def test_torch_compile_counts_the_drafters_graph_too() -> None:
    # "init engine ... (compilation: 39.48 s)" is 28.37 s for the model and 11.11 s for the MTP drafter.
    assert project(DEV, "1-cold.log")["vllmSeconds"]["torch.compile"] == pytest.approx(39.48)  # type: ignore[index]


def test_kernel_jit_and_profiling_is_a_phase_of_its_own() -> None:
    # 85.31 s of Triton compiles in the profiling run and ~110 s of FlashInfer JIT after it hide in "compile".
    assert any("profil" in name or "JIT" in name for name in project(DEV, "1-cold.log")["phases"])  # type: ignore[attr-defined]


def test_the_v2_runners_model_loading_line_is_read() -> None:
    # vllm/v1/worker/gpu/model_runner.py:306 (0.26.0) prints "Model loading took %s GiB and %.6f seconds", without "memory".
    breakdown = Breakdown(pod="vllm-0")
    line = "2026-11-26T10:00:00Z (EngineCore pid=1) INFO 11-26 10:00:00 [model_runner.py:306] "
    read_log(breakdown, [line + "Model loading took 0.46 GiB and 0.853620 seconds"])
    assert "weights-loaded" in breakdown.steps
