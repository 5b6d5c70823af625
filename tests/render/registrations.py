"""Registrations made by hand, as the mock engine records them, for the checks' rule tests."""

from __future__ import annotations

from typing import Any

from render.sdk import Registration


def registration(type_: str, name: str, inputs: dict[str, Any], *, stack: str = "dev::llm-serving", **options: Any) -> Registration:
    """A custom resource with no options set; ``options`` sets any Registration field."""
    fields: dict[str, Any] = {
        "custom": True,
        "remote": False,
        "parent": "",
        "provider": "",
        "dependencies": (),
        "custom_timeouts": {},
        "protect": False,
        "retain_on_delete": False,
        "ignore_changes": (),
        "replace_on_changes": (),
        "delete_before_replace": False,
    }
    return Registration(urn=f"urn:pulumi:{stack}::{type_}::{name}", type=type_, name=name, inputs=inputs, **(fields | options))
