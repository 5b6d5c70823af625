"""The stack's own benchmark client, pointed at the preflight's engine, and its saved result through the project's summary."""

from __future__ import annotations

import json

import pytest

from preflight.bench import client_argv, ratio
from preflight.rendered import read_prepared
from tests.preflight.runs import BATCH, DEV, report
from workloads.benchmark_summary import summarize


def client() -> list[str]:
    built: list[str] = read_prepared(DEV / "rendered")["bench_client"]
    return built


def test_only_the_address_tokenizer_prompts_and_result_place_change() -> None:
    argv, changes = client_argv(
        client(),
        base_url="http://127.0.0.1:8123",
        tokenizer="/w/model",
        prompts=300,
        result_dir="/w/bench",
        result_file="stack.json",
        launcher=["vllm"],
    )
    own = ("--base-url", "--tokenizer", "--num-prompts", "--result-dir", "--result-filename")
    assert [a for a in argv if not a.startswith(own)] == [a for a in client() if not a.startswith(own)]
    assert "--tokenizer=/w/model" in argv and "--num-prompts=300" in argv
    assert {c.what for c in changes} == {f"bench {flag}" for flag in own}
    assert report(DEV)["bench"]["adaptations"][0] == {
        "what": "bench --tokenizer",
        "rendered": "Qwen/Qwen3.5-27B-FP8",
        "run": "/root/w-dev/model",
        "reason": "the miniature's tokenizer (the stack's is downloaded from Hugging Face)",
    }


def test_the_client_keeps_the_reference_workload() -> None:
    assert {"--dataset-name=random", "--random-input-len=1024", "--random-output-len=512", "--ignore-eos", "--save-detailed"} <= set(
        client()
    )


def test_a_command_that_is_not_the_benchmark_is_refused() -> None:
    with pytest.raises(ValueError, match="not a `vllm bench serve`"):
        client_argv(["vllm", "serve", "m"], base_url="", tokenizer="", prompts=1, result_dir="", result_file="", launcher=["vllm"])


@pytest.mark.parametrize("name", ["stack", "no-mtp", "defaults"])
def test_the_project_summary_reads_a_real_saved_result(name: str) -> None:
    saved = json.loads((BATCH / "bench" / f"{name}.json").read_text(encoding="utf-8"))
    summary = summarize([saved])
    assert summary["completed"] == 300 and summary["failed"] == 0
    assert summary["total_token_throughput"] == pytest.approx(saved["total_token_throughput"])
    # The fixture keeps four requests' detail: percentiles over those.
    assert summary["ttft_ms"]["p50"] is not None


def test_a_ratio_needs_both_figures() -> None:
    assert ratio({"total_token_throughput": 2.0}, {"total_token_throughput": 4.0}) == 0.5
    assert ratio(None, {"total_token_throughput": 4.0}) is None
    assert ratio({"total_token_throughput": 2.0}, {"total_token_throughput": 0}) is None
