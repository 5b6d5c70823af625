"""The batch runner: claims an input, sends its lines to the Ready replicas, writes answers and a report."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import multiprocessing
import os
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import aiohttp
import google.cloud.storage as storage
from google.api_core.exceptions import NotFound

from workloads.batch import bucket as objects
from workloads.batch import layout, lines, report
from workloads.batch.metrics import Lane, Progress
from workloads.batch.replicas import Deployment, ReplicaCount, ReplicaMeter
from workloads.batch.serving import Limiter, Outcome, RetryPolicy, send
from workloads.cold_start import phases

log = logging.getLogger("batch")


@dataclass(frozen=True)
class ModelRoute:
    """One served model of a stack of several: where its lines go, what they may ask, whose replicas bound them."""

    name: str  # the served name a line's body.model gives
    url: str  # its Service's base URL, ending in /v1
    task: str  # llm:model.task: which urls its lines may name
    deployment: str  # read for its Ready replicas (its in-flight budget) and replica-hours
    requests_per_replica: int
    expected_cold_start: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> ModelRoute:
        return cls(
            name=str(value["name"]),
            url=str(value["url"]),
            task=str(value["task"]),
            deployment=str(value["deployment"]),
            requests_per_replica=int(value["requestsPerReplica"]),
            expected_cold_start=value.get("expectedColdStart"),
        )


@dataclass(frozen=True)
class RunnerSettings:
    bucket: str
    serving_url: str  # the Service's base URL, ending in /v1
    concurrency_per_replica: int
    served_model: str | None = None
    # The model's task (llm:model.task): a line whose url it does not serve is an error line, never sent.
    task: str = "generate"
    api_key: str | None = None
    workers: int = 1
    price_per_replica_hour: float | None = None
    estimated_usd_per_million_tokens: float | None = None
    # The reservation under the replicas, billed whether or not they run; None off one.
    reservation: report.Reservation | None = None
    expected_cold_start: dict[str, Any] | None = None
    # KEDA's cooldown plus a poll: how long the replicas stay up after the last batch (the report's idle tail).
    idle_tail_seconds: float = 0.0
    # From SIGTERM to giving the claim back: the pod's grace period less the time to write and exit.
    drain_seconds: float = 50.0
    part_lines: int = 1000
    lease_seconds: float = 120.0
    poll_seconds: float = 15.0
    ready_timeout_seconds: float = 3600.0  # a cold start is 5-6 min of node and ~10 min of model load
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    runner_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{time.time_ns()}")
    # A stack of several models: each line goes to the one its body.model names. Empty: the one model above.
    models: tuple[ModelRoute, ...] = ()

    def routes(self) -> dict[str, ModelRoute]:
        """Every model the runner sends to, by the name a parsed line carries ("" for the one model of a one-model stack)."""
        if self.models:
            return {model.name: model for model in self.models}
        one = ModelRoute("", self.serving_url, self.task, "", self.concurrency_per_replica, self.expected_cold_start)
        return {"": one}

    def tasks(self) -> dict[str, str] | None:
        """Served name -> task, to route lines by; None for a one-model stack (every line to its model)."""
        return {model.name: model.task for model in self.models} if self.models else None


Deployments = Deployment | dict[str, Deployment]


def by_model(settings: RunnerSettings, deployments: Deployments) -> dict[str, Deployment]:
    """The replicas of each model the runner sends to, by the names of ``settings.routes``."""
    if isinstance(deployments, dict):
        return deployments
    return {name: deployments for name in settings.routes()}


def summed(counts: dict[str, ReplicaCount]) -> ReplicaCount:
    return ReplicaCount(sum(count.replicas for count in counts.values()), sum(count.ready for count in counts.values()))


class NoReadyReplicaError(RuntimeError):
    pass


def run_waiting(settings: RunnerSettings, client: storage.Client, deployment: Deployments, progress: Progress) -> list[str]:
    """Runs every batch no live runner holds, one after another, until told to drain; returns the keys it finished."""
    bucket = client.bucket(settings.bucket)
    finished = []
    for source in objects.waiting_inputs(bucket):
        if progress.draining.value:
            break
        held = objects.claim(bucket, source, settings.runner_id, settings.lease_seconds, settings.part_lines)
        if held is None:
            continue
        log.info("claimed %s", held.key)
        if run_input(settings, bucket, held, deployment, progress):
            finished.append(held.key)
    return finished


def count_waiting(settings: RunnerSettings, client: storage.Client) -> int:
    bucket = client.bucket(settings.bucket)
    claimed = {blob.name.removeprefix(layout.CLAIMS) for blob in bucket.list_blobs(prefix=layout.CLAIMS)}
    return sum(
        1
        for source in objects.waiting_inputs(bucket)
        if objects.batch_key(objects.input_name(source.name), source.generation) not in claimed
    )


def in_flight_share(ready: int, concurrency_per_replica: int, others: list[objects.Lease], model: str = "") -> int:
    """This claim's part of ``model``'s global budget (its Ready replicas x concurrency): an even share of the live
    claims, and never more than the others leave free, so the sum of every holder's requests stays
    within the budget while shares move (docs/batch-runner.md)."""
    budget = ready * concurrency_per_replica
    fair = budget // (1 + len(others))
    return max(0, min(fair, budget - sum(lease.share_of(model) for lease in others)))


def run_input(settings: RunnerSettings, bucket: storage.Bucket, held: objects.Claim, deployment: Deployments, progress: Progress) -> bool:
    """Holds the claim (renewing its lease, metering replicas, sharing each model's in-flight budget) while the
    workers answer every line; True when the batch finished, False when it was handed back or replaced."""
    routes = settings.routes()
    deployments = by_model(settings, deployment)
    lanes = {name: progress.lane(name) for name in routes}  # before any worker starts: they share these
    done_before = objects.finished_parts(bucket, held.key)
    try:
        total = sum(1 for line in objects.input_lines(bucket, held) if line.strip())
    except NotFound:
        total = None  # replaced before it could be read
    progress.backlog.value = (total or 0) - sum(part.lines for part in done_before.values())
    if settings.tasks() is not None:
        try:
            for name, lines_left in backlog_by_model(
                objects.input_lines(bucket, held), held.lease.part_lines, set(done_before), settings
            ).items():
                lanes[name].backlog.value = lines_left
        except NotFound:
            pass  # replaced: nothing more is sent
    wake = ReplicaMeter(held.lease.wake_replica_seconds, time.time(), ReplicaCount(0, 0))
    try:
        counts, woke = wait_for_ready(deployments, settings, wake, progress)
    except DrainingError:
        objects.release(bucket, replace(held, lease=replace(held.lease, wake_replica_seconds=wake.replica_seconds)))
        return False
    set_ready(progress, lanes, counts)
    meter = ReplicaMeter(held.lease.replica_seconds, time.time(), summed(counts))
    stop = threading.Event()
    lost: list[BaseException] = []
    cold_start: dict[str, object] | None = None
    drain_deadline: list[float] = []

    def share(counts: dict[str, ReplicaCount]) -> dict[str, int]:
        now = time.time()
        others = [lease for name, lease in objects.live_claims(bucket, now).items() if name != layout.CLAIMS + held.key]
        return {name: in_flight_share(counts[name].ready, route.requests_per_replica, others, name) for name, route in routes.items()}

    def renew(taking: dict[str, int] | None = None) -> None:
        nonlocal held
        # What others must leave free of each model's budget: this share (or the larger one being taken), or
        # more while requests above a smaller share finish.
        shares = {name: max((taking or {}).get(name, 0), lane.budget.value, lane.in_flight.value) for name, lane in lanes.items()}
        lease = replace(
            held.lease,
            until=time.time() + settings.lease_seconds,
            replica_seconds=meter.replica_seconds,
            wake_replica_seconds=wake.replica_seconds,
            in_flight_share=sum(shares.values()),
            model_shares={} if settings.tasks() is None else shares,
        )
        held = objects.renew(bucket, held, lease)

    def take_share(counts: dict[str, ReplicaCount]) -> None:
        """Renews the claim with this runner's share of each model's budget. A smaller share is used, then written;
        a larger one is written, then used only as far as the claims read after that write leave free: of two
        runners raising at once, the later to write reads the other's raise (docs/batch-runner.md)."""
        wanted = share(counts)
        if any(wanted[name] > max(lane.budget.value, lane.in_flight.value) for name, lane in lanes.items()):
            renew(wanted)
            again = share(counts)
            for name, lane in lanes.items():
                lane.budget.value = min(wanted[name], again[name])
        else:
            for name, lane in lanes.items():
                lane.budget.value = wanted[name]
            renew()

    def keep_claim() -> None:
        nonlocal cold_start
        last_renewed = time.time()
        while not stop.wait(min(settings.poll_seconds, settings.lease_seconds / 3)):
            if progress.draining.value:
                drain_deadline.append(drain_deadline[0] if drain_deadline else time.monotonic() + settings.drain_seconds)
                if time.monotonic() > drain_deadline[0]:
                    # The grace period is nearly over: hand the claim back before the kill; unwritten parts are sent again.
                    log.warning("%s: requests still in flight at the end of the drain; handing the claim back", held.key)
                    objects.release(bucket, held)
                    os._exit(0)
            try:
                current = {name: replicas.count() for name, replicas in deployments.items()}
                meter.sample(time.time(), summed(current))
                set_ready(progress, lanes, current)
                # Measured once every woken replica is Ready: the API server keeps events only an hour.
                if woke and cold_start is None and all(count.ready == count.replicas > 0 for count in current.values()):
                    cold_start = cold_starts(routes, deployments)
                take_share(current)
                last_renewed = time.time()
            except objects.ClaimLostError as error:
                lost.append(error)
                stop.set()
            except Exception as error:  # any failure (an HTTP error, a timeout, a 403 while IAM settles) is tried again
                log.warning("renewing the claim of %s failed: %s: %s", held.key, type(error).__name__, error)
                if time.time() - last_renewed > settings.lease_seconds * 2 / 3:
                    # Too close to the lease's end to keep writing: another runner may take the batch over.
                    lost.append(objects.ClaimLostError(f"{held.key}: the lease could not be renewed ({error})"))
                    stop.set()

    try:
        take_share(counts)  # before any request: none is sent on a share its claim does not hold
    except objects.ClaimLostError:
        raise
    except Exception as error:  # the keeper tries again at its next poll
        log.warning("renewing the claim of %s failed: %s: %s", held.key, type(error).__name__, error)
    keeper = threading.Thread(target=keep_claim, name="claim", daemon=True)
    keeper.start()
    try:
        run_workers(settings, held, progress, stop)
    finally:
        stop.set()
        keeper.join()
        for lane in lanes.values():
            lane.budget.value = 0
            lane.backlog.value = 0  # a batch handed back or lost asks nothing more of its models here
    if lost:
        raise lost[0]
    meter.sample(time.time(), summed({name: replicas.count() for name, replicas in deployments.items()}))
    parts = objects.finished_parts(bucket, held.key)
    totals = sum(parts.values(), objects.PartSummary())
    replaced = not objects.input_is_current(bucket, held)
    if not replaced and total is not None and totals.lines < total:
        # Told to drain: the answered parts are kept; the next runner sends the rest.
        objects.release(bucket, held)
        log.info("%s: handed back with %d of %d lines answered", held.key, totals.lines, total)
        return False
    if woke and cold_start is None:  # the batch ended before every replica was Ready
        cold_start = cold_starts(routes, deployments)
    others_waiting = count_waiting(settings, bucket.client) + len(objects.live_claims(bucket, time.time())) > 1
    tail_seconds = 0.0 if others_waiting else settings.idle_tail_seconds
    batch_report = report.build(
        held.key,
        totals,
        input_lines=total,
        replaced=replaced,
        started_at=held.lease.started_at,
        finished_at=time.time(),
        usage=report.ReplicaUsage(
            wake_seconds=wake.replica_seconds,
            serving_seconds=meter.replica_seconds,
            # The replicas stay up after the last batch until KEDA's cooldown ends; a batch still waiting bears it instead.
            idle_tail_seconds=meter.last.replicas * tail_seconds,
        ),
        price_per_replica_hour=settings.price_per_replica_hour,
        estimated_usd_per_million_tokens=settings.estimated_usd_per_million_tokens,
        cold_start=cold_start,
        reservation=settings.reservation,
        tail_seconds=tail_seconds,
    )
    objects.write_report(bucket, held.key, batch_report)
    objects.finish(bucket, held)
    log.info("%s", report.summary(batch_report))
    return not replaced


def backlog_by_model(stream: Iterator[bytes], part_lines: int, done: set[int], settings: RunnerSettings) -> dict[str, int]:
    """Lines each model is still to be sent: the lines of the parts not yet written that parse, as the workers
    parse them, to a request for it (a bad line is sent to no model)."""
    left = dict.fromkeys(settings.routes(), 0)
    seen: set[str] = set()
    for number, raw in enumerate((line for line in stream if line.strip()), start=1):
        parsed = lines.parse(number, raw, seen, settings.task, settings.tasks())
        if isinstance(parsed, lines.Request) and (number - 1) // part_lines not in done:
            left[parsed.model] += 1
    return left


def set_ready(progress: Progress, lanes: dict[str, Lane], counts: dict[str, ReplicaCount]) -> None:
    for name, lane in lanes.items():
        lane.ready_replicas.value = counts[name].ready
    progress.ready_replicas.value = summed(counts).ready


def cold_starts(routes: dict[str, ModelRoute], deployments: dict[str, Deployment]) -> dict[str, object]:
    """How the replicas that started last started: the one model's, or each model's by its served name."""
    measured = {name: last_cold_start(deployments[name], route.expected_cold_start) for name, route in routes.items()}
    return measured[""] if "" in measured else dict(measured)


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


class DrainingError(RuntimeError):
    """Told to stop (SIGTERM) before a replica was Ready."""


def wait_for_ready(
    deployments: dict[str, Deployment], settings: RunnerSettings, wake: ReplicaMeter, progress: Progress
) -> tuple[dict[str, ReplicaCount], bool]:
    """The first counts with a Ready replica of every model, and whether one was read with none: the batch woke
    the replicas. A file wakes every model whose batch is on, and they start side by side (docs/batch.md).

    ``wake`` meters the replicas held meanwhile: the wake's share of the bill.
    """
    deadline = time.monotonic() + settings.ready_timeout_seconds
    woke = False
    while True:
        try:
            counts = {name: replicas.count() for name, replicas in deployments.items()}
            wake.sample(time.time(), summed(counts))
            if all(count.ready > 0 for count in counts.values()):
                return counts, woke
            woke = True
        except OSError as error:
            log.warning("reading the replicas' Deployment failed: %s", error)
        if time.monotonic() > deadline:
            raise NoReadyReplicaError(f"no Ready replica after {settings.ready_timeout_seconds:.0f} s")
        pause = time.monotonic() + min(settings.poll_seconds, 5.0)
        while time.monotonic() < pause:
            if progress.draining.value:
                raise DrainingError("told to stop while the replicas start")
            time.sleep(0.1)


def run_workers(settings: RunnerSettings, held: objects.Claim, progress: Progress, stop: threading.Event) -> None:
    """One worker answers every part in-process; more split the parts by index across processes."""
    if settings.workers == 1:
        # In a thread of its own, like a worker process: the event loop's life never touches the caller's.
        failures: list[BaseException] = []

        def work() -> None:
            try:
                asyncio.run(run_shard(settings, held, progress, 0, 1, lambda: stop.is_set() or bool(progress.draining.value)))
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
    asyncio.run(run_shard(settings, held, progress, shard, settings.workers, lambda: bool(progress.draining.value)))


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


def shard_share(budget: int, shard: int, shards: int) -> int:
    """One worker's part of the pod's in-flight share: the parts add up to the share, never more."""
    return budget // shards + (1 if shard < budget % shards else 0)


async def run_shard(
    settings: RunnerSettings, held: objects.Claim, progress: Progress, shard: int, shards: int, stopped: Callable[[], bool]
) -> None:
    """Answers the parts whose index is ``shard`` modulo ``shards`` and that no earlier run finished;
    once ``stopped``, opens no new part and lets the open ones finish."""
    client = storage.Client()
    bucket = client.bucket(settings.bucket)
    done = await asyncio.to_thread(objects.finished_parts, bucket, held.key)

    routes = settings.routes()
    lanes = {name: progress.lane(name) for name in routes}

    def limit(lane: Lane) -> Callable[[], int]:
        return lambda: shard_share(lane.budget.value, shard, shards)

    limiters = {name: Limiter(limit(lane)) for name, lane in lanes.items()}
    # Parts being answered at once: enough to keep every slot busy while a slow line holds its part open.
    slots = sum(route.requests_per_replica * max(1, lanes[name].ready_replicas.value) for name, route in routes.items())
    most = max(1, math.ceil(slots / shards))
    open_parts = asyncio.Semaphore(max(2, math.ceil(2 * most / held.lease.part_lines) + 1))
    feed: queue.Queue[list[bytes] | None] = queue.Queue(maxsize=2)
    reading = threading.Event()
    reading.set()
    reader = threading.Thread(target=_read, args=(bucket, held, held.lease.part_lines, feed, reading), daemon=True)
    reader.start()
    seen: set[str] = set()
    tasks = settings.tasks()
    pending: set[asyncio.Task[None]] = set()
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else {}
    timeout = aiohttp.ClientTimeout(total=settings.retry.request_timeout_seconds)
    # A new connection per request: a ClusterIP Service balances connections, so kept-alive ones would
    # never reach a replica that became Ready after they opened (docs/batch-runner.md).
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, headers=headers) as session:
        index = 0
        line_number = 0
        while (chunk := await asyncio.to_thread(feed.get)) is not None:
            if stopped():
                break
            parsed = [lines.parse(line_number + offset + 1, raw, seen, settings.task, tasks) for offset, raw in enumerate(chunk)]
            first_line, line_number = line_number + 1, line_number + len(chunk)
            if index % shards == shard and index not in done:
                await open_parts.acquire()
                task = asyncio.create_task(_answer_part(settings, bucket, held.key, index, first_line, parsed, session, limiters, progress))
                pending.add(task)
                task.add_done_callback(pending.discard)
                task.add_done_callback(lambda _: open_parts.release())
            index += 1
            for task in [task for task in pending if task.done()]:
                task.result()
        reading.clear()
        await asyncio.gather(*pending)
    with contextlib.suppress(queue.Empty):
        feed.get_nowait()  # let a reader blocked on a full feed see that nobody reads on
    reader.join()


