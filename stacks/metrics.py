"""The metrics a stack can query, by name and kind: vLLM's, GKE's DCGM and kube-state, the endpoint picker's, the batch runner's.

Each list is data with its source (``stacks/data/``). Prometheus names a
counter's series ``<name>_total`` and a histogram's ``<name>_bucket``,
``_sum`` and ``_count``; ``series_problem`` holds a queried name to that.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from batch import layout
from stacks.data_files import read_yaml

DATA = Path(__file__).parent / "data"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


@cache
def exported() -> dict[str, str]:
    """Metric name -> kind (counter, gauge, histogram), from every source."""
    table: dict[str, str] = {}
    for source in ("vllm.yaml", "dcgm.yaml", "kube-state.yaml", "epp.yaml"):
        for entry in read_yaml(DATA / source)["metrics"]:
            name, kind = str(entry).split()
            table[name] = kind
    # The runner's own (batch/layout.py names the series; a counter's name drops its _total).
    table.update({name: "gauge" for name in (layout.BACKLOG, layout.IN_FLIGHT, layout.WAITING_FILES)})
    table.update({name.removesuffix("_total"): "counter" for name in (layout.DONE, layout.FAILED)})
    return table


def series_problem(series: str) -> str | None:
    """Why ``series`` is not a series any source exports, or None when it is."""
    table = exported()
    for name, kind in table.items():
        if series in (name + suffix for suffix in SUFFIXES[kind]):
            return None
    for name, kind in table.items():
        if series.startswith(name):
            return f"{series}: {name} is a {kind}; query {' or '.join(name + s for s in SUFFIXES[kind])}"
    return f"{series}: no vLLM, DCGM, kube-state or endpoint-picker metric of this name (stacks/data/, batch/layout.py)"
