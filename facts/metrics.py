"""The metrics a stack can query, by name and kind: vLLM's, GKE's DCGM and kube-state, the endpoint picker's, the batch runner's.

Each list is data with its source (``facts/data/``). Prometheus names a
counter's series ``<name>_total`` and a histogram's ``<name>_bucket``,
``_sum`` and ``_count``; ``series_problem`` holds a queried name to that.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from facts.data_files import read_yaml
from facts.vllm import DEFAULT_RELEASE, facts
from workloads.batch import layout

DATA = Path(__file__).parent / "data"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}


@cache
def exported(release: str = DEFAULT_RELEASE) -> dict[str, str]:
    """Metric name -> kind (counter, gauge, histogram), from every source; vLLM's of ``release``."""
    table = dict(facts(release).metrics)
    for source in ("dcgm.yaml", "kube-state.yaml", "epp.yaml", "keda.yaml"):
        for entry in read_yaml(DATA / source)["metrics"]:
            name, kind = str(entry).split()
            table[name] = kind
    # The runner's own (workloads/batch/layout.py names the series; a counter's name drops its _total).
    table.update({name: "gauge" for name in (layout.BACKLOG, layout.IN_FLIGHT, layout.WAITING_FILES)})
    table.update({name.removesuffix("_total"): "counter" for name in (layout.DONE, layout.FAILED)})
    return table


def series_problem(series: str, release: str = DEFAULT_RELEASE) -> str | None:
    """Why ``series`` is not a series any source exports, with vLLM at ``release``, or None when it is."""
    table = exported(release)
    for name, kind in table.items():
        if series in (name + suffix for suffix in SUFFIXES[kind]):
            return None
    for name, kind in table.items():
        if series.startswith(name):
            return f"{series}: {name} is a {kind}; query {' or '.join(name + s for s in SUFFIXES[kind])}"
    sources = f"vLLM {release}; facts/data/, workloads/batch/layout.py"
    return f"{series}: no vLLM, DCGM, kube-state, endpoint-picker, KEDA or batch-runner metric of this name ({sources})"
