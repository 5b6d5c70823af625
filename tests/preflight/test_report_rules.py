"""The verdict and the text on hand-made results: each failure found, named and worded with its figures."""

from __future__ import annotations

from typing import Any

import pytest

from preflight.full_size import TermCheck
from preflight.report import bench_line, completion_probe_timeout, text, throughput_ratios, verdict

ANSWERED: dict[str, Any] = {"ending": "answered", "usage": {"prompt_tokens": 5, "completion_tokens": 8, "total_tokens": 13}}
SUMMARY = {"completed": 300, "failed": 0, "total_token_throughput": 41456.4, "output_throughput": 20000.6, "ttft_ms": {"p50": 1234.5}}
# Grace 25 s, preStop 5 s, --shutdown-timeout 13 s: what the dev stack renders after the fixes.
PLAN = {"grace_seconds": 25, "prestop_seconds": 5.0, "shutdown_timeout": 13.0, "observe_after_grace": 30.0}
DRAIN = {
    "plan": PLAN,
    "sigkill_due_s": 20.0,
    "port_closed_s": 0.1,
    "exit_s": 14.5,
    "requests": {"stream-0": {**ANSWERED, "last_chunk": 3.0}},
}


def start(name: str = "1-cold", **fields: Any) -> dict[str, Any]:
    return {"name": name, "ready_s": 300.0, "first_answer_after_ready_s": 1.0, "requests": {"completion": ANSWERED}, **fields}


def failures(result: dict[str, Any]) -> list[dict[str, str]]:
    return verdict(result)["failures"]  # type: ignore[no-any-return]


def test_a_clean_result_passes_with_nothing_found() -> None:
    assert verdict({"starts": [start()]}) == {"ok": True, "failures": [], "drain_findings": []}
    assert verdict({}) == {"ok": True, "failures": [], "drain_findings": []}


def test_flags_the_release_does_not_take_fail_naming_them_and_the_release() -> None:
    result = {"engine": {"release": "0.26.0"}, "flags": {"unknown_to_release": ["--a", "--b"]}}
    assert failures(result) == [{"what": "flags", "text": "vLLM 0.26.0 does not take --a, --b"}]
    assert failures({"flags": {"unknown_to_release": []}}) == []


def test_a_start_that_did_not_become_ready_says_so_and_nothing_else_of_it_is_judged() -> None:
    bad = start(ready_s=None, requests={"chat": {"ending": "refused"}})
    assert failures({"starts": [bad]}) == [{"what": "1-cold start", "text": "the engine did not become Ready"}]


@pytest.mark.parametrize(
    ("request_", "found"),
    [
        ({"ending": "dropped", "error": "RemoteDisconnected()"}, "2-warm: the chat request ended 'dropped' (RemoteDisconnected())"),
        ({"ending": "cut"}, "2-warm: the chat request ended 'cut' (no finish_reason)"),
        ({}, "2-warm: the chat request ended 'None' (no finish_reason)"),
        ({"ending": "answered"}, "2-warm: the chat answer has no usage prompt_tokens, completion_tokens, total_tokens"),
        ({"ending": "answered", "usage": {**ANSWERED["usage"], "total_tokens": 13.0}}, "2-warm: the chat answer has no usage total_tokens"),
    ],
)
def test_each_request_must_be_answered_with_its_usage(request_: dict[str, Any], found: str) -> None:
    result = {"starts": [start("2-warm", requests={"completion": ANSWERED, "chat": request_})]}
    assert failures(result) == [{"what": "2-warm requests", "text": found}]


def test_a_first_answer_past_the_budget_fails_readiness_at_the_budget_given() -> None:
    late = {"starts": [start(first_answer_after_ready_s=10.5)]}
    [found] = failures(late)
    assert found["what"] == "readiness"
    assert found["text"] == (
        "1-cold: /health answered 200 10.5 s before the first completion was answered (budget 10 s): "
        "a Ready replica times out its first clients"
    )
    assert failures({"starts": [start(first_answer_after_ready_s=10.0)]}) == []
    assert failures({**late, "budgets": {"first_answer_after_ready_s": 11}}) == []
    assert failures({**late, "budgets": {"first_answer_after_ready_s": 10.4}})[0]["what"] == "readiness"


def probed(timeout: float | None, *command: object) -> dict[str, Any]:
    probe: dict[str, Any] = {"exec": {"command": list(command)}}
    if timeout is not None:
        probe["timeoutSeconds"] = timeout
    return {"rendered": {"probes": {"startupProbe": probe}}}


COMPLETION = ("curl", "-sf", "http://localhost:8000/v1/completions")


