"""The runner's Prometheus metrics (names from workloads.batch.layout), shared by its worker processes."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.sharedctypes import Synchronized
from typing import cast

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from workloads.batch import layout


def _shared() -> Synchronized[int]:
    return cast("Synchronized[int]", multiprocessing.get_context("spawn").Value("q", 0))


@dataclass
class Lane:
    """One model's part of a pod's sending: its share of that model's budget, its requests in flight, its Ready replicas."""

    budget: Synchronized[int] = field(default_factory=_shared)
    in_flight: Synchronized[int] = field(default_factory=_shared)
    ready_replicas: Synchronized[int] = field(default_factory=_shared)
    # Lines naming this model in the claimed input, not yet answered: its replicas' batch-backlog trigger.
    backlog: Synchronized[int] = field(default_factory=_shared)


@dataclass
class Progress:
    """Counts in shared memory: worker processes add, the pod's one metrics endpoint reads."""

    backlog: Synchronized[int] = field(default_factory=_shared)
    in_flight: Synchronized[int] = field(default_factory=_shared)
    done: Synchronized[int] = field(default_factory=_shared)
    failed: Synchronized[int] = field(default_factory=_shared)
    waiting_files: Synchronized[int] = field(default_factory=_shared)
    ready_replicas: Synchronized[int] = field(default_factory=_shared)
    budget: Synchronized[int] = field(default_factory=_shared)  # requests this pod may have in flight (its claim's share)
    draining: Synchronized[int] = field(default_factory=_shared)  # 1 after SIGTERM: open no new part
    # With several models, each model's own budget, in-flight count and Ready replicas, by served name.
    lanes: dict[str, Lane] = field(default_factory=dict)

    def lane(self, model: str) -> Lane:
        """``model``'s counts: the pod's own for the one model of a one-model stack (""), created before workers start."""
        if not model:
            return Lane(self.budget, self.in_flight, self.ready_replicas)
        return self.lanes.setdefault(model, Lane())

    def count_in_flight(self, lane: Lane, delta: int) -> None:
        """A request sent or answered: its model's count and the pod's."""
        Progress.add(lane.in_flight, delta)
        if lane.in_flight is not self.in_flight:
            Progress.add(self.in_flight, delta)

    @staticmethod
    def add(value: Synchronized[int], delta: int) -> None:
        with value.get_lock():
            value.value += delta


class ProgressCollector(Collector):
    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def collect(self) -> Iterator[Metric]:
        p = self.progress
        # A counter's family drops _total from the name and its sample puts it back (prometheus_client 0.26.0).
        yield CounterMetricFamily(layout.DONE, "Batch requests answered with a response", value=p.done.value)
        yield CounterMetricFamily(layout.FAILED, "Batch lines answered with an error", value=p.failed.value)
        if p.lanes:
            # Several models: each model's lines, labelled as vLLM labels its own series, for that model's trigger.
            backlog = GaugeMetricFamily(layout.BACKLOG, "Lines of claimed inputs not yet answered", labels=["model_name"])
            for model, lane in sorted(p.lanes.items()):
                backlog.add_metric([model], lane.backlog.value)
            yield backlog
        else:
            yield GaugeMetricFamily(layout.BACKLOG, "Lines of claimed inputs not yet answered", value=p.backlog.value)
        yield GaugeMetricFamily(layout.IN_FLIGHT, "Batch requests sent and not yet answered", value=p.in_flight.value)
        yield GaugeMetricFamily(layout.WAITING_FILES, "Inputs waiting for a runner", value=p.waiting_files.value)
