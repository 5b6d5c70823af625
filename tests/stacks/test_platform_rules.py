"""Config GKE, its Terraform provider or KEDA would refuse is refused first, naming key and value; what they take is taken.

Each rule and its public source: docs/config-rules.md.
"""

from __future__ import annotations

from typing import Any

import pytest

from render.engine import Render, render_stack
from render.validation import validate_render
from tests.conftest import render_with, rendered, stack_file_config

DIGEST = "sha256:" + "0123456789abcdef" * 4
SATURDAY = "2026-01-03"


def window(hours: float, recurrence: str = "FREQ=WEEKLY;BYDAY=SA,SU", day: str = SATURDAY) -> dict[str, str]:
    """A window from 00:00 UTC on ``day`` lasting ``hours`` (below 24)."""
    minutes = round(hours * 60)
    return {
        "startTime": f"{day}T00:00:00Z",
        "endTime": f"{day}T{minutes // 60:02d}:{minutes % 60:02d}:00Z",
        "recurrence": recurrence,
    }


WEEKENDS = window(6)


def exclusion(name: str, start: str = "2026-12-01T00:00:00Z", end: str = "2026-12-08T00:00:00Z") -> dict[str, str]:
    return {"name": name, "startTime": start, "endTime": end}


def maintenance(**section: Any) -> dict[str, Any]:
    return {"cluster": {"deletionProtection": False, "maintenance": section}}


def networks(count: int) -> dict[str, Any]:
    return {"cluster": {"deletionProtection": False, "authorizedNetworks": [f"198.51.{i // 256}.{i % 256}/32" for i in range(count)]}}


def nightly(**change: Any) -> dict[str, Any]:
    batch = {"start": "0 22 * * 1-5", "end": "0 6 * * 2-6", "replicas": 1, **change}
    return {"autoscaling": {"enabled": True, "batchWindows": [batch]}}


