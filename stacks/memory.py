"""The engine's memory under a stack's settings: the default maxNumSeqs, what cannot start, what deserves a warning.

The arithmetic is vLLM's (facts/engine_memory.py); this module only reads the settings into it.
"""

from __future__ import annotations

from facts.engine_memory import GIB, MemoryBudget, balanced_max_num_seqs, engine_memory, largest_max_num_seqs
from facts.models import ModelFacts
from stacks.autoscaling import AutoscalingSettings
from stacks.engine import memory_engine
from stacks.problems import ConfigProblem
from stacks.serving import ServingProfile
from stacks.workload import WorkloadSettings


def mean_request(workload: WorkloadSettings) -> int:
    """Tokens of the workload's mean request: its prompt and its generation."""
    return workload.input_tokens + workload.output_tokens


def max_num_seqs(serving: ServingProfile, workload: WorkloadSettings, model: ModelFacts) -> int:
    """The stack's maxNumSeqs: the one set, else the most the cache holds of the workload's mean request that start."""
    if serving.max_num_seqs is not None:
        return serving.max_num_seqs
    return balanced_max_num_seqs(model, memory_engine(model, serving, 1), mean_request(workload))


def check(serving: ServingProfile, model: ModelFacts) -> None:
    """Refuse an engine whose weights fit (stacks/engine.py) but that cannot start: no room for one request, more
    sequences than fit."""
    one = memory_engine(model, serving, 1)
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


def budget(serving: ServingProfile, workload: WorkloadSettings, model: ModelFacts) -> MemoryBudget:
    """The memory of one GPU of one engine of the stack, at its maxNumSeqs."""
    return engine_memory(model, memory_engine(model, serving, max_num_seqs(serving, workload, model)))


def warnings(
    namespace: str, serving: ServingProfile, workload: WorkloadSettings, autoscaling: AutoscalingSettings, model: ModelFacts
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
