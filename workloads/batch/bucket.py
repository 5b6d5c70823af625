"""The runner's side of the batch bucket: claims, streamed input, output parts, reports.

Every write that must happen once carries a generation precondition, so two
runners (or a runner and its own restarted self) can never both make it.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace

import google.cloud.storage as storage
from google.api_core.exceptions import NotFound, PreconditionFailed

from workloads.batch import layout

# Read the input in 1 MiB ranges: a small, fixed buffer; a 100 MB input is 100 requests to Cloud Storage.
READ_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class Lease:
    """What a claim object holds: who runs the input, until when, and what it has held so far."""

    runner: str
    until: float
    started_at: float
    part_lines: int  # fixed by the first claim: a runner that takes over must cut the same parts
    replica_seconds: float = 0.0
    # Replica-seconds of the wake this batch caused (replicas held before the first was Ready).
    wake_replica_seconds: float = 0.0
    # Requests this holder may have in flight (or has, if more): the others keep the global budget with it.
    in_flight_share: int = 0
    # With several models, the same by served name (each model's budget is its own); in_flight_share is then their sum.
    model_shares: dict[str, int] = field(default_factory=dict)

    def share_of(self, model: str) -> int:
        """What this holder keeps of ``model``'s budget ("": the one model of a one-model stack)."""
        return self.model_shares.get(model, 0) if self.model_shares else self.in_flight_share


def batch_key(name: str, generation: int) -> str:
    """What every derived object is named by: an input's name and its generation, so a reused name is a new batch."""
    return f"{name}/{generation}"


@dataclass(frozen=True)
class Claim:
    input_name: str
    input_generation: int
    generation: int  # the claim object's, for renewing or taking over
    lease: Lease

    @property
    def key(self) -> str:
        return batch_key(self.input_name, self.input_generation)


class ClaimLostError(RuntimeError):
    """Another runner took the input over: this one must stop writing."""


@dataclass(frozen=True)
class PartSummary:
    """Counts of one finished part, kept in the output part's metadata so a report needs no re-read."""

    lines: int = 0
    succeeded: int = 0
    failed: int = 0
    bad_lines: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: PartSummary) -> PartSummary:
        return PartSummary(**{key: value + getattr(other, key) for key, value in asdict(self).items()})


def input_name(object_name: str) -> str:
    return object_name.removeprefix(layout.INPUT)


def waiting_inputs(bucket: storage.Bucket) -> list[storage.Blob]:
    """Inputs under ``input/``, oldest first; objects ending in / are folder placeholders."""
    blobs = [blob for blob in bucket.list_blobs(prefix=layout.INPUT) if not blob.name.endswith("/")]
    return sorted(blobs, key=lambda blob: (blob.time_created, blob.name))


def claim(bucket: storage.Bucket, source: storage.Blob, runner: str, lease_seconds: float, part_lines: int) -> Claim | None:
    """Takes the input, or a claim whose lease ran out; None when another runner holds it."""
    name = input_name(source.name)
    key = batch_key(name, source.generation)
    claim_blob = bucket.blob(layout.CLAIMS + key)
    now = time.time()
    lease = Lease(runner, now + lease_seconds, now, part_lines)
    if (generation := _write_claim(bucket, claim_blob.name, lease, 0)) is not None:
        return _still_waiting(bucket, source, Claim(name, source.generation, generation, lease))
    held = _read_claim(bucket, claim_blob.name)
    if held is None:
        return None  # released meanwhile: the input is finished
    previous, held_generation = held
    if previous.until > now:
        return None
    # A runner that was killed or stopped: keep its start, its parts and the replica time it held.
    lease = replace(previous, runner=runner, until=now + lease_seconds, in_flight_share=0, model_shares={})
    if (generation := _write_claim(bucket, claim_blob.name, lease, held_generation)) is None:
        return None
    return _still_waiting(bucket, source, Claim(name, source.generation, generation, lease))