REFUSED: list[tuple[str, dict[str, Any], list[str]]] = [
    # Times the provider's time.Parse(time.RFC3339) refuses.
    (
        "hour 24",
        maintenance(window={**WEEKENDS, "startTime": "2026-01-03T24:00:00Z"}),
        ["llm:cluster.maintenance.window.startTime", "'2026-01-03T24:00:00Z'"],
    ),
    (
        "31 April",
        maintenance(window={**WEEKENDS, "endTime": "2026-04-31T06:00:00Z"}),
        ["llm:cluster.maintenance.window.endTime", "'2026-04-31T06:00:00Z'"],
    ),
    (
        "29 February, not a leap year",
        maintenance(window=WEEKENDS, exclusions=[exclusion("batch", end="2027-02-29T00:00:00Z")]),
        ["llm:cluster.maintenance.exclusions[0].endTime", "'2027-02-29T00:00:00Z'"],
    ),
    (
        "minute 60",
        maintenance(window=WEEKENDS, exclusions=[exclusion("batch", start="2026-12-01T12:60:00Z")]),
        ["llm:cluster.maintenance.exclusions[0].startTime", "'2026-12-01T12:60:00Z'"],
    ),
    (
        "month 13",
        {
            "capacity": {
                "mode": "reservation",
                "reservation": {
                    "name": "r",
                    "create": {"name": "r", "startTime": "2026-13-01T00:00:00Z", "endTime": "2027-01-20T00:00:00Z", "nodes": 1},
                },
            }
        },
        ["llm:capacity.reservation.create.startTime", "'2026-13-01T00:00:00Z'"],
    ),
    # GKE's availability rule: 48 hours in any 32 days, in stretches of 4 hours or more.
    ("weekend stretches of 5 hours", maintenance(window=window(5)), ["llm:cluster.maintenance.window", "48 hours", "32 days"]),
    ("one 4-hour stretch a week", maintenance(window=window(4, "FREQ=WEEKLY;BYDAY=SA")), ["llm:cluster.maintenance.window", "48 hours"]),
    ("daily stretches under 4 hours", maintenance(window=window(3.5, "FREQ=DAILY")), ["llm:cluster.maintenance.window", "4 hours"]),
    (
        "two hours on weekdays",
        maintenance(window=window(2, "FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR", day="2026-01-05")),
        ["llm:cluster.maintenance.window"],
    ),
    # Exclusions: at most 20, keyed by name, and only beside a window (the provider's ExactlyOneOf).
    ("exclusions without a window", maintenance(exclusions=[exclusion("batch")]), ["llm:cluster.maintenance.window", "exclusions"]),
    (
        "21 exclusions",
        maintenance(window=WEEKENDS, exclusions=[exclusion(f"x{i}") for i in range(21)]),
        ["llm:cluster.maintenance.exclusions", "21", "20"],
    ),
    (
        "one name twice",
        maintenance(
            window=WEEKENDS,
            exclusions=[exclusion("batch"), exclusion("other"), exclusion("batch", "2027-01-01T00:00:00Z", "2027-01-02T00:00:00Z")],
        ),
        ["llm:cluster.maintenance.exclusions[2].name", "'batch'", "exclusions[0]"],
    ),
    # Authorized networks the provider's IsCIDRNetwork refuses (the canonical address/prefix form only).
    (
        "no prefix length",
        {"cluster": {"deletionProtection": False, "authorizedNetworks": ["203.0.113.7"]}},
        ["llm:cluster.authorizedNetworks[0]", "'203.0.113.7'", "/32"],
    ),
    (
        "dotted netmask",
        {"cluster": {"deletionProtection": False, "authorizedNetworks": ["198.51.100.0/24", "203.0.113.0/255.255.255.0"]}},
        ["llm:cluster.authorizedNetworks[1]", "'203.0.113.0/255.255.255.0'", "203.0.113.0/24"],
    ),
    (
        "prefix with a leading zero",
        {"cluster": {"deletionProtection": False, "authorizedNetworks": ["203.0.113.0/024"]}},
        ["llm:cluster.authorizedNetworks[0]", "203.0.113.0/24"],
    ),
    ("51 networks", networks(51), ["llm:cluster.authorizedNetworks", "51", "50"]),
    ("101 networks", networks(101), ["llm:cluster.authorizedNetworks", "101", "50"]),
    # B200 on Autopilot needs 1.32.2-gke.1422000 or later.
    ("1.30", {"cluster": {"deletionProtection": False, "version": "1.30"}}, ["llm:cluster.version", "'1.30'", "1.32.2-gke.1422000"]),
    ("1.31", {"cluster": {"deletionProtection": False, "version": "1.31"}}, ["llm:cluster.version", "'1.31'", "B200"]),
    # KEDA's cron parser (robfig/cron v3: minute hour day-of-month month day-of-week, no descriptors).
    ("hour 24", nightly(start="0 24 * * 1-5"), ["llm:autoscaling.batchWindows[0].start", "'0 24 * * 1-5'", "0-23"]),
    ("weekday 7", nightly(end="0 6 * * 7"), ["llm:autoscaling.batchWindows[0].end", "'0 6 * * 7'", "0-6"]),
    ("L", nightly(end="0 6 L * *"), ["llm:autoscaling.batchWindows[0].end", "'0 6 L * *'"]),
    ("nth weekday", nightly(start="0 22 * * 1#2"), ["llm:autoscaling.batchWindows[0].start"]),
    ("day of month 0", nightly(start="0 22 0 * *"), ["llm:autoscaling.batchWindows[0].start", "1-31"]),
    ("month 13", nightly(start="0 22 1 13 *"), ["llm:autoscaling.batchWindows[0].start", "1-12"]),
    ("minute 60", nightly(start="60 22 * * *"), ["llm:autoscaling.batchWindows[0].start", "0-59"]),
    ("descriptor", nightly(start="@daily"), ["llm:autoscaling.batchWindows[0].start", "'@daily'"]),
    ("seconds field", nightly(start="0 0 22 * * 1-5"), ["llm:autoscaling.batchWindows[0].start", "5 fields"]),
    ("step 0", nightly(start="*/0 22 * * *"), ["llm:autoscaling.batchWindows[0].start"]),
    ("reversed range", nightly(start="0 22 * * 5-1"), ["llm:autoscaling.batchWindows[0].start"]),
    ("start equals end", nightly(start="0 22 * * *", end="0 22 * * *"), ["llm:autoscaling.batchWindows[0].end", "'0 22 * * *'", "start"]),
    ("same schedule spelt twice", nightly(start="0 22 * * mon-fri", end="0 22 * * 1-5"), ["llm:autoscaling.batchWindows[0].end"]),
    ("not an IANA zone", nightly(timezone="Mars/Olympus"), ["llm:autoscaling.batchWindows[0].timezone", "'Mars/Olympus'", "IANA"]),
    ("offset, not a zone", nightly(timezone="UTC+2"), ["llm:autoscaling.batchWindows[0].timezone", "'UTC+2'"]),
    ("empty zone", nightly(timezone=""), ["llm:autoscaling.batchWindows[0].timezone", "''"]),
    ("the machine's zone", nightly(timezone="Local"), ["llm:autoscaling.batchWindows[0].timezone", "'Local'"]),
    (
        "KEDA chart not vendored",
        {"autoscaling": {"enabled": True, "kedaVersion": "2.19.0"}},
        ["llm:autoscaling.kedaVersion", "'2.19.0'", "2.20.2"],
    ),
    ("KEDA version with a v", {"autoscaling": {"enabled": True, "kedaVersion": "v2.20.2"}}, ["llm:autoscaling.kedaVersion", "'v2.20.2'"]),
    (
        "workloads in KEDA's namespace",
        {"cluster": {"deletionProtection": False, "namespace": "keda"}, "autoscaling": {"enabled": True}},
        ["llm:cluster.namespace", "'keda'", "KEDA"],
    ),
]


