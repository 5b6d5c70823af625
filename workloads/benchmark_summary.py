"""Adds up the ``vllm bench serve`` clients of one benchmark run.

Usage: ``python3 benchmark_summary.py client-0.json client-1.json ...``, the files the
clients wrote with ``--save-result --save-detailed``.

The clients run side by side against the same servers, so their throughputs
add up. Latency percentiles are taken over every request of every client
(averaging per-client percentiles would not give a percentile). The output is
a readable table, then one last line ``BENCHMARK_RESULT {json}``.

It runs inside the vLLM image: standard library only, Python 3.9 or newer.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

PERCENTILES = (50, 90, 99)
RESULT_PREFIX = "BENCHMARK_RESULT"
# Per-client totals that add up across clients running at the same time.
COUNTS = ("completed", "failed", "total_input_tokens", "total_output_tokens")
RATES = ("request_throughput", "output_throughput", "total_token_throughput")
LATENCIES = (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"))
# Per-request lists vLLM saves with --save-detailed (vllm/benchmarks/serve.py):
# seconds for "ttfts", a list of gaps in seconds per request for "itls".
DETAILED = ("ttfts", "itls", "output_lens")


class ResultError(ValueError):
    pass


def _requests(result: Mapping[str, Any]) -> Iterator[tuple[float, float, int, list[float]]]:
    """(TTFT, latency, output tokens, inter-token gaps) of each successful request, in seconds."""
    missing = [key for key in DETAILED if key not in result]
    if missing:
        raise ResultError(f"no per-request data ({', '.join(missing)}); run the clients with --save-detailed")
    ttfts, itls, output_lens = result["ttfts"], result["itls"], result["output_lens"]
    errors = result.get("errors") or [""] * len(ttfts)
    # Newer vLLM saves each request's latency; older releases do not, and there
    # it is the first token's time plus every gap after it.
    latencies = result.get("latencies")
    for index in range(len(ttfts)):
        # A failed request has an error and no output tokens.
        if errors[index] or not output_lens[index]:
            continue
        gaps = [float(gap) for gap in itls[index]]
        ttft = float(ttfts[index])
        latency = float(latencies[index]) if latencies is not None else ttft + math.fsum(gaps)
        yield ttft, latency, int(output_lens[index]), gaps


def percentile(ordered: list[float], p: float) -> float:
    """Linear interpolation between the closest ranks, as numpy's default (what vLLM reports)."""
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _stats_ms(values: list[float]) -> dict[str, float | None]:
    """Mean and percentiles in milliseconds; ``None`` when nothing was measured."""
    names = ["mean"] + [f"p{p}" for p in PERCENTILES]
    if not values:
        return dict.fromkeys(names, None)
    values.sort()
    stats: dict[str, float | None] = {"mean": math.fsum(values) / len(values) * 1000}
    for p in PERCENTILES:
        stats[f"p{p}"] = percentile(values, p) * 1000
    return stats


def summarize(results: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals summed across clients, latencies over all their requests (ms).

    ``results`` may be a generator: each client's result is read once, so only
    one file's per-request lists are held at a time.
    """
    counts = dict.fromkeys(COUNTS, 0)
    rates = dict.fromkeys(RATES, 0.0)
    ttfts: list[float] = []
    tpots: list[float] = []
    itls: list[float] = []
    clients = 0
    longest = 0.0
    for result in results:
        clients += 1
        for key in COUNTS:
            counts[key] += int(result.get(key) or 0)
        for key in RATES:
            rates[key] += float(result.get(key) or 0.0)
        longest = max(longest, float(result.get("duration") or 0.0))
        for ttft, latency, output_len, gaps in _requests(result):
            ttfts.append(ttft)
            # TPOT excludes the first token, as vLLM defines it.
            if output_len > 1:
                tpots.append((latency - ttft) / (output_len - 1))
            itls.extend(gaps)
    return {
        "clients": clients,
        **counts,
        **rates,
        "longest_duration_s": longest,
        "ttft_ms": _stats_ms(ttfts),
        "tpot_ms": _stats_ms(tpots),
        "itl_ms": _stats_ms(itls),
    }


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def render_text(summary: Mapping[str, Any]) -> str:
    """The summary as a table for people reading the Job's log."""
    rows = [
        ("clients", f"{summary['clients']}"),
        ("successful requests", f"{summary['completed']:,}"),
        ("failed requests", f"{summary['failed']:,}"),
        ("input tokens", f"{summary['total_input_tokens']:,}"),
        ("output tokens", f"{summary['total_output_tokens']:,}"),
        ("longest client run (s)", _number(summary["longest_duration_s"])),
        ("requests/s (sum)", _number(summary["request_throughput"])),
        ("output tokens/s (sum)", _number(summary["output_throughput"])),
        ("total tokens/s (sum)", _number(summary["total_token_throughput"])),
    ]
    width = max(len(label) for label, _ in rows)
    lines = ["benchmark summary", "-" * 17]
    lines += [f"{label.ljust(width)}  {value:>16}" for label, value in rows]
    columns = ["mean"] + [f"p{p}" for p in PERCENTILES]
    lines += ["", "latency (ms, over all requests)", f"{'':6}" + "".join(f"{c:>14}" for c in columns)]
    for key, label in LATENCIES:
        stats = summary[key]
        lines.append(f"{label:6}" + "".join(f"{_number(stats[c]):>14}" for c in columns))
    if summary["failed"]:
        lines += ["", f"WARNING: {summary['failed']:,} requests failed; the figures above count only the successful ones"]
    return "\n".join(lines)


def result_line(summary: Mapping[str, Any]) -> str:
    """One line for machines: the prefix, a space, the summary as compact JSON."""
    return f"{RESULT_PREFIX} {json.dumps(summary, sort_keys=True, separators=(',', ':'))}"


def _load(paths: list[str]) -> Iterator[dict[str, Any]]:
    for path in paths:
        with Path(path).open(encoding="utf-8") as file:
            loaded: dict[str, Any] = json.load(file)
        yield loaded


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: benchmark_summary.py CLIENT_RESULT.json ...", file=sys.stderr)
        return 2
    try:
        summary = summarize(_load(paths))
    except ResultError as error:
        print(f"cannot summarize: {error}", file=sys.stderr)
        return 1
    print(render_text(summary))
    print(result_line(summary))
    # Nothing completed means nothing was measured: fail the run.
    return 0 if summary["completed"] else 1


if __name__ == "__main__":
    sys.exit(main())
