"""The batch runner: claims an input, sends its lines to the Ready replicas, writes answers and a report."""

from __future__ import annotations

import asyncio
import logging
import math
import multiprocessing
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import google.cloud.storage as storage

from workloads.batch import bucket as objects
from workloads.batch import layout, lines, report
from workloads.batch.metrics import Progress
from workloads.batch.replicas import Deployment, ReplicaCount, ReplicaMeter
from workloads.batch.serving import Limiter, RetryPolicy, send
from workloads.cold_start import phases

log = logging.getLogger("batch")


@dataclass(frozen=True)
class RunnerSettings:
    bucket: str
    serving_url: str  # the Service's base URL, ending in /v1
    concurrency_per_replica: int
    served_model: str | None = None
    api_key: str | None = None
    workers: int = 1
    price_per_replica_hour: float | None = None
    estimated_usd_per_million_tokens: float | None = None
    expected_cold_start: dict[str, Any] | None = None
    part_lines: int = 1000
    lease_seconds: float = 120.0
    poll_seconds: float = 15.0
    ready_timeout_seconds: float = 3600.0  # a cold start is 5-6 min of node and ~10 min of model load
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    runner_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{time.time_ns()}")


class NoReadyReplicaError(RuntimeError):
    pass


def run_waiting(settings: RunnerSettings, client: storage.Client, deployment: Deployment, progress: Progress) -> list[str]:
    """Runs every input no live runner holds, one after another; returns the names it finished."""
    bucket = client.bucket(settings.bucket)
    finished = []
    for source in objects.waiting_inputs(bucket):
        held = objects.claim(bucket, source, settings.runner_id, settings.lease_seconds, settings.part_lines)
        if held is None:
            continue
        log.info("claimed %s (generation %s)", held.input_name, held.input_generation)
        run_input(settings, bucket, held, deployment, progress)
        finished.append(held.input_name)
    return finished


def count_waiting(settings: RunnerSettings, client: storage.Client) -> int:
    bucket = client.bucket(settings.bucket)
    claimed = {blob.name.removeprefix(layout.CLAIMS) for blob in bucket.list_blobs(prefix=layout.CLAIMS)}
    return sum(1 for source in objects.waiting_inputs(bucket) if objects.input_name(source.name) not in claimed)


def run_input(settings: RunnerSettings, bucket: storage.Bucket, held: objects.Claim, deployment: Deployment, progress: Progress) -> None:
    """Holds the claim (renewing its lease, metering replicas) while the workers answer every line."""
    done_before = objects.finished_parts(bucket, held.input_name)
    total = sum(1 for line in objects.input_lines(bucket, held) if line.strip())
    progress.backlog.value = total - sum(part.lines for part in done_before.values())
    count, woke = wait_for_ready(deployment, settings)
    progress.ready_replicas.value = count.ready
    meter = ReplicaMeter(held.lease.replica_seconds, time.time(), count)
    stop = threading.Event()
    lost: list[BaseException] = []
    cold_start: dict[str, object] | None = None

    def keep_claim() -> None:
        nonlocal held, cold_start
        while not stop.wait(min(settings.poll_seconds, settings.lease_seconds / 3)):
            try:
                current = deployment.count()
                meter.sample(time.time(), current)
                progress.ready_replicas.value = current.ready
                # Measured once every woken replica is Ready: the API server keeps events only an hour.
                if woke and cold_start is None and current.ready == current.replicas > 0:
                    cold_start = last_cold_start(deployment, settings.expected_cold_start)
            except OSError as error:
                log.warning("reading the replicas' Deployment failed: %s", error)
            try:
                held = objects.renew(bucket, held, settings.lease_seconds, meter.replica_seconds)
            except objects.ClaimLostError as error:
                lost.append(error)
                stop.set()

    keeper = threading.Thread(target=keep_claim, name="claim", daemon=True)
    keeper.start()
    try:
        run_workers(settings, held, progress, stop)
    finally:
        stop.set()
        keeper.join()
    if lost:
        raise lost[0]
    meter.sample(time.time(), deployment.count())
    if woke and cold_start is None:  # the batch ended before every replica was Ready
        cold_start = last_cold_start(deployment, settings.expected_cold_start)
    totals = sum(objects.finished_parts(bucket, held.input_name).values(), objects.PartSummary())
    batch_report = report.build(
        held.input_name,
        totals,
        started_at=held.lease.started_at,
        finished_at=time.time(),
        replica_seconds=meter.replica_seconds,
        price_per_replica_hour=settings.price_per_replica_hour,
        estimated_usd_per_million_tokens=settings.estimated_usd_per_million_tokens,
        cold_start=cold_start,
    )
    objects.write_report(bucket, held.input_name, batch_report)
    objects.finish(bucket, held)
    log.info("%s", report.summary(batch_report))