def refusal(stack: str, config: dict[str, Any]) -> tuple[str, Render]:
    record = Render(stack=stack)
    try:
        render_stack(stack, config=config, record=record)
    except Exception as error:  # the kind is asserted by the caller through the message
        return f"{type(error).__name__}: {error}", record
    raise AssertionError("accepted")


def with_changes(stack: str, changes: dict[str, Any]) -> dict[str, Any]:
    config = stack_file_config(stack)
    config.update({f"llm:{key}": value for key, value in changes.items()})
    return config


@pytest.mark.parametrize(
    ("case", "changes", "expected"),
    REFUSED,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSED)],
)
def test_config_the_platform_refuses_is_refused_before_anything_registers(case: str, changes: dict[str, Any], expected: list[str]) -> None:
    message, record = refusal("dev", with_changes("dev", changes))
    assert message.startswith("StackConfigError: stack configuration has"), f"{case}: {message}"
    for fragment in expected:
        assert fragment in message, f"{case}: {fragment!r} not in {message}"
    assert record.resources == [], f"{case}: registered {[r.name for r in record.resources]}"


def test_a_production_stack_without_a_maintenance_window_is_refused() -> None:
    config = stack_file_config("prod")
    config["llm:cluster"] = {key: value for key, value in config["llm:cluster"].items() if key != "maintenance"}
    message, record = refusal("prod", config)
    assert "llm:cluster.maintenance.window: is required on a production stack" in message, message
    assert record.resources == []


def test_the_production_stack_file_sets_a_window_that_reaches_the_cluster() -> None:
    policy = rendered("prod").one("gcp:container/cluster:Cluster").inputs["maintenancePolicy"]
    assert set(policy["recurringWindow"]) == {"startTime", "endTime", "recurrence"}


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("exactly 48 hours: weekend stretches of 6", maintenance(window=WEEKENDS)),
    ("daily 4-hour stretches", maintenance(window=window(4, "FREQ=DAILY"))),
    (
        "a window with exclusions",
        maintenance(window=WEEKENDS, exclusions=[exclusion("batch"), exclusion("audit", "2027-01-01T00:00:00Z", "2027-01-02T00:00:00Z")]),
    ),
    ("20 exclusions", maintenance(window=WEEKENDS, exclusions=[exclusion(f"x{i}") for i in range(20)])),
    (
        "29 February of a leap year",
        maintenance(window=WEEKENDS, exclusions=[exclusion("leap", "2028-02-29T00:00:00Z", "2028-03-01T00:00:00Z")]),
    ),
    ("50 networks", networks(50)),
    ("1.32", {"cluster": {"deletionProtection": False, "version": "1.32"}}),
    ("channel by project number", {"observability": {"notificationChannels": ["projects/123456789012/notificationChannels/4567"]}}),
    ("image by tag and digest", {"serving": {"image": f"vllm/vllm-openai:v0.18.1@{DIGEST}"}}),
    ("latest, pinned by digest", {"benchmark": {"image": f"vllm/vllm-openai:latest@{DIGEST}", "vllmVersion": "0.18.1"}}),
    ("cron names, steps and ?", nightly(start="*/30 22 ? * MON-fri", end="0 6 * jan-dec tue-sat")),
    ("an IANA zone", nightly(timezone="Europe/Amsterdam")),
    ("namespace keda without autoscaling", {"cluster": {"deletionProtection": False, "namespace": "keda"}}),
]


@pytest.mark.parametrize(
    ("case", "changes"),
    ACCEPTED,
    ids=[a[0] for a in ACCEPTED],
)
def test_config_the_platform_takes_is_accepted(case: str, changes: dict[str, Any]) -> None:
    assert validate_render(render_with("dev", **changes))
