"""The autoscaling section (stacks/autoscaling.py) on hand-made settings: KEDA's chart, batch windows, each range at its bounds."""

from __future__ import annotations

from typing import Any

import pytest

from render.engine import PROJECT_ROOT
from stacks.autoscaling import AutoscalingSettings, BatchWindowSettings, vendored_keda_versions
from tests.stacks import handed

NIGHTLY = {"start": "0 22 * * 1-5", "end": "0 6 * * 2-6", "replicas": 1}


def problem(**autoscaling: Any) -> str:
    return handed.problem(nodes=1000, autoscaling=autoscaling)


def test_every_vendored_keda_chart_is_a_version_the_settings_take_and_the_default_is_one() -> None:
    charts = PROJECT_ROOT / "render" / "vendor" / "charts"
    folders = sorted(path.name.removeprefix("keda-") for path in charts.glob("keda-*") if path.is_dir())
    assert folders and vendored_keda_versions() == tuple(folders)
    for version in folders:
        assert AutoscalingSettings(keda_version=version).keda_version == version
    assert AutoscalingSettings().keda_version in folders


def test_an_unvendored_keda_version_is_refused() -> None:
    assert problem(kedaVersion="2.19.0") == (
        "llm:autoscaling.kedaVersion: '2.19.0' is not a vendored KEDA chart version; use one of: 2.20.2, or vendor it under "
        "render/vendor/charts/ first"
    )


# (key, lowest taken, highest taken, just below, just above)
RANGES: list[tuple[str, int, int, int, int]] = [
    ("minReplicas", 0, 1000, -1, 1001),
    ("maxReplicas", 1, 1000, 0, 1001),
    ("requestsPerReplica", 1, 100_000, 0, 100_001),
    ("idleMinutes", 1, 1440, 0, 1441),
    ("pollSeconds", 5, 600, 4, 601),
]


@pytest.mark.parametrize(("key", "low", "high", "below", "above"), RANGES, ids=[r[0] for r in RANGES])
def test_each_range_takes_its_bounds_and_refuses_past_them(key: str, low: int, high: int, below: int, above: int) -> None:
    for value in (low, high):
        assert AutoscalingSettings.model_validate({key: value}).model_dump(by_alias=True)[key] == value
    for value in (below, above):
        assert problem(**{key: value}).startswith(f"llm:autoscaling.{key}: {value} is not allowed: input should be"), value


@pytest.mark.parametrize("replicas", [1, 1000])
def test_a_window_keeps_1_to_1000_replicas(replicas: int) -> None:
    assert BatchWindowSettings.model_validate({**NIGHTLY, "replicas": replicas}).replicas == replicas


@pytest.mark.parametrize("replicas", [0, 1001])
def test_a_window_of_more_replicas_is_refused(replicas: int) -> None:
    assert problem(batchWindows=[{**NIGHTLY, "replicas": replicas}]).startswith(
        f"llm:autoscaling.batchWindows[0].replicas: {replicas} is not allowed"
    )


def test_a_window_that_never_opens_is_refused() -> None:
    assert problem(batchWindows=[{**NIGHTLY, "end": "0 22 * * MON-FRI"}]) == (
        "llm:autoscaling.batchWindows[0].end: '0 22 * * MON-FRI' fires when start (0 22 * * 1-5) does: the window would never be open"
    )


def test_a_window_needs_cron_expressions_keda_takes() -> None:
    assert problem(batchWindows=[{**NIGHTLY, "start": "0 25 * * *"}]).startswith(
        "llm:autoscaling.batchWindows[0].start: '0 25 * * *' is not a cron expression KEDA takes: it "
    )


def test_a_window_needs_an_iana_time_zone() -> None:
    assert BatchWindowSettings.model_validate({**NIGHTLY, "timezone": "Europe/Amsterdam"}).timezone == "Europe/Amsterdam"
    assert problem(batchWindows=[{**NIGHTLY, "timezone": "CEST"}]) == (
        "llm:autoscaling.batchWindows[0].timezone: 'CEST' is not an IANA time zone such as Etc/UTC or Europe/Amsterdam"
    )