def last_cold_start(deployment: Deployment, expected: dict[str, Any] | None = None) -> dict[str, object]:
    """How the replica that started last started, phase by phase and beside the stack's estimate, or why it cannot be told."""
    try:
        events = deployment.events()
        pod = phases.last_started_pod(events, deployment.name)
        breakdown = phases.measure(events, deployment.log(pod), pod=pod)
        measured = breakdown.as_output()
        if expected is not None:
            rows = phases.against_expected(breakdown, expected)
            measured["againstEstimate"] = {name: {"measured": seconds, "expected": estimate} for name, seconds, estimate in rows}
        return measured
    except phases.MeasureError as error:
        return {"unavailable": str(error)}
    except Exception as error:  # best effort: no answer of the API server may cost the batch or its claim
        return {"unavailable": f"{type(error).__name__}: {error}"}


def wait_for_ready(deployment: Deployment, settings: RunnerSettings) -> tuple[ReplicaCount, bool]:
    """The first count with a Ready replica, and whether one was read with none: the batch woke the replicas."""
    deadline = time.monotonic() + settings.ready_timeout_seconds
    woke = False
    while True:
        try:
            count = deployment.count()
            if count.ready > 0:
                return count, woke
            woke = True
        except OSError as error:
            log.warning("reading the replicas' Deployment failed: %s", error)
        if time.monotonic() > deadline:
            raise NoReadyReplicaError(f"no Ready replica after {settings.ready_timeout_seconds:.0f} s")
        time.sleep(min(settings.poll_seconds, 5.0))


def run_workers(settings: RunnerSettings, held: objects.Claim, progress: Progress, stop: threading.Event) -> None:
    """One worker answers every part in-process; more split the parts by index across processes."""
    if settings.workers == 1:
        # In a thread of its own, like a worker process: the event loop's life never touches the caller's.
        failures: list[BaseException] = []

        def work() -> None:
            try:
                asyncio.run(run_shard(settings, held, progress, 0, 1, stop.is_set))
            except BaseException as error:
                failures.append(error)

        thread = threading.Thread(target=work, name="worker")
        thread.start()
        thread.join()
        if failures:
            raise failures[0]
        return
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_shard_process, args=(settings, held, progress, shard), daemon=True) for shard in range(settings.workers)
    ]
    for worker in workers:
        worker.start()
    while any(worker.is_alive() for worker in workers) and not stop.wait(0.5):
        pass
    for worker in workers:
        if stop.is_set():
            worker.terminate()  # the claim was lost: the new holder answers the rest
        worker.join()
    failed = [worker.exitcode for worker in workers if worker.exitcode != 0]
    if failed and not stop.is_set():
        raise RuntimeError(f"{len(failed)} worker process(es) failed with exit codes {failed}")


def _shard_process(settings: RunnerSettings, held: objects.Claim, progress: Progress, shard: int) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(run_shard(settings, held, progress, shard, settings.workers, lambda: False))


