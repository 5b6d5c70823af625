from __future__ import annotations

import gc
import os
from functools import cache
from typing import Any

import pytest

from render.engine import PROJECT_ROOT, Render, render_stack, stack_config
from stacks.loading import SECRET_KEYS
from stacks.settings import StackSettings

STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in PROJECT_ROOT.glob("Pulumi.*.yaml"))


def pytest_configure(config: pytest.Config) -> None:
    # Collection imports the provider SDKs: millions of long-lived objects that the cyclic collector
    # would scan again at every full collection while they load, and during every test after.
    gc.disable()
    # Renders the tests start in their own processes must not leave resident renderers behind (test_resident starts its own).
    os.environ["RENDER_RESIDENT"] = "0"


def pytest_collection_finish(session: pytest.Session) -> None:
    gc.collect()
    gc.freeze()  # the imported modules stay out of every later collection
    gc.enable()


@cache
def rendered(stack: str) -> Render:
    """One render per stack per test session: renders are deterministic (tested)."""
    return render_stack(stack)


def stack_file_config(stack: str) -> dict[str, Any]:
    """The ``config:`` map of ``Pulumi.<stack>.yaml``, as the render reads it."""
    return stack_config(stack)[1]


def stack_settings(stack: str) -> StackSettings:
    """The settings of ``Pulumi.<stack>.yaml``: a test over every stack judges each by these, never by its name."""
    project, config = stack_config(stack)
    # Keys of the program's namespace, as the program reads them; other providers' keys are not settings.
    values = {key.removeprefix(f"{project}:"): value for key, value in config.items() if key.startswith(f"{project}:") or ":" not in key}
    return StackSettings.model_validate({key: value for key, value in values.items() if key not in SECRET_KEYS})


def readme_command(marker: str) -> list[str]:
    """The command on the line after the README's ``<!-- marker -->``, inside its code block."""
    lines = (PROJECT_ROOT / "README.md").read_text().splitlines()
    start = lines.index(f"<!-- {marker} -->")
    assert lines[start + 1].startswith("```")
    return lines[start + 2].split()


def render_with(stack: str, **changes: Any) -> Render:
    """Renders ``stack`` with some ``llm:`` keys changed; ``None`` removes a key."""
    config = stack_file_config(stack)
    for key, value in changes.items():
        full = f"llm:{key}"
        if value is None:
            config.pop(full, None)
        else:
            config[full] = value
    return render_stack(stack, config=config)


def at(manifest: dict[str, Any], *path: str | int) -> Any:
    """The value at ``path`` inside a manifest (keys and list indexes)."""
    for key in path:
        manifest = manifest[key]  # type: ignore[index]
    return manifest


@pytest.fixture(params=STACKS)
def stack(request: pytest.FixtureRequest) -> str:
    return str(request.param)
