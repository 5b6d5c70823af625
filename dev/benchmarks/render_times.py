"""Warm render times of the committed stacks: ``uv run python -m dev.benchmarks.render_times``.

Each run is a render in a fresh process (imports included, as a user or CI runs it), writing to a scratch
folder, with ``PYTHONDONTWRITEBYTECODE=1`` as in CI. Timed, for each stack: the README's
``uv run python -m render <stack>`` (uv's check of the environment included), and ``python -m render <stack>``
alone. One warm-up run, then RUNS timed runs of each; it reports the median and the range of the wall time
and the median CPU time of the child and its own children (user + system). A benchmark, not a test:
timings depend on the machine. The goals are set on the README's command on an idle 2-core machine, after
``uv sync --locked --compile-bytecode``.
"""

from __future__ import annotations

import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from render.engine import PROJECT_ROOT

GOALS = {"dev": 3.0, "prod": 3.0, "gateway": 4.0}
RUNS = 5
# The README's render command, for any stack; the goals are set on it.
README_COMMAND = ("uv", "run", "python", "-m", "render")


def commands(stack: str, out: Path) -> dict[str, list[str]]:
    """What is timed for ``stack``: each label's command."""
    return {
        "readme": [*README_COMMAND, stack, "--out", str(out)],
        "python": [sys.executable, "-m", "render", stack, "--out", str(out)],
    }


def environment() -> dict[str, str]:
    # As on CI: bytecode is read where the install wrote it, never written.
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


def timed_render(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one render in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # uv's own lines ("Bytecode compiled ...") go to stderr on every run: shown only when the render fails.
    run = subprocess.run(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"{shlex.join(command)} failed:\n{run.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    print(f"median of {RUNS} runs after 1 warm-up; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
    met = True
    env = environment()
    with tempfile.TemporaryDirectory() as scratch:
        for stack, goal in GOALS.items():
            for label, command in commands(stack, Path(scratch) / stack).items():
                timed_render(command, env)
                runs = [timed_render(command, env) for _ in range(RUNS)]
                walls = [wall for wall, _ in runs]
                wall, cpu = statistics.median(walls), statistics.median(cpu for _, cpu in runs)
                verdict = ""
                if label == "readme":
                    met &= wall <= goal
                    verdict = f"  goal <= {goal:.0f} s {'met' if wall <= goal else 'MISSED'}"
                print(
                    f"{stack:8} {label:6} wall {wall:5.2f} s (range {min(walls):.2f}-{max(walls):.2f})  cpu {cpu:5.2f} s{verdict}"
                    f"  [{shlex.join(command[:-2])}]"
                )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
