"""Runs the real ``__main__.py`` of a stack under Pulumi's mock engine.

Every registration is recorded with its inputs (secrets kept as ``Secret``)
and its options (parent, provider, dependencies, timeouts), which the plain
mock API does not expose.
"""

from __future__ import annotations

import base64
import contextvars
import json
import logging
import os
import runpy
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml

from render.sdk import Registration as Registration
from render.sdk import Secret as Secret
from render.sdk import run_program
from stacks.loading import SECRET_KEYS
from stacks.problems import StackConfigError
from stacks.settings import StackSettings

PROJECT_ROOT = Path(__file__).resolve().parent.parent

# What a secure config value stands in as: the render never decrypts.
SECRET_PLACEHOLDER = "[secret]"


@dataclass
class Render:
    stack: str
    resources: list[Registration] = field(default_factory=list)
    outputs: dict[str, Any] = field(default_factory=dict)
    # Provider functions the program called (lookups such as get_subnetwork).
    invokes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # What the program logged as warnings (pulumi.log.warn), as `pulumi up` would show them.
    warnings: list[str] = field(default_factory=list)

    def by_type(self, type_: str) -> list[Registration]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str | None = None) -> Registration:
        found = [r for r in self.by_type(type_) if name is None or r.name == name]
        if len(found) != 1:
            raise LookupError(f"expected one {type_} {name or ''}, found {len(found)}")
        return found[0]

    def find(self, urn: str) -> Registration | None:
        return next((r for r in self.resources if r.urn == urn), None)

    def depends_on(self, later: Registration, earlier: Registration) -> bool:
        """True when ``later`` waits for ``earlier``, directly or through others."""
        seen: set[str] = set()
        pending = list(later.dependencies)
        while pending:
            urn = pending.pop()
            if urn == earlier.urn:
                return True
            if urn in seen:
                continue
            seen.add(urn)
            known = self.find(urn)
            pending.extend(known.dependencies if known else ())
            # Waiting on a component means waiting on everything inside it.
            pending.extend(r.urn for r in self.resources if r.parent == urn)
        return False


def reveal(value: Any) -> Any:
    """The value with secrets unwrapped, for assertions on what a resource receives."""
    if isinstance(value, Secret):
        return reveal(value.value)
    if isinstance(value, dict):
        return {key: reveal(item) for key, item in value.items()}
    if isinstance(value, list):
        return [reveal(item) for item in value]
    return value


