"""What a batch of N lines costs on the stack, before it is sent: from the wake to zero, part by part.

A batch at zero replicas wakes every replica the stack may run (the gcp-storage trigger, then the
HPA at its maximum), so the plan is: the wake (all replicas held from the start of their cold start
to Ready), serving (the lines at every replica's pace), and the idle tail (KEDA's cooldown and a
poll, until zero). The same three parts are what the runner's report measures afterwards
(workloads/batch/report.py), and the scaling trace of ``render`` plays the same figures through a
model of KEDA and the HPA (render/simulations/scaling.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

# The lines of the plan `render` prints: the size the runner is tested to stream.
RENDERED_LINES = 100_000
PARTS = ("wake", "serving", "idleTail")


@dataclass(frozen=True, kw_only=True)
class BatchPace:
    """What a batch plan reads of the stack: its replicas, their pace, the wake and idle tail, and what a node costs."""

    replicas: int
    # Input + output tokens one Ready replica makes per second, and what that figure rests on.
    tokens_per_second: float
    tokens_per_request: int
    basis: str
    # The wake to every replica with a cold compile cache; None where a phase has no figure (flex-start's queue).
    wake_seconds: float | None
    wake_basis: str
    idle_tail_seconds: int
    price_per_node_hour: float | None
    # Replicas that run on reserved nodes: their hours add nothing to the bill.
    committed_replicas: int = 0
    # The reservation's whole bill per hour, every reserved node, whether or not replicas run on it.
    committed_per_hour: float | None = None

    @property
    def completions_per_second(self) -> float:
        """Lines one Ready replica answers per second at the workload's tokens per request."""
        return self.tokens_per_second / self.tokens_per_request


@dataclass(frozen=True)
class BatchPlan:
    """A batch of ``lines`` lines of the stack's workload, sent to the stack at zero replicas."""

    lines: int
    pace: BatchPace

    def seconds(self) -> dict[str, float | None]:
        pace = self.pace
        serving = self.lines / (pace.replicas * pace.completions_per_second) if pace.replicas else None
        return {"wake": pace.wake_seconds, "serving": serving, "idleTail": float(pace.idle_tail_seconds)}

    def total_seconds(self) -> float | None:
        parts = self.seconds().values()
        return None if None in parts else sum(part or 0.0 for part in parts)

    def as_output(self) -> dict[str, object]:
        pace, seconds = self.pace, self.seconds()
        total = self.total_seconds()
        hours = {part: None if value is None else pace.replicas * value / 3600 for part, value in seconds.items()}
        # Replicas beyond the reserved nodes are what the batch adds to the bill.
        paid = pace.replicas - pace.committed_replicas
        costs = {
            part: None if value is None or pace.price_per_node_hour is None else paid * pace.price_per_node_hour * value / 3600
            for part, value in seconds.items()
        }
        figures: dict[str, object] = {
            "lines": self.lines,
            "tokensPerRequest": pace.tokens_per_request,
            "replicas": pace.replicas,
            "tokensPerSecondPerReplica": round(pace.tokens_per_second),
            "completionsPerSecondPerReplica": round(pace.completions_per_second, 2),
            "basis": pace.basis,
            "wakeBasis": pace.wake_basis,
            "minutes": {**{part: _minutes(value) for part, value in seconds.items()}, "wakeToZero": _minutes(total)},
            "replicaHours": {**{part: _round(value, 1, 3) for part, value in hours.items()}, "total": _sum(hours.values(), 3)},
            "costUsd": {**{part: _round(value, 1, 2) for part, value in costs.items()}, "total": _sum(costs.values(), 2)},
        }
        if pace.committed_replicas or pace.committed_per_hour:
            figures["committedUsd"] = (
                None if total is None or pace.committed_per_hour is None else round(pace.committed_per_hour * total / 3600, 2)
            )
            figures["committedBasis"] = (
                f"the reservation's bill from the wake to zero, whether or not replicas run: not part of costUsd, where the "
                f"{pace.committed_replicas} replica(s) on reserved nodes add nothing"
            )
        return figures


def _minutes(seconds: float | None) -> float | None:
    """Up to the next tenth of a minute, as estimates.coldStart rounds its minutes."""
    return None if seconds is None else math.ceil(seconds / 6) / 10


def _round(value: float | None, unit: float, digits: int) -> float | None:
    return None if value is None else round(value / unit, digits)


def _sum(values: Iterable[float | None], digits: int) -> float | None:
    parts = list(values)
    return None if None in parts else round(sum(part or 0.0 for part in parts), digits)