def test_a_completion_startup_probe_judges_the_first_answer_by_its_timeout_not_the_budget() -> None:
    result = {**probed(120, *COMPLETION), "starts": [start(first_answer_after_ready_s=98.3)]}
    assert failures(result) == []
    result["starts"] = [start(first_answer_after_ready_s=120.5)]
    assert failures(result) == [
        {
            "what": "readiness",
            "text": "1-cold: the startup probe's completion gives up after 120 s, but the first answer took 120.5 s after /health",
        }
    ]
    result["starts"] = [start(first_answer_after_ready_s=120.0)]
    assert failures(result) == []


@pytest.mark.parametrize(
    ("result", "timeout"),
    [
        (probed(60, *COMPLETION), 60.0),
        (probed(None, *COMPLETION), 1.0),
        (probed(60, "curl", "http://localhost:8000/health"), None),
        (probed(60, "curl", "http://localhost:8000/v1/completions?x"), None),
        (probed(60, 8000, "/v1/completions"), 60.0),
        (probed(60, ["/v1/completions"]), None),
        ({"rendered": {"probes": {"startupProbe": {"httpGet": {"path": "/health"}, "timeoutSeconds": 5}}}}, None),
        ({}, None),
    ],
)
def test_the_probe_timeout_counts_only_for_a_probe_that_sends_a_completion(result: dict[str, Any], timeout: float | None) -> None:
    assert completion_probe_timeout(result) == timeout


def test_metrics_the_stack_reads_must_be_exported_and_labelled() -> None:
    check = {"ok": False, "missing": ["vllm:a", "vllm:b"], "unlabelled": ["vllm:c"]}
    assert failures({"starts": [start(metrics=check)]}) == [
        {"what": "metrics", "text": "1-cold: the stack reads series the engine does not export: vllm:a, vllm:b"},
        {"what": "metrics", "text": "1-cold: without engine/model_name labels: vllm:c"},
    ]
    assert failures({"starts": [start(metrics={"ok": True, "missing": ["vllm:a"]})]}) == []
    assert failures({"starts": [start(metrics={"ok": False})]}) == []


@pytest.mark.parametrize(
    ("summary", "fails"),
    [
        (SUMMARY, False),
        ({**SUMMARY, "failed": 1}, True),
        ({**SUMMARY, "completed": 0}, True),
        ({"error": "no client"}, True),
    ],
)
def test_throughput_fails_on_an_error_a_failed_request_or_none_completed(summary: dict[str, Any], fails: bool) -> None:
    found = failures({"starts": [start(throughput=summary)]})
    assert found == ([{"what": "throughput", "text": f"1-cold: {bench_line(summary)}"}] if fails else [])


def test_the_drain_findings_are_kept_and_its_failures_named() -> None:
    result = {"starts": [start(drain=DRAIN)], "clean_exit_s": 4.5}
    judged = verdict(result)
    assert [f["what"] for f in judged["drain_findings"]] == ["exit", "in-flight requests", "port", "grace budget"]
    assert judged["ok"] and judged["failures"] == []
    # 5 + 13 + 8 = 26 s does not fit a grace of 25 s.
    slow = verdict({**result, "clean_exit_s": 8.0})
    assert [f["what"] for f in slow["failures"]] == ["drain: grace budget"]
    assert slow["failures"][0]["text"].endswith("= 26.0 s against a grace of 25 s")
    assert [f["what"] for f in verdict({"starts": [start(drain=DRAIN)]})["drain_findings"]] == ["exit", "in-flight requests", "port"]


def test_the_bench_line_gives_counts_rates_and_the_median_first_token() -> None:
    assert bench_line(SUMMARY) == "300 requests (0 failed), 41,456 tokens/s in total, 20,001 output tokens/s, TTFT p50 1,234 ms"
    assert bench_line({"completed": 3, "failed": 1}) == "3 requests (1 failed), 0 tokens/s in total, 0 output tokens/s"
    assert bench_line({"error": "boom"}) == "error: boom"


def comparison(total: float | None) -> dict[str, Any]:
    return {"what": "x", "start": {"throughput": {"total_token_throughput": total}}}


def test_the_ratios_take_the_last_start_that_measured_throughput() -> None:
    result = {
        "starts": [start(throughput={"total_token_throughput": 100.0}), start(throughput={"total_token_throughput": 30.0}), start()],
        "comparisons": {"no-mtp": comparison(60.0), "defaults": comparison(80.0)},
    }
    assert throughput_ratios(result) == {"stack_without_mtp_over_defaults": 0.75, "stack_with_mtp_over_without": 0.5}


