from __future__ import annotations

import copy
import gc
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

import pytest

from render.engine import PROJECT_ROOT, Render, render_stack, stack_config
from render.sdk import capture_stack_traces

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in PROJECT_ROOT.glob("Pulumi.*.yaml"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long: takes 10 s or more; the suite starts it first")
    # Under pytest's 60-odd frames the SDK's stack trace per resource was a quarter of a render; the mock
    # monitor drops it (render/sdk.py). Kept for the suite's goal: docs/testing.md.
    capture_stack_traces(False)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # pytest-xdist hands out tests in collection order: a long test collected last would run alone
    # at the end while the other worker waits. The sort is stable: the rest keep their order.
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


def pytest_collection_finish(session: pytest.Session) -> None:
    # The provider SDKs' millions of long-lived objects stay out of every later collection, and a render's
    # 27,000 short-lived ones (futures, outputs) no longer start one some 40 times. Kept for the suite's goal:
    # docs/testing.md.
    gc.collect()
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)


# What the program receives, as ``render_stack`` hands it over: the stack, each config key with its
# value as JSON, and the secrets.
RenderInput = tuple[str, tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]
_renders: dict[RenderInput, Render] = {}


def _render_input(stack: str, config: Mapping[str, Any], secrets: Mapping[str, str]) -> RenderInput | None:
    """The key of a render: equal keys give the program equal input. ``None`` when a value is not JSON."""
    try:
        values = tuple(sorted((key, json.dumps(value)) for key, value in config.items()))
    except TypeError:  # such a render is run every time, never kept
        return None
    return stack, values, tuple(sorted(secrets.items()))


def render_once(stack: str, config: Mapping[str, Any] | None = None, secrets: Mapping[str, str] | None = None) -> Render:
    """``render_stack(stack, config=..., secrets=...)``, run once per input per test worker.

    Renders are deterministic (tested by ``test_two_renders_write_identical_files``, which compares
    the kept render with a new one; only the order of a resource's dependencies varies, and no test
    reads it), so tests that render the same input share one render. Each call returns a copy of
    it: a test may change what it gets (some break a render on purpose) without touching others'.
    A render that fails is not kept: the next call runs it again and fails the same way.
    """
    config = stack_file_config(stack) if config is None else config
    key = _render_input(stack, config, secrets or {})
    if key is None:
        return render_stack(stack, config=config, secrets=secrets)
    if key not in _renders:
        _renders[key] = render_stack(stack, config=config, secrets=secrets)
    return copy.deepcopy(_renders[key])


@cache
def rendered(stack: str) -> Render:
    """The render of ``Pulumi.<stack>.yaml`` as committed, one object per worker: read it, never change it."""
    return render_once(stack)


@cache
def _stack_file_config(stack: str) -> dict[str, Any]:
    return stack_config(stack)[1]  # PyYAML's pure-Python parser: 3 ms, and the tests ask some 350 times


def stack_file_config(stack: str) -> dict[str, Any]:
    """The ``config:`` map of ``Pulumi.<stack>.yaml``, as the render reads it: a copy the caller may change."""
    return copy.deepcopy(_stack_file_config(stack))


def readme_command(marker: str) -> list[str]:
    """The command on the line after the README's ``<!-- marker -->``, inside its code block."""
    lines = (PROJECT_ROOT / "README.md").read_text().splitlines()
    start = lines.index(f"<!-- {marker} -->")
    assert lines[start + 1].startswith("```")
    return lines[start + 2].split()


def render_with(stack: str, **changes: Any) -> Render:
    """Renders ``stack`` with some ``llm:`` keys changed; ``None`` removes a key. Through ``render_once``."""
    config = stack_file_config(stack)
    for key, value in changes.items():
        full = f"llm:{key}"
        if value is None:
            config.pop(full, None)
        else:
            config[full] = value
    return render_once(stack, config)


def at(manifest: dict[str, Any], *path: str | int) -> Any:
    """The value at ``path`` inside a manifest (keys and list indexes)."""
    for key in path:
        manifest = manifest[key]  # type: ignore[index]
    return manifest


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)