def chunks(stream: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    part: list[bytes] = []
    for line in stream:
        if line.strip():  # a blank line is no request
            part.append(line)
            if len(part) == size:
                yield part
                part = []
    if part:
        yield part


async def run_shard(
    settings: RunnerSettings, held: objects.Claim, progress: Progress, shard: int, shards: int, stopped: Callable[[], bool]
) -> None:
    """Answers the parts whose index is ``shard`` modulo ``shards`` and that no earlier run finished."""
    client = storage.Client()
    bucket = client.bucket(settings.bucket)
    done = await asyncio.to_thread(objects.finished_parts, bucket, held.input_name)

    def concurrency() -> int:
        return max(1, math.ceil(progress.ready_replicas.value * settings.concurrency_per_replica / shards))

    limiter = Limiter(concurrency())
    # Parts being answered at once: enough to keep every slot busy while a slow line holds its part open.
    open_parts = asyncio.Semaphore(max(2, math.ceil(2 * concurrency() / held.lease.part_lines) + 1))
    feed: queue.Queue[list[bytes] | None] = queue.Queue(maxsize=2)
    reader = threading.Thread(target=_read, args=(bucket, held, held.lease.part_lines, feed), daemon=True)
    reader.start()
    seen: set[str] = set()
    pending: set[asyncio.Task[None]] = set()
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    timeout = aiohttp.ClientTimeout(total=settings.retry.request_timeout_seconds)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout, headers=headers) as session:
        index = 0
        line_number = 0
        while (chunk := await asyncio.to_thread(feed.get)) is not None:
            parsed = [lines.parse(line_number + offset + 1, raw, seen) for offset, raw in enumerate(chunk)]
            first_line, line_number = line_number + 1, line_number + len(chunk)
            if index % shards == shard and index not in done and not stopped():
                await open_parts.acquire()
                task = asyncio.create_task(
                    _answer_part(settings, bucket, held.input_name, index, first_line, parsed, session, limiter, progress, concurrency)
                )
                pending.add(task)
                task.add_done_callback(pending.discard)
                task.add_done_callback(lambda _: open_parts.release())
            index += 1
            for task in [task for task in pending if task.done()]:
                task.result()
        await asyncio.gather(*pending)
    reader.join()


def _read(bucket: storage.Bucket, held: objects.Claim, size: int, feed: queue.Queue[list[bytes] | None]) -> None:
    try:
        for chunk in chunks(objects.input_lines(bucket, held), size):
            feed.put(chunk)
    finally:
        feed.put(None)


async def _answer_part(
    settings: RunnerSettings,
    bucket: storage.Bucket,
    name: str,
    index: int,
    first_line: int,
    parsed: list[lines.Request | lines.BadLine],
    session: aiohttp.ClientSession,
    limiter: Limiter,
    progress: Progress,
    concurrency: Callable[[], int],
) -> None:
    answers: list[bytes | None] = [None] * len(parsed)
    errors: list[bytes | None] = [None] * len(parsed)
    counts: dict[str, int] = dict.fromkeys(("succeeded", "failed", "bad_lines", "prompt_tokens", "completion_tokens"), 0)

    async def answer(position: int, request: lines.Request) -> None:
        try:
            outcome = await send(session, settings.serving_url, request, settings.retry, lambda: progress.ready_replicas.value > 0)
        finally:
            limiter.release()
            Progress.add(progress.in_flight, -1)
        answer_id = lines.answer_id(name, request.custom_id, first_line + position)
        response = None if outcome.status is None else {"status_code": outcome.status, "request_id": answer_id, "body": outcome.body}
        if outcome.succeeded:
            answers[position] = lines.answered(answer_id, request.custom_id, response, None)
            counts["succeeded"] += 1
            counts["prompt_tokens"] += outcome.prompt_tokens
            counts["completion_tokens"] += outcome.completion_tokens
        else:
            errors[position] = lines.answered(answer_id, request.custom_id, response, outcome.error)
            counts["failed"] += 1

    sends = []
    for position, line in enumerate(parsed):
        if isinstance(line, lines.BadLine):
            answer_id = lines.answer_id(name, line.custom_id, first_line + position)
            errors[position] = lines.answered(answer_id, line.custom_id, None, {"code": line.code, "message": line.message})
            counts["failed"] += 1
            counts["bad_lines"] += 1
            continue
        limiter.resize(concurrency())
        await limiter.acquire()
        Progress.add(progress.in_flight, 1)
        request = (
            line
            if settings.served_model is None
            else lines.Request(line.custom_id, line.url, {**line.body, "model": settings.served_model})
        )
        sends.append(asyncio.create_task(answer(position, request)))
    await asyncio.gather(*sends)
    summary = objects.PartSummary(lines=len(parsed), **counts)
    await asyncio.to_thread(
        objects.write_part,
        bucket,
        name,
        index,
        b"".join(line for line in answers if line is not None),
        b"".join(line for line in errors if line is not None),
        summary,
    )
    Progress.add(progress.done, summary.succeeded)
    Progress.add(progress.failed, summary.failed)
    Progress.add(progress.backlog, -summary.lines)
