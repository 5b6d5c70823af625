"""The runner's workers: the fewest that keep the most replicas busy with headroom, never none."""

from __future__ import annotations

import math

import pytest

from facts.batch_sizing import HEADROOM, REQUESTS_PER_SECOND_PER_REPLICA, REQUESTS_PER_SECOND_PER_WORKER, runner_workers


@pytest.mark.parametrize("replicas", [1, 2, 12, 40, 100])
def test_the_workers_are_the_fewest_that_send_the_replicas_load_with_headroom(replicas: int) -> None:
    load = replicas * REQUESTS_PER_SECOND_PER_REPLICA * HEADROOM
    workers = runner_workers(replicas)
    assert workers * REQUESTS_PER_SECOND_PER_WORKER >= load
    assert workers == 1 or (workers - 1) * REQUESTS_PER_SECOND_PER_WORKER < load


def test_a_replica_that_needs_a_fraction_of_a_worker_still_gets_one() -> None:
    assert runner_workers(1, per_replica=1.0, per_worker=1000.0) == 1


def test_a_load_of_exactly_whole_workers_adds_none() -> None:
    assert runner_workers(4, per_replica=100.0, per_worker=100.0 * HEADROOM) == 4
    assert runner_workers(4, per_replica=100.0, per_worker=100.0 * HEADROOM - 1) == 5


def test_the_rates_given_replace_the_reference() -> None:
    assert runner_workers(10, per_replica=700.0, per_worker=350.0) == math.ceil(10 * 2 * HEADROOM)


@pytest.mark.parametrize("replicas", [0, -3])
def test_fewer_than_one_replica_is_refused_naming_the_value(replicas: int) -> None:
    with pytest.raises(ValueError, match=f"^max_replicas must be at least 1, got {replicas}$"):
        runner_workers(replicas)
