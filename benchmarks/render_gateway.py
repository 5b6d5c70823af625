"""How much the chart step costs the gateway render: ``uv run python -m benchmarks.render_gateway``.

Times the offline render of the gateway stack as it was before charts were
rendered (program, strict validation of the program's objects) against the
render with the chart step (Helm's SDK, validation of the chart's objects, the
cluster model). The target is at most 2x. A benchmark, not a test: timings
depend on the machine.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from render import chart
from render.cluster_model import check_cluster
from render.engine import render_stack
from render.files import manifests
from render.validation import kubernetes_version, validate, validate_render

STACK = "gateway"
RUNS = 7
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


def median_seconds(step: Callable[[], None]) -> float:
    step()  # warm caches (schemas, CRDs) as a long-running render would have them
    timings = []
    for _ in range(RUNS):
        start = time.perf_counter()
        step()
        timings.append(time.perf_counter() - start)
    return statistics.median(timings)


def main() -> int:
    before, after = median_seconds(program_only), median_seconds(with_charts)
    ratio = after / before
    print(f"gateway render, median of {RUNS}: without charts {before:.3f} s, with charts {after:.3f} s")
    print(f"ratio {ratio:.2f} (target <= {TARGET})")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
