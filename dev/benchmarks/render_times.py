"""Warm render times of the committed stacks: ``uv run python -m dev.benchmarks.render_times``.

Each run is a render in a fresh process (imports included, as a user or CI runs it), writing to a scratch
folder, with ``PYTHONDONTWRITEBYTECODE=1`` as in CI. Timed, for each stack: the README's
``uv run python -m render <stack>`` (uv's check of the environment included) answered by the resident
renderer, which the warm-up starts (render/resident.py); the same command with ``RENDER_RESIDENT=0``, where
every render imports the provider SDKs itself (as in CI); and ``python -m render <stack>`` alone, also
without it. One warm-up run (two for the resident: one starts it), then RUNS timed runs of each; it reports the
median and the range of the wall time and, without the resident, the median CPU time of the child and
its own children (user + system). A benchmark, not a test:
timings depend on the machine. The goals are set on the README's command on an idle 2-core machine, after
``uv sync``, with the resident renderer; the figure without it is reported beside them.
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


def commands(stack: str, out: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """What is timed for ``stack``: each label's command and the variables it runs with."""
    readme = [*README_COMMAND, stack, "--out", str(out)]
    return {
        "resident": (readme, {"RENDER_RESIDENT": "1"}),
        "cold": (readme, {"RENDER_RESIDENT": "0"}),
        "python": ([sys.executable, "-m", "render", stack, "--out", str(out)], {"RENDER_RESIDENT": "0"}),
    }


def environment(runtime: Path) -> dict[str, str]:
    # As on CI: bytecode is read where the install wrote it, never written. The resident renderer it starts
    # lives in a folder of its own, so a user's is neither used nor disturbed.
    return {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "XDG_RUNTIME_DIR": str(runtime)}


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
    with tempfile.TemporaryDirectory() as scratch:
        env = environment(Path(scratch))
        try:
            for stack, goal in GOALS.items():
                for label, (command, variables) in commands(stack, Path(scratch) / stack).items():
                    # The resident's first warm-up starts it; the second waits for it to load the SDKs.
                    for _ in range(2 if label == "resident" else 1):
                        timed_render(command, env | variables)
                    runs = [timed_render(command, env | variables) for _ in range(RUNS)]
                    walls = [wall for wall, _ in runs]
                    wall, cpu = statistics.median(walls), statistics.median(cpu for _, cpu in runs)
                    verdict, used = "", f"cpu {cpu:5.2f} s"
                    if label == "resident":
                        met &= wall <= goal
                        # The render's CPU is spent in the resident process's child, not in the command's tree.
                        verdict, used = f"  goal <= {goal:.0f} s {'met' if wall <= goal else 'MISSED'}", "cpu     - "
                    print(
                        f"{stack:8} {label:8} wall {wall:5.2f} s (range {min(walls):.2f}-{max(walls):.2f})  {used}{verdict}"
                        f"  [{' '.join(f'{name}={value}' for name, value in variables.items())} {shlex.join(command[:-2])}]"
                    )
        finally:
            stop = [sys.executable, "-m", "render.resident", "stop"]
            subprocess.run(stop, cwd=PROJECT_ROOT, env=env | {"RENDER_RESIDENT": "1"}, stdout=subprocess.DEVNULL, check=False)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
