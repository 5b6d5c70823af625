"""The runner's side of the batch bucket: claims, streamed input, output parts, reports.

Every write that must happen once carries a generation precondition, so two
runners (or a runner and its own restarted self) can never both make it.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace

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


@dataclass(frozen=True)
class Claim:
    input_name: str
    input_generation: int
    generation: int  # the claim object's, for renewing or taking over
    lease: Lease


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
    claim_blob = bucket.blob(layout.CLAIMS + name)
    now = time.time()
    lease = Lease(runner, now + lease_seconds, now, part_lines)
    try:
        claim_blob.upload_from_string(json.dumps(asdict(lease)), content_type="application/json", if_generation_match=0)
        return _still_waiting(bucket, source, Claim(name, source.generation, claim_blob.generation, lease))
    except PreconditionFailed:
        pass
    try:
        held = bucket.get_blob(layout.CLAIMS + name)
        previous = Lease(**json.loads(held.download_as_bytes(if_generation_match=held.generation))) if held else None
    except NotFound:
        previous = None
    if held is None or previous is None:
        return None  # released meanwhile: the input is finished
    if previous.until > now:
        return None
    # A runner that was killed: keep its start, its parts and the replica time it held.
    lease = replace(previous, runner=runner, until=now + lease_seconds)
    try:
        claim_blob.upload_from_string(json.dumps(asdict(lease)), content_type="application/json", if_generation_match=held.generation)
    except PreconditionFailed:
        return None
    return _still_waiting(bucket, source, Claim(name, source.generation, claim_blob.generation, lease))


def _still_waiting(bucket: storage.Bucket, source: storage.Blob, held: Claim) -> Claim | None:
    """A runner that finished this input may have released its claim after this one listed it."""
    current = bucket.get_blob(source.name)
    if current is not None and current.generation == source.generation:
        return held
    with contextlib.suppress(NotFound, PreconditionFailed):
        bucket.delete_blob(layout.CLAIMS + held.input_name, if_generation_match=held.generation)
    return None


def renew(bucket: storage.Bucket, held: Claim, lease_seconds: float, replica_seconds: float) -> Claim:
    lease = replace(held.lease, until=time.time() + lease_seconds, replica_seconds=replica_seconds)
    claim_blob = bucket.blob(layout.CLAIMS + held.input_name)
    try:
        claim_blob.upload_from_string(json.dumps(asdict(lease)), content_type="application/json", if_generation_match=held.generation)
    except PreconditionFailed as error:
        raise ClaimLostError(f"{held.input_name}: another runner took over the claim") from error
    return replace(held, generation=claim_blob.generation, lease=lease)


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


def part_name(prefix: str, held_input: str, index: int) -> str:
    return f"{prefix}{held_input}/part-{index:05d}.jsonl"


def finished_parts(bucket: storage.Bucket, name: str) -> dict[int, PartSummary]:
    """Parts already written for an input (by this runner or one before it), by index."""
    parts: dict[int, PartSummary] = {}
    prefix = f"{layout.OUTPUT}{name}/part-"
    for blob in bucket.list_blobs(prefix=prefix):
        index = int(blob.name.removeprefix(prefix).removesuffix(".jsonl"))
        parts[index] = PartSummary(**{key: int(value) for key, value in (blob.metadata or {}).items()})
    return parts


def write_part(bucket: storage.Bucket, name: str, index: int, answers: bytes, errors: bytes, summary: PartSummary) -> None:
    """Writes a part's errors, then its answers: the answers part marks the lines done, once."""
    if errors:
        error_blob = bucket.blob(part_name(layout.ERRORS, name, index))
        try:
            error_blob.upload_from_string(errors, content_type="application/jsonl", if_generation_match=0)
        except PreconditionFailed:
            # Left by a runner killed before its answers part: this run's errors replace it.
            existing = bucket.get_blob(error_blob.name)
            generation = existing.generation if existing else 0
            error_blob.upload_from_string(errors, content_type="application/jsonl", if_generation_match=generation)
    answers_blob = bucket.blob(part_name(layout.OUTPUT, name, index))
    answers_blob.metadata = {key: str(value) for key, value in asdict(summary).items()}
    answers_blob.upload_from_string(answers, content_type="application/jsonl", if_generation_match=0)


def write_report(bucket: storage.Bucket, name: str, report: dict[str, object]) -> None:
    bucket.blob(f"{layout.REPORTS}{name}.json").upload_from_string(json.dumps(report, indent=2) + "\n", content_type="application/json")


def finish(bucket: storage.Bucket, held: Claim) -> None:
    """Moves the input to ``finished/`` (the wake trigger stops counting it) and releases the claim."""
    source = bucket.blob(layout.INPUT + held.input_name, generation=held.input_generation)
    with contextlib.suppress(PreconditionFailed):  # copied by this input's run before a restart
        bucket.copy_blob(source, bucket, layout.FINISHED + held.input_name, if_generation_match=0)
    with contextlib.suppress(NotFound):
        bucket.delete_blob(layout.INPUT + held.input_name, if_generation_match=held.input_generation)
    with contextlib.suppress(NotFound):
        bucket.delete_blob(layout.CLAIMS + held.input_name, if_generation_match=held.generation)
