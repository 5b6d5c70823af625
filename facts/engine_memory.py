"""The memory of one vLLM engine on one GPU, as vLLM sizes it before it starts, from the model's facts.

vLLM profiles one forward pass of ``max_num_batched_tokens`` dummy tokens and one sampler run over
``min(max_num_seqs, max_num_batched_tokens)`` dummy requests, adds its CUDA-graph estimate, and gives the KV cache
what is left of HBM x ``gpu_memory_utilization`` (vllm/v1/worker/gpu_worker.py, Worker.determine_available_memory).
The cache is cut into blocks of one page per layer group; a hybrid model's attention block is widened until its
page holds one sequence's linear-attention state, and each decode sequence needs a block of that state. The terms,
each with the vLLM function it comes from, are in docs/memory.md; the figures of one measured run check them
(tests/facts/test_engine_memory.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from facts.models import ModelFacts

GIB = 2**30
# Bytes per (request x vocabulary entry) at the dummy sampler run's peak (gpu_model_runner.py, _dummy_sampler_run):
# the model's bf16 logits (2), the sampler's float32 copy (4, sampler.py Sampler.forward), the float32
# probabilities (4) and the exponential noise (4) of forward_native (topk_topp_sampler.py, random_sample).
SAMPLER_BYTES = 14
# With speculative decoding the run goes on to the rejection sampler (rejection_sampler.py, RejectionSampler.forward):
# bf16 random logits for the bonus and draft rows (2 + 2 per draft), the bonus rows' bf16 copy (2) and their
# float32 raw logits kept as logprobs (4), the draft rows' float32 target logits and its clone (8 per draft), their
# probabilities (4 per draft), and the per-request noise and its reciprocal (8, sample_recovered_tokens).
SPEC_SAMPLER_BYTES = 16
SPEC_SAMPLER_BYTES_PER_DRAFT = 14
# The hidden states of the profiled tokens stay held through the sampler run (GPUModelRunner.profile_run), in bf16.
HIDDEN_STATE_BYTES = 2
# The forward pass's own peak: not derived from vLLM's source (it is every layer's transient tensors); bounded by
# a dense MLP's gate and up projections and their product in bf16, about 12 hidden widths a token. The sampler
# run's peak is above it at every measured setting but the smallest (docs/memory.md).
FORWARD_BYTES_PER_TOKEN_HIDDEN = 12
# vLLM measures its CUDA graphs by capturing them (GPUModelRunner.profile_cudagraph_memory): no closed form. The
# figure is the one run's estimate for Qwen 3.5 27B with full and piecewise graphs (docs/memory.md), taken for any model.
CUDA_GRAPH_BYTES = round(3.07 * GIB)
# Memory outside PyTorch's allocator that grows while vLLM profiles (cuBLAS and communicator workspaces; the
# non_torch_increase of vllm/utils/mem_utils.py, memory_profiling): the one run's remainder once the terms above are
# taken (docs/memory.md).
NON_TORCH_BYTES = round(1.4 * GIB)
# The smallest kernel block of FlashInfer and FlashAttention, and CacheConfig.DEFAULT_BLOCK_SIZE: a hybrid model's
# attention block is a multiple of it (vllm/platforms/interface.py, Platform._align_hybrid_block_size).
KERNEL_BLOCK_ALIGNMENT = 16
# Linear-attention state blocks a request holds (vllm/v1/kv_cache_interface.py, MambaSpec.max_memory_usage_bytes):
# two in align mode (the running state and the last block boundary's), one otherwise; one more per draft token.
ALIGN_STATE_BLOCKS = 2
# 0.33.0 keeps one more state block a request in align mode where a Gated-DeltaNet layer exports prefill
# checkpoints (kv_cache_interface.py, MambaSpec.num_prefill_checkpoint_blocks; qwen_gdn_linear_attn.py,
# get_kv_cache_spec); counted whenever it may.
PREFILL_CHECKPOINT_BLOCKS = {"0.18.1": 0, "0.26.0": 0, "0.33.0": 1}
# A group of layers is padded to the largest type's count when it is below 1.5x the smallest
# (vllm/v1/core/kv_cache_utils.py, _get_kv_cache_groups_uniform_page_size).
GROUP_PADDING_RATIO = 1.5
# Releases that refuse to start when max_num_seqs exceeds the Mamba cache blocks with full CUDA graphs
# (vllm/config/compilation.py, CompilationConfig: "max_num_seqs (...) exceeds available Mamba cache blocks").
# 0.18.1 capped the decode graphs to the blocks instead (CompilationConfig, "Cap cudagraph capture sizes").
REFUSES_SEQUENCES_BEYOND_STATE_BLOCKS = {"0.18.1": False, "0.26.0": True, "0.33.0": True}
# Whether vLLM counts its CUDA-graph estimate against the cache when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS is
# unset (vllm/envs.py): off in 0.18.1, on from 0.26.0.
ESTIMATES_CUDA_GRAPHS_BY_DEFAULT = {"0.18.1": False, "0.26.0": True, "0.33.0": True}
CUDA_GRAPH_ESTIMATE_VARIABLE = "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"


@dataclass(frozen=True, kw_only=True)
class Engine:
    """The engine settings its memory depends on, and the GPU it runs on."""

    # The driver's total, as vLLM reads it with cudaMemGetInfo (facts/gke.py, GPU_MEMORY_BYTES, for a B200).
    hbm_bytes: int
    gpu_memory_utilization: float
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_cache_dtype: str
    mtp_tokens: int = 0
    tensor_parallel: int = 1
    # Engines of the pod: only a MoE layer's experts are split across them.
    data_parallel: int = 1
    mamba_cache_mode: str | None = "align"
    # Graphs captured (optimization level above 0) and their estimate counted (counts_cuda_graphs).
    cuda_graphs: bool = True
    # Whether the GPU's attention backend keeps full decode graphs with draft tokens: FlashInfer does on Blackwell
    # (trtllm-gen), and on Hopper graphs only single-token decode, so MTP falls back to piecewise graphs there
    # (vllm/v1/attention/backends/flashinfer.py, FlashInferMetadataBuilder.get_cudagraph_support).
    full_graphs_with_drafts: bool = True
    release: str = "0.26.0"

    @property
    def requested(self) -> int:
        """What the engine may use of one GPU: the device's total x gpu_memory_utilization (Worker.determine_available_memory)."""
        return int(self.hbm_bytes * self.gpu_memory_utilization)

    @property
    def expert_ranks(self) -> int:
        """GPUs a MoE layer's routed experts are split over: every GPU of the engines, expert parallel or not. vLLM
        flattens tensor parallel across data parallel for the fused MoE layers; --enable-expert-parallel gives each of
        those ranks whole experts instead of slices (vllm/model_executor/layers/fused_moe/config.py,
        FusedMoEParallelConfig.make)."""
        return self.tensor_parallel * self.data_parallel


