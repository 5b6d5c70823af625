"""Warm render times of the committed stacks: ``uv run python -m benchmarks.render_times``.

Each run is ``python -m render <stack>`` in a fresh process (imports included,
as a user or CI runs it), writing to a scratch folder. One warm-up run, then
RUNS timed runs; it reports the median wall time and the median CPU time of the
child (user + system), which moves less when other work shares the cores. A
benchmark, not a test: timings depend on the machine. Goals: on an idle
2-core machine, after `uv sync`.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from render.engine import PROJECT_ROOT

GOALS = {"dev": 3.0, "prod": 3.0, "gateway": 4.0}
RUNS = 5


def timed_render(stack: str, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one render in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "render", stack, "--out", str(out)], cwd=PROJECT_ROOT, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    print(f"python -m render <stack>: median of {RUNS} runs after 1 warm-up; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    met = True
    with tempfile.TemporaryDirectory() as scratch:
        for stack, goal in GOALS.items():
            timed_render(stack, Path(scratch) / stack)
            runs = [timed_render(stack, Path(scratch) / stack) for _ in range(RUNS)]
            wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
            met &= wall <= goal
            print(f"{stack:8} wall {wall:5.2f} s  cpu {cpu:5.2f} s  goal <= {goal:.0f} s {'met' if wall <= goal else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
