"""The runner's metrics: counts shared with its worker processes, exported under the names the dashboard and alerts read."""

from __future__ import annotations

import multiprocessing

from prometheus_client import generate_latest
from prometheus_client.registry import CollectorRegistry

from workloads.batch import layout
from workloads.batch.metrics import Progress, ProgressCollector


def _work(progress: Progress) -> None:
    Progress.add(progress.done, 5)
    Progress.add(progress.backlog, -5)


def test_every_count_starts_at_zero_and_adds_up() -> None:
    progress = Progress()
    counts = (
        progress.backlog,
        progress.in_flight,
        progress.done,
        progress.failed,
        progress.waiting_files,
        progress.ready_replicas,
        progress.budget,
        progress.draining,
    )
    assert [count.value for count in counts] == [0] * 8
    Progress.add(progress.in_flight, 3)
    Progress.add(progress.in_flight, 4)
    Progress.add(progress.in_flight, -2)
    assert progress.in_flight.value == 5
    # Each count is its own: adding to one leaves the others.
    assert [count.value for count in counts if count is not progress.in_flight] == [0] * 7
    Progress.add(progress.done, 2**40)
    assert progress.done.value == 2**40  # a 64-bit count
    Progress.add(progress.failed, -1)
    assert progress.failed.value == -1  # signed: each worker adds its deltas


def test_a_worker_process_adds_to_the_counts_the_pod_reads() -> None:
    # Spawned, as the runner starts its workers: the counts live in shared memory the child reopens. About 0.4 s.
    progress = Progress()
    Progress.add(progress.backlog, 12)
    worker = multiprocessing.get_context("spawn").Process(target=_work, args=(progress,))
    worker.start()
    worker.join(timeout=30)
    assert worker.exitcode == 0
    assert (progress.done.value, progress.backlog.value) == (5, 7)


def test_the_endpoint_exports_each_count_under_its_name_type_and_help() -> None:
    progress = Progress()
    for count, value in (
        (progress.done, 11),
        (progress.failed, 3),
        (progress.backlog, 250),
        (progress.in_flight, 64),
        (progress.waiting_files, 2),
        (progress.ready_replicas, 4),
        (progress.budget, 128),
    ):
        Progress.add(count, value)
    registry = CollectorRegistry()
    registry.register(ProgressCollector(progress))
    text = generate_latest(registry).decode()
    assert text.splitlines() == [
        f"# HELP {layout.DONE} Batch requests answered with a response",
        f"# TYPE {layout.DONE} counter",
        f"{layout.DONE} 11.0",
        f"# HELP {layout.FAILED} Batch lines answered with an error",
        f"# TYPE {layout.FAILED} counter",
        f"{layout.FAILED} 3.0",
        f"# HELP {layout.BACKLOG} Lines of claimed inputs not yet answered",
        f"# TYPE {layout.BACKLOG} gauge",
        f"{layout.BACKLOG} 250.0",
        f"# HELP {layout.IN_FLIGHT} Batch requests sent and not yet answered",
        f"# TYPE {layout.IN_FLIGHT} gauge",
        f"{layout.IN_FLIGHT} 64.0",
        f"# HELP {layout.WAITING_FILES} Inputs waiting for a runner",
        f"# TYPE {layout.WAITING_FILES} gauge",
        f"{layout.WAITING_FILES} 2.0",
    ]
    # Read at each scrape, not once.
    Progress.add(progress.done, 1)
    assert f"{layout.DONE} 12.0" in generate_latest(registry).decode().splitlines()


def test_with_several_models_the_backlog_is_each_models_labelled_as_vllm_labels_its_series() -> None:
    progress = Progress()
    Progress.add(progress.lane("qwen-chat").backlog, 40)
    Progress.add(progress.lane("qwen-embed").backlog, 7)
    registry = CollectorRegistry()
    registry.register(ProgressCollector(progress))
    text = generate_latest(registry).decode().splitlines()
    backlog = [line for line in text if line.startswith(layout.BACKLOG)]
    assert backlog == [f'{layout.BACKLOG}{{model_name="qwen-chat"}} 40.0', f'{layout.BACKLOG}{{model_name="qwen-embed"}} 7.0']
