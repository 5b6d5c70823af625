"""What a batch cost: the report written beside its output, and its one-line summary."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from workloads.batch.bucket import PartSummary


@dataclass(frozen=True)
class ReplicaUsage:
    """Replica-seconds the batch caused, by what they paid for (each replica holds one A4 node)."""

    wake_seconds: float  # replicas held from the claim until the first was Ready: the wake's node time and model load
    serving_seconds: float  # from the first Ready replica to the last answer
    idle_tail_seconds: float  # after the last answer, until KEDA's cooldown takes the replicas to zero


@dataclass(frozen=True)
class Reservation:
    """The reservation under the replicas: billed every hour, whether or not they run."""

    usd_per_hour: float
    # Mode reservation: every replica runs on it, so their hours add nothing to the bill. Else (a fallback step) which
    # replicas ran on it is not sampled, and every replica-hour is counted at the price: an upper bound.
    holds_every_replica: bool


# What each part counts, written into the report beside its figures.
BASIS = {
    "wake": "replicas (Deployment status.replicas, Ready or not) from the claim to the first Ready replica, sampled",
    "serving": "replicas from the first Ready replica to the last answer, sampled",
    "idle_tail": "replicas at the last answer x (autoscaling.idleMinutes + one KEDA poll), when no other batch waits; "
    "an estimate, as it comes after the report",
}


def build(
    key: str,
    totals: PartSummary,
    *,
    input_lines: int | None,
    replaced: bool,
    started_at: float,
    finished_at: float,
    usage: ReplicaUsage,
    price_per_replica_hour: float | None,
    estimated_usd_per_million_tokens: float | None,
    cold_start: dict[str, object] | None = None,
    reservation: Reservation | None = None,
    tail_seconds: float = 0.0,
) -> dict[str, Any]:
    """The batch's figures; ``cold_start`` is how the last replica started when the batch woke them (else None).

    ``replaced``: a new upload under the input's name replaced it while it ran; only the lines answered
    before are counted, and the rest were never sent. ``tail_seconds``: the idle tail this batch bears after
    its last answer (the time the reservation bills for it after ``finished_at``).

    The cost is what the batch added to the bill (its marginal cost); on a reservation the committed cost,
    the reservation's bill over the batch's time, is reported apart, as it is billed whether or not replicas run.
    """
    wall_seconds = max(finished_at - started_at, 0.0)
    tokens = totals.prompt_tokens + totals.completion_tokens
    seconds = {"wake": usage.wake_seconds, "serving": usage.serving_seconds, "idle_tail": usage.idle_tail_seconds}
    replica_hours = sum(seconds.values()) / 3600
    # Replicas on a reservation that holds them all add nothing: their nodes are billed anyway.
    price = 0.0 if reservation is not None and reservation.holds_every_replica else price_per_replica_hour
    cost = None if price is None else replica_hours * price
    committed = None if reservation is None else reservation.usd_per_hour * (wall_seconds + tail_seconds) / 3600
    billed = None if cost is None else cost + (committed or 0.0)
    name, _, generation = key.rpartition("/")
    return {
        "input": name,
        "generation": int(generation),
        "replaced": replaced,
        "input_lines": input_lines,
        "lines": totals.lines,
        "not_sent": None if input_lines is None else input_lines - totals.lines,
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
        "cost_parts": {
            part: {
                "replica_hours": value / 3600,
                "cost_usd": None if price is None else value / 3600 * price,
                "counts": BASIS[part],
            }
            for part, value in seconds.items()
        },
        "price_per_replica_hour_usd": price_per_replica_hour,
        "cost_usd": cost,
        "committed": None
        if reservation is None
        else {
            "usd": committed,
            "usd_per_hour": reservation.usd_per_hour,
            "counts": "the reservation's bill from the claim until the replicas went to zero, whether or not replicas ran: not "
            "in cost_usd, which "
            + (
                "is 0 for replicas on the reservation (it holds every one)"
                if reservation.holds_every_replica
                else "counts every replica-hour at the price (which ran on the reservation is not sampled): an upper bound"
            ),
        },
        # Everything billed over the batch's time, per token: comparable to the stack's estimate.
        "usd_per_million_tokens": None if billed is None or tokens == 0 else billed / tokens * 1_000_000,
        "marginal_usd_per_million_tokens": None if cost is None or tokens == 0 else cost / tokens * 1_000_000,
        "estimated_usd_per_million_tokens": estimated_usd_per_million_tokens,
        "cold_start": cold_start,
    }


def summary(report: dict[str, Any]) -> str:
    parts = report["cost_parts"]
    replaced = f" (replaced while it ran: {report['not_sent']} lines not sent)" if report["replaced"] else ""
    return (
        f"batch {report['input']} (generation {report['generation']}){replaced}: {report['succeeded']} succeeded, "
        f"{report['failed']} failed ({report['bad_lines']} bad lines); "
        f"{report['input_tokens']} input + {report['output_tokens']} output tokens in {report['wall_seconds']:.1f} s "
        f"({_figure(report['tokens_per_second'])} tok/s); {report['replica_hours']:.3f} replica-hours "
        f"(wake {parts['wake']['replica_hours']:.3f}, serving {parts['serving']['replica_hours']:.3f}, "
        f"idle tail {parts['idle_tail']['replica_hours']:.3f}), ${_figure(report['cost_usd'])}{_committed(report)}, "
        f"${_figure(report['usd_per_million_tokens'])} per million tokens (estimate ${_figure(report['estimated_usd_per_million_tokens'])})"
    )


def _committed(report: dict[str, Any]) -> str:
    committed = report.get("committed")
    return "" if committed is None else f" (and ${_figure(committed['usd'])} of the reservation, billed whether or not replicas ran)"


def _figure(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.2f}"
