"""A full-size start's memory lines and phases, read from real logs' line shapes, and held against a plan.

The real run under tests/real_runs/2026-11-26-h100-dev (a miniature on one H100, vLLM 0.26.0) prints every
line a full-size start prints; the figures there are the miniature's. The hand-made full-size log below
carries the figures of the one H200 run of Qwen 3.5 27B (FP8, dummy weights, MTP, --max-num-seqs=256) in
the same line shapes, for two engines of data parallelism.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from facts.models import model_facts
from facts.vllm import FullSizeStart
from preflight.full_size import (
    TOLERANCE,
    EngineMemory,
    NoPlanError,
    TermCheck,
    against_plan,
    as_full_size_start,
    engine_of,
    plan_for,
    read_memory,
    start_phases,
)
from preflight.miniature import find_source, full_size_config
from preflight.rendered import read_engine
from tests.preflight.runs import DEV, log_lines

ENGINE = "EngineCore pid=897"


def full_size_log(engines: int = 2) -> list[str]:
    """``engines`` engines of data parallelism, as vLLM names their processes, the process started at 10:00:00."""
    lines = ["2026-11-28T10:00:00.000000Z [preflight] start: vllm serve /model --load-format=dummy"]
    for rank in range(engines):
        process = f"(EngineCore_DP{rank} pid={100 + rank})"

        def at(minute: int, second: float, text: str, *, own: bool = True, rank: int = rank, process: str = process) -> str:
            # The second engine's lines come a second later: each step ends at the last engine's.
            stamp = f"2026-11-28T10:{minute:02d}:{second + rank:09.6f}Z {process}"
            return f"{stamp} INFO 11-28 10:{minute:02d}:{int(second + rank):02d} {text}" if own else f"{stamp} {text}"

        bar = "DeepGemm(fp8_gemm_nt) warmup (W=torch.Size([7168, 5120])) [relaxed]"
        second_bar = "DeepGemm(fp8_gemm_nt) warmup (W=torch.Size([5120, 6144]))"
        shapes = 300 + 100 * rank
        lines += [
            at(1, 40, "[gpu_model_runner.py:5250] Starting to load model /model..."),
            at(1, 50, "[gpu_model_runner.py:5347] Model loading took 28.99 GiB memory and 9.8 seconds"),
            at(3, 20, f"[monitor.py:53] torch.compile took {85 + rank}.0 s in total"),
            at(5, 20, "[monitor.py:81] Initial profiling/warmup run took 120.0 s"),
            at(5, 30, "[monitor.py:53] torch.compile took 9.0 s in total"),
            at(5, 40, "[monitor.py:81] Initial profiling/warmup run took 4.5 s"),
            at(7, 0, "[gpu_model_runner.py:6737] Estimated CUDA graph memory: 3.07 GiB total"),
            at(7, 1, "[gpu_worker.py:560] Available KV cache memory: 95.54 GiB"),
            at(7, 1.1, "[kv_cache_utils.py:2177] GPU KV cache size: 432,872 tokens"),
            at(7, 1.1, "[kv_cache_utils.py:2178] Maximum concurrency for 2,560 tokens per request: 169.09x"),
            at(7, 2, "[qwen_triton_warmup.py:370] Warming up Qwen Triton kernels for model_type=qwen3_5_text."),
            at(
                10,
                30,
                f"{bar}:  50%|#####     | 700/1400 [01:00<01:00]\r{bar}: 100%|##########| 1400/1400 [02:00<00:00]"
                f"{second_bar}: 100%|##| {shapes}/{shapes} [00:30<00:00]",
                own=False,
            ),
            at(10, 31, "[gpu_model_runner.py:6798] Rank 0: Torch profiler disabled for CUDA graph capture"),
            at(12, 40, "[gpu_model_runner.py:6844] Graph capturing finished in 129 secs, took 3.21 GiB"),
            at(12, 40, "[gpu_worker.py:793] CUDA graph pool memory: 3.21 GiB (actual), 3.07 GiB (estimated), difference: 0.14 GiB (4.6%)."),
            at(
                12,
                40,
                "[gpu_worker.py:857] Free memory on device (139.80/140.40 GiB) on startup. Actual usage is 28.99 GiB for weight, "
                "4.97 GiB for peak activation, 0.43 GiB for non-torch memory, and 3.21 GiB for CUDAGraph memory.",
            ),
        ]
    lines.append(
        "2026-11-28T10:12:50.000000Z (APIServer pid=50) INFO 11-28 10:12:50 [api_server.py:677] Starting vLLM server on http://0.0.0.0:8000"
    )
    return lines


def test_the_memory_lines_of_a_real_start_are_read_for_its_one_engine() -> None:
    memory = read_memory(log_lines(DEV, "1-cold.log"))
    assert list(memory) == [ENGINE]
    assert memory[ENGINE] == EngineMemory(
        weights_gib=0.46,
        kv_cache_gib=69.85,
        kv_tokens=7_812_096,
        max_concurrency=3051.60,
        concurrency_tokens=2560,
        cuda_graph_estimated_gib=0.11,
        cuda_graph_gib=0.13,
        activation_peak_gib=2.19,
        non_torch_gib=0.23,
        mamba_blocks=None,
    )


def test_the_phases_of_a_real_start_end_at_its_lines() -> None:
    phases = start_phases(log_lines(DEV, "1-cold.log"))
    # 11:51:29.364302 the process started; 11:57:13.782985 the server (docs/preflight.md: 345.0 s to /health 200).
    assert phases.ready_s == pytest.approx(344.419, abs=1e-3)
    found = phases.phases()
    assert found["weights loaded"] == pytest.approx(2.043, abs=1e-3)
    # The Qwen Triton warm-up and FlashInfer's autotune, between the KV cache line and the capture.
    assert found["kernel warm-up"] == pytest.approx(4.564, abs=1e-3)
    assert found["CUDA graph capture"] == pytest.approx(2.920, abs=1e-3)
    assert sum(v for v in found.values() if v is not None) == pytest.approx(phases.ready_s, abs=1e-3)
    # The model's and the MTP drafter's runs, summed, as vLLM reports them.
    assert phases.vllm_seconds == {"torch.compile": 39.48, "profiling run": 85.52, "CUDA graph capture": 3.0}
    assert phases.warmup_shapes is None


def test_each_engine_of_data_parallelism_has_its_memory_lines() -> None:
    memory = read_memory(full_size_log())
    assert sorted(memory) == ["EngineCore_DP0 pid=100", "EngineCore_DP1 pid=101"]
    for engine in memory.values():
        assert (engine.weights_gib, engine.kv_cache_gib, engine.kv_tokens, engine.max_concurrency) == (28.99, 95.54, 432_872, 169.09)
        assert (engine.cuda_graph_estimated_gib, engine.cuda_graph_gib, engine.activation_peak_gib) == (3.07, 3.21, 4.97)


def test_a_full_size_start_by_phase_ends_each_step_at_the_last_engines_line() -> None:
    phases = start_phases(full_size_log())
    assert phases.steps["weights loaded"] == 111.0 and phases.steps["ready"] == 770.0
    assert phases.phases() == {
        "imports and config": 100.0,
        "weights loaded": 11.0,
        "torch.compile and profiling": 230.0,
        "memory profiling and KV cache": 81.1,
        "kernel warm-up": 209.9,
        "CUDA graph capture": 129.0,
        "server start": 9.0,
    }
    assert phases.vllm_seconds == {"torch.compile": 95.0, "profiling run": 124.5, "CUDA graph capture": 129.0}
    # Every bar's total, the larger engine's: 1,400 + 400.
    assert phases.warmup_shapes == 1800
    assert phases.as_dict()["readySeconds"] == 770.0


def test_warm_up_bars_are_counted_on_the_unstamped_lines_a_carriage_return_leaves() -> None:
    # As the preflight's log holds a bar: its first update stamped, the next ones each a line of their own.
    lines = [
        "2026-11-28T10:00:00.000000Z [preflight] start",
        "2026-11-28T10:07:02.000000Z (EngineCore pid=7) DeepGemm(fp8_gemm_nt) warmup (W=torch.Size([7168, 5120])) [relaxed]: 0%| | 0/1400",
        "DeepGemm(fp8_gemm_nt) warmup (W=torch.Size([7168, 5120])) [relaxed]:  50%|#  | 700/1400 [01:00<01:00]",
        "DeepGemm(fp8_gemm_nt) warmup (W=torch.Size([7168, 5120])) [relaxed]: 100%|## | 1400/1400 [02:00<00:00]",
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|## | 51/51 [00:01<00:00]",
    ]
    assert start_phases(lines).warmup_shapes == 1400


def test_the_mamba_blocks_are_read_where_the_engine_prints_them() -> None:
    line = (
        "2026-11-28T10:07:09.000000Z (EngineCore pid=7) ERROR 11-28 10:07:09 [core.py:1100] ValueError: max_num_seqs (8192) "
        "exceeds available Mamba cache blocks (1450). Please lower max_num_seqs to at most 1450"
    )
    assert read_memory([line])["EngineCore pid=7"].mamba_blocks == 1450


def test_a_log_without_stamps_has_no_phases() -> None:
    assert start_phases(["no stamp here"]).as_dict() == {
        "steps": {},
        "phases": dict.fromkeys(start_phases([]).phases()),
        "vllmSeconds": {},
        "warmupShapes": None,
        "readySeconds": None,
    }


PLAN = {"weights_gib": 28.99, "kv_cache_gib": 95.54, "kv_tokens": 432_872, "max_concurrency": 169.09}


def test_a_start_within_the_plan_passes_every_term_it_printed() -> None:
    checks = against_plan(read_memory(full_size_log(engines=1)), PLAN)
    assert [c.term for c in checks] == ["weights_gib", "kv_cache_gib", "kv_tokens", "max_concurrency"]
    assert all(c.ok for c in checks)


@pytest.mark.parametrize(("factor", "ok"), [(1.0999, True), (0.9001, True), (1.1001, False), (0.8999, False)])
def test_a_term_more_than_ten_percent_off_the_plan_fails_naming_it(factor: float, ok: bool) -> None:
    plan = {**PLAN, "kv_tokens": 432_872 / factor}
    checks = {c.term: c for c in against_plan(read_memory(full_size_log(engines=1)), plan)}
    assert checks["kv_tokens"].ok is ok and TOLERANCE == 0.10
    assert all(c.ok for term, c in checks.items() if term != "kv_tokens")


def test_the_check_says_the_engine_the_term_both_figures_and_the_deviation() -> None:
    check = TermCheck("EngineCore_DP1 pid=101", "kv_cache_gib", 41.05, 95.54)
    assert check.text() == "EngineCore_DP1 pid=101: kv_cache_gib measured 41.05, planned 95.54 (-57.0%; at most 10% either way)"
    assert check.as_dict() == {
        "engine": "EngineCore_DP1 pid=101",
        "term": "kv_cache_gib",
        "measured": 41.05,
        "planned": 95.54,
        "deviation": -0.5703,
        "ok": False,
    }
    assert TermCheck("e", "mamba_blocks", 0, 0).ok and not TermCheck("e", "mamba_blocks", 1, 0).ok


def test_a_term_the_engine_did_not_print_or_the_plan_lacks_is_not_compared() -> None:
    memory = {"e": EngineMemory(weights_gib=28.54, mamba_blocks=None)}
    assert against_plan(memory, {"mamba_blocks": 1450.0, "kv_tokens": 1.0}) == []
    with pytest.raises(ValueError, match="the plan holds terms no engine prints: kv_bytes"):
        against_plan(memory, {"kv_bytes": 1.0})


def test_a_full_size_start_becomes_the_estimates_figures_labelled_with_its_gpu() -> None:
    start = as_full_size_start(start_phases(full_size_log()), gpu="H200", run="two engines")
    assert start == FullSizeStart(
        gpu="H200",
        run="two engines",
        weights_load=11.0,
        torch_compile=95.0,
        first_profiling=124.5,
        kernel_warmup=209.9,
        warmup_shapes="1,800",
        graph_capture=129.0,
        ready=770.0,
    )
    assert start.besides_weights == 759.0


def test_a_log_without_a_start_to_ready_cannot_be_the_estimates() -> None:
    with pytest.raises(ValueError) as raised:
        as_full_size_start(start_phases(full_size_log()[:3]), gpu="H200", run="cut")
    assert str(raised.value) == (
        "the log lacks what the estimate takes: kernel warm-up, ready, "
        "vLLM's torch.compile, vLLM's profiling run, vLLM's CUDA graph capture"
    )


H200_BYTES = 143_771 * 2**20
QWEN35_27B = find_source("Qwen/Qwen3.5-27B-FP8", {"HF_HUB_CACHE": "/nonexistent"}).config


def dev_flags(*changes: str) -> tuple[str, ...]:
    """dev's rendered flags as one H200 runs them (data parallel 1), with ``changes`` in place of the flags they name."""
    names = {change.split("=", 1)[0] for change in changes}
    kept = [f for f in read_engine(DEV / "rendered").flags if f.split("=", 1)[0] not in names | {"--data-parallel-size"}]
    return (*kept, "--data-parallel-size=1", *changes)


