"""A zone without A4 is allowed, with a warning: the list of A4 zones changes faster than the program."""

from __future__ import annotations

from facts.gcp import a4_zones
from render.files import plan
from stacks.settings import StackSettings
from tests.conftest import render_with


def _settings(zone: str) -> StackSettings:
    return StackSettings(project="llm-serving-dev", region=zone.rsplit("-", 1)[0], zone=zone)


def test_a_zone_without_a4_warns_naming_the_key_the_zone_and_the_lists_date() -> None:
    known = a4_zones()
    assert "us-central1-b" in known.zones and "us-central1-a" not in known.zones
    [warning] = _settings("us-central1-a").warnings("llm")
    assert warning.startswith("llm:zone: 'us-central1-a' ")
    assert known.as_of in warning and "us-central1-b" in warning


def test_every_listed_zone_passes_without_a_warning() -> None:
    for zone in a4_zones().zones:
        assert _settings(zone).warnings("llm") == [], zone


def test_the_render_shows_the_warning_the_program_logs_for_pulumi_up() -> None:
    render = render_with("dev", region="us-central1", zone="us-central1-a")
    assert [w for w in render.warnings if w.startswith("llm:zone: 'us-central1-a'")]
    assert "warning: llm:zone: 'us-central1-a'" in plan(render)
    assert render_with("dev").warnings == []
