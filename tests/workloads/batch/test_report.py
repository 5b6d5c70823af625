"""A batch's report and its one-line summary, from hand-made totals and replica-seconds (pure, no bucket)."""

from __future__ import annotations

from typing import Any

import pytest

from workloads.batch.bucket import PartSummary
from workloads.batch.report import BASIS, ReplicaUsage, Reservation, build, summary

TOTALS = PartSummary(lines=1000, succeeded=990, failed=6, bad_lines=4, prompt_tokens=1_500_000, completion_tokens=500_000)
# 2026-11-26 10:00:00 UTC, and 400 s later.
STARTED = 1_795_687_200.0
USAGE = ReplicaUsage(wake_seconds=1800.0, serving_seconds=5400.0, idle_tail_seconds=900.0)


def report(**changes: Any) -> dict[str, Any]:
    arguments: dict[str, Any] = {
        "input_lines": 1000,
        "replaced": False,
        "started_at": STARTED,
        "finished_at": STARTED + 400,
        "usage": USAGE,
        "price_per_replica_hour": 40.0,
        "estimated_usd_per_million_tokens": 0.5,
        **changes,
    }
    return build("nightly/2026-11-26.jsonl/1764150000123456", TOTALS, **arguments)


def test_the_report_counts_lines_tokens_and_time() -> None:
    found = report(cold_start={"phases": {}})
    assert (found["input"], found["generation"], found["replaced"]) == ("nightly/2026-11-26.jsonl", 1764150000123456, False)
    assert (found["input_lines"], found["lines"], found["not_sent"]) == (1000, 1000, 0)
    assert (found["succeeded"], found["failed"], found["bad_lines"]) == (990, 6, 4)
    assert (found["input_tokens"], found["output_tokens"], found["total_tokens"]) == (1_500_000, 500_000, 2_000_000)
    assert (found["started_at"], found["finished_at"]) == ("2026-11-26T10:00:00+00:00", "2026-11-26T10:06:40+00:00")
    assert found["wall_seconds"] == 400.0 and found["tokens_per_second"] == 5000.0
    assert found["cold_start"] == {"phases": {}} and report()["cold_start"] is None


def test_the_cost_is_every_replica_hour_the_batch_caused_at_the_price_in_its_parts() -> None:
    found = report()
    # 1800 + 5400 + 900 replica-seconds: 2.25 replica-hours at $40.
    assert found["replica_hours"] == 2.25 and found["cost_usd"] == 90.0
    assert found["price_per_replica_hour_usd"] == 40.0
    assert found["usd_per_million_tokens"] == pytest.approx(45.0)
    assert found["estimated_usd_per_million_tokens"] == 0.5
    assert found["cost_parts"] == {
        "wake": {"replica_hours": 0.5, "cost_usd": 20.0, "counts": BASIS["wake"]},
        "serving": {"replica_hours": 1.5, "cost_usd": 60.0, "counts": BASIS["serving"]},
        "idle_tail": {"replica_hours": 0.25, "cost_usd": 10.0, "counts": BASIS["idle_tail"]},
    }


def test_without_a_price_there_is_no_cost_and_without_tokens_no_price_per_token() -> None:
    unpriced = report(price_per_replica_hour=None, estimated_usd_per_million_tokens=None)
    assert unpriced["cost_usd"] is None and unpriced["usd_per_million_tokens"] is None and unpriced["replica_hours"] == 2.25
    assert all(part["cost_usd"] is None for part in unpriced["cost_parts"].values())
    empty = build(
        "a.jsonl/1",
        PartSummary(lines=3, bad_lines=3),
        input_lines=3,
        replaced=False,
        started_at=STARTED,
        finished_at=STARTED,
        usage=USAGE,
        price_per_replica_hour=40.0,
        estimated_usd_per_million_tokens=None,
    )
    assert empty["cost_usd"] == 90.0 and empty["usd_per_million_tokens"] is None
    # No time passed: no rate rather than a division by zero.
    assert empty["wall_seconds"] == 0.0 and empty["tokens_per_second"] is None


def test_a_clock_that_went_back_counts_no_time() -> None:
    assert report(finished_at=STARTED - 5)["wall_seconds"] == 0.0


def test_a_batch_done_within_a_second_still_has_a_rate() -> None:
    assert report(finished_at=STARTED + 0.5)["tokens_per_second"] == 4_000_000.0


def test_an_input_replaced_while_it_ran_counts_the_lines_never_sent() -> None:
    found = report(replaced=True, input_lines=1500)
    assert found["replaced"] is True and found["not_sent"] == 500
    assert report(input_lines=None)["not_sent"] is None


def test_the_summary_reads_the_reports_figures() -> None:
    assert summary(report()) == (
        "batch nightly/2026-11-26.jsonl (generation 1764150000123456): 990 succeeded, 6 failed (4 bad lines); "
        "1500000 input + 500000 output tokens in 400.0 s (5,000.00 tok/s); 2.250 replica-hours "
        "(wake 0.500, serving 1.500, idle tail 0.250), $90.00, $45.00 per million tokens (estimate $0.50)"
    )


def test_the_summary_says_what_it_does_not_know_and_what_was_not_sent() -> None:
    text = summary(report(replaced=True, input_lines=1200, price_per_replica_hour=None, estimated_usd_per_million_tokens=None))
    assert text.startswith("batch nightly/2026-11-26.jsonl (generation 1764150000123456) (replaced while it ran: 200 lines not sent): ")
    assert text.endswith("$n/a, $n/a per million tokens (estimate $n/a)")


# --- On a reservation: what the batch added, and apart from it what the reservation billed meanwhile.


def test_on_a_reservation_holding_every_replica_the_batch_adds_nothing_and_the_reservation_is_reported_apart() -> None:
    # 12 reserved nodes at $88.93: $1,067.16 an hour, over the batch's 400 s and a 930 s idle tail.
    found = report(reservation=Reservation(1067.16, holds_every_replica=True), tail_seconds=930.0)
    assert found["cost_usd"] == 0 and all(part["cost_usd"] == 0 for part in found["cost_parts"].values())
    assert found["replica_hours"] == 2.25
    committed = found["committed"]
    assert committed["usd"] == pytest.approx(1067.16 * (400 + 930) / 3600)
    assert "whether or not replicas ran" in committed["counts"]
    # Per token: everything billed over the batch's time, and the batch's own addition apart.
    assert found["usd_per_million_tokens"] == pytest.approx(committed["usd"] / 2)
    assert found["marginal_usd_per_million_tokens"] == 0
    assert "of the reservation, billed whether or not replicas ran" in summary(found)


def test_beside_a_reservation_every_replica_hour_is_counted_and_says_it_is_an_upper_bound() -> None:
    found = report(reservation=Reservation(88.93, holds_every_replica=False))
    assert found["cost_usd"] == 90.0
    assert found["committed"]["usd"] == pytest.approx(88.93 * 400 / 3600)
    assert "upper bound" in found["committed"]["counts"]


def test_off_reservations_nothing_is_committed() -> None:
    found = report()
    assert found["committed"] is None and found["usd_per_million_tokens"] == found["marginal_usd_per_million_tokens"]
