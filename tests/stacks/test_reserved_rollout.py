"""A rollout that fits the reservation: surge only onto a spare reserved node.

On mode reservation the replicas run nowhere else, so a surge replica beyond the reservation never
schedules and a rollout with maxUnavailable 0 waits for it forever. A created reservation's size is
known; a named one's is not, so a stack that would surge on it must state the size or its rollout.
"""

from __future__ import annotations

from typing import Any

import pytest

from plan.stack import plan_stack
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered
from tests.stacks.handed import problem

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
AUTOSCALED_ONE_TO_FOUR = {"enabled": True, "minReplicas": 1, "maxReplicas": 4}


def named(**reservation: Any) -> dict[str, Any]:
    return {"mode": "reservation", "reservation": {"name": "a4", **reservation}}


def settings(**values: Any) -> StackSettings:
    return StackSettings.model_validate({"project": "example-project", **values})


def test_a_lone_replica_on_a_named_reservation_of_unstated_size_is_refused_naming_the_keys() -> None:
    message = problem(nodes=1, capacity=named())
    assert message.startswith("llm:capacity.reservation.nodes: is not set, and the render cannot see the size of reservation a4")
    assert "reservation a4" in message and "surge" in message
    assert "rollout.keepServing" in message and "at least 2" in message


def test_four_reserved_nodes_cannot_take_the_surge_of_a_stack_autoscaled_from_one_to_four() -> None:
    message = problem(nodes=1, capacity=named(nodes=4), autoscaling=AUTOSCALED_ONE_TO_FOUR)
    assert message.startswith("llm:capacity.reservation.nodes: 4 cannot hold the replicas")
    assert message.endswith("so reserve at least 5 nodes")


def test_with_a_spare_reserved_node_the_lone_replica_surges_onto_it() -> None:
    update = render_with("dev", capacity=named(nodes=5), autoscaling=AUTOSCALED_ONE_TO_FOUR).one(DEPLOYMENT)
    assert update.inputs["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}


@pytest.mark.parametrize(("keep_serving", "surge"), [(False, 0), (True, 1)])
def test_a_rollout_stated_explicitly_is_taken_on_a_reservation_of_unknown_size(keep_serving: bool, surge: int) -> None:
    stack = settings(nodes=1, capacity=named(), rollout={"keepServing": keep_serving})
    assert plan_stack(stack, "test").replicas.rollout.max_surge == surge


def test_replicas_that_never_surge_need_no_stated_size_but_the_render_says_it_is_unknown() -> None:
    stack = settings(nodes=3, capacity=named())
    assert plan_stack(stack, "test").replicas.rollout.max_surge == 0
    (warning,) = stack.warnings("llm")
    assert warning.startswith("llm:capacity.reservation.nodes is not set: the render cannot see the size of reservation a4")


def test_prod_states_its_reservation_and_renders_no_warning() -> None:
    assert rendered("prod").warnings == []
