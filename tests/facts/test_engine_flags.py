"""One table of the engine flags the program owns: the settings refuse each in extraArgs, the replicas write each."""

from __future__ import annotations

import pytest

from components.replicas import engine_args
from facts.engine_flags import ENGINE_FLAGS
from facts.models import catalogued
from plan.stack import Drain, Embedding, engine_profile
from stacks.serving import ServingProfile
from tests.stacks.handed import problem

SPELLINGS = [(name, row.key) for row in ENGINE_FLAGS for name in (row.flag, *row.aliases)]


@pytest.mark.parametrize(("flag", "key"), SPELLINGS)
def test_a_flag_of_the_table_in_extra_args_is_refused_naming_its_setting(flag: str, key: str) -> None:
    assert problem(serving={"extraArgs": [f"{flag}=1"]}) == f"llm:serving.extraArgs[0]: '{flag}=1' is set by the program; use {key} instead"


def test_the_replicas_write_the_tables_flags_in_its_order_then_extra_args() -> None:
    # A hybrid MoE with MTP layers over tensor and expert parallelism: every row of the table applies.
    moe = catalogued("Qwen/Qwen3.5-397B-A17B-FP8")
    assert moe is not None
    profile = engine_profile(ServingProfile(tensor_parallel_size=8, expert_parallel=True, extra_args=("--seed=7",)), moe, 256)
    args = engine_args(profile, "/m", "served", Drain(pre_stop_seconds=5, shutdown_timeout_seconds=30, grace_seconds=40))
    assert args[:3] == ["vllm", "serve", "/m"] and args[-1] == "--seed=7"
    written = ["-O" if arg.startswith("-O") else arg.split("=", 1)[0].replace("--no-", "--", 1) for arg in args[3:-1]]
    # A model that generates runs vLLM's default runner: --runner is written for an embedding model only.
    assert written == [row.flag for row in ENGINE_FLAGS if row.value is not None and row.flag != "--runner"]
    embedder = catalogued("Qwen/Qwen3-Embedding-8B")
    assert embedder is not None
    pooling = engine_args(engine_profile(ServingProfile(), embedder, 256, Embedding(length=embedder.hidden_size)), "/m", "served")
    assert pooling[3:5] == ["--served-model-name=served", "--runner=pooling"]
