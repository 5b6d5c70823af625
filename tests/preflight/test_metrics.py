"""The series the stack's alerts, scaler and dashboard read, held to the engine's real /metrics."""

from __future__ import annotations

from pathlib import Path

import pytest

from preflight.metrics import check, largest_bucket, samples
from preflight.rendered import queries, vllm_reads
from tests.preflight.runs import RUNS, report

SERVED = "Qwen/Qwen3.5-27B-FP8"


def real(run: Path) -> tuple[dict[str, list[str]], str]:
    return vllm_reads(queries(run / "rendered")), (run / "1-cold-metrics.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_every_series_the_stack_reads_is_exported_with_engine_and_model_name(run: Path) -> None:
    reads, text = real(run)
    result = check(reads, text, SERVED)
    assert result.ok, result.as_dict()
    assert len(result.present) == 11
    assert all({"engine", "model_name"} <= set(labels) for labels in result.present.values())


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_the_run_reported_what_the_check_finds_today(run: Path) -> None:
    reads, text = real(run)
    assert report(run)["starts"][0]["metrics"] == check(reads, text, SERVED).as_dict()


def test_the_ttft_buckets_end_at_2560_seconds() -> None:
    _, text = real(RUNS[0])
    assert largest_bucket(text, "vllm:time_to_first_token_seconds") == 2560.0
    assert largest_bucket(text, "vllm:no_such_histogram") is None


def test_a_series_the_engine_does_not_export_is_named_with_where_it_is_read() -> None:
    reads, text = real(RUNS[0])
    kept = "\n".join(line for line in text.splitlines() if not line.startswith("vllm:num_preemptions_total"))
    result = check(reads, kept, SERVED)
    assert not result.ok
    assert list(result.missing) == ["vllm:num_preemptions_total"]
    assert result.missing["vllm:num_preemptions_total"] == reads["vllm:num_preemptions_total"]


def test_a_series_of_another_served_name_is_not_the_stacks() -> None:
    reads, text = real(RUNS[0])
    result = check(reads, text, "another/model")
    assert set(result.unlabelled) == set(reads)


def test_the_text_format_is_read_with_its_labels() -> None:
    text = '# HELP x\nvllm:a{engine="0",model_name="m",le="+Inf"} 3\nvllm:b 1.5\n'
    assert samples(text) == {"vllm:a": [{"engine": "0", "model_name": "m", "le": "+Inf"}], "vllm:b": [{}]}
