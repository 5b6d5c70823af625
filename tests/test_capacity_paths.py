"""Every documented capacity path renders and passes every check of the render, on every stack.

The paths are the ones docs/configuration.md documents under ``llm:capacity``: Spot, a reservation by
name (also one shared from another project), a calendar-mode future reservation the stack creates,
Flex-start, and fallback. ``render.cli.check_render`` is the render's one list of checks, so a check
added to it later is run on each of these paths, and cannot refuse a documented stack unseen.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from render.cli import check_render
from render.engine import PROJECT_ROOT
from stacks.capacity import CAPACITY_MODES
from tests.conftest import STACKS, render_with

RESERVATION = {"name": "a4-llm-serving"}
# A calendar-mode request within GCP's limits (docs/config-rules.md), with room for every stack's replicas.
CREATE = {"name": "a4-llm-serving", "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-01-01T00:00:00Z", "nodes": 16}

DOCUMENTED_CAPACITY: dict[str, dict[str, Any]] = {
    "spot": {"mode": "spot"},
    # Its size as the user states it: room for every stack's replicas and a rollout's surge one.
    "reservation-by-name": {"mode": "reservation", "reservation": {**RESERVATION, "nodes": 16}},
    "shared-reservation": {"mode": "reservation", "reservation": {**RESERVATION, "project": "shared-capacity", "nodes": 16}},
    "created-future-reservation": {"mode": "reservation", "reservation": {**RESERVATION, "create": CREATE}},
    "flex-start": {"mode": "flex-start", "flexStart": {"maxRunHours": 24}, "pricePerNodeHour": 60.0},
    "fallback": {"mode": "fallback", "reservation": RESERVATION},
    "fallback-with-created-reservation": {
        "mode": "fallback",
        "fallback": ["reservation", "spot", "flex-start"],
        "reservation": {**RESERVATION, "create": CREATE},
    },
    "fallback-without-reservation": {"mode": "fallback", "fallback": ["spot", "flex-start"]},
}


def _keys(value: Any, prefix: str) -> set[str]:
    if not isinstance(value, dict):
        return set()
    found = set()
    for key, item in value.items():
        found |= {f"{prefix}.{key}", *_keys(item, f"{prefix}.{key}")}
    return found


def test_the_paths_cover_every_mode_and_every_documented_capacity_key() -> None:
    assert {path["mode"] for path in DOCUMENTED_CAPACITY.values()} == set(CAPACITY_MODES)
    documented = set(re.findall(r"^\| `(llm:capacity\.[\w.]+)`", (PROJECT_ROOT / "docs" / "configuration.md").read_text(), re.MULTILINE))
    used = set().union(*(_keys(path, "llm:capacity") for path in DOCUMENTED_CAPACITY.values()))
    assert documented and documented <= used, sorted(documented - used)


@pytest.mark.parametrize("path", sorted(DOCUMENTED_CAPACITY))
@pytest.mark.parametrize("stack", STACKS)
def test_every_documented_capacity_path_passes_every_render_check(stack: str, path: str) -> None:
    render = render_with(stack, capacity=DOCUMENTED_CAPACITY[path])
    report = "".join(check_render(render))
    assert "Kubernetes objects valid" in report and "creation order from nothing" in report
