"""The preflight's verdict on the real runs, judged again from their reports, and their throughput ratios."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from preflight.report import text, throughput_ratios, verdict
from tests.preflight.runs import BATCH, DEV, JIT_CACHES, RUNS, report


def failures(result: dict[str, Any]) -> list[str]:
    return [f["what"] for f in verdict(result)["failures"]]


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_every_failure_today_was_one_the_run_reported(run: Path) -> None:
    # The judgement has only learnt what the stack accounts for (the completion startup probe, vLLM's cut at
    # its shutdown timeout), never to fail what a run passed.
    result = report(run)
    written = [f["what"] for f in result.pop("verdict")["failures"]]
    assert set(failures(result)) <= set(written)


def test_dev_before_the_fixes_fails_on_readiness_twice_and_on_the_grace_budget() -> None:
    # Its render probed /health alone, and its 20 s shutdown timeout left no time for the teardown.
    assert failures(report(DEV)) == ["readiness", "readiness", "drain: grace budget"]


def test_batch_before_the_fixes_fails_on_the_cold_starts_readiness_and_on_the_grace_budget() -> None:
    assert failures(report(BATCH)) == ["readiness", "drain: grace budget"]


def test_dev_after_the_fixes_passes() -> None:
    # Its startup probe sends a completion and waits longer than the cold first answer took (98 s),
    # and preStop 5 s + shutdown timeout 13 s + teardown fit Spot's 25 s.
    assert failures(report(JIT_CACHES)) == []


def test_a_completion_probe_that_gives_up_before_the_first_answer_fails_readiness() -> None:
    result = report(JIT_CACHES)
    result["rendered"]["probes"]["startupProbe"]["timeoutSeconds"] = 60
    texts = [f["text"] for f in verdict(result)["failures"] if f["what"] == "readiness"]
    assert texts == ["1-cold: the startup probe's completion gives up after 60 s, but the first answer took 98.3 s after /health"]


def test_readiness_fails_when_the_first_answer_comes_long_after_ready() -> None:
    first = {s["name"]: s["first_answer_after_ready_s"] for s in report(DEV)["starts"]}
    assert first["1-cold"] > 100 and first["2-compile-cache"] > 100 and first["3-all-caches"] < 2
    texts = [f["text"] for f in verdict(report(DEV))["failures"] if f["what"] == "readiness"]
    assert texts[0].startswith("1-cold: /health answered 200 122.1 s before")


def test_a_larger_budget_admits_the_delay() -> None:
    result = report(DEV)
    result["budgets"]["first_answer_after_ready_s"] = 130
    assert "readiness" not in failures(result)


def test_an_answer_without_usage_fails_naming_the_request() -> None:
    result = report(DEV)
    result["starts"][0]["requests"]["chat"]["usage"] = {"prompt_tokens": 16}
    found = [f["text"] for f in verdict(result)["failures"] if f["what"] == "1-cold requests"]
    assert found == ["1-cold: the chat answer has no usage completion_tokens, total_tokens"]


def test_a_start_that_never_became_ready_fails_with_its_error() -> None:
    result = report(DEV)
    result["starts"] = [{"name": "1-cold", "ready_s": None, "error": "the engine exited rc=1; last errors: ValueError"}]
    assert verdict(result)["failures"] == [{"what": "1-cold start", "text": "the engine exited rc=1; last errors: ValueError"}]


def test_a_refusal_is_a_failure() -> None:
    assert failures({"refused": "vLLM 0.25.0 is not covered"}) == ["refused"]


def test_the_throughput_ratios_of_the_batch_run() -> None:
    ratios = throughput_ratios(report(BATCH))
    assert ratios["stack_without_mtp_over_defaults"] == pytest.approx(41456 / 51453, rel=1e-3)
    assert ratios["stack_with_mtp_over_without"] == pytest.approx(16318 / 41456, rel=1e-3)


def test_the_text_names_each_failure_and_the_ratios() -> None:
    written = text(report(BATCH))
    assert "ratios: stack_without_mtp_over_defaults 0.81, stack_with_mtp_over_without 0.39" in written
    assert written.splitlines()[-5].startswith("FAILED (4)")
    assert "adapted --gdn-prefill-backend: None -> triton" in written


def test_a_run_with_no_failure_passes() -> None:
    result = copy.deepcopy(report(BATCH))
    result["budgets"]["first_answer_after_ready_s"] = 200
    del result["starts"][-1]["drain"]
    result.pop("verdict")
    assert verdict(result)["ok"]
    assert text(result).endswith("PASSED\n")
