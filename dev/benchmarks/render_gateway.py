"""How much the chart step costs the gateway render: ``uv run python -m dev.benchmarks.render_gateway``.

Times the offline render of the gateway stack as it was before charts were
rendered (program, strict validation of the program's objects) against the
render with the chart step (Helm's SDK, validation of the chart's objects, the
cluster model). The target is at most 2x.

One warm-up of each (schemas and CRDs cached, as a long-running render would
have them), then RUNS rounds, each timing one render without charts and one
with, so a burst of other work on a shared machine slows both alike. The
ratio is judged on the median CPU time of this process, which other work on
the cores hardly moves; the wall times are printed beside it. A benchmark, not
a test: timings depend on the machine.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from render import chart
from render.cluster_model import check_cluster
from render.engine import render_stack
from render.files import manifests
from render.validation import kubernetes_version, validate, validate_render

STACK = "gateway"
RUNS = 9
TARGET = 2.0


def program_only() -> None:
    render = render_stack(STACK)
    version = kubernetes_version(render)
    for manifest in manifests(render):
        validate(manifest, version)


def with_charts() -> None:
    # Helm runs once per render, as in `python -m render gateway`.
    chart.helm_render.cache_clear()
    render = render_stack(STACK)
    validate_render(render)
    check_cluster(render)


@dataclass(frozen=True)
class Timings:
    """Seconds per timed run of one step: wall clock and CPU time of this process."""

    wall: list[float]
    cpu: list[float]

    def line(self) -> str:
        return (
            f"cpu median {statistics.median(self.cpu):.3f} s (min {min(self.cpu):.3f}, max {max(self.cpu):.3f}), "
            f"wall median {statistics.median(self.wall):.3f} s (min {min(self.wall):.3f}, max {max(self.wall):.3f})"
        )


def compare(before: Callable[[], None], after: Callable[[], None], runs: int = RUNS) -> tuple[Timings, Timings]:
    """Times ``before`` and ``after`` in alternation, after one warm-up of each."""
    before()
    after()
    timings: dict[Callable[[], None], Timings] = {step: Timings([], []) for step in (before, after)}
    for _ in range(runs):
        for step in (before, after):
            wall, cpu = time.perf_counter(), time.process_time()
            step()
            timings[step].cpu.append(time.process_time() - cpu)
            timings[step].wall.append(time.perf_counter() - wall)
    return timings[before], timings[after]


def ratio(before: Timings, after: Timings) -> float:
    """What the chart step multiplies the render by: median CPU time against median CPU time."""
    return statistics.median(after.cpu) / statistics.median(before.cpu)


def main() -> int:
    before, after = compare(program_only, with_charts)
    print(f"gateway render, {RUNS} alternating runs after one warm-up each:")
    print(f"  without charts: {before.line()}")
    print(f"  with charts:    {after.line()}")
    measured = ratio(before, after)
    wall = statistics.median(after.wall) / statistics.median(before.wall)
    print(f"ratio {measured:.2f} by CPU time (wall: {wall:.2f}), target <= {TARGET}")
    return 0 if measured <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