def plan(*changes: str, capability: tuple[int, int] = (9, 0)) -> dict[str, float]:
    flags = dev_flags(*changes)
    return plan_for(QWEN35_27B, "Qwen/Qwen3.5-27B-FP8", flags, {}, hbm_bytes=H200_BYTES, release="0.26.0", capability=capability)


def test_the_plan_of_devs_flags_on_one_h200_holds_the_measured_start_within_ten_percent() -> None:
    # One H200, vLLM 0.26.0, dev's flags with MTP and --max-num-seqs=256: 28.99 GiB loaded, 95.54 GiB and 432,872 tokens
    # of KV cache (the full-size run, docs/preflight.md).
    memory = EngineMemory(weights_gib=28.99, kv_cache_gib=95.54, kv_tokens=432_872)
    checks = against_plan({"EngineCore pid=1": memory}, plan("--max-num-seqs=256"))
    assert [c.term for c in checks] == ["weights_gib", "kv_cache_gib", "kv_tokens"]
    assert all(c.ok for c in checks), [c.text() for c in checks]


def test_the_plan_sees_what_the_measured_start_without_mtp_refused() -> None:
    # Without MTP at 8192 sequences vLLM 0.26.0 refused: "max_num_seqs (8192) exceeds available Mamba cache blocks (1450)".
    without = tuple(f for f in dev_flags() if not f.startswith("--speculative-config"))
    planned = plan_for(QWEN35_27B, "Qwen/Qwen3.5-27B-FP8", without, {}, hbm_bytes=H200_BYTES, release="0.26.0", capability=(9, 0))
    assert [c.ok for c in against_plan({"e": EngineMemory(mamba_blocks=1450)}, planned)] == [True]


