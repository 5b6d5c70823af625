"""One table of the engine flags the program owns: the settings refuse each in extraArgs, the replicas write each."""

from __future__ import annotations

import pytest

from components.replicas import engine_args
from facts.engine_flags import ENGINE_FLAGS
from plan.stack import Drain, engine_profile
from stacks.serving import ServingProfile
from tests.stacks.handed import problem

SPELLINGS = [(name, row.key) for row in ENGINE_FLAGS for name in (row.flag, *row.aliases)]


@pytest.mark.parametrize(("flag", "key"), SPELLINGS)
def test_a_flag_of_the_table_in_extra_args_is_refused_naming_its_setting(flag: str, key: str) -> None:
    assert problem(serving={"extraArgs": [f"{flag}=1"]}) == f"llm:serving.extraArgs[0]: '{flag}=1' is set by the program; use {key} instead"


def test_the_replicas_write_the_tables_flags_in_its_order_then_extra_args() -> None:
    profile = engine_profile(ServingProfile(extra_args=("--seed=7",)), 256)
    args = engine_args(profile, "/m", "served", Drain(pre_stop_seconds=5, shutdown_timeout_seconds=30, grace_seconds=40))
    assert args[:3] == ["vllm", "serve", "/m"] and args[-1] == "--seed=7"
    written = ["-O" if arg.startswith("-O") else arg.split("=", 1)[0].replace("--no-", "--", 1) for arg in args[3:-1]]
    assert written == [row.flag for row in ENGINE_FLAGS if row.value is not None]
