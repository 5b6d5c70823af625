"""Settings as the Pulumi CLI hands them to the program: every value a string, sections as JSON text."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stacks.loading import parse_settings
from stacks.problems import StackConfigError
from stacks.settings import StackSettings

PROJECT = "example-project"


def handed(values: dict[str, Any]) -> dict[str, str]:
    """``values`` as the CLI passes them: strings as they are, anything else as JSON (numbers, booleans, sections)."""
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}


def parsed(**values: Any) -> StackSettings:
    """The settings of a stack that sets ``values`` beside its project."""
    return parse_settings(handed({"project": PROJECT, **values}), "llm")


def problems(**values: Any) -> list[str]:
    """What `pulumi up` prints for a stack that sets ``values`` beside its project."""
    with pytest.raises(StackConfigError) as error:
        parsed(**values)
    return error.value.problems


def problem(**values: Any) -> str:
    """The one problem of such a stack."""
    (only,) = problems(**values)
    return only