@dataclass(frozen=True, kw_only=True)
class MemoryBudget:
    """One GPU's memory for one engine, in bytes, and the KV cache it leaves."""

    max_num_seqs: int
    requested: int
    weights: int
    forward_peak: int
    sampler_peak: int
    cuda_graphs: int
    non_torch: int
    available_kv: int
    block_size: int
    """Tokens per attention block."""
    page_bytes: int
    """One block of one layer."""
    layers_per_group: int
    blocks: int
    """Blocks of the cache; on a hybrid model each holds one sequence's linear-attention state (Mamba cache blocks)."""
    attention_groups: int
    state_blocks_per_request: int
    """The linear-attention state blocks a request holds, whatever its length."""
    max_model_len: int
    hybrid: bool

    @property
    def blocks_per_request(self) -> int:
        """Blocks a request of max_model_len holds (kv_cache_utils.get_max_concurrency_for_kv_cache_config)."""
        return self._blocks_per_request(self.max_model_len)

    @property
    def kv_tokens(self) -> int:
        """vLLM's ``GPU KV cache size`` line: requests of max_model_len it holds x max_model_len."""
        return int(self.requests * self.max_model_len)

    @property
    def requests(self) -> float:
        """vLLM's ``Maximum concurrency`` line: requests of max_model_len the cache holds at once."""
        return self.blocks / self.blocks_per_request

    def requests_of(self, tokens: int) -> int:
        """Requests of ``tokens`` tokens the cache holds at once."""
        return self.blocks // self._blocks_per_request(tokens)

    def _blocks_per_request(self, tokens: int) -> int:
        return self.attention_groups * math.ceil(tokens / self.block_size) + self.state_blocks_per_request

    def as_output(self) -> dict[str, object]:
        gib = {
            "requested": self.requested,
            "weights": self.weights,
            "activations": self.forward_peak,
            "sampler": self.sampler_peak,
            "cudaGraphs": self.cuda_graphs,
            "nonTorch": self.non_torch,
            "availableKvCache": self.available_kv,
        }
        return {
            "maxNumSeqs": self.max_num_seqs,
            **{f"{name}GiB": round(value / GIB, 2) for name, value in gib.items()},
            "kvCacheTokens": self.kv_tokens,
            "requestsOfMaxModelLen": round(self.requests, 2),
            "blocks": self.blocks,
            "blockSize": self.block_size,
        }


