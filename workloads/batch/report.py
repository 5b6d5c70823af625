"""What a batch cost: the report written beside its output, and its one-line summary."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from workloads.batch.bucket import PartSummary


def build(
    name: str,
    totals: PartSummary,
    *,
    started_at: float,
    finished_at: float,
    replica_seconds: float,
    price_per_replica_hour: float | None,
    estimated_usd_per_million_tokens: float | None,
    cold_start: dict[str, object] | None = None,
) -> dict[str, Any]:
    """The batch's figures; ``cold_start`` is how the last replica started when the batch woke them (else None)."""
    wall_seconds = max(finished_at - started_at, 0.0)
    tokens = totals.prompt_tokens + totals.completion_tokens
    replica_hours = replica_seconds / 3600
    cost = None if price_per_replica_hour is None else replica_hours * price_per_replica_hour
    return {
        "input": name,
        "lines": totals.lines,
        "succeeded": totals.succeeded,
        "failed": totals.failed,
        "bad_lines": totals.bad_lines,
        "input_tokens": totals.prompt_tokens,
        "output_tokens": totals.completion_tokens,
        "total_tokens": tokens,
        "started_at": datetime.fromtimestamp(started_at, UTC).isoformat(),
        "finished_at": datetime.fromtimestamp(finished_at, UTC).isoformat(),
        "wall_seconds": wall_seconds,
        "tokens_per_second": tokens / wall_seconds if wall_seconds > 0 else None,
        "replica_hours": replica_hours,
        "price_per_replica_hour_usd": price_per_replica_hour,
        "cost_usd": cost,
        "usd_per_million_tokens": None if cost is None or tokens == 0 else cost / tokens * 1_000_000,
        "estimated_usd_per_million_tokens": estimated_usd_per_million_tokens,
        "cold_start": cold_start,
    }


def summary(report: dict[str, Any]) -> str:
    return (
        f"batch {report['input']}: {report['succeeded']} succeeded, {report['failed']} failed ({report['bad_lines']} bad lines); "
        f"{report['input_tokens']} input + {report['output_tokens']} output tokens in {report['wall_seconds']:.1f} s "
        f"({_figure(report['tokens_per_second'])} tok/s); {report['replica_hours']:.3f} replica-hours, ${_figure(report['cost_usd'])}, "
        f"${_figure(report['usd_per_million_tokens'])} per million tokens (estimate ${_figure(report['estimated_usd_per_million_tokens'])})"
    )


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}"