def _read_claim(bucket: storage.Bucket, name: str) -> tuple[Lease, int] | None:
    """A claim's lease and generation; None when it is gone, or changed between the listing and the read."""
    try:
        blob = bucket.get_blob(name)
        if blob is None:
            return None
        # A holder renewing between these two reads makes the download fail its precondition: it is alive.
        return Lease(**json.loads(blob.download_as_bytes(if_generation_match=blob.generation))), blob.generation
    except (NotFound, PreconditionFailed):
        return None


def _write_claim(bucket: storage.Bucket, name: str, lease: Lease, if_generation_match: int) -> int | None:
    """Writes ``lease`` if the claim is still at ``if_generation_match``; its new generation, or None if another write won.

    The client retries a write whose response was lost (a precondition makes it safe to), and the retry
    meets the generation its own first attempt made: a claim holding exactly this lease is this write.
    """
    body = json.dumps(asdict(lease)).encode()
    blob = bucket.blob(name)
    try:
        blob.upload_from_string(body, content_type="application/json", if_generation_match=if_generation_match)
        return int(blob.generation)
    except PreconditionFailed:
        try:
            current = bucket.get_blob(name)
            if current is not None and current.download_as_bytes(if_generation_match=current.generation) == body:
                return int(current.generation)
        except (NotFound, PreconditionFailed):
            pass
        return None


def live_claims(bucket: storage.Bucket, now: float) -> dict[str, Lease]:
    """Every claim whose lease has not run out, by claim object name, each as it is now: one renewed since
    the listing is read at its new generation, never skipped, as its holder is alive and keeps its share."""
    found = {}
    for listed in bucket.list_blobs(prefix=layout.CLAIMS):
        with contextlib.suppress(NotFound):  # released since the listing: its input finished
            # A blob of its own: a listed one names its listed generation, gone once the claim is renewed.
            lease = Lease(**json.loads(bucket.blob(listed.name).download_as_bytes()))
            if lease.until > now:
                found[listed.name] = lease
    return found


def _still_waiting(bucket: storage.Bucket, source: storage.Blob, held: Claim) -> Claim | None:
    """A runner that finished this input may have released its claim after this one listed it."""
    current = bucket.get_blob(source.name)
    if current is not None and current.generation == source.generation:
        return held
    with contextlib.suppress(NotFound, PreconditionFailed):
        bucket.delete_blob(layout.CLAIMS + held.key, if_generation_match=held.generation)
    return None


def renew(bucket: storage.Bucket, held: Claim, lease: Lease) -> Claim:
    """Writes ``lease`` (a new ``until``, the replica time and the in-flight share) over the claim this runner holds.

    A renewal whose outcome was unknown (its response lost, then its retry refused) may have landed: the
    claim then holds this runner's id at a newer generation. Only this runner writes its id, and a runner
    that takes over writes its own, so that claim is still this runner's.
    """
    name = layout.CLAIMS + held.key
    generation = _write_claim(bucket, name, lease, held.generation)
    if generation is None and (current := _read_claim(bucket, name)) is not None and current[0].runner == held.lease.runner:
        generation = _write_claim(bucket, name, lease, current[1])
    if generation is None:
        raise ClaimLostError(f"{held.key}: another runner took over the claim")
    return replace(held, generation=generation, lease=lease)


def release(bucket: storage.Bucket, held: Claim) -> None:
    """Ends the lease now, keeping what it holds (start, parts, replica time): the next runner takes over at once."""
    with contextlib.suppress(ClaimLostError):
        renew(bucket, held, replace(held.lease, until=0.0, in_flight_share=0, model_shares={}))


def input_lines(bucket: storage.Bucket, held: Claim) -> Iterator[bytes]:
    """The input's lines, streamed in ranges of the generation that was claimed."""
    source = bucket.blob(layout.INPUT + held.input_name, generation=held.input_generation)
    rest = b""
    # Whole ranges, split here: the reader's own readline asks for one byte at a time.
    with source.open("rb", chunk_size=READ_CHUNK_BYTES) as stream:
        while data := stream.read(READ_CHUNK_BYTES):
            lines = (rest + data).split(b"\n")
            rest = lines.pop()
            yield from lines
    if rest:
        yield rest


