"""What the plan says `pulumi up` awaits for an object, from pulumi-kubernetes' awaiters and annotations."""

from __future__ import annotations

from typing import Any

from render.awaits import DEFAULT_TIMEOUT, awaits


def manifest(kind: str, **annotations: str) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"annotations": annotations} if annotations else {}}


def test_a_kind_with_an_awaiter_is_awaited_for_the_default_timeout() -> None:
    assert awaits(manifest("Job")) == f"completion (fails on the Job's Failed condition), up to {DEFAULT_TIMEOUT}"
    assert awaits(manifest("Deployment")).startswith("rollout complete")


def test_skip_await_turns_every_wait_off_whatever_else_is_set() -> None:
    skipping = manifest("Job", **{"pulumi.com/skipAwait": "True", "pulumi.com/waitFor": "condition=Ready"})
    assert awaits(skipping) == "nothing (skipAwait)"
    assert awaits(skipping, {"create": "70m"}) == "nothing (skipAwait)"
    assert awaits(manifest("Job", **{"pulumi.com/skipAwait": "false"})).startswith("completion")


def test_a_kind_without_an_awaiter_is_not_awaited_unless_it_names_a_condition() -> None:
    assert awaits(manifest("ConfigMap")) == "nothing (no awaiter for this kind)"
    wait_for = "jsonpath={.status.readyToUse}=true"
    assert awaits(manifest("VolumeSnapshot", **{"pulumi.com/waitFor": wait_for})) == f"until {wait_for}, up to {DEFAULT_TIMEOUT}"


def test_the_timeout_comes_from_custom_timeouts_then_the_annotation() -> None:
    assert awaits(manifest("Job", **{"pulumi.com/timeoutSeconds": "1800"})).endswith("up to 30m")
    assert awaits(manifest("Job", **{"pulumi.com/timeoutSeconds": "1800"}), {"create": "70m"}).endswith("up to 70m")


def test_an_update_timeout_is_shown_only_where_it_differs() -> None:
    assert awaits(manifest("Deployment"), {"create": "35m", "update": "105m"}).endswith("up to 35m (105m on update)")
    assert awaits(manifest("Deployment"), {"create": "35m", "update": "35m"}).endswith("up to 35m")
    assert awaits(manifest("Deployment"), {"update": DEFAULT_TIMEOUT}).endswith(f"up to {DEFAULT_TIMEOUT}")


def test_replace_unready_is_said() -> None:
    assert awaits(manifest("Job", **{"pulumi.com/replaceUnready": "true"})).endswith(", replaced if left unready")
    assert "replaced" not in awaits(manifest("Job", **{"pulumi.com/replaceUnready": "false"}))
