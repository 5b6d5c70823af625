"""The cluster section and its maintenance policy (stacks/cluster.py, stacks/maintenance.py) on hand-made settings.

GKE's rules (docs/config-rules.md): a window must allow 48 hours of maintenance in any 32 days, counting only stretches
of 4 hours or more; at most 20 exclusions, a no-upgrades one for at most 30 days; at most 50 authorized networks with a
public endpoint; cluster names of up to 40 characters; B200 on Autopilot from GKE 1.32.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from stacks.cluster import ClusterSettings
from stacks.maintenance import least_available, stretches
from tests.stacks import handed

SATURDAY = datetime(2026, 1, 3, tzinfo=UTC)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)


def problem(**cluster: Any) -> str:
    return handed.problem(cluster={"deletionProtection": False, **cluster})


def cluster(**changes: Any) -> ClusterSettings:
    return ClusterSettings.model_validate(changes)


def window(start: datetime, length: timedelta, recurrence: str) -> dict[str, str]:
    return {
        "startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "endTime": (start + length).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "recurrence": recurrence,
    }


WEEKENDS = window(SATURDAY, 6 * HOUR, "FREQ=WEEKLY;BYDAY=SA,SU")


# --- How much a recurring window leaves GKE in the worst 32 days.


@pytest.mark.parametrize(
    ("length", "recurrence", "least"),
    [
        # Four Saturdays fall in any 32 days, a fifth not always: 4 x 12 h.
        (12 * HOUR, "FREQ=WEEKLY;BYDAY=SA", 48 * HOUR),
        (11 * HOUR, "FREQ=WEEKLY;BYDAY=SA", 44 * HOUR),
        # Four weekends: 8 stretches of 6 h.
        (6 * HOUR, "FREQ=WEEKLY;BYDAY=SA,SU", 48 * HOUR),
        (6 * HOUR - timedelta(minutes=1), "FREQ=WEEKLY;BYDAY=SA,SU", 8 * (6 * HOUR - timedelta(minutes=1))),
        # Every day: 32 x 4 h, wherever the 32 days begin.
        (4 * HOUR, "FREQ=DAILY", 128 * HOUR),
        # Stretches shorter than 4 hours do not count.
        (4 * HOUR - timedelta(minutes=1), "FREQ=DAILY", timedelta(0)),
        # Overlapping days merge into one stretch that never ends: all of the 32 days.
        (36 * HOUR, "FREQ=DAILY", 32 * DAY),
        # Saturday and Sunday touch: 48 h a week, 4 weekends and at worst nothing of a fifth.
        (24 * HOUR, "FREQ=WEEKLY;BYDAY=SA,SU", 4 * 48 * HOUR),
        # 4 days 4 hours a week, 2 days 20 hours apart: 4 x 100 h, and of any 4 days more at least 96 - 68 h.
        (100 * HOUR, "FREQ=WEEKLY", 428 * HOUR),
        # Two short nights that touch no other: neither counts.
        (3 * HOUR, "FREQ=WEEKLY;BYDAY=MO,TH", timedelta(0)),
    ],
)
def test_the_least_maintenance_any_32_days_hold(length: timedelta, recurrence: str, least: timedelta) -> None:
    assert least_available(SATURDAY, SATURDAY + length, recurrence) == least


def test_a_window_that_starts_midweek_is_measured_from_its_start() -> None:
    wednesday = SATURDAY + 4 * DAY + 20 * HOUR
    assert least_available(wednesday, wednesday + 12 * HOUR, "FREQ=WEEKLY;BYDAY=WE") == 48 * HOUR
    # Two windows a week, 2.5 and 3.5 days apart: any 4 days beyond 4 weeks hold at least half a day of one.
    assert least_available(wednesday, wednesday + 12 * HOUR, "FREQ=WEEKLY;BYDAY=WE,SA") == 108 * HOUR


def test_occurrences_up_to_and_at_the_end_are_listed() -> None:
    assert stretches(SATURDAY, SATURDAY + 2 * HOUR, "FREQ=DAILY", SATURDAY + 2 * DAY) == [
        (SATURDAY, SATURDAY + 2 * HOUR),
        (SATURDAY + DAY, SATURDAY + DAY + 2 * HOUR),
        (SATURDAY + 2 * DAY, SATURDAY + 2 * DAY + 2 * HOUR),
    ]


def test_overlapping_and_touching_occurrences_merge() -> None:
    assert stretches(SATURDAY, SATURDAY + 36 * HOUR, "FREQ=DAILY", SATURDAY + 2 * DAY) == [(SATURDAY, SATURDAY + 2 * DAY + 36 * HOUR)]
    assert stretches(SATURDAY, SATURDAY + DAY, "FREQ=WEEKLY;BYDAY=SA,SU", SATURDAY + 8 * DAY) == [
        (SATURDAY, SATURDAY + 2 * DAY),
        (SATURDAY + 7 * DAY, SATURDAY + 9 * DAY),
    ]


def test_a_window_with_too_little_time_is_refused_in_hours() -> None:
    short = window(SATURDAY, 11 * HOUR, "FREQ=WEEKLY;BYDAY=SA")
    assert problem(maintenance={"window": short}) == (
        "llm:cluster.maintenance.window: (2026-01-03T00:00:00Z to 2026-01-03T11:00:00Z, FREQ=WEEKLY;BYDAY=SA) allows 44 hours of "
        "maintenance in some 32 days; GKE requires at least 48 hours in any 32 days, counting only stretches of 4 hours or more: "
        "lengthen the window or let it recur more often"
    )
    almost = window(SATURDAY, 6 * HOUR - timedelta(minutes=1), "FREQ=WEEKLY;BYDAY=SA,SU")
    assert "allows 47.8667 hours of maintenance" in problem(maintenance={"window": almost})


def test_a_window_of_just_enough_time_is_taken() -> None:
    assert cluster(maintenance={"window": WEEKENDS}).maintenance.window is not None


@pytest.mark.parametrize("recurrence", ["FREQ=DAILY", "FREQ=WEEKLY", "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR,SA,SU"])
def test_recurrences_gke_takes(recurrence: str) -> None:
    assert cluster(maintenance={"window": {**window(SATURDAY, 12 * HOUR, recurrence)}}).maintenance.window is not None


@pytest.mark.parametrize("recurrence", ["FREQ=MONTHLY", "FREQ=WEEKLY;BYDAY=XX", "FREQ=DAILY;", "freq=daily"])
def test_recurrences_gke_refuses(recurrence: str) -> None:
    assert problem(maintenance={"window": {**WEEKENDS, "recurrence": recurrence}}) == (
        f"llm:cluster.maintenance.window.recurrence: {recurrence!r} is not a recurrence GKE takes; "
        "use FREQ=DAILY or FREQ=WEEKLY;BYDAY=SA,SU"
    )


def test_a_window_ends_after_it_starts() -> None:
    assert problem(maintenance={"window": {**WEEKENDS, "endTime": WEEKENDS["startTime"]}}) == (
        "llm:cluster.maintenance.window.endTime: '2026-01-03T00:00:00Z' must be after startTime (2026-01-03T00:00:00Z)"
    )


# --- Exclusions.


def exclusion(name: str, days: float = 7, scope: str | None = None, start: datetime = datetime(2026, 12, 1, tzinfo=UTC)) -> dict[str, str]:
    made = window(start, timedelta(days=days), "")
    found = {"name": name, "startTime": made["startTime"], "endTime": made["endTime"]}
    return found | ({"scope": scope} if scope else {})


def test_up_to_20_exclusions_and_no_more() -> None:
    twenty = [exclusion(f"e{i}") for i in range(20)]
    assert len(cluster(maintenance={"window": WEEKENDS, "exclusions": twenty}).maintenance.exclusions) == 20
    assert problem(maintenance={"window": WEEKENDS, "exclusions": [*twenty, exclusion("e20")]}) == (
        "llm:cluster.maintenance.exclusions: lists 21 exclusions; GKE takes at most 20"
    )


def test_each_exclusion_has_its_own_name() -> None:
    listed = [exclusion("a"), exclusion("b"), exclusion("a")]
    assert problem(maintenance={"window": WEEKENDS, "exclusions": listed}) == (
        "llm:cluster.maintenance.exclusions[2].name: 'a' is already the name of exclusions[0]; give each its own name"
    )


def test_exclusions_need_a_window() -> None:
    assert problem(maintenance={"exclusions": [exclusion("a")]}) == (
        "llm:cluster.maintenance.window: is required with exclusions: a maintenance policy needs a window; set startTime, endTime and "
        "recurrence"
    )


def test_a_no_upgrades_exclusion_lasts_30_days_at_most() -> None:
    assert cluster(maintenance={"window": WEEKENDS, "exclusions": [exclusion("a", 30, "no-upgrades")]}).maintenance.exclusions
    assert problem(maintenance={"window": WEEKENDS, "exclusions": [exclusion("a", 30.5, "no-upgrades")]}) == (
        "llm:cluster.maintenance.exclusions[0].endTime: '2026-12-31T12:00:00Z' is 30.5 days after startTime; a no-upgrades "
        "exclusion lasts at most 30 days"
    )


@pytest.mark.parametrize("scope", ["no-minor-upgrades", "no-minor-or-node-upgrades"])
def test_other_scopes_may_last_longer(scope: str) -> None:
    assert cluster(maintenance={"window": WEEKENDS, "exclusions": [exclusion("a", 120, scope)]}).maintenance.exclusions[0].scope == scope


def test_an_unknown_scope_is_refused() -> None:
    assert problem(maintenance={"window": WEEKENDS, "exclusions": [exclusion("a", 1, "no-patches")]}).startswith(
        "llm:cluster.maintenance.exclusions[0].scope: 'no-patches' is not an exclusion scope; use one of: "
    )


# --- The cluster's own keys.


@pytest.mark.parametrize("version", ["1.32", "1.35", "1.37"])
def test_versions_from_1_32_to_1_37_are_taken(version: str) -> None:
    assert cluster(version=version).minor == int(version.split(".")[1])


def test_a_version_before_b200_is_refused() -> None:
    assert problem(version="1.31") == (
        "llm:cluster.version: '1.31' is too old for B200 on Autopilot, which needs GKE 1.32.2-gke.1422000 or later; use 1.32 to 1.37"
    )


@pytest.mark.parametrize("version", ["1.38", "1.35.1", "2.35", "1.x", "135"])
def test_a_version_out_of_the_supported_form_is_refused(version: str) -> None:
    assert problem(version=version) == (
        f"llm:cluster.version: {version!r} is not a supported GKE minor version; use one from 1.32 to 1.37, written like 1.35"
    )


def test_up_to_50_authorized_networks_and_no_more() -> None:
    ranges = [f"198.51.100.{i}/32" for i in range(51)]
    assert len(cluster(authorized_networks=ranges[:50]).authorized_networks) == 50
    assert problem(authorizedNetworks=ranges) == (
        "llm:cluster.authorizedNetworks: lists 51 ranges; GKE takes at most 50 with a public endpoint"
    )


@pytest.mark.parametrize(
    ("cidr", "reason"),
    [
        ("203.0.113.0/33", "is not an IPv4 CIDR range such as 203.0.113.0/24"),
        ("example", "is not an IPv4 CIDR range such as 203.0.113.0/24"),
        ("203.0.113.1/24", "is not an IPv4 CIDR range such as 203.0.113.0/24"),
        ("203.0.113.0/255.255.255.0", "is not in address/prefix-length form; write 203.0.113.0/24"),
        ("203.0.113.5", "is not in address/prefix-length form; write 203.0.113.5/32"),
        ("0.0.0.0/0", "opens the control plane to the whole internet; set allowOpenControlPlane instead"),
    ],
)
def test_an_authorized_network_the_provider_refuses_is_refused(cidr: str, reason: str) -> None:
    assert problem(authorizedNetworks=["198.51.100.0/24", cidr]) == f"llm:cluster.authorizedNetworks[1]: {cidr!r} {reason}"


def test_a_one_bit_network_is_taken() -> None:
    assert cluster(authorized_networks=["128.0.0.0/1"]).authorized_networks == ("128.0.0.0/1",)


def test_a_cluster_name_of_up_to_40_characters() -> None:
    assert cluster(name="a" * 40).name == "a" * 40
    assert problem(name="a" * 41).startswith(f"llm:cluster.name: '{'a' * 41}' is not a valid name:")


@pytest.mark.parametrize("namespace", ["default", "kube-system", "kube-public", "kube-node-lease", "kube-x", "gke-managed", "gmp-public"])
def test_a_namespace_kubernetes_or_gke_manages_is_refused(namespace: str) -> None:
    assert problem(namespace=namespace) == (
        f"llm:cluster.namespace: {namespace!r} is a namespace Kubernetes or GKE manages (default, kube-*, gke-*, gmp-*); the stack "
        "would own and, on destroy, delete it: choose another"
    )


def test_a_namespace_of_up_to_63_characters() -> None:
    assert cluster(namespace="n" * 63).namespace == "n" * 63
    assert cluster(namespace="kubernetes-serving").namespace == "kubernetes-serving"
    assert problem(namespace="n" * 64).startswith("llm:cluster.namespace: ")


def test_keda_s_namespace_is_refused_with_autoscaling() -> None:
    assert cluster(namespace="keda").namespace == "keda"
    assert handed.problems(cluster={"namespace": "keda"}, autoscaling={"enabled": True}) == [
        "llm:cluster.namespace: 'keda' is where the stack installs KEDA when autoscaling is on; choose another"
    ]


def test_a_production_stack_needs_protection_and_a_window() -> None:
    assert handed.parsed(production=True, cluster={"maintenance": {"window": WEEKENDS}}).production is True
    unprotected = {"deletionProtection": False, "maintenance": {"window": WEEKENDS}}
    assert handed.problems(production=True, cluster=unprotected) == [
        "llm:cluster.deletionProtection: false must be true on a production stack (production: true)"
    ]
    assert handed.problem(production=True).startswith(
        "llm:cluster.maintenance.window: is required on a production stack (production: true)"
    )