def part_name(prefix: str, key: str, index: int) -> str:
    return f"{prefix}{key}/part-{index:05d}.jsonl"


def finished_parts(bucket: storage.Bucket, key: str) -> dict[int, PartSummary]:
    """Parts already written for a batch (by this runner or one before it), by index."""
    parts: dict[int, PartSummary] = {}
    prefix = f"{layout.OUTPUT}{key}/part-"
    for blob in bucket.list_blobs(prefix=prefix):
        index = int(blob.name.removeprefix(prefix).removesuffix(".jsonl"))
        parts[index] = PartSummary(**{key: int(value) for key, value in (blob.metadata or {}).items()})
    return parts


def write_part(bucket: storage.Bucket, key: str, index: int, answers: bytes, errors: bytes, summary: PartSummary) -> None:
    """Writes a part's errors, then its answers: the answers part marks the lines done, once."""
    error_blob = bucket.blob(part_name(layout.ERRORS, key, index))
    # Left by a runner stopped before its answers part: this run's errors replace it, or, with none, it goes.
    existing = bucket.get_blob(error_blob.name)
    if errors:
        error_blob.upload_from_string(errors, content_type="application/jsonl", if_generation_match=existing.generation if existing else 0)
    elif existing is not None:
        with contextlib.suppress(NotFound, PreconditionFailed):
            bucket.delete_blob(error_blob.name, if_generation_match=existing.generation)
    answers_blob = bucket.blob(part_name(layout.OUTPUT, key, index))
    answers_blob.metadata = {key: str(value) for key, value in asdict(summary).items()}
    try:
        answers_blob.upload_from_string(answers, content_type="application/jsonl", if_generation_match=0)
    except PreconditionFailed as error:
        # A retry of this write whose first response was lost finds its own part; any other is another holder's.
        written = bucket.get_blob(answers_blob.name)
        if written is None or written.md5_hash != base64.b64encode(hashlib.md5(answers).digest()).decode():
            raise ClaimLostError(f"{key}: part {index} was written by another runner") from error


def write_report(bucket: storage.Bucket, key: str, report: dict[str, object]) -> None:
    bucket.blob(f"{layout.REPORTS}{key}.json").upload_from_string(json.dumps(report, indent=2) + "\n", content_type="application/json")


def input_is_current(bucket: storage.Bucket, held: Claim) -> bool:
    """Whether the claimed generation is still the input's: a new upload under the name replaces it."""
    current = bucket.get_blob(layout.INPUT + held.input_name)
    return current is not None and current.generation == held.input_generation


def finish(bucket: storage.Bucket, held: Claim) -> None:
    """Moves the input to ``finished/`` (the wake trigger stops counting it) and releases the claim.

    An input replaced while it ran stays: the new generation is a batch of its own.
    """
    if input_is_current(bucket, held):
        source = bucket.blob(layout.INPUT + held.input_name)
        # copy_blob copies the generation named here (it reads only the source blob's name): the claimed one.
        # NotFound: replaced since, and the new upload is a batch of its own; PreconditionFailed: copied by
        # this batch's run before a restart.
        with contextlib.suppress(NotFound, PreconditionFailed):
            bucket.copy_blob(source, bucket, layout.FINISHED + held.key, source_generation=held.input_generation, if_generation_match=0)
        # On the generation: a new upload under the name between the check and here is kept.
        with contextlib.suppress(NotFound, PreconditionFailed):
            bucket.delete_blob(layout.INPUT + held.input_name, if_generation_match=held.input_generation)
    with contextlib.suppress(NotFound, PreconditionFailed):
        bucket.delete_blob(layout.CLAIMS + held.key, if_generation_match=held.generation)
