"""Config errors written for the person who edits ``Pulumi.<stack>.yaml``."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from typing import Any

import pulumi
from pydantic import ValidationError


class ConfigProblem(ValueError):  # noqa: N818 - a problem with a value, not a program error
    """A rule a value breaks, raised from a validator.

    ``path`` is relative to the model that raised it; ``reason`` finishes the
    sentence that starts with the offending value.
    """

    def __init__(self, path: Sequence[str | int], value: Any, reason: str) -> None:
        super().__init__(reason)
        self.path = tuple(path)
        self.value = value
        self.reason = reason


class StackConfigError(pulumi.RunError):
    """Raised before any resource is registered; one line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"stack configuration has {len(problems)} {noun}:\n" + "\n".join(f"  - {p}" for p in problems))


def key_name(namespace: str, path: Sequence[str | int]) -> str:
    """``("capacity", "fallback", 1)`` -> ``llm:capacity.fallback[1]``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return f"{namespace}:{text}"


def show_value(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value, sort_keys=True, default=str)


def one_of(allowed: Iterable[str]) -> str:
    return "use one of: " + ", ".join(allowed)


def closest(word: str, allowed: Iterable[str]) -> str:
    options = sorted(allowed)
    match = difflib.get_close_matches(word, options, n=1)
    hint = f"did you mean '{match[0]}'? " if match else ""
    return f"{hint}known keys: {', '.join(options)}"


def describe(error: ValidationError, namespace: str, known_keys: dict[tuple[str | int, ...], list[str]]) -> list[str]:
    """Turns pydantic's errors into one sentence each, naming key, value and what is allowed.

    ``known_keys`` maps the path of each model to the keys it accepts, for
    suggesting the right spelling of an unknown key.
    """
    problems: list[str] = []
    for err in error.errors(include_url=False):
        loc: tuple[str | int, ...] = tuple(err["loc"])
        kind = err["type"]
        ctx = err.get("ctx") or {}
        cause = ctx.get("error")
        if isinstance(cause, ConfigProblem):
            path = loc + cause.path
            shown = "" if cause.value is None else f"{show_value(cause.value)} "
            problems.append(f"{key_name(namespace, path)}: {shown}{cause.reason}")
            continue
        key = key_name(namespace, loc)
        if kind == "extra_forbidden":
            parent = _model_path(loc[:-1])
            problems.append(f"{key}: unknown key; {closest(str(loc[-1]), known_keys.get(parent, []))}")
        elif kind == "missing" and len(loc) == 1:
            problems.append(f"{key}: is required; set it with `pulumi config set {loc[0]} <value>`")
        elif kind == "missing":
            problems.append(f"{key}: is required")
        elif kind in ("literal_error", "enum"):
            expected = str(ctx["expected"]).replace("'", "").replace(" or ", ", ")
            problems.append(f"{key}: {show_value(err['input'])} is not allowed; use one of: {expected}")
        else:
            message = err["msg"].removeprefix("Value error, ")
            problems.append(f"{key}: {show_value(err['input'])} is not allowed: {message[0].lower()}{message[1:]}")
    return problems


def _model_path(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    # List and dict positions do not change which model a key belongs to.
    return tuple(p for p in loc if isinstance(p, str) and not p.isdigit())