def _read(bucket: storage.Bucket, held: objects.Claim, size: int, feed: queue.Queue[list[bytes] | None], reading: threading.Event) -> None:
    try:
        for chunk in chunks(objects.input_lines(bucket, held), size):
            if not reading.is_set():
                return
            feed.put(chunk)
    except NotFound:
        log.warning("%s: the input was replaced while it ran; its generation is gone", held.key)
    finally:
        # The end mark always reaches a reader still reading: it may be slow to take the last parts.
        while reading.is_set():
            try:
                feed.put(None, timeout=0.2)
                break
            except queue.Full:
                continue


def answer_line(answer_id: str, custom_id: str, outcome: Outcome) -> tuple[bytes, bool]:
    """The output line of a sent request, and whether it goes to ``output/``. As OpenAI's batch output
    has it: an HTTP answer is a ``response`` (its status, request id and JSON body) with ``error`` null,
    success or not; only a request that got no HTTP answer has an ``error`` and no ``response``."""
    if outcome.status is None:
        assert outcome.error is not None
        return lines.answered(answer_id, custom_id, None, outcome.error), False
    request_id = outcome.request_id or answer_id
    response = {"status_code": outcome.status, "request_id": request_id, "body": outcome.body}
    return lines.answered(answer_id, custom_id, response, None), outcome.succeeded


