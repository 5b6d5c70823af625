"""The memory budget against vLLM 0.26.0's own start lines of one run (docs/memory.md), then a B200's."""

from __future__ import annotations

from dataclasses import replace

import pytest

from facts.engine_memory import (
    GIB,
    Engine,
    balanced_max_num_seqs,
    counts_cuda_graphs,
    engine_memory,
    largest_max_num_seqs,
    starts,
)
from facts.gke import GPU_MEMORY_BYTES
from facts.models import ModelFacts, catalogued
from preflight.full_size import against_plan, planned_terms, read_memory

# The measuring run's GPU (143,771 MiB) and dev's flags on it; FlashInfer on Hopper graphs only single-token decode.
H200 = Engine(
    hbm_bytes=143_771 * 2**20,
    gpu_memory_utilization=0.92,
    max_model_len=2560,
    max_num_seqs=8192,
    max_num_batched_tokens=16384,
    kv_cache_dtype="fp8_e4m3",
    full_graphs_with_drafts=False,
)


def qwen() -> ModelFacts:
    facts = catalogued("Qwen/Qwen3.5-27B-FP8")
    assert facts is not None
    return facts


@pytest.mark.parametrize(
    ("seqs", "mtp", "available_gib", "tokens"),
    [(8192, 0, 69.41, 464_000), (1024, 0, 92.76, 620_160), (8192, 1, 41.05, 185_949), (256, 1, 95.54, 432_872)],
)
def test_the_budget_reproduces_the_h200_start_lines(seqs: int, mtp: int, available_gib: float, tokens: int) -> None:
    budget = engine_memory(qwen(), replace(H200, max_num_seqs=seqs, mtp_tokens=mtp))
    assert budget.available_kv / GIB == pytest.approx(available_gib, rel=0.10)
    assert budget.kv_tokens == pytest.approx(tokens, rel=0.10)


def test_without_mtp_the_budget_grows_with_the_sampler_as_the_run_did() -> None:
    # 23.35 GiB between 8192 and 1024 sequences: the sampler's 14 bytes a logit over 7,168 more requests.
    wide, narrow = (engine_memory(qwen(), replace(H200, max_num_seqs=n)) for n in (8192, 1024))
    assert (narrow.available_kv - wide.available_kv) / GIB == pytest.approx(92.76 - 69.41, rel=0.02)


def test_with_mtp_the_sampler_costs_about_twice_as_much() -> None:
    # 54.49 GiB between 8192 and 256 sequences with one draft token.
    wide, narrow = (engine_memory(qwen(), replace(H200, max_num_seqs=n, mtp_tokens=1)) for n in (8192, 256))
    assert (narrow.available_kv - wide.available_kv) / GIB == pytest.approx(95.54 - 41.05, rel=0.02)


def test_vllm_defaults_leave_the_kv_memory_the_run_logged() -> None:
    # vLLM's own defaults on an H200: 1,024 sequences, 8,192 batched tokens, 0.92 of HBM, the model's context, KV in bf16.
    defaults = replace(H200, gpu_memory_utilization=0.92, max_model_len=262_144, max_num_seqs=1024, max_num_batched_tokens=8192)
    budget = engine_memory(qwen(), replace(defaults, kv_cache_dtype="auto"))
    assert budget.available_kv / GIB == pytest.approx(94.94, rel=0.10)


def test_8192_sequences_without_mtp_are_refused_as_vllm_refused_them() -> None:
    # "max_num_seqs (8192) exceeds available Mamba cache blocks (1450)".
    engine = replace(H200, max_num_seqs=8192)
    assert engine_memory(qwen(), engine).blocks == pytest.approx(1450, rel=0.10)
    assert not starts(qwen(), engine)
    # vLLM's "at most 1450" is the blocks at 8192; fewer sequences free sampler memory, so more start.
    largest = largest_max_num_seqs(qwen(), engine)
    assert largest > 1450 and starts(qwen(), replace(engine, max_num_seqs=largest))
    assert not starts(qwen(), replace(engine, max_num_seqs=largest + 1))
    # The release before the check capped its decode graphs and started.
    assert starts(qwen(), replace(engine, release="0.18.1"))


def test_mtp_on_hopper_starts_with_8192_as_the_run_did_but_not_on_blackwell() -> None:
    engine = replace(H200, mtp_tokens=1)
    assert starts(qwen(), engine)
    assert not starts(qwen(), replace(engine, full_graphs_with_drafts=True))