def bare_flags() -> tuple[str, ...]:
    return ("--max-model-len=4096", "--max-num-seqs=8", "--max-num-batched-tokens=4096")


def test_the_engine_the_plan_reads_is_the_command_line_this_machine_runs() -> None:
    flags = dev_flags("--max-num-seqs=256", "--tensor-parallel-size=2", "--enable-expert-parallel", "--data-parallel-size=2")
    engine = engine_of(flags, {}, hbm_bytes=H200_BYTES, release="0.26.0", capability=(10, 0))
    assert (engine.max_num_seqs, engine.max_model_len, engine.max_num_batched_tokens) == (256, 2560, 16384)
    assert (engine.gpu_memory_utilization, engine.kv_cache_dtype, engine.mtp_tokens) == (0.92, "fp8_e4m3", 1)
    assert (engine.tensor_parallel, engine.expert_ranks, engine.mamba_cache_mode) == (2, 4, "align")
    assert engine.cuda_graphs and engine.full_graphs_with_drafts and engine.hbm_bytes == H200_BYTES
    hopper = engine_of((*flags, "--enforce-eager"), {}, hbm_bytes=1, release="0.26.0", capability=(9, 0))
    assert not hopper.cuda_graphs and not hopper.full_graphs_with_drafts
    bare = engine_of(
        ("--max-model-len=4096", "--max-num-seqs=8", "--max-num-batched-tokens=4096"), {}, hbm_bytes=1, release="0.26.0", capability=(9, 0)
    )
    assert (bare.gpu_memory_utilization, bare.kv_cache_dtype, bare.mtp_tokens, bare.expert_ranks) == (0.92, "auto", 0, 1)
    assert not engine_of(("-O0", *bare_flags()), {}, hbm_bytes=1, release="0.26.0", capability=(9, 0)).cuda_graphs


