"""The one module that reaches into the Pulumi SDKs' private parts, and only on the versions it was read against.

The offline render runs the program under the SDK's mock engine and records what the program registers: that
takes parts the SDK does not publish (its mock monitor and the requests it receives, the wire form of secrets and
resource references, running a program to its end outside the CLI's language host). The policy tests drive
pulumi-policy's analyzer as the CLI does, through its private servicer and the SDK's protobuf messages. Such parts
change without notice between releases, so they are reached here only (``tests/render/test_sdk.py`` scans every
other module), after a check that the installed SDKs are the versions this module was read against.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib.metadata
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pulumi_policy import EnforcementLevel, Policy

# The versions this module was read against; pyproject.toml pins the same (tested).
PINNED = {"pulumi": "3.272.0", "pulumi-policy": "1.21.0"}


class SdkVersionError(RuntimeError):
    """An installed Pulumi SDK is not the version this module was read against."""


def check_versions(installed: Mapping[str, str]) -> None:
    """Fails, naming both versions and what to do, unless ``installed`` holds the pinned versions."""
    wrong = {name: installed.get(name, "none") for name, version in PINNED.items() if installed.get(name) != version}
    if wrong:
        found = ", ".join(f"{name}=={version}" for name, version in wrong.items())
        expected = ", ".join(f"{name}=={PINNED[name]}" for name in wrong)
        raise SdkVersionError(
            f"the offline render uses private parts of {expected}, but {found} is installed: run `uv sync --locked` for the"
            " pinned versions; to move the pin, check render/sdk.py against the new release and change PINNED there"
        )


check_versions({name: importlib.metadata.version(name) for name in PINNED})

# Only after the check: on another release these imports may fail, or worse succeed and mean something else.
import pulumi  # noqa: E402
from google.protobuf import json_format, struct_pb2  # noqa: E402
from pulumi.runtime import mocks, resource, rpc  # noqa: E402
from pulumi.runtime.proto import source_pb2  # noqa: E402
from pulumi.runtime.stack import run_pulumi_func  # noqa: E402
from pulumi.runtime.sync_await import _sync_await  # noqa: E402

# The wire form of a value: a map whose signature key says what it stands for (the SDK's rpc module).
SIGNATURE_KEY = rpc._special_sig_key
SECRET_SIGNATURE = rpc._special_secret_sig
RESOURCE_SIGNATURE = rpc._special_resource_sig
# A value the engine does not know yet (in a preview).
UNKNOWN = rpc.UNKNOWN
# Where the language host hands a program its config and the keys that are secret (pulumi-language-python-exec).
CONFIG_VARIABLE = "PULUMI_CONFIG"
SECRET_KEYS_VARIABLE = "PULUMI_CONFIG_SECRET_KEYS"


@dataclass(frozen=True)
class Secret:
    """A value Pulumi treats as secret; printed only as ``[secret]``."""

    value: Any


@dataclass(frozen=True)
class Registration:
    urn: str
    type: str
    name: str
    custom: bool
    remote: bool
    inputs: dict[str, Any]
    parent: str
    provider: str
    dependencies: tuple[str, ...]
    custom_timeouts: dict[str, str]
    protect: bool
    retain_on_delete: bool
    ignore_changes: tuple[str, ...]
    replace_on_changes: tuple[str, ...]
    delete_before_replace: bool
    # The resource's transforms, as the engine would run them on a component's children.
    transforms: tuple[Callable[..., Any], ...] = field(default=(), compare=False, repr=False)


def decode(value: Any) -> Any:
    """Plain data from the wire form of inputs: secrets kept as ``Secret``, a resource reference as its URN.

    The mock monitor takes no output values (``MockMonitor.SupportsFeature``): inputs arrive resolved.
    """
    if isinstance(value, dict):
        signature = value.get(SIGNATURE_KEY)
        if signature == SECRET_SIGNATURE:
            return Secret(decode(value.get("value")))
        if signature == RESOURCE_SIGNATURE:
            return value.get("urn", "")
        if signature is not None:
            return f"[{signature}]"
        return {key: decode(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decode(item) for item in value]
    if isinstance(value, float) and value.is_integer():
        # Protobuf carries every number as a double.
        return int(value)
    return value


def keep_ignored(inputs: struct_pb2.Struct, path: str, state: Mapping[str, Any]) -> None:
    """The input at ``path`` (keys joined by '.') set to its value in ``state``, where ``state`` holds one.

    As Pulumi's engine does for a property under ``ignoreChanges``: it takes the old value from the state, and so can
    neither update nor replace the resource (pulumi.com/docs/iac/concepts/options/ignorechanges/)."""
    *parents, last = path.split(".")
    for part in parents:
        if part not in inputs or not isinstance(inputs[part], struct_pb2.Struct) or not isinstance(state.get(part), Mapping):
            return
        inputs, state = inputs[part], state[part]
    if last in state:
        inputs[last] = state[last]


class _RecordingMonitor(mocks.MockMonitor):
    """The mock engine's monitor, keeping every registration with its options, which the plain mock API does not expose.

    ``state`` is the inputs of a stack already up, by URN without the stack's part: an input under a resource's
    ``ignoreChanges`` keeps its value there, so the outputs follow it as in a real `pulumi up`."""

    def __init__(
        self,
        engine: pulumi.runtime.Mocks,
        resources: list[Registration],
        invokes: list[tuple[str, dict[str, Any]]],
        state: Mapping[str, Mapping[str, Any]],
    ) -> None:
        super().__init__(engine)
        self.registered = resources
        self.invoked = invokes
        self.state = state

    def Invoke(self, request: Any) -> Any:  # noqa: N802 - overrides the gRPC method
        self.invoked.append((request.tok, decode(json_format.MessageToDict(request.args))))
        return super().Invoke(request)  # type: ignore[no-untyped-call]

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - overrides the gRPC method
        kept = self.state.get(self.make_urn(request.parent, request.type, request.name).split("::", 1)[-1], {})
        for path in request.ignoreChanges:
            keep_ignored(request.object, path, kept)
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            timeouts = request.customTimeouts
            self.registered.append(
                Registration(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    custom=request.custom,
                    remote=request.remote,
                    inputs=decode(json_format.MessageToDict(request.object)),
                    parent=request.parent,
                    provider=request.provider,
                    dependencies=tuple(request.dependencies),
                    custom_timeouts={
                        k: v for k, v in (("create", timeouts.create), ("update", timeouts.update), ("delete", timeouts.delete)) if v
                    },
                    protect=request.protect,
                    retain_on_delete=request.retainOnDelete,
                    ignore_changes=tuple(request.ignoreChanges),
                    replace_on_changes=tuple(request.replaceOnChanges),
                    delete_before_replace=request.deleteBeforeReplace,
                    transforms=tuple(mocks._resolve_callbacks(request.transforms)),
                )
            )
        return response


@contextmanager
def _handed_config(config: Mapping[str, str], secret_keys: Sequence[str]) -> Iterator[None]:
    """The config in the variables where the language host hands it over, for as long as the program runs."""
    saved = {name: os.environ.get(name) for name in (CONFIG_VARIABLE, SECRET_KEYS_VARIABLE)}
    os.environ[CONFIG_VARIABLE] = json.dumps(dict(config))
    os.environ[SECRET_KEYS_VARIABLE] = json.dumps(list(secret_keys))
    try:
        # As pulumi-language-python-exec does before it runs the program.
        pulumi.runtime.set_all_config(pulumi.runtime.get_config_env(), pulumi.runtime.get_config_secret_keys_env())
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_program(
    program: Callable[[], None],
    *,
    project: str,
    stack: str,
    config: Mapping[str, str],
    secret_keys: Sequence[str],
    engine: pulumi.runtime.Mocks,
    resources: list[Registration],
    invokes: list[tuple[str, dict[str, Any]]],
    logger: logging.Logger,
    state: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Runs ``program`` to its end under the mock engine and returns the stack's outputs.

    ``config`` and ``secret_keys`` reach the program as the Pulumi CLI hands them over. ``resources`` and
    ``invokes`` receive what it registers and calls as it goes, so a caller sees them when it fails. ``state``: the
    inputs of the stack as it is up, by URN without the stack's part, for the inputs under ``ignoreChanges``. Run it
    in a fresh ``contextvars.Context``: the SDK keeps its state in context variables.
    """
    with _handed_config(config, secret_keys):
        monitor = _RecordingMonitor(engine, resources, invokes, state or {})
        # set_mocks reads the thread's event loop, which an earlier asyncio.run() in the caller's thread leaves unset.
        try:
            asyncio.get_event_loop()
        except RuntimeError:
            asyncio.set_event_loop(asyncio.new_event_loop())
        pulumi.runtime.set_mocks(engine, project=project, stack=stack, preview=False, monitor=monitor, logger=logger)
        _sync_await(run_pulumi_func(program))
        root = pulumi.runtime.get_root_resource()
        return _sync_await(_resolved(getattr(root, "outputs", {})))


