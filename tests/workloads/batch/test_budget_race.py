"""The global in-flight budget while claims come and go (docs/batch-runner.md, "Sending").

Another runner acts between two of this runner's calls to Cloud Storage through the test proxy's
``between`` hook, so each race happens at the same point on every run. What a runner uses is read
when its worker first lists its parts: after the share was taken, before any request.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import google.cloud.storage as storage
import pytest

from tests.workloads.batch.conftest import (
    DEPLOYMENT,
    NAMESPACE,
    KubernetesApi,
    StorageCall,
    StorageProxy,
    VllmLike,
    chat_line,
    read_jsonl,
    upload_lines,
)
from workloads.batch import bucket as objects
from workloads.batch import layout, runner
from workloads.batch.metrics import Progress
from workloads.batch.replicas import DeploymentApi
from workloads.batch.serving import RetryPolicy

# The runner over seconds of real time (leases, drains, answers held): run after the README's test command.
pytestmark = pytest.mark.timeline

PER_REPLICA = 4  # with the API's 2 Ready replicas: a global budget of 8


def lists_claims(call: StorageCall) -> bool:
    return call.method == "GET" and call.path.endswith("/o") and call.query.get("prefix") == layout.CLAIMS


def lists_parts(call: StorageCall) -> bool:
    return call.method == "GET" and call.path.endswith("/o") and call.query.get("prefix", "").startswith(layout.OUTPUT)


def once(action: Callable[[], object]) -> Callable[[StorageCall], None]:
    done: list[bool] = []

    def hook(call: StorageCall) -> None:
        if not done:
            done.append(True)
            action()

    return hook


def another_runner_takes_its_share(bucket: storage.Bucket, name: str) -> int:
    """A runner claims input ``name`` and writes the share it reads as free, as ``run_input`` takes it."""
    upload_lines(bucket, name, [chat_line("b-0")])
    source = bucket.get_blob(layout.INPUT + name)
    held = objects.claim(bucket, source, "runner-b", 60.0, 10)
    assert held is not None
    others = [lease for claim, lease in objects.live_claims(bucket, time.time()).items() if claim != layout.CLAIMS + held.key]
    share = runner.in_flight_share(2, PER_REPLICA, others)
    objects.renew(bucket, held, replace(held.lease, in_flight_share=share))
    return share


@dataclass
class AtFirstSend:
    """The share this runner uses and what its claim holds, read as its worker lists the parts done."""

    progress: Progress
    bucket: storage.Bucket
    used: list[int]
    claimed: list[int]

    def __call__(self, call: StorageCall) -> None:
        (claim,) = self.bucket.list_blobs(prefix=layout.CLAIMS + "a.jsonl/")
        self.claimed.append(json.loads(claim.download_as_bytes())["in_flight_share"])
        self.used.append(self.progress.budget.value)


def run_a(bucket: storage.Bucket, server: VllmLike, api: KubernetesApi, progress: Progress, poll_seconds: float) -> list[str]:
    settings = runner.RunnerSettings(
        bucket=bucket.name,
        serving_url=server.url,
        concurrency_per_replica=PER_REPLICA,
        served_model="served-model",
        part_lines=10,
        lease_seconds=60.0,
        poll_seconds=poll_seconds,
        ready_timeout_seconds=5.0,
        retry=RetryPolicy(attempts=3, first_backoff_seconds=0.05, max_backoff_seconds=0.2, request_timeout_seconds=10),
        runner_id="runner-a",
    )
    return runner.run_waiting(settings, storage.Client(), DeploymentApi(api.url, NAMESPACE, DEPLOYMENT), progress)


def watch_first_send(storage_proxy: StorageProxy, bucket: storage.Bucket, progress: Progress) -> AtFirstSend:
    # The first listing of parts is run_input's count of those done before; the second, its worker's.
    seen = AtFirstSend(progress, bucket, [], [])
    listings: list[StorageCall] = []

    def hook(call: StorageCall) -> None:
        listings.append(call)
        if len(listings) == 2:
            seen(call)

    storage_proxy.between.append((lists_parts, hook))
    return seen


def test_a_claim_made_while_a_runner_lists_the_claims_leaves_the_two_shares_within_the_budget(
    bucket: storage.Bucket, storage_proxy: StorageProxy, kubernetes_api: KubernetesApi, vllm_like: Callable[..., VllmLike]
) -> None:
    server = vllm_like()
    upload_lines(bucket, "a.jsonl", [chat_line(f"a-{i}") for i in range(12)])
    taken: list[int] = []
    # Runner B claims and takes its share after A's first listing of the claims was answered, before A reads it:
    # B reads A's claim at 0 (a new claim's) and takes an even share, 4 of 8.
    storage_proxy.between.append((lists_claims, once(lambda: taken.append(another_runner_takes_its_share(bucket, "b.jsonl")))))
    progress = Progress()
    seen = watch_first_send(storage_proxy, bucket, progress)
    assert [key.split("/")[0] for key in run_a(bucket, server, kubernetes_api, progress, poll_seconds=30.0)] == ["a.jsonl"]
    assert taken == [4]
    assert seen.used[0] + taken[0] <= 2 * PER_REPLICA, f"A used {seen.used[0]} while B used {taken[0]}"
    assert 0 < seen.used[0] <= seen.claimed[0]
    assert server.stats()["most_in_flight"] <= 2 * PER_REPLICA - taken[0]
    assert sorted(line["custom_id"] for line in read_jsonl(bucket, "output/a.jsonl/")) == sorted(f"a-{i}" for i in range(12))


def test_a_share_whose_write_failed_is_not_used(
    bucket: storage.Bucket, storage_proxy: StorageProxy, kubernetes_api: KubernetesApi, vllm_like: Callable[..., VllmLike]
) -> None:
    server = vllm_like()
    upload_lines(bucket, "a.jsonl", [chat_line(f"a-{i}") for i in range(12)])
    progress = Progress()
    seen = watch_first_send(storage_proxy, bucket, progress)
    refused: list[StorageCall] = []

    def renewals_forbidden(call: StorageCall) -> int | None:
        # A 403 while IAM settles (the library does not retry it), until the worker has started.
        if call.writes(layout.CLAIMS) and call.conditional and not seen.used:
            refused.append(call)
            return 403
        return None

    storage_proxy.rules.append(renewals_forbidden)
    run_a(bucket, server, kubernetes_api, progress, poll_seconds=0.2)
    assert refused
    assert seen.used[0] <= seen.claimed[0]
    assert sorted(line["custom_id"] for line in read_jsonl(bucket, "output/a.jsonl/")) == sorted(f"a-{i}" for i in range(12))


def renewals_of_a(call: StorageCall) -> bool:
    return call.writes(layout.CLAIMS + "a.jsonl/") and call.conditional


def written_share(call: StorageCall) -> int:
    found = re.search(rb'"in_flight_share": (\d+)', call.body)
    assert found is not None
    return int(found[1])


def other_claim(bucket: storage.Bucket, share: int) -> storage.Blob:
    """A live claim of another runner holding ``share``, with no input of its own."""
    blob = bucket.blob(layout.CLAIMS + "other.jsonl/1")
    blob.upload_from_string(json.dumps(asdict(objects.Lease("other", time.time() + 60, 0.0, 10, in_flight_share=share))))
    return blob


def test_a_runner_left_no_share_holds_0_and_reads_the_claims_once_a_renewal_until_its_share_grows(
    bucket: storage.Bucket, storage_proxy: StorageProxy, kubernetes_api: KubernetesApi, vllm_like: Callable[..., VllmLike]
) -> None:
    server = vllm_like()
    upload_lines(bucket, "a.jsonl", [chat_line(f"a-{i}") for i in range(3)])
    other = other_claim(bucket, 2 * PER_REPLICA)  # the whole budget
    steps: list[str] = []

    def record(call: StorageCall) -> None:
        if lists_claims(call):
            steps.append("list")
        elif renewals_of_a(call):
            steps.append(f"write {written_share(call)}")
            if len(steps) == 2:
                other.delete()  # the other batch finishes: the budget is free at the next renewal

    storage_proxy.between.append((lambda call: lists_claims(call) or renewals_of_a(call), record))
    run_a(bucket, server, kubernetes_api, Progress(), poll_seconds=0.2)
    # Nothing left free: share 0, written after one reading; the next renewal takes 8, written, then read again.
    assert steps[:5] == ["list", "write 0", "list", "write 8", "list"]
    assert sorted(line["custom_id"] for line in read_jsonl(bucket, "output/a.jsonl/")) == [f"a-{i}" for i in range(3)]


def test_a_runner_whose_share_shrank_keeps_counting_the_requests_above_it(
    bucket: storage.Bucket, storage_proxy: StorageProxy, kubernetes_api: KubernetesApi, vllm_like: Callable[..., VllmLike]
) -> None:
    server = vllm_like(pause_after=1)  # every answer held until resumed: A's 8 stay in flight
    upload_lines(bucket, "a.jsonl", [chat_line(f"a-{i}") for i in range(12)])
    written: list[int] = []

    def renewed(call: StorageCall) -> None:
        if written:
            return
        if not bucket.get_blob(layout.CLAIMS + "other.jsonl/1"):
            if server.stats()["requests"] == 2 * PER_REPLICA:
                other_claim(bucket, 0)  # a new claim: A's even share is now 4
            return
        written.append(written_share(call))
        server.resume()

    storage_proxy.between.append((renewals_of_a, renewed))
    run_a(bucket, server, kubernetes_api, Progress(), poll_seconds=0.2)
    # Lowered to 4 with 8 in flight: the claim holds 8 until they finish.
    assert written == [2 * PER_REPLICA]
    assert sorted(line["custom_id"] for line in read_jsonl(bucket, "output/a.jsonl/")) == sorted(f"a-{i}" for i in range(12))


def test_a_claim_renewed_while_it_is_read_still_counts_its_share(bucket: storage.Bucket, storage_proxy: StorageProxy) -> None:
    upload_lines(bucket, "b.jsonl", [chat_line("b-0")])
    source = bucket.get_blob(layout.INPUT + "b.jsonl")
    held = objects.claim(bucket, source, "runner-b", 60.0, 10)
    assert held is not None
    held = objects.renew(bucket, held, replace(held.lease, in_flight_share=4))

    def renews() -> None:
        objects.renew(bucket, held, replace(held.lease, until=time.time() + 60))

    # B renews its claim between A's two reads of it (its metadata, then its content on that generation).
    storage_proxy.between.append((lambda call: call.reads(layout.CLAIMS), once(renews)))
    reader = storage.Client().bucket(bucket.name)
    shares = {name: lease.in_flight_share for name, lease in objects.live_claims(reader, time.time()).items()}
    assert shares == {layout.CLAIMS + held.key: 4}