def test_a_dense_model_has_no_state_blocks_and_holds_tokens_by_its_kv_heads() -> None:
    llama = catalogued("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic")
    assert llama is not None
    engine = replace(H200, max_num_seqs=256, hbm_bytes=GPU_MEMORY_BYTES)
    one, two = engine_memory(llama, engine), engine_memory(llama, replace(engine, tensor_parallel=2))
    assert one.state_blocks_per_request == 0 and not one.hybrid
    # Tensor parallel 2 halves the weights and each token's KV heads on a GPU.
    assert two.weights == pytest.approx(one.weights / 2, rel=0.01)
    assert two.kv_tokens > 2 * one.kv_tokens


def test_weights_that_do_not_fit_leave_no_cache() -> None:
    big = catalogued("Qwen/Qwen3.5-397B-A17B-FP8")
    assert big is not None
    engine = replace(H200, hbm_bytes=GPU_MEMORY_BYTES, max_num_seqs=256)
    assert not starts(big, engine)
    assert largest_max_num_seqs(big, engine) == 0
    # Tensor parallel 8 fits: the experts, as every layer, go over the eight GPUs.
    assert starts(big, replace(engine, tensor_parallel=8))


def test_b200_prediction_for_dev() -> None:
    # Dev's flags on an A4's B200, MTP 1: the balanced count admits what the cache holds of 1,536-token requests.
    engine = replace(H200, hbm_bytes=GPU_MEMORY_BYTES, mtp_tokens=1, full_graphs_with_drafts=True)
    seqs = balanced_max_num_seqs(qwen(), engine, 1536)
    budget = engine_memory(qwen(), replace(engine, max_num_seqs=seqs))
    assert budget.requests_of(1536) >= seqs > budget.requests_of(1536) * 0.95
    assert starts(qwen(), replace(engine, max_num_seqs=seqs))
    # More of a B200's memory is cache: at the same count it holds more than the H200.
    assert budget.kv_tokens > engine_memory(qwen(), replace(H200, max_num_seqs=seqs, mtp_tokens=1)).kv_tokens


def test_cuda_graph_estimate_follows_the_release_and_the_variable() -> None:
    assert not counts_cuda_graphs("0.18.1", {}, 3)
    assert counts_cuda_graphs("0.18.1", {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1"}, 3)
    assert counts_cuda_graphs("0.26.0", {}, 3)
    assert not counts_cuda_graphs("0.26.0", {}, 0)


def test_a_runs_start_lines_read_beside_the_plan() -> None:
    # Lines as vLLM 0.26.0 logs them, from the run without MTP at 8192 sequences.
    log = "\n".join(
        [
            "(EngineCore pid=1) INFO [gpu_model_runner.py:5348] Model loading took 28.54 GiB memory and 12.5 seconds",
            "INFO [gpu_model_runner.py:6738] Estimated CUDA graph memory: 3.07 GiB total",
            "INFO [gpu_worker.py:560] Available KV cache memory: 69.41 GiB",
            "INFO [kv_cache_utils.py:2177] GPU KV cache size: 464,000 tokens",
            "INFO [kv_cache_utils.py:2178] Maximum concurrency for 2,560 tokens per request: 181.25x",
            "ValueError: max_num_seqs (8192) exceeds available Mamba cache blocks (1450). Each decode sequence ...",
        ]
    )
    # Read by the preflight's own reader and held to the plan as `preflight --size full` holds a start.
    checks = against_plan(read_memory(log.splitlines()), planned_terms(engine_memory(qwen(), H200)))
    held = {check.term: check for check in checks}
    assert set(held) == {"weights_gib", "cuda_graph_estimated_gib", "kv_cache_gib", "kv_tokens", "max_concurrency", "mamba_blocks"}
    assert held["kv_tokens"].measured == 464_000 and held["mamba_blocks"].measured == 1450
    assert all(check.ok for check in checks), [check.text() for check in checks if not check.ok]


def test_an_embedding_model_runs_no_sampler() -> None:
    embedder = catalogued("Qwen/Qwen3-Embedding-8B")
    assert embedder is not None and embedder.task == "embed"
    budget = engine_memory(embedder, replace(H200, max_num_seqs=8192))
    assert budget.sampler_peak == 0
    assert engine_memory(embedder, replace(H200, max_num_seqs=256)).available_kv == budget.available_kv