def redact(value: Any) -> Any:
    """The value with every secret replaced by ``[secret]``, for printing and files.

    A secret map or list keeps its shape (keys, length), which are not secret, so
    a redacted object still validates: only the values become ``[secret]``.
    """
    if isinstance(value, Secret):
        inner = value.value
        if isinstance(inner, dict):
            return {key: redact(Secret(item)) for key, item in inner.items()}
        if isinstance(inner, list):
            return [redact(Secret(item)) for item in inner]
        return SECRET_PLACEHOLDER
    if isinstance(value, dict):
        return {key: redact(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value


def _service_account(inputs: dict[str, Any]) -> dict[str, Any]:
    # The provider returns the email GCP derives from the account id (IAM service accounts API).
    email = f"{inputs.get('accountId')}@{inputs.get('project')}.iam.gserviceaccount.com"
    return {"email": email, "member": f"serviceAccount:{email}", "name": f"projects/{inputs.get('project')}/serviceAccounts/{email}"}


def _cluster(inputs: dict[str, Any]) -> dict[str, Any]:
    location = inputs.get("location", "")
    return {
        "endpoint": "192.0.2.10",
        "masterAuth": {"clusterCaCertificate": base64.b64encode(b"offline render: no certificate").decode()},
        "controlPlaneEndpointsConfig": {"dnsEndpointConfig": {"endpoint": f"gke-0123456789abcdef-000000000000.{location}.gke.goog"}},
    }


# Values a real provider computes from a resource's inputs; the mock engine has to invent them,
# or the render shows nothing where a real run sends a value.
_COMPUTED: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "gcp:container/cluster:Cluster": _cluster,
    "gcp:serviceaccount/account:Account": _service_account,
    # google-beta's `name` of a repository is its last part, the id ("for example: repo1"), not the Pulumi name.
    "gcp:artifactregistry/repository:Repository": lambda inputs: {"name": inputs.get("repositoryId")},
    "kubernetes:gateway.networking.k8s.io/v1:Gateway": lambda _: {"status": {"addresses": [{"type": "IPAddress", "value": "192.0.2.20"}]}},
}


def _merged(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        merged[key] = _merged(merged[key], value) if isinstance(value, dict) and isinstance(merged.get(key), dict) else value
    return merged


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        computed = _COMPUTED.get(args.typ)
        state = _merged({"name": args.name, **args.inputs}, computed(args.inputs) if computed else {})
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, []


class _UniqueKeys(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; the Pulumi CLI refuses the file."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise StackConfigError([f"{Path(self.name).name}: key {key!r} appears twice (lines {seen[key]} and {line})"])
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _stack_file(path: Path) -> dict[str, Any]:
    """The ``config:`` map of a stack file; a file the Pulumi CLI would refuse fails naming it."""
    try:
        with path.open() as stream:
            # A SafeLoader that also refuses repeated keys.
            document = yaml.load(stream, Loader=_UniqueKeys)
    except yaml.YAMLError as error:
        where = f" (line {error.problem_mark.line + 1})" if getattr(error, "problem_mark", None) else ""  # type: ignore[attr-defined]
        raise StackConfigError([f"{path.name}: is not valid YAML{where}"]) from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise StackConfigError([f"{path.name}: is a {type(document).__name__}, not a mapping with a config: section"])
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise StackConfigError([f"{path.name}: config is a {type(config).__name__}, not a mapping of keys to values"])
    return dict(config)


def stack_config(stack: str, root: Path = PROJECT_ROOT) -> tuple[str, dict[str, Any]]:
    """The project name and the ``config:`` map of ``Pulumi.<stack>.yaml``."""
    project = yaml.safe_load((root / "Pulumi.yaml").read_text())["name"]
    path = root / f"Pulumi.{stack}.yaml"
    if not path.exists():
        known = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in root.glob("Pulumi.*.yaml"))
        raise FileNotFoundError(f"no stack '{stack}': {path.name} does not exist; stacks here: {', '.join(known)}")
    return project, _stack_file(path)


def stack_settings(stack: str, root: Path = PROJECT_ROOT) -> StackSettings:
    """The settings of ``Pulumi.<stack>.yaml`` as the program reads them, offline: the keys of its namespace (a key
    without one is the program's, as the Pulumi CLI reads it) and no credentials, which the program reads as secrets."""
    project, config = stack_config(stack, root)
    values = {key.removeprefix(f"{project}:"): value for key, value in config.items() if key.startswith(f"{project}:") or ":" not in key}
    return StackSettings.model_validate({key: value for key, value in values.items() if key not in SECRET_KEYS})


def _engine_config(config: Mapping[str, Any], project: str) -> tuple[dict[str, str], list[str]]:
    """Config as the Pulumi CLI hands it to a program: strings, objects as JSON."""
    values: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in config.items():
        full_key = key if ":" in key else f"{project}:{key}"
        if isinstance(value, dict) and set(value) == {"secure"}:
            values[full_key] = SECRET_PLACEHOLDER
            secret_keys.append(full_key)
        elif isinstance(value, str):
            values[full_key] = value
        elif isinstance(value, bool):
            values[full_key] = "true" if value else "false"
        else:
            values[full_key] = json.dumps(value)
    return values, secret_keys


class _WarningLog(logging.Logger):
    """The mock engine's log: keeps the program's warnings, prints nothing."""

    def __init__(self, warnings: list[str]) -> None:
        # Below warnings the SDK logs a few hundred debug lines a render: dropped here before a record is made.
        super().__init__("render", logging.WARNING)
        self.propagate = False
        self.kept = warnings

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        self.kept.append(str(msg))


def _run_program(root: Path) -> None:
    runpy.run_path(str(root / "__main__.py"), run_name="__main__")


@contextmanager
def _in_project(root: Path) -> Iterator[None]:
    # __main__.py imports components/, stacks/ and plan/ as the Pulumi CLI would run it.
    previous = Path.cwd()
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(previous)


def render_stack(
    stack: str,
    *,
    root: Path = PROJECT_ROOT,
    config: Mapping[str, Any] | None = None,
    secrets: Mapping[str, str] | None = None,
    record: Render | None = None,
    up: Sequence[Mapping[str, Any]] | None = None,
) -> Render:
    """Runs ``__main__.py`` for ``stack`` and returns what it registered.

    ``config`` replaces the stack file's config (keys as in the file);
    ``secrets`` adds secret values, as ``pulumi config set --secret`` would;
    ``record`` receives the registrations, so a caller can see what a
    failing program registered before it failed; ``up`` is the stack as it
    is up (``render.changes.records``): an input under a resource's
    ``ignoreChanges`` keeps its value there, as `pulumi up` keeps it.
    """
    project, file_config = stack_config(stack, root)
    values, secret_keys = _engine_config(file_config if config is None else config, project)
    for key, value in (secrets or {}).items():
        full_key = f"{project}:{key}"
        values[full_key] = value
        secret_keys.append(full_key)
    render = record if record is not None else Render(stack=stack)

    def run() -> None:
        with _in_project(root):
            render.outputs = run_program(
                lambda: _run_program(root),
                project=project,
                stack=stack,
                config=values,
                secret_keys=secret_keys,
                engine=_Mocks(),
                resources=render.resources,
                invokes=render.invokes,
                logger=_WarningLog(render.warnings),
                state={r["key"]: r["inputs"] for r in up or ()},
            )
        render.resources[:] = in_dependency_order(render.resources)

    # A fresh context per render: the SDK keeps its state in context variables.
    contextvars.Context().run(run)
    return render


def in_dependency_order(resources: list[Registration]) -> list[Registration]:
    """Each resource after its parent and its dependencies; ties by URN.

    The SDK registers resources concurrently, so arrival order varies from
    run to run; this order does not.
    """
    by_urn = {r.urn: r for r in resources}
    waits = {r.urn: {u for u in (*r.dependencies, r.parent) if u in by_urn} for r in resources}
    ordered: list[Registration] = []
    ready = sorted(urn for urn, deps in waits.items() if not deps)
    while ready:
        urn = ready.pop(0)
        ordered.append(by_urn[urn])
        for other, deps in waits.items():
            if urn in deps:
                deps.discard(urn)
                if not deps:
                    ready.append(other)
        ready.sort()
    if len(ordered) != len(resources):
        raise ValueError("dependency cycle among: " + ", ".join(sorted(set(by_urn) - {r.urn for r in ordered})))
    return ordered
