"""The engine's memory under a stack's settings: the default maxNumSeqs, what cannot start, what deserves a warning.

The arithmetic is vLLM's (facts/engine_memory.py); this module only reads the settings into it.
"""

from __future__ import annotations

from facts.engine_memory import (
    GIB,
    Engine,
    MemoryBudget,
    ModelMemory,
    balanced_max_num_seqs,
    counts_cuda_graphs,
    engine_memory,
    largest_max_num_seqs,
    weights_per_gpu,
)
from facts.gke import GPU_MEMORY_BYTES
from stacks.autoscaling import AutoscalingSettings
from stacks.problems import ConfigProblem
from stacks.serving import ServingProfile
from stacks.workload import WorkloadSettings


def engine(serving: ServingProfile, model: ModelMemory, max_num_seqs: int) -> Engine:
    """One engine of the stack on one A4 GPU, as the budget reads it."""
    return Engine(
        hbm_bytes=GPU_MEMORY_BYTES,
        gpu_memory_utilization=serving.gpu_memory_utilization,
        max_model_len=serving.max_model_len,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=serving.max_num_batched_tokens,
        kv_cache_dtype=serving.kv_cache_dtype,
        mtp_tokens=serving.mtp_tokens if model.mtp_layers else 0,
        mamba_cache_mode=_mamba_cache_mode(serving),
        cuda_graphs=counts_cuda_graphs(serving.release, serving.env, serving.optimization_level),
        release=serving.release,
    )


def _mamba_cache_mode(serving: ServingProfile) -> str | None:
    # A release that ignores the flag (0.33.0) caches in align mode with prefix caching, none without (docs/vllm.md).
    if serving.facts.takes("--mamba-cache-mode"):
        return serving.mamba_cache_mode
    return "align" if serving.enable_prefix_caching else "none"


def mean_request(workload: WorkloadSettings) -> int:
    """Tokens of the workload's mean request: its prompt and its generation."""
    return workload.input_tokens + workload.output_tokens


def max_num_seqs(serving: ServingProfile, workload: WorkloadSettings, model: ModelMemory) -> int:
    """The stack's maxNumSeqs: the one set, else the most the cache holds of the workload's mean request that start."""
    if serving.max_num_seqs is not None:
        return serving.max_num_seqs
    return balanced_max_num_seqs(model, engine(serving, model, 1), mean_request(workload))


def check(serving: ServingProfile, workload: WorkloadSettings, model: ModelMemory, model_id: str) -> None:
    """Refuse an engine that cannot start: weights above its memory, no room for one request, more sequences than fit."""
    one = engine(serving, model, 1)
    requested = one.hbm_bytes * serving.gpu_memory_utilization
    weights = weights_per_gpu(model, one)
    if weights >= requested:
        raise ConfigProblem(
            ("model", "id"),
            model_id,
            f"does not fit one engine: its weights need {weights / GIB:.1f} GiB on each GPU, above the "
            f"{requested / GIB:.1f} GiB the engine may use (a B200's {one.hbm_bytes / GIB:.0f} GiB x "
            f"serving.gpuMemoryUtilization {serving.gpu_memory_utilization:g}); spread it over more GPUs per engine",
        )
    largest = largest_max_num_seqs(model, one)
    if largest == 0:
        budget = engine_memory(model, one)
        raise ConfigProblem(
            ("serving", "maxModelLen"),
            serving.max_model_len,
            f"does not fit the KV cache: after the weights ({budget.weights / GIB:.1f} GiB) and the engine's working memory "
            f"{max(budget.available_kv, 0) / GIB:.1f} GiB are left, less than one request of this length needs; lower it",
        )
    if serving.max_num_seqs is not None and serving.max_num_seqs > largest:
        raise ConfigProblem(
            ("serving", "maxNumSeqs"),
            serving.max_num_seqs,
            f"is more sequences than the engine's memory holds at start under vLLM {serving.release} "
            f"(sampler memory and, on a hybrid model, one state block each; docs/memory.md); the largest that fits is {largest}",
        )


def budget(serving: ServingProfile, workload: WorkloadSettings, model: ModelMemory) -> MemoryBudget:
    """The memory of one engine of the stack, at its maxNumSeqs."""
    return engine_memory(model, engine(serving, model, max_num_seqs(serving, workload, model)))


def warnings(
    namespace: str, serving: ServingProfile, workload: WorkloadSettings, autoscaling: AutoscalingSettings, model: ModelMemory
) -> list[str]:
    """A word when the autoscaler's target asks an engine for more requests than its KV cache holds at once."""
    if not autoscaling.enabled:
        return []
    asked = autoscaling.requests_per_replica / serving.data_parallel_size
    held = budget(serving, workload, model).requests_of(mean_request(workload))
    if held >= asked:
        return []
    return [
        f"{namespace}:autoscaling.requestsPerReplica: {autoscaling.requests_per_replica} asks each of a replica's "
        f"{serving.data_parallel_size} engines for {asked:g} requests, but its KV cache holds {held} of the workload's "
        f"{mean_request(workload)} tokens at once; the rest wait in vLLM's queue. Lower requestsPerReplica to "
        f"{held * serving.data_parallel_size} or less (docs/memory.md)"
    ]
