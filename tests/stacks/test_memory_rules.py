"""The engine's memory under a stack's settings: its default maxNumSeqs, the refusals and the warning (stacks/memory.py)."""

from __future__ import annotations

from dataclasses import replace

from facts.engine_memory import engine_memory, starts
from render.engine import stack_settings
from stacks import memory
from stacks.engine import memory_engine
from tests.conftest import rendered
from tests.stacks.handed import parsed, problem

LATEST = "vllm/vllm-openai:v0.26.0"


def test_dev_defaults_start_at_full_size_with_and_without_mtp() -> None:
    for mtp in (1, 0):
        settings = parsed(serving={"mtpTokens": mtp})
        facts = settings.model.facts
        for image in (settings.serving.image, LATEST, "vllm/vllm-openai:v0.33.0"):
            serving = settings.serving.model_copy(update={"image": image})
            seqs = memory.max_num_seqs(serving, settings.workload, facts)
            # Under vLLM 0.26.0's check too: every sequence has its state block, with full graphs as on a B200.
            assert starts(facts, memory_engine(facts, serving, seqs)), (mtp, image)
            assert starts(facts, replace(memory_engine(facts, serving, seqs), release="0.26.0")), (mtp, image)


def test_the_default_is_what_the_cache_holds_of_the_workload_not_8192() -> None:
    settings = stack_settings("dev")
    budget = settings.memory_budget
    assert settings.serving.max_num_seqs is None
    assert settings.max_num_seqs == budget.max_num_seqs < 8192
    # As many as the cache holds of 1,536-token requests, and not far below it.
    assert settings.max_num_seqs <= budget.requests_of(1536) < settings.max_num_seqs * 1.05
    # Longer requests hold fewer of them.
    longer = parsed(workload={"inputTokens": 4096}, serving={"maxModelLen": 8192})
    assert longer.max_num_seqs < settings.max_num_seqs


def test_the_rendered_engine_gets_the_default() -> None:
    settings = stack_settings("dev")
    deployment = rendered("dev").one("kubernetes:apps/v1:Deployment", "vllm").inputs
    command = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    assert f"--max-num-seqs={settings.max_num_seqs}" in command


def test_more_sequences_than_the_memory_holds_are_refused() -> None:
    message = problem(serving={"image": LATEST, "maxNumSeqs": 8192})
    assert message.startswith("llm:serving.maxNumSeqs: 8192 is more sequences than the engine's memory holds")
    largest = int(message.rsplit(" ", 1)[1])
    assert 1000 < largest < 8192
    accepted = parsed(serving={"image": LATEST, "maxNumSeqs": largest})
    assert accepted.max_num_seqs == largest
    assert "llm:serving.maxNumSeqs" in problem(serving={"image": LATEST, "maxNumSeqs": largest + 1})


def test_weights_that_do_not_fit_are_refused() -> None:
    # One rule with the shapes' (tests/stacks/test_models_in_stacks.py): the 397B's experts over eight one-GPU engines
    # and its drafter leave 63 GiB a GPU, above 0.3 of a B200.
    message = problem(model={"id": "Qwen/Qwen3.5-397B-A17B-FP8"}, serving={"gpuMemoryUtilization": 0.3}, cache={"sizeGi": 400})
    assert message.startswith("llm:serving.tensorParallelSize: 1 leaves 63")
    assert "gpuMemoryUtilization 0.3" in message


def test_a_context_the_cache_cannot_hold_is_refused() -> None:
    message = problem(serving={"maxModelLen": 4_000_000, "kvCacheDtype": "auto"})
    assert message.startswith("llm:serving.maxModelLen: 4000000 does not fit the KV cache")


def test_a_target_above_what_the_cache_holds_warns() -> None:
    quiet = parsed(autoscaling={"enabled": True})
    assert quiet.warnings("llm") == []
    (warning,) = parsed(autoscaling={"enabled": True, "requestsPerReplica": 8000}).warnings("llm")
    assert warning.startswith("llm:autoscaling.requestsPerReplica: 8000 asks each of a replica's 8 engines for 1000 requests")
    held = quiet.memory_budget
    assert f"holds {held.requests_of(1536)} of the workload's 1536 tokens" in warning
    # Off without autoscaling: the target scales nothing.
    assert parsed(autoscaling={"requestsPerReplica": 8000}).warnings("llm") == []


def test_the_plan_shows_the_budget() -> None:
    settings = stack_settings("dev")
    facts = settings.model.facts
    budget = engine_memory(facts, memory_engine(facts, settings.serving, settings.max_num_seqs))
    shown = rendered("dev").outputs["engineMemory"]
    assert (shown["maxNumSeqs"], shown["kvCacheTokens"], shown["blocks"]) == (settings.max_num_seqs, budget.kv_tokens, budget.blocks)
    assert shown["weightsGiB"] == round(budget.weights / 2**30, 2) and shown["availableKvCacheGiB"] > 100
    # The output is the budget's own mapping (tests/facts/test_engine_memory.py states its keys and units).
    assert shown == settings.memory_budget.as_output()
