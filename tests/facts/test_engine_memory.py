"""The memory budget against vLLM 0.26.0's own start lines of one run (docs/memory.md), then a B200's."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from facts.engine_memory import (
    ESTIMATES_CUDA_GRAPHS_BY_DEFAULT,
    GIB,
    PREFILL_CHECKPOINT_BLOCKS,
    REFUSES_SEQUENCES_BEYOND_STATE_BLOCKS,
    Engine,
    balanced_max_num_seqs,
    counts_cuda_graphs,
    engine_memory,
    largest_max_num_seqs,
    starts,
    weights_per_gpu,
)
from facts.gke import GPU_MEMORY_BYTES
from facts.models import ModelFacts, catalogued
from facts.vllm import supported_releases
from preflight.full_size import against_plan, planned_terms, read_memory
from render.engine import stack_settings

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


def hybrid(*, attention: int, linear: int, state_per_layer: int, kv_heads: int = 2, mtp_layers: int = 0) -> ModelFacts:
    """A small hand-made hybrid model: ``attention`` full-attention layers of 128-wide heads beside ``linear`` ones."""
    return replace(
        qwen(),
        model_id="example/hybrid",
        layers=attention + linear,
        full_attention_layers=attention,
        linear_attention_layers=linear,
        kv_heads=kv_heads,
        head_dim=128,
        mtp_layers=mtp_layers,
        recurrent_state_bytes_per_sequence=linear * state_per_layer,
    )


def dense(*, attention: int, kv_heads: int, mtp_layers: int = 0) -> ModelFacts:
    return replace(
        hybrid(attention=attention, linear=0, state_per_layer=0, kv_heads=kv_heads, mtp_layers=mtp_layers), model_id="example/dense"
    )


# A B200 (full graphs with drafts) with 256 sequences and KV in bf16: a 128-wide head's K and V are 512 bytes a token and layer.
B200 = replace(H200, hbm_bytes=GPU_MEMORY_BYTES, max_num_seqs=256, kv_cache_dtype="auto", full_graphs_with_drafts=True)
HEAD_BYTES = 2 * 128 * 2


def two_places(value: object) -> float:
    assert isinstance(value, float)
    assert round(value, 2) == value
    return value


def test_the_plan_exports_each_term_in_gib_to_two_decimals_and_the_cache_in_blocks_and_tokens() -> None:
    settings = stack_settings("dev")
    budget = settings.memory_budget
    shown = budget.as_output()
    terms = {
        "requestedGiB": budget.requested,
        "weightsGiB": budget.weights,
        "activationsGiB": budget.forward_peak,
        "samplerGiB": budget.sampler_peak,
        "cudaGraphsGiB": budget.cuda_graphs,
        "nonTorchGiB": budget.non_torch,
        "availableKvCacheGiB": budget.available_kv,
    }
    assert set(shown) == set(terms) | {"maxNumSeqs", "kvCacheTokens", "requestsOfMaxModelLen", "blocks", "blockSize"}
    for key, value in terms.items():
        assert two_places(shown[key]) == pytest.approx(value / GIB, abs=0.005), key
    assert (shown["maxNumSeqs"], shown["blocks"], shown["blockSize"]) == (settings.max_num_seqs, budget.blocks, budget.block_size)
    assert shown["kvCacheTokens"] == budget.kv_tokens
    requests = two_places(shown["requestsOfMaxModelLen"])
    assert requests == pytest.approx(budget.requests, abs=0.005)
    assert budget.kv_tokens == pytest.approx(requests * settings.serving.max_model_len, rel=0.001)


def test_every_byte_count_is_whole_and_the_budget_adds_up() -> None:
    for model, engine in [(qwen(), H200), (qwen(), replace(B200, tensor_parallel=2, mtp_tokens=1)), (dense(attention=3, kv_heads=1), B200)]:
        budget = engine_memory(model, engine)
        counts = {field.name: getattr(budget, field.name) for field in fields(budget) if field.name != "hybrid"}
        assert all(type(value) is int for value in counts.values()), counts
        peak = budget.requested - budget.weights - budget.cuda_graphs - budget.non_torch - budget.available_kv
        assert peak >= max(budget.forward_peak, budget.sampler_peak)
        assert budget.blocks == budget.available_kv // budget.page_bytes // budget.layers_per_group
        assert budget.requests_of(engine.max_model_len) == int(budget.requests)


def test_an_embedding_models_peak_is_its_forward_pass_and_graphs_and_non_torch_memory_come_off_the_cache() -> None:
    embedder = catalogued("Qwen/Qwen3-Embedding-8B")
    assert embedder is not None
    budget = engine_memory(embedder, B200)
    assert budget.available_kv == budget.requested - budget.weights - budget.forward_peak - budget.cuda_graphs - budget.non_torch
    # The forward pass's peak is per GPU: tensor parallel splits the hidden width.
    assert engine_memory(embedder, replace(B200, tensor_parallel=2)).forward_peak * 2 == budget.forward_peak
    without = engine_memory(embedder, replace(B200, cuda_graphs=False))
    assert without.cuda_graphs == 0 and without.available_kv - budget.available_kv == budget.cuda_graphs > GIB


def test_each_batched_token_holds_its_hidden_state_in_bf16_through_the_sampler_run() -> None:
    # 256 sequences under both token budgets: the sampler is the same, only the held hidden states grow.
    narrow, wide = (engine_memory(qwen(), replace(B200, max_num_batched_tokens=n)) for n in (4096, 8192))
    assert narrow.sampler_peak == wide.sampler_peak
    assert narrow.available_kv - wide.available_kv == 4096 * qwen().hidden_size * 2


def test_each_draft_token_adds_fourteen_bytes_a_logit_to_the_sampler() -> None:
    one, two = (engine_memory(qwen(), replace(B200, mtp_tokens=n)).sampler_peak for n in (1, 2))
    assert two - one == 256 * qwen().vocab_size * 14
    assert one == 256 * qwen().vocab_size * 30


def test_weights_split_by_tensor_parallel_and_experts_over_every_gpu_of_the_engines() -> None:
    big = catalogued("Qwen/Qwen3.5-397B-A17B-FP8")
    assert big is not None and big.expert_weight_bytes > 0
    assert weights_per_gpu(big, B200) == big.weight_bytes
    assert weights_per_gpu(big, replace(B200, mtp_tokens=1)) == big.weight_bytes + big.mtp_weight_bytes
    rest = big.weight_bytes - big.expert_weight_bytes + big.mtp_weight_bytes
    four = weights_per_gpu(big, replace(B200, mtp_tokens=1, tensor_parallel=4))
    assert four == pytest.approx((rest + big.expert_weight_bytes) / 4, abs=2)
    # Data parallel 2 under tensor parallel 4: the experts go over eight GPUs, the rest over four.
    pod = weights_per_gpu(big, replace(B200, mtp_tokens=1, tensor_parallel=4, data_parallel=2))
    assert four - pod == pytest.approx(big.expert_weight_bytes / 8, abs=2)
    # The drafter loads only with MTP on; a model without MTP layers has none to load.
    assert weights_per_gpu(qwen(), B200) == qwen().weight_bytes
    assert weights_per_gpu(replace(qwen(), mtp_layers=0), replace(B200, mtp_tokens=1)) == qwen().weight_bytes


def test_a_dense_model_keeps_one_group_of_all_its_attention_layers_in_blocks_of_16() -> None:
    model = dense(attention=3, kv_heads=4, mtp_layers=1)
    budget = engine_memory(model, B200)
    assert (budget.block_size, budget.page_bytes, budget.layers_per_group, budget.attention_groups) == (16, 16 * 4 * HEAD_BYTES, 3, 1)
    assert budget.state_blocks_per_request == 0 and budget.blocks_per_request == 2560 // 16
    # The MTP layer's attention joins the group when the drafter runs.
    assert engine_memory(model, replace(B200, mtp_tokens=1)).layers_per_group == 4
    # One attention layer: a token's K and V of that layer.
    assert engine_memory(dense(attention=1, kv_heads=4), B200).page_bytes == 16 * 4 * HEAD_BYTES


def test_kv_heads_split_over_tensor_parallel_each_rank_keeping_at_least_one() -> None:
    four = dense(attention=2, kv_heads=4)
    assert engine_memory(four, replace(B200, tensor_parallel=2)).page_bytes == 16 * 2 * HEAD_BYTES
    assert engine_memory(four, replace(B200, tensor_parallel=8)).page_bytes == 16 * HEAD_BYTES
    # One KV head: every rank keeps the whole head.
    one = dense(attention=2, kv_heads=1)
    assert type(engine_memory(one, replace(B200, tensor_parallel=2)).page_bytes) is int
    assert engine_memory(one, replace(B200, tensor_parallel=2)).page_bytes == engine_memory(one, B200).page_bytes == 16 * HEAD_BYTES


@pytest.mark.parametrize(("state_per_layer", "block"), [(7 * 16 * 2 * HEAD_BYTES, 112), (7 * 16 * 2 * HEAD_BYTES + 1, 128), (1, 16)])
def test_a_hybrid_block_is_the_fewest_16_tokens_whose_page_holds_a_layers_state(state_per_layer: int, block: int) -> None:
    # Two KV heads: 1,024 bytes a token and layer.
    budget = engine_memory(hybrid(attention=4, linear=12, state_per_layer=state_per_layer), B200)
    assert (budget.block_size, budget.page_bytes) == (block, block * 2 * HEAD_BYTES)


def test_under_tensor_parallel_the_block_holds_one_ranks_state() -> None:
    # Tensor parallel 2 halves both the state and the KV heads; a byte the ranks cannot split widens nothing.
    model = hybrid(attention=4, linear=12, state_per_layer=2 * 7 * 16 * HEAD_BYTES + 1)
    assert engine_memory(model, replace(B200, tensor_parallel=2)).block_size == 112


@pytest.mark.parametrize(
    ("attention", "linear", "group", "attention_groups", "state_groups"),
    [(4, 12, 4, 1, 3), (4, 6, 4, 1, 2), (4, 5, 5, 1, 1), (12, 4, 4, 3, 1), (5, 4, 5, 1, 1), (2, 1, 1, 2, 1)],
)
def test_layers_group_by_the_smallest_kind_unless_the_largest_is_below_one_and_a_half_times_it(
    attention: int, linear: int, group: int, attention_groups: int, state_groups: int
) -> None:
    budget = engine_memory(hybrid(attention=attention, linear=linear, state_per_layer=10_000), replace(B200, mamba_cache_mode="none"))
    assert (budget.layers_per_group, budget.attention_groups, budget.state_blocks_per_request) == (group, attention_groups, state_groups)
    assert budget.hybrid


def test_the_mtp_layers_attention_counts_in_the_groups() -> None:
    # The 27B: 16 attention and 48 linear layers; its MTP layer makes 17 attention layers, three groups of state.
    plain, drafting = (engine_memory(qwen(), replace(B200, mtp_tokens=n)) for n in (0, 1))
    assert (plain.layers_per_group, drafting.layers_per_group) == (16, 17)
    assert (plain.state_blocks_per_request, drafting.state_blocks_per_request) == (3 * 2, 3 * 3)


@pytest.mark.parametrize(
    ("mode", "release", "mtp", "per_group"),
    [
        ("align", "0.26.0", 0, 2),
        ("align", "0.26.0", 2, 4),
        ("align", "0.18.1", 0, 2),
        ("align", "0.33.0", 0, 3),
        ("align", "0.33.0", 1, 4),
        ("none", "0.33.0", 0, 1),
        ("none", "0.26.0", 1, 2),
        ("all", "0.26.0", 0, 10),
        ("all", "0.33.0", 1, 11),
    ],
)
def test_state_blocks_a_request_holds_follow_the_cache_mode(mode: str, release: str, mtp: int, per_group: int) -> None:
    # 2 + k in align mode (0.33.0 keeps a prefill checkpoint more), 1 + k in none, one a block of context in all;
    # one group of state: 4 attention and 5 linear layers; 160 tokens a block (state 81,920 bytes).
    model = hybrid(attention=4, linear=5, state_per_layer=10 * 16 * 2 * HEAD_BYTES)
    budget = engine_memory(model, replace(B200, mamba_cache_mode=mode, release=release, mtp_tokens=mtp, max_model_len=1600 - 1))
    assert budget.block_size == 160
    assert budget.state_blocks_per_request == per_group
    assert budget.blocks_per_request == 10 + per_group


def test_every_release_with_facts_has_its_memory_rules() -> None:
    # So that no release falls to the tables' defaults.
    for table in (PREFILL_CHECKPOINT_BLOCKS, REFUSES_SEQUENCES_BEYOND_STATE_BLOCKS, ESTIMATES_CUDA_GRAPHS_BY_DEFAULT):
        assert set(table) == set(supported_releases())


def test_an_engine_starts_when_one_request_of_max_model_len_just_fits() -> None:
    for model in (dense(attention=8, kv_heads=8), qwen()):
        budget = engine_memory(model, B200)
        # A context that needs exactly the cache's blocks starts; one token more does not.
        fitting = budget.block_size * (budget.blocks - budget.state_blocks_per_request) // budget.attention_groups
        assert engine_memory(model, replace(B200, max_model_len=fitting)).blocks_per_request == budget.blocks
        assert starts(model, replace(B200, max_model_len=fitting))
        assert not starts(model, replace(B200, max_model_len=fitting + 1))


def test_a_hybrid_engine_starts_with_as_many_sequences_as_state_blocks() -> None:
    # Few batched tokens: the sampler no longer grows with the sequences, so the blocks stay put.
    engine = replace(B200, max_num_batched_tokens=256, release="0.26.0")
    blocks = engine_memory(qwen(), replace(engine, max_num_seqs=256)).blocks
    assert engine_memory(qwen(), replace(engine, max_num_seqs=blocks + 1)).blocks == blocks
    assert starts(qwen(), replace(engine, max_num_seqs=blocks))
    assert not starts(qwen(), replace(engine, max_num_seqs=blocks + 1))
    # Unless the release caps its graphs, the graphs are piecewise, or none are captured.
    for lenient in (replace(engine, release="0.18.1"), replace(engine, cuda_graphs=False)):
        assert starts(qwen(), replace(lenient, max_num_seqs=blocks + 1))
    assert starts(qwen(), replace(engine, max_num_seqs=blocks + 1, mtp_tokens=1, full_graphs_with_drafts=False))


@pytest.mark.parametrize("max_model_len", [2560, 4096, 16384, 65536, 131072])
@pytest.mark.parametrize("mtp", [0, 1])
def test_the_largest_and_the_balanced_counts_are_exact(max_model_len: int, mtp: int) -> None:
    engine = replace(B200, max_model_len=max_model_len, mtp_tokens=mtp, kv_cache_dtype="fp8_e4m3", release="0.26.0")
    largest = largest_max_num_seqs(qwen(), engine)
    assert type(largest) is int and 0 < largest < engine.max_num_batched_tokens
    assert starts(qwen(), replace(engine, max_num_seqs=largest))
    assert not starts(qwen(), replace(engine, max_num_seqs=largest + 1))
    for tokens in (1536, max_model_len):
        balanced = balanced_max_num_seqs(qwen(), engine, tokens)
        assert type(balanced) is int and 0 < balanced <= largest
        assert engine_memory(qwen(), replace(engine, max_num_seqs=balanced)).requests_of(tokens) >= balanced
        if balanced < largest:
            assert engine_memory(qwen(), replace(engine, max_num_seqs=balanced + 1)).requests_of(tokens) < balanced + 1


def test_no_count_when_nothing_starts_and_every_count_when_everything_does() -> None:
    big = catalogued("Qwen/Qwen3.5-397B-A17B-FP8")
    assert big is not None
    assert balanced_max_num_seqs(big, B200, 1536) == 0
    small = replace(B200, max_num_batched_tokens=64)
    assert largest_max_num_seqs(dense(attention=2, kv_heads=1), small) == 64


def test_cuda_graphs_count_from_optimization_level_1_unless_the_variable_says_0() -> None:
    assert counts_cuda_graphs("0.26.0", {}, 1)
    assert not counts_cuda_graphs("0.33.0", {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "0"}, 3)
    assert not counts_cuda_graphs("0.18.1", {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1"}, 0)