def weights_per_gpu(model: ModelFacts, engine: Engine) -> int:
    """The weights one GPU loads: the rest of the model and the drafter split by tensor parallel, the experts by their ranks."""
    dense = model.weight_bytes - model.expert_weight_bytes
    drafter = model.mtp_weight_bytes if engine.mtp_tokens and model.mtp_layers else 0
    return math.ceil((dense + drafter) / engine.tensor_parallel) + math.ceil(model.expert_weight_bytes / engine.expert_ranks)


def sampler_rows(engine: Engine) -> int:
    """Requests of the dummy sampler run (GPUModelRunner._dummy_run: num_reqs = min(num_tokens, max_num_seqs))."""
    return min(engine.max_num_seqs, engine.max_num_batched_tokens)


def sampler_peak(model: ModelFacts, engine: Engine) -> int:
    if model.task == "embed":
        # A pooling model runs its pooler, not the sampler (GPUModelRunner.profile_run, _dummy_pooler_run).
        return 0
    per_logit = SPEC_SAMPLER_BYTES + SPEC_SAMPLER_BYTES_PER_DRAFT * engine.mtp_tokens if engine.mtp_tokens else SAMPLER_BYTES
    return sampler_rows(engine) * model.vocab_size * per_logit


def _layout(model: ModelFacts, engine: Engine) -> tuple[int, int, int, int, int]:
    """Block size, page bytes, layers per group, attention groups and the state blocks a request holds."""
    attention = model.full_attention_layers + (model.mtp_layers if engine.mtp_tokens else 0)
    ranks_per_head = max(1, engine.tensor_parallel // max(model.kv_heads, 1))
    # KV heads are split over tensor parallel, each rank keeping at least one (ModelConfig.get_num_kv_heads).
    token_bytes = model.kv_bytes_per_token(engine.kv_cache_dtype) // max(model.full_attention_layers, 1)
    token_bytes = token_bytes * ranks_per_head // engine.tensor_parallel
    if not model.linear_attention_layers:
        # One group of every attention layer, blocks of the default size.
        block = KERNEL_BLOCK_ALIGNMENT
        return block, block * token_bytes, attention, 1, 0
    state = model.recurrent_state_bytes_per_sequence // model.linear_attention_layers // engine.tensor_parallel
    step = KERNEL_BLOCK_ALIGNMENT * token_bytes
    block = KERNEL_BLOCK_ALIGNMENT * math.ceil(state / step)
    fewest, most = sorted((attention, model.linear_attention_layers))
    group = most if most < fewest * GROUP_PADDING_RATIO else fewest
    state_groups = math.ceil(model.linear_attention_layers / group)
    attention_groups = math.ceil(attention / group)
    if engine.mamba_cache_mode == "all":
        state_blocks = math.ceil(engine.max_model_len / block) + engine.mtp_tokens
    else:
        align = engine.mamba_cache_mode == "align"
        checkpoints = PREFILL_CHECKPOINT_BLOCKS.get(engine.release, 0) if align else 0
        state_blocks = (ALIGN_STATE_BLOCKS if align else 1) + checkpoints + engine.mtp_tokens
    return block, block * token_bytes, group, attention_groups, state_groups * state_blocks


def engine_memory(model: ModelFacts, engine: Engine) -> MemoryBudget:
    """The budget vLLM would draw up for ``model`` under ``engine`` (Worker.determine_available_memory)."""
    requested = engine.requested
    weights = weights_per_gpu(model, engine)
    hidden = model.hidden_size // engine.tensor_parallel
    forward = engine.max_num_batched_tokens * hidden * FORWARD_BYTES_PER_TOKEN_HIDDEN
    sampler = sampler_peak(model, engine)
    held = engine.max_num_batched_tokens * model.hidden_size * HIDDEN_STATE_BYTES
    graphs = CUDA_GRAPH_BYTES if engine.cuda_graphs else 0
    available = requested - weights - max(forward, sampler + held) - graphs - NON_TORCH_BYTES
    block, page, group, attention_groups, state_blocks = _layout(model, engine)
    # kv_cache_utils.get_num_blocks: available // page // layers per group.
    blocks = max(available, 0) // page // group
    return MemoryBudget(
        max_num_seqs=engine.max_num_seqs,
        requested=requested,
        weights=weights,
        forward_peak=forward,
        sampler_peak=sampler,
        cuda_graphs=graphs,
        non_torch=NON_TORCH_BYTES,
        available_kv=available,
        block_size=block,
        page_bytes=page,
        layers_per_group=group,
        blocks=blocks,
        attention_groups=attention_groups,
        state_blocks_per_request=state_blocks,
        max_model_len=engine.max_model_len,
        hybrid=model.linear_attention_layers > 0,
    )


def starts(model: ModelFacts, engine: Engine) -> bool:
    """Whether vLLM would start: one request of max_model_len fits the cache, and on a hybrid model under a release
    that checks it, every sequence has its state block."""
    budget = engine_memory(model, engine)
    if budget.blocks < budget.blocks_per_request:
        return False
    full_graphs = engine.cuda_graphs and (engine.full_graphs_with_drafts or not engine.mtp_tokens)
    refuses = REFUSES_SEQUENCES_BEYOND_STATE_BLOCKS.get(engine.release, True) and full_graphs
    return not (budget.hybrid and refuses and engine.max_num_seqs > budget.blocks)


def counts_cuda_graphs(release: str, env: dict[str, str], optimization_level: int) -> bool:
    """Whether vLLM captures CUDA graphs (any -O above 0) and takes their estimate from the cache."""
    variable = env.get(CUDA_GRAPH_ESTIMATE_VARIABLE)
    counted = bool(int(variable)) if variable is not None else ESTIMATES_CUDA_GRAPHS_BY_DEFAULT.get(release, True)
    return optimization_level > 0 and counted


def largest_max_num_seqs(model: ModelFacts, engine: Engine) -> int:
    """The largest max_num_seqs with which the engine starts, 0 when none does (the budget falls as it grows)."""
    low, high = 0, engine.max_num_batched_tokens
    while low < high:
        middle = (low + high + 1) // 2
        if starts(model, replace(engine, max_num_seqs=middle)):
            low = middle
        else:
            high = middle - 1
    return low


def balanced_max_num_seqs(model: ModelFacts, engine: Engine, request_tokens: int) -> int:
    """The most sequences the cache holds at once as requests of ``request_tokens``, no more than starts: more would
    only wait in vLLM's queue for blocks while their sampler memory shrinks the cache."""
    low, high = 0, largest_max_num_seqs(model, engine)
    while low < high:
        middle = (low + high + 1) // 2
        if engine_memory(model, replace(engine, max_num_seqs=middle)).requests_of(request_tokens) >= middle:
            low = middle
        else:
            high = middle - 1
    return low