async def _answer_part(
    settings: RunnerSettings,
    bucket: storage.Bucket,
    key: str,
    index: int,
    first_line: int,
    parsed: list[lines.Request | lines.BadLine],
    session: aiohttp.ClientSession,
    limiters: dict[str, Limiter],
    progress: Progress,
) -> None:
    routes = settings.routes()
    answers: list[bytes | None] = [None] * len(parsed)
    errors: list[bytes | None] = [None] * len(parsed)
    counts: dict[str, int] = dict.fromkeys(("succeeded", "failed", "bad_lines", "prompt_tokens", "completion_tokens"), 0)

    async def answer(position: int, request: lines.Request) -> None:
        lane = progress.lane(request.model)
        try:
            outcome = await send(session, routes[request.model].url, request, settings.retry, lambda: lane.ready_replicas.value > 0)
        finally:
            limiters[request.model].release()
            progress.count_in_flight(lane, -1)
        line, succeeded = answer_line(lines.answer_id(key, first_line + position), request.custom_id, outcome)
        if succeeded:
            answers[position] = line
            counts["succeeded"] += 1
            counts["prompt_tokens"] += outcome.prompt_tokens
            counts["completion_tokens"] += outcome.completion_tokens
        else:
            errors[position] = line
            counts["failed"] += 1

    sends = []
    for position, line in enumerate(parsed):
        if isinstance(line, lines.BadLine):
            answer_id = lines.answer_id(key, first_line + position)
            errors[position] = lines.answered(answer_id, line.custom_id, None, {"code": line.code, "message": line.message})
            counts["failed"] += 1
            counts["bad_lines"] += 1
            continue
        await limiters[line.model].acquire()
        progress.count_in_flight(progress.lane(line.model), 1)
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
        key,
        index,
        b"".join(line for line in answers if line is not None),
        b"".join(line for line in errors if line is not None),
        summary,
    )
    Progress.add(progress.done, summary.succeeded)
    Progress.add(progress.failed, summary.failed)
    Progress.add(progress.backlog, -summary.lines)
    if settings.tasks() is not None:
        for line in parsed:
            if isinstance(line, lines.Request):
                Progress.add(progress.lane(line.model).backlog, -1)