def _no_stack_trace() -> source_pb2.StackTrace:
    """What the SDK sends when it finds no caller."""
    return source_pb2.StackTrace()


_SDK_STACK_TRACE = resource._get_stack_trace


def capture_stack_traces(capture: bool) -> None:
    """Whether the SDK captures the Python stack with each resource it registers (it does unless told here).

    It walks the whole stack and reads every frame's source line, to tell the engine where a resource was
    created: under pytest's 60-odd frames a quarter of a render. The mock monitor drops it, so a render is the
    same without it (tests/render/test_render.py).
    """
    resource._get_stack_trace = _SDK_STACK_TRACE if capture else _no_stack_trace


def captures_stack_traces() -> bool:
    return resource._get_stack_trace is _SDK_STACK_TRACE


async def _resolved(outputs: Mapping[str, Any]) -> dict[str, Any]:
    resolved: dict[str, Any] = {}
    for key, value in outputs.items():
        output = pulumi.Output.from_input(value)
        plain = await output.future()
        resolved[key] = Secret(plain) if await output.is_secret() else plain
    return resolved


class PolicyAnalyzer:
    """pulumi-policy's analyzer, called in this process as the Pulumi CLI calls it over gRPC (no server starts)."""

    def __init__(
        self,
        name: str,
        version: str,
        policies: Sequence[Policy],
        level: EnforcementLevel,
        policy_config: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        from pulumi.runtime import proto
        from pulumi_policy.policy import _PolicyAnalyzerServicer  # imported here: the render never needs it

        self._proto = proto
        self._servicer = _PolicyAnalyzerServicer(name, version, list(policies), level)
        if policy_config:
            request = proto.ConfigureAnalyzerRequest(
                policyConfig={
                    policy: proto.PolicyConfig(enforcementLevel=proto.MANDATORY, properties=json_format.ParseDict(properties, _struct()))
                    for policy, properties in policy_config.items()
                }
            )
            self._servicer.Configure(request, None)  # type: ignore[no-untyped-call]

    def config_schemas(self) -> dict[str, dict[str, Any]]:
        """Each policy's config schema as the CLI reads it, for the policies that have one."""
        info = self._servicer.GetAnalyzerInfo(None, None)  # type: ignore[no-untyped-call]
        return {p.name: json_format.MessageToDict(p.configSchema.properties) for p in info.policies if p.configSchema.properties}

    def analyze(self, type_: str, name: str, urn: str, properties: Mapping[str, Any]) -> set[str]:
        """The policies that report the resource, as a preview would ask."""
        request = self._proto.AnalyzeRequest(type=type_, name=name, urn=urn, properties=json_format.ParseDict(properties, _struct()))
        response = _isolated(lambda: self._servicer.Analyze(request, None))  # type: ignore[no-untyped-call]
        return {diagnostic.policyName for diagnostic in response.diagnostics}

    def analyze_stack(self, resources: Sequence[tuple[str, str, str, Mapping[str, Any]]]) -> list[tuple[str, str]]:
        """(policy, urn) of each stack-policy report over ``resources``: (type, name, urn, properties) each."""
        analyzed = [
            self._proto.AnalyzerResource(type=t, name=n, urn=u, properties=json_format.ParseDict(p, _struct())) for t, n, u, p in resources
        ]
        request = self._proto.AnalyzeStackRequest(resources=analyzed)
        response = _isolated(lambda: self._servicer.AnalyzeStack(request, None))  # type: ignore[no-untyped-call]
        return [(d.policyName, d.urn) for d in response.diagnostics]


def _struct() -> Any:
    return struct_pb2.Struct()


def _isolated(call: Callable[[], Any]) -> Any:
    # An analysis copies PULUMI_CONFIG into the SDK's config, in place: a fresh map in a copied context keeps it
    # out of every later render and analysis in this process.
    def run() -> Any:
        pulumi.runtime.set_all_config({})
        return call()

    return contextvars.copy_context().run(run)
