"""The verdict on a preflight's result and its text for the terminal: pure, so a real run's report can be judged again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from preflight import drain

# Usage fields every OpenAI-style answer carries (the batch runner and the benchmark read them).
USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")


def bench_line(summary: Mapping[str, Any]) -> str:
    if summary.get("error"):
        return f"error: {summary['error']}"
    ttft = (summary.get("ttft_ms") or {}).get("p50")
    return (
        f"{summary.get('completed')} requests ({summary.get('failed')} failed), "
        f"{summary.get('total_token_throughput', 0):,.0f} tokens/s in total, {summary.get('output_throughput', 0):,.0f} output tokens/s"
        + (f", TTFT p50 {ttft:,.0f} ms" if ttft is not None else "")
    )


def _request_failures(name: str, requests: Mapping[str, Any]) -> list[str]:
    found = []
    for kind, request in requests.items():
        if request.get("ending") != "answered":
            found.append(f"{name}: the {kind} request ended '{request.get('ending')}' ({request.get('error', 'no finish_reason')})")
            continue
        usage = request.get("usage") or {}
        missing = [field for field in USAGE if not isinstance(usage.get(field), int)]
        if missing:
            found.append(f"{name}: the {kind} answer has no usage {', '.join(missing)}")
    return found


def verdict(result: Mapping[str, Any]) -> dict[str, Any]:
    """Every failure the result shows, each naming what failed; ``ok`` only when there is none."""
    failures: list[dict[str, str]] = []

    def fail(what: str, text: str) -> None:
        failures.append({"what": what, "text": text})

    if result.get("refused"):
        fail("refused", str(result["refused"]))
    if result.get("shape"):
        fail(f"shape ({result['shape']['setting']})", str(result["shape"]["error"]))
    unknown = (result.get("flags") or {}).get("unknown_to_release") or []
    if unknown:
        fail("flags", f"vLLM {result['engine']['release']} does not take {', '.join(unknown)}")
    budget = float((result.get("budgets") or {}).get("first_answer_after_ready_s", 10.0))
    answer_probe = completion_probe_timeout(result)
    findings: list[dict[str, Any]] = []
    for start in result.get("starts") or []:
        name = start["name"]
        if start.get("ready_s") is None:
            fail(f"{name} start", start.get("error") or "the engine did not become Ready")
            continue
        for text in _request_failures(name, start.get("requests") or {}):
            fail(f"{name} requests", text)
        delay = start.get("first_answer_after_ready_s")
        if delay is not None and answer_probe is not None:
            # The pod is Ready only once its startup probe's completion is answered: one attempt must outlast the delay.
            if delay > answer_probe:
                fail(
                    "readiness",
                    f"{name}: the startup probe's completion gives up after {answer_probe:.0f} s, but the first answer took "
                    f"{delay:.1f} s after /health",
                )
        elif delay is not None and delay > budget:
            fail(
                "readiness",
                f"{name}: /health answered 200 {delay:.1f} s before the first completion was answered (budget {budget:.0f} s): "
                "a Ready replica times out its first clients",
            )
        for term in start.get("memory_checks") or []:
            if not term["ok"]:
                fail(
                    f"memory ({term['term']})",
                    f"{name}: {term['engine'] or 'the engine'}: {term['term']} measured {term['measured']:,.2f}, planned "
                    f"{term['planned']:,.2f} ({term['deviation']:+.1%}; the plan holds within 10%)",
                )
        check = start.get("metrics")
        if check and not check.get("ok"):
            if check.get("missing"):
                fail("metrics", f"{name}: the stack reads series the engine does not export: {', '.join(check['missing'])}")
            if check.get("unlabelled"):
                fail("metrics", f"{name}: without engine/model_name labels: {', '.join(check['unlabelled'])}")
        summary = start.get("throughput")
        if summary is not None and (summary.get("error") or not summary.get("completed") or summary.get("failed")):
            fail("throughput", f"{name}: {bench_line(summary)}")
        if start.get("drain"):
            for finding in drain.judge(start["drain"], clean_exit_seconds=result.get("clean_exit_s")):
                findings.append(finding.as_dict())
                if finding.ok is False:
                    fail(f"drain: {finding.what}", finding.text)
    return {"ok": not failures, "failures": failures, "drain_findings": findings}


def completion_probe_timeout(result: Mapping[str, Any]) -> float | None:
    """The seconds one attempt of the rendered startup probe waits, when that probe sends a completion; else None."""
    probe = ((result.get("rendered") or {}).get("probes") or {}).get("startupProbe") or {}
    command = (probe.get("exec") or {}).get("command") or []
    if not any(isinstance(word, str) and word.endswith("/v1/completions") for word in command):
        return None
    return float(probe.get("timeoutSeconds", 1))


def throughput_ratios(result: Mapping[str, Any]) -> dict[str, float | None]:
    """The two throughput ratios of total tokens/s: stack without MTP / defaults, and stack with MTP / without."""

    def of(summary: Any) -> float | None:
        if not isinstance(summary, Mapping) or summary.get("error"):
            return None
        value = summary.get("total_token_throughput")
        return float(value) if value else None

    stack = next((of(s.get("throughput")) for s in reversed(result.get("starts") or []) if s.get("throughput")), None)
    comparisons = result.get("comparisons") or {}
    no_mtp = of(((comparisons.get("no-mtp") or {}).get("start") or {}).get("throughput"))
    defaults = of(((comparisons.get("defaults") or {}).get("start") or {}).get("throughput"))
    return {
        "stack_without_mtp_over_defaults": no_mtp / defaults if no_mtp and defaults else None,
        "stack_with_mtp_over_without": stack / no_mtp if stack and no_mtp else None,
    }


def _seconds(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f} s"


def text(result: Mapping[str, Any]) -> str:
    """The report for people: what ran, what was adapted, each start, the drain, throughput, the verdict."""
    lines = [f"preflight of stack {result.get('stack')}"]
    engine = result.get("engine") or {}
    machine = result.get("machine") or {}
    if engine:
        lines.append(f"  engine: vLLM {engine.get('release')} ({engine.get('mode')}); the stack pins {engine.get('stack_release')}")
    if machine:
        lines.append(f"  machine: {machine.get('gpus')} x {machine.get('gpu')} (sm_{''.join(map(str, machine.get('capability') or []))})")
    flags = result.get("flags") or {}
    if flags:
        unknown = flags.get("unknown_to_release") or []
        lines.append(
            f"  flags: {len(flags.get('names') or [])} rendered, "
            + (f"not taken: {', '.join(unknown)}" if unknown else "all taken by this release")
        )
    for change in result.get("adaptations") or []:
        lines.append(f"  adapted {change['what']}: {change['rendered']} -> {change['run']} ({change['reason']})")
    for start in result.get("starts") or []:
        parser = (start.get("project_parser") or {}).get("phases") or {}
        lines.append(
            f"  {start['name']}: Ready {_seconds(start.get('ready_s'))}, first answer {_seconds(start.get('first_answer_after_ready_s'))} "
            f"after Ready; clean exit {_seconds(start.get('sigterm_to_exit_idle_s'))}"
        )
        if parser:
            lines.append("    cold-start parser: " + ", ".join(f"{k} {_seconds(v)}" for k, v in parser.items()))
        full = start.get("phases_full_size") or {}
        if full:
            lines.append("    full size, by phase: " + ", ".join(f"{k} {_seconds(v)}" for k, v in (full.get("phases") or {}).items()))
            if full.get("warmupShapes"):
                lines.append(f"    kernel warm-up: {full['warmupShapes']:,} shapes")
        for engine, memory in (start.get("memory") or {}).items():
            printed = ", ".join(f"{term} {value:,.2f}" for term, value in memory.items() if value is not None)
            lines.append(f"    memory of {engine or 'the engine'}: {printed}")
        plan = start.get("memory_plan") or {}
        if plan.get("none"):
            lines.append(f"    memory: {plan['none']}")
        elif plan:
            held = [check for check in start.get("memory_checks") or [] if check["ok"]]
            lines.append(f"    memory plan: {len(held)} of {len(start.get('memory_checks') or [])} printed terms within 10%")
        jit = (start.get("scan") or {}).get("markers", {}).get("kernel JIT at inference") or []
        if jit:
            lines.append(f"    kernels compiled at inference: {len(jit)} ({', '.join(jit[:6])}{', ...' if len(jit) > 6 else ''})")
        for root, entry in (start.get("caches") or {}).items():
            written = entry.get("written") or {}
            if written:
                lines.append(f"    wrote in {root}: " + ", ".join(f"{k} ({v[0]} files)" for k, v in written.items()))
        check = start.get("metrics")
        if check:
            lines.append(
                f"    metrics: {len(check.get('present') or {})} of {len(result.get('reads') or {})} read series present"
                + ("" if check.get("ok") else "; PROBLEMS")
            )
        if start.get("throughput"):
            lines.append(f"    throughput: {bench_line(start['throughput'])}")
        if start.get("drain"):
            record = start["drain"]
            lines.append(
                f"    drain: port closed {_seconds(record.get('port_closed_s'))} after SIGTERM, exit {_seconds(record.get('exit_s'))} "
                f"after SIGTERM (SIGKILL due at {_seconds(record.get('sigkill_due_s'))})"
            )
    for name, comparison in (result.get("comparisons") or {}).items():
        lines.append(
            f"  compare {name} ({comparison['what']}): "
            + bench_line((comparison.get("start") or {}).get("throughput") or {"error": "not run"})
        )
    ratios = throughput_ratios(result)
    if any(value is not None for value in ratios.values()):
        lines.append("  ratios: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items() if v is not None))
    judged = result.get("verdict") or verdict(result)
    for finding in judged.get("drain_findings") or []:
        mark = {True: "ok", False: "FAIL", None: "note"}[finding["ok"]]
        lines.append(f"  drain {finding['what']} [{mark}]: {finding['text']}")
    for note in result.get("notes") or []:
        lines.append(f"  note: {note}")
    if judged["ok"]:
        lines.append("PASSED")
    else:
        lines.append(f"FAILED ({len(judged['failures'])}):")
        lines += [f"  - {f['what']}: {f['text']}" for f in judged["failures"]]
    return "\n".join(lines) + "\n"
