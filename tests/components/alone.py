"""A component run alone under the render's mock engine, without rendering a stack: what it registers, with which options."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Callable
from typing import Any
from unittest import mock

import pulumi

from render.engine import Render, _Mocks
from render.sdk import run_program

# The type of the root component every Pulumi program has; its outputs are the stack's exports.
STACK_TYPE = "pulumi:pulumi:Stack"


def registered(program: Callable[[], object], engine: pulumi.runtime.Mocks | None = None) -> Render:
    """What ``program`` registers, recorded as a render records a stack's resources (the render's mock engine unless given)."""
    render = Render(stack="dev")

    def body() -> None:
        program()

    def run() -> None:
        run_program(
            body,
            project="llm",
            stack="dev",
            config={},
            secret_keys=[],
            # The render's engine: it gives service accounts the email and member a real provider returns.
            engine=engine or _Mocks(),
            resources=render.resources,
            invokes=render.invokes,
            logger=logging.getLogger("component-alone"),
        )

    # A fresh context per run: the SDK keeps its state in context variables.
    contextvars.Context().run(run)
    return render


def component_outputs(program: Callable[[], object]) -> dict[str, Any]:
    """What each component ``program`` makes registers as its outputs (kept in the stack's state), resolved, by its name.

    The stack's own outputs (``pulumi.export``) are left out: ``registered`` returns them to no one."""
    found: dict[str, Any] = {}
    register = pulumi.ComponentResource.register_outputs

    def keep(urn: str, resolved: Any) -> None:
        # urn:pulumi:<stack>::<project>::<parent types$>type::<name>
        _, _, kind, name = urn.split("::", 3)
        if kind != STACK_TYPE:
            found[name] = resolved

    def recording(component: pulumi.ComponentResource, outputs: Any) -> None:
        pulumi.Output.all(component.urn, outputs).apply(lambda both: keep(*both))
        register(component, outputs)

    with mock.patch.object(pulumi.ComponentResource, "register_outputs", recording):
        registered(program)
    return found
