"""The Pulumi SDKs' private parts are reached only through ``render/sdk.py``, and only on the pinned SDK.

A private name: a module under ``pulumi.runtime`` that the SDK does not publish in ``pulumi.runtime.__all__``
(``mocks``, ``stack``, ``sync_await``, ``proto`` ...), a generated protobuf module (``*_pb2``), or any name
with a leading underscore reached from a Pulumi package (``pulumi``, ``pulumi_policy``, the providers).
"""

from __future__ import annotations

import ast
import asyncio
import importlib.metadata
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pulumi
import pulumi.runtime
import pytest

from render import sdk
from render.engine import PROJECT_ROOT
from tests.components.alone import registered

ADAPTER = PROJECT_ROOT / "render" / "sdk.py"
SKIPPED_FOLDERS = {".venv", "build", "node_modules", "__pycache__"}
# Functions that reach an attribute named by a string: getattr(pulumi_x, "_name"), monkeypatch.setattr(...).
BY_NAME = {"getattr", "setattr", "delattr", "hasattr"}


def _pulumi_package(path: str) -> bool:
    root = path.split(".")[0]
    return root == "pulumi" or root.startswith("pulumi_")


def private(path: str) -> bool:
    """Whether a dotted path reached from a Pulumi package names something the SDK does not publish."""
    if not _pulumi_package(path):
        return False
    parts = [part for part in path.split(".") if not (part.startswith("__") and part.endswith("__"))]  # __file__ is public
    if any(part.startswith("_") or part.endswith(("_pb2", "_pb2_grpc")) for part in parts):
        return True
    return parts[:2] == ["pulumi", "runtime"] and len(parts) > 2 and parts[2] not in pulumi.runtime.__all__


def _dotted(node: ast.expr) -> tuple[str, list[str]] | None:
    """``a.b.c`` as (``a``, [``b``, ``c``]); None when the chain does not start at a name."""
    attributes: list[str] = []
    while isinstance(node, ast.Attribute):
        attributes.insert(0, node.attr)
        node = node.value
    return (node.id, attributes) if isinstance(node, ast.Name) else None


def private_uses(source: str) -> list[str]:
    """Each private Pulumi name the module's code imports or reaches, as ``line: dotted.path``."""
    tree = ast.parse(source)
    bound: dict[str, str] = {}  # local name -> the Pulumi path it stands for
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found += [(node.lineno, alias.name)]
                bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                path = f"{node.module}.{alias.name}"
                found += [(node.lineno, path)]
                bound[alias.asname or alias.name] = path
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and (chain := _dotted(node)) and chain[0] in bound:
            found += [(node.lineno, ".".join([bound[chain[0]], *chain[1]]))]
        elif isinstance(node, ast.Call) and len(node.args) >= 2:
            target, name = node.args[0], node.args[1]
            called = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if called in BY_NAME and (chain := _dotted(target)) and chain[0] in bound and isinstance(name, ast.Constant):
                found += [(node.lineno, ".".join([bound[chain[0]], *chain[1], str(name.value)]))]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and " " not in node.value:
            found += [(node.lineno, node.value)]  # a path in a string: import_module("..."), monkeypatch.setattr("...")
    return sorted({f"{line}: {path}" for line, path in found if private(path)})


def project_modules(root: Path = PROJECT_ROOT) -> Iterator[Path]:
    for path in sorted(root.rglob("*.py")):
        if not SKIPPED_FOLDERS & set(path.relative_to(root).parts[:-1]):
            yield path


@pytest.mark.parametrize(
    "source",
    [
        "from pulumi.runtime.sync_await import _sync_await",
        "from pulumi.runtime import mocks",
        "from pulumi.runtime.config import CONFIG",
        "import pulumi.runtime.stack",
        "import pulumi\nvalue = pulumi.runtime.config.CONFIG.get()",
        "import pulumi\npulumi.runtime.settings.SETTINGS",
        "from pulumi.runtime import resource as r\nr._get_stack_trace = None",
        "from pulumi.runtime import resource as r\ndef test(monkeypatch): monkeypatch.setattr(r, '_get_stack_trace', None)",
        "def test(monkeypatch): monkeypatch.setattr('pulumi.runtime.resource._get_stack_trace', None)",
        "import importlib\nimportlib.import_module('pulumi.runtime.proto.source_pb2')",
        "from pulumi.runtime.proto import source_pb2",
        "from pulumi_policy.policy import _PolicyAnalyzerServicer",
        "import pulumi_gcp\npulumi_gcp._utilities.get_version()",
        "import pulumi as p\np.output._sync_await",
    ],
)
def test_a_private_pulumi_name_is_found_however_it_is_reached(source: str) -> None:
    assert private_uses(source)


@pytest.mark.parametrize(
    "source",
    [
        "import pulumi\npulumi.runtime.get_config_env()",
        "from pulumi.runtime import set_mocks, Mocks, MockResourceArgs",
        "import pulumi_gcp as gcp\ngcp.compute.Network\npulumi_gcp = gcp\ngcp.__file__",
        "from pulumi_policy import EnforcementLevel\nfrom google.protobuf import struct_pb2",
        "import os\nos._exit\n'pulumi is public'",
    ],
)
def test_the_published_sdk_is_not_private(source: str) -> None:
    assert private_uses(source) == []


def test_no_module_outside_the_adapter_reaches_a_private_pulumi_name() -> None:
    uses = {
        str(path.relative_to(PROJECT_ROOT)): found
        for path in project_modules()
        if path != ADAPTER and (found := private_uses(path.read_text()))
    }
    assert uses == {}, "private Pulumi names belong in render/sdk.py, behind its version check"


def test_the_adapter_is_where_the_private_names_are() -> None:
    # The scan looks at the adapter's own code too: were it blind, the test above would pass on any code.
    assert private_uses(ADAPTER.read_text())
    assert ADAPTER in set(project_modules())


def test_the_adapter_is_checked_against_the_sdk_the_project_pins() -> None:
    dependencies = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for distribution, version in sdk.PINNED.items():
        assert f"{distribution}=={version}" in dependencies
        assert importlib.metadata.version(distribution) == version


def test_another_sdk_version_fails_naming_both_versions_and_what_to_do() -> None:
    sdk.check_versions(dict(sdk.PINNED))
    with pytest.raises(sdk.SdkVersionError) as error:
        sdk.check_versions({**sdk.PINNED, "pulumi": "3.273.0"})
    message = str(error.value)
    assert f"pulumi=={sdk.PINNED['pulumi']}" in message and "pulumi==3.273.0" in message
    assert "render/sdk.py" in message and "uv sync --locked" in message


def test_a_program_runs_on_a_thread_that_asyncio_run_left_without_an_event_loop() -> None:
    # asyncio.run() unsets the thread's loop when it ends, as the batch runner's tests do before a worker's next render.
    asyncio.run(asyncio.sleep(0))
    render = registered(lambda: pulumi.ComponentResource("test:index:Probe", "probe"))
    assert [r.name for r in render.resources] == ["probe"]