@pytest.mark.parametrize(
    "comparisons",
    [
        {},
        {"no-mtp": comparison(0.0), "defaults": comparison(80.0)},
        {"no-mtp": {"start": {"throughput": {"error": "x", "total_token_throughput": 60.0}}}, "defaults": comparison(80.0)},
        {"no-mtp": {"start": {"throughput": "not run"}}, "defaults": comparison(80.0)},
    ],
)
def test_a_ratio_without_both_figures_is_none(comparisons: dict[str, Any]) -> None:
    result = {"starts": [start(throughput={"total_token_throughput": 30.0})], "comparisons": comparisons}
    assert throughput_ratios(result) == {"stack_without_mtp_over_defaults": None, "stack_with_mtp_over_without": None}
    assert throughput_ratios({}) == {"stack_without_mtp_over_defaults": None, "stack_with_mtp_over_without": None}


FULL: dict[str, Any] = {
    "stack": "dev",
    "engine": {"release": "0.26.0", "mode": "local", "stack_release": "0.18.1"},
    "machine": {"gpus": 1, "gpu": "NVIDIA H100", "capability": [9, 0]},
    "flags": {"names": ["--a", "--b", "--c"], "unknown_to_release": []},
    "adaptations": [{"what": "model", "rendered": "/models/m", "run": "/local/m", "reason": "a miniature"}],
    "reads": {"vllm:a": {}, "vllm:b": {}},
    "starts": [
        start(
            ready_s=345.04,
            first_answer_after_ready_s=None,
            sigterm_to_exit_idle_s=4.25,
            project_parser={"phases": {"imports and config": 86.94, "weights loaded": None}},
            scan={"markers": {"kernel JIT at inference": [f"k{i}" for i in range(7)]}},
            caches={"/home": {"written": {"triton": [19, 100]}}, "/tmp": {"written": {}}},
            metrics={"ok": True, "present": {"vllm:a": 1}},
            throughput=SUMMARY,
            drain={**DRAIN, "exit_s": None, "sigkill_due_s": 20.0},
        ),
        start("2-warm", scan={"markers": {"kernel JIT at inference": ["k0", "k1"]}}, metrics={"ok": False, "present": {}}),
    ],
    "comparisons": {
        "no-mtp": {"what": "without MTP", "start": {"throughput": {**SUMMARY, "total_token_throughput": 20728.2}}},
        "defaults": {"what": "defaults"},
    },
    "notes": ["a note"],
}


def test_the_text_tells_what_ran_each_start_and_the_verdict() -> None:
    lines = text(FULL).splitlines()
    assert lines[:5] == [
        "preflight of stack dev",
        "  engine: vLLM 0.26.0 (local); the stack pins 0.18.1",
        "  machine: 1 x NVIDIA H100 (sm_90)",
        "  flags: 3 rendered, all taken by this release",
        "  adapted model: /models/m -> /local/m (a miniature)",
    ]
    assert lines[5:13] == [
        "  1-cold: Ready 345.0 s, first answer - after Ready; clean exit 4.2 s",
        "    cold-start parser: imports and config 86.9 s, weights loaded -",
        "    kernels compiled at inference: 7 (k0, k1, k2, k3, k4, k5, ...)",
        "    wrote in /home: triton (19 files)",
        "    metrics: 1 of 2 read series present",
        f"    throughput: {bench_line(SUMMARY)}",
        "    drain: port closed 0.1 s after SIGTERM, exit - after SIGTERM (SIGKILL due at 20.0 s)",
        "  2-warm: Ready 300.0 s, first answer 1.0 s after Ready; clean exit -",
    ]
    assert lines[13:17] == [
        "    kernels compiled at inference: 2 (k0, k1)",
        "    metrics: 0 of 2 read series present; PROBLEMS",
        "  compare no-mtp (without MTP): 300 requests (0 failed), 20,728 tokens/s in total, 20,001 output tokens/s, TTFT p50 1,234 ms",
        "  compare defaults (defaults): error: not run",
    ]
    assert lines[17] == "  ratios: stack_with_mtp_over_without 2.00"
    assert lines[18].startswith("  drain exit [note]: the engine had not exited 50 s after SIGTERM")
    assert lines[19].startswith("  drain in-flight requests [ok]: 1 of 1")
    assert lines[20].startswith("  drain port [note]: the port closed 0.10 s")
    assert lines[21:] == ["  note: a note", "PASSED"]
    assert text(FULL).endswith("PASSED\n")


