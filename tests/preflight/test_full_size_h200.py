"""The full-size run on two H200s (tests/real_runs/2026-11-28-h200-full-dev), read through the preflight's parser
and held to the memory plan.

Qwen 3.5 27B at its real size (FP8 blocks, --load-format=dummy), vLLM 0.26.0: GPU 0 ran dev's rendered flags
without MTP and with --max-num-seqs=512, GPU 1 vLLM's defaults, both cold and at once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from facts.models import catalogue_folder
from preflight import bench
from preflight.full_size import TOLERANCE, EngineMemory, against_plan, as_full_size_start, engine_of, plan_for, read_memory, start_phases
from tests.preflight.runs import REAL_RUNS, log_lines

RUN = REAL_RUNS / "2026-11-28-h200-full-dev"
MODEL = "Qwen/Qwen3.5-27B-FP8"
H200_BYTES = 143_771 * 2**20
ENGINES = ("stack", "defaults")


def spec(name: str) -> dict[str, Any]:
    engines: list[dict[str, Any]] = json.loads((RUN / "engines.json").read_text(encoding="utf-8"))["engines"]
    return next(e for e in engines if e["name"] == name)


def flags_run(name: str) -> tuple[str, ...]:
    """The command line the engine ran, less ``serve MODEL``; for vLLM's defaults, with what vLLM chose on this GPU."""
    flags = tuple(spec(name)["argv"][2:])
    if name == "defaults":
        log = (RUN / "defaults.log").read_text(encoding="utf-8")
        context = re.search(r"Using max model len (\d+)", log)
        batched = re.search(r"max_num_batched_tokens=(\d+)", log)
        assert context and batched
        # 1,024 sequences for an API server on a GPU of 70 GiB or more (vllm/engine/arg_utils.py,
        # EngineArgs.get_batch_defaults); vLLM prints no line with it.
        flags += (f"--max-model-len={context[1]}", f"--max-num-batched-tokens={batched[1]}", "--max-num-seqs=1024")
    return flags


def plan(name: str) -> dict[str, float]:
    config = json.loads((catalogue_folder(MODEL) / "config.json").read_text(encoding="utf-8"))
    return plan_for(config, MODEL, flags_run(name), spec(name)["env"], hbm_bytes=H200_BYTES, release="0.26.0", capability=(9, 0))


def memory(name: str) -> EngineMemory:
    (found,) = read_memory(log_lines(RUN, f"{name}.log")).values()
    return found


def test_the_memory_lines_of_both_starts_are_read() -> None:
    assert memory("stack") == EngineMemory(
        weights_gib=28.54,
        kv_cache_gib=93.59,
        kv_tokens=625_600,
        max_concurrency=244.38,
        concurrency_tokens=2560,
        cuda_graph_estimated_gib=3.07,
        cuda_graph_gib=3.13,
        activation_peak_gib=3.16,
        non_torch_gib=0.26,
    )
    defaults = memory("defaults")
    assert (defaults.kv_cache_gib, defaults.kv_tokens, defaults.concurrency_tokens) == (94.94, 1_538_738, 262_144)
    assert (defaults.cuda_graph_estimated_gib, defaults.cuda_graph_gib) == (0.97, 1.41)


@pytest.mark.parametrize("name", ENGINES)
def test_the_plan_holds_each_starts_weights_and_kv_cache_within_tolerance(name: str) -> None:
    checks = {c.term: c for c in against_plan({name: memory(name)}, plan(name))}
    for term in ("weights_gib", "kv_cache_gib", "kv_tokens", "max_concurrency"):
        assert checks[term].ok, checks[term].text()
        assert abs(checks[term].deviation) <= TOLERANCE


def test_the_stacks_cuda_graph_estimate_is_the_plans() -> None:
    (check,) = [c for c in against_plan({"stack": memory("stack")}, plan("stack")) if c.term == "cuda_graph_estimated_gib"]
    assert check.ok, check.text()


def test_vllms_default_memory_fraction_is_the_one_its_start_printed() -> None:
    # The defaults' command line names no --gpu-memory-utilization; the engine printed the fraction it took.
    flags = flags_run("defaults")
    assert not any(f.startswith("--gpu-memory-utilization") for f in flags)
    printed = re.search(r"Desired GPU memory utilization is \(([\d.]+),", (RUN / "defaults.log").read_text(encoding="utf-8"))
    assert printed
    engine = engine_of(flags, spec("defaults")["env"], hbm_bytes=H200_BYTES, release="0.26.0", capability=(9, 0))
    assert engine.gpu_memory_utilization == float(printed[1])