def test_a_command_line_that_leaves_a_planned_term_to_vllm_has_no_plan() -> None:
    with pytest.raises(NoPlanError, match="leaves --max-num-seqs, --max-num-batched-tokens to vLLM's choice on the GPU"):
        engine_of(("--max-model-len=4096",), {}, hbm_bytes=1, release="0.26.0", capability=(9, 0))


def test_the_full_size_folder_names_what_the_checkpoint_keeps_in_bf16_whole_as_vllm_matches_it(tmp_path: Path) -> None:
    source = find_source("Qwen/Qwen3.5-27B-FP8", {"HF_HOME": str(tmp_path / "no-cache")})
    # The config.json ``write(..., size="full")`` writes (its tokenizer needs the tokenizers package).
    config = json.loads(json.dumps(full_size_config(source.config)))
    kept = config["quantization_config"]["modules_to_not_convert"]
    # vLLM's FP8 method skips a module only by its whole name: each DeltaNet layer's in_proj_a and in_proj_b,
    # every vision Linear, the MTP fc; no dotted part that matches nothing.
    assert "model.language_model.layers.62.linear_attn.in_proj_a" in kept and "model.language_model.layers.62.linear_attn.in_proj_b" in kept
    assert "model.visual.blocks.0.attn.qkv" in kept and "mtp.fc" in kept
    assert "model.visual" not in kept and "linear_attn.in_proj_a" not in kept
    # What vLLM loads from it is the checkpoint's size (the facts' count, 28.31 GiB against the run's 28.54).
    assert model_facts(config, model_id="x").weight_bytes / 2**30 == pytest.approx(28.54, rel=0.02)