def test_the_text_lists_each_failure_and_the_flags_not_taken() -> None:
    result = {
        **FULL,
        "flags": {"names": ["--a"], "unknown_to_release": ["--a"]},
        "comparisons": {"no-mtp": comparison(20.0), "defaults": comparison(80.0)},
    }
    lines = text(result).splitlines()
    assert "  flags: 1 rendered, not taken: --a" in lines
    assert "  ratios: stack_without_mtp_over_defaults 0.25, stack_with_mtp_over_without 2072.82" in lines
    assert lines[-2:] == ["FAILED (1):", "  - flags: vLLM 0.26.0 does not take --a"]


def test_the_text_uses_a_verdict_already_written() -> None:
    written = {"ok": False, "failures": [{"what": "x", "text": "y"}], "drain_findings": [{"what": "d", "ok": False, "text": "t"}]}
    lines = text({"stack": "s", "verdict": written}).splitlines()
    assert lines == ["preflight of stack s", "  drain d [FAIL]: t", "FAILED (1):", "  - x: y"]
    assert text({"stack": "s"}).splitlines() == ["preflight of stack s", "PASSED"]


def test_every_start_and_every_request_is_judged_after_one_that_failed() -> None:
    bad = {"ending": "cut"}
    result = {"starts": [start(ready_s=None), start("2-warm", requests={"a": bad, "b": bad}), start("3-all", ready_s=None)]}
    assert [f["what"] for f in failures(result)] == ["1-cold start", "2-warm requests", "2-warm requests", "3-all start"]


def test_a_refusal_is_told_as_given() -> None:
    assert failures({"refused": "vLLM 0.25.0 is not covered"}) == [{"what": "refused", "text": "vLLM 0.25.0 is not covered"}]


def test_an_errored_throughput_fails_even_with_requests_completed() -> None:
    summary = {"error": "the client exited", "completed": 300, "failed": 0}
    assert failures({"starts": [start(throughput=summary)]}) == [{"what": "throughput", "text": "1-cold: error: the client exited"}]


def test_lists_in_the_text_and_the_failures_are_comma_separated() -> None:
    check = {"ok": False, "unlabelled": ["vllm:a", "vllm:b"]}
    result = {
        "engine": {"release": "0.26.0"},
        "flags": {"names": ["--a", "--b"], "unknown_to_release": ["--a", "--b"]},
        "starts": [
            start(
                metrics=check,
                scan={"markers": {"kernel JIT at inference": [f"k{i}" for i in range(6)]}},
                caches={"/home": {"written": {"triton": [19, 1], "flashinfer": [35, 2]}}},
                drain={**DRAIN, "exit_s": 14.5},
            ),
            start("2-warm", scan={}),
        ],
    }
    lines = text(result).splitlines()
    assert "  flags: 2 rendered, not taken: --a, --b" in lines
    assert "    kernels compiled at inference: 6 (k0, k1, k2, k3, k4, k5)" in lines
    assert "    wrote in /home: triton (19 files), flashinfer (35 files)" in lines
    assert "    drain: port closed 0.1 s after SIGTERM, exit 14.5 s after SIGTERM (SIGKILL due at 20.0 s)" in lines
    assert "  - flags: vLLM 0.26.0 does not take --a, --b" in lines
    assert "  - metrics: 1-cold: without engine/model_name labels: vllm:a, vllm:b" in lines


def test_a_comparison_without_a_rate_gives_no_ratio() -> None:
    result = {"starts": [start(throughput={"total_token_throughput": 30.0})], "comparisons": {"no-mtp": comparison(None)}}
    assert throughput_ratios(result) == {"stack_without_mtp_over_defaults": None, "stack_with_mtp_over_without": None}


def test_a_memory_term_off_the_plan_fails_naming_the_start_engine_and_term() -> None:
    off = TermCheck("EngineCore_DP1 pid=9", "kv_tokens", 185_949, 432_872).as_dict()
    near = TermCheck("EngineCore_DP1 pid=9", "weights_gib", 28.99, 28.54).as_dict()
    assert failures({"starts": [start(memory_checks=[near, off])]}) == [
        {
            "what": "memory (kv_tokens)",
            "text": "1-cold: EngineCore_DP1 pid=9: kv_tokens measured 185,949.00, planned 432,872.00 (-57.0%; the plan holds within 10%)",
        }
    ]


def test_a_shape_that_does_not_fit_fails_naming_its_setting() -> None:
    shape = {"setting": "llm:serving.tensorParallelSize", "error": "one engine of this stack takes tensor parallel 8"}
    assert failures({"shape": shape}) == [{"what": "shape (llm:serving.tensorParallelSize)", "text": shape["error"]}]