@pytest.mark.parametrize(("name", "shapes"), [("stack", 2172), ("defaults", 1496)])
def test_each_start_by_phase_with_the_warm_up_shapes_its_bar_counted(name: str, shapes: int) -> None:
    phases = start_phases(log_lines(RUN, f"{name}.log"))
    found = phases.phases()
    assert sum(v for v in found.values() if v is not None) == pytest.approx(phases.ready_s, abs=1e-3)
    # Every step was seen, the kernel warm-up (Qwen's Triton kernels, then DeepGEMM) the longest after compiling.
    assert None not in found.values()
    assert found["kernel warm-up"] == max(v for k, v in found.items() if k != "torch.compile and profiling" and v is not None)
    assert phases.warmup_shapes == shapes
    start = as_full_size_start(phases, gpu="H200", run=RUN.name)
    assert start.torch_compile == 73.14 and start.ready == phases.ready_s


def test_the_stacks_flags_without_mtp_against_vllms_defaults() -> None:
    results = {name: json.loads((RUN / "bench" / f"{name}.json").read_text(encoding="utf-8")) for name in ENGINES}
    for result in results.values():
        assert (result["completed"], result["failed"], result["max_concurrency"]) == (1024, 0, 256)
    # The same benchmark on each GPU: the two flag sets served it at the same rate (1.00).
    assert bench.ratio(results["stack"], results["defaults"], "output_throughput") == pytest.approx(1.0, abs=0.01)


def test_the_fixture_keeps_no_path_of_the_developers_machine() -> None:
    for path in Path(RUN).rglob("*"):
        if path.is_file():
            assert "/work/" not in path.read_text(encoding="utf-8"), path


# Tensor parallel 2 of the catalogued dense 70B (FP8 per channel) across the same host's two H200s: the start
# printed its memory lines, then a worker hit an illegal memory access in the kernel warm-up (README there).
TP2 = REAL_RUNS / "2026-11-28-h200-tp2-70b"
LLAMA = "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"


def tp2_plan() -> dict[str, float]:
    (engine,) = json.loads((TP2 / "engines.json").read_text(encoding="utf-8"))["engines"]
    config = json.loads((catalogue_folder(LLAMA) / "config.json").read_text(encoding="utf-8"))
    return plan_for(config, LLAMA, tuple(engine["argv"][2:]), engine["env"], hbm_bytes=H200_BYTES, release="0.26.0", capability=(9, 0))


def test_each_tensor_parallel_worker_prints_its_share_and_the_engine_its_tokens() -> None:
    found = read_memory(log_lines(TP2, "engine.log"))
    workers = {name.split()[0]: memory for name, memory in found.items()}
    assert workers["Worker_TP0"].weights_gib == workers["Worker_TP1"].weights_gib == 33.91
    assert workers["Worker_TP0"].kv_cache_gib == 91.76
    assert (workers["EngineCore"].kv_tokens, workers["EngineCore"].max_concurrency) == (1_202_640, 469.78)


def test_the_plan_holds_the_tensor_parallel_start_within_tolerance() -> None:
    checks = against_plan(read_memory(log_lines(TP2, "engine.log")), tp2_plan())
    assert {c.term for c in checks} == {"weights_gib", "kv_cache_gib", "kv_tokens", "max_concurrency"}
    assert all(c.ok for c in checks), [c.text() for c in checks if not c.ok]


def test_the_tensor_parallel_start_by_phase_up_to_where_it_stopped() -> None:
    phases = start_phases(log_lines(TP2, "engine.log"))
    # Its V2 model runner announces the load in its own words; the first worker's line starts the step.
    assert phases.steps["loading"] == pytest.approx(90.17, abs=1e-2)
    assert phases.phases()["weights loaded"] == pytest.approx(4.463, abs=1e-3)
    assert phases.vllm_seconds == {"torch.compile": 94.23, "profiling run": 5.49}
    assert phases.ready_s is None and phases.phases()["kernel warm-up"] is None
