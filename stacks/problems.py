"""Config errors written for the person who edits ``Pulumi.<stack>.yaml``."""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo


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


@dataclass(frozen=True)
class FractionOf:
    """Marks a float setting as a fraction of a whole (``Annotated[float, FractionOf("each GPU's memory")]``): a value
    out of its range is refused naming the whole, and a percentage (92) gets its fraction (0.92)."""

    whole: str


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


def describe(
    error: ValidationError,
    namespace: str,
    known_keys: dict[tuple[str | int, ...], list[str]],
    model: type[BaseModel] | None = None,
) -> list[str]:
    """Turns pydantic's errors into one sentence each, naming key, value and what is allowed.

    ``known_keys`` maps the path of each model to the keys it accepts, for
    suggesting the right spelling of an unknown key and listing a section's keys;
    ``model``, the root the errors' paths start from, gives each setting's own
    marks (a fraction's whole).
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
        fraction = _fraction(model, loc) if kind in _BOUNDS else None
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
        elif kind == "model_type":
            keys = ", ".join(sorted(known_keys.get(_model_path(loc), [])))
            shape = _shape(err["input"])
            problems.append(f"{key}: {show_value(err['input'])} is {shape}, but the section is a mapping of its keys: {keys}")
        elif kind == "dict_type":
            problems.append(f"{key}: {show_value(err['input'])} is {_shape(err['input'])}, but the setting is a mapping of names to values")
        elif kind == "tuple_type":  # the settings hold their lists as tuples
            problems.append(f"{key}: {show_value(err['input'])} is {_shape(err['input'])}, but the setting is a list")
        elif fraction is not None:
            problems.append(f"{key}: {show_value(err['input'])} {_fraction_problem(err['input'], *fraction)}")
        else:
            message = err["msg"].removeprefix("Value error, ")
            problems.append(f"{key}: {show_value(err['input'])} is not allowed: {message[0].lower()}{message[1:]}")
    return problems


# pydantic's errors for a number outside a field's bounds.
_BOUNDS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _fraction_problem(value: Any, whole: FractionOf, field: FieldInfo) -> str:
    """Why ``value`` is refused for a fraction of ``whole`` bounded as ``field`` is; a percentage gets its fraction."""
    bounds = _bounds(field)
    # A fraction's range is 0 <= x <= 1 where the field narrows neither end.
    low = f"{bounds['gt']:g} < " if "gt" in bounds else f"{bounds.get('ge', 0):g} <= "
    high = f" < {bounds['lt']:g}" if "lt" in bounds else f" <= {bounds.get('le', 1):g}"
    what = f"a fraction of {whole.whole} ({low}x{high})"
    # A whole number above 1 reads as a percentage (92 for 0.92); 1.01 is a fraction too large.
    if isinstance(value, int | float) and value > 1 and float(value).is_integer() and _within(value / 100, bounds):
        return f"is {what}: use {value / 100:g}, not {value:g}"
    return f"is out of range: {what}"


def _bounds(field: FieldInfo) -> dict[str, float]:
    """The field's bounds by pydantic's names (gt, ge, lt, le)."""
    return {name: getattr(mark, name) for mark in field.metadata for name in _CHECKS if getattr(mark, name, None) is not None}


_CHECKS = {
    "gt": lambda value, bound: value > bound,
    "ge": lambda value, bound: value >= bound,
    "lt": lambda value, bound: value < bound,
    "le": lambda value, bound: value <= bound,
}


def _within(value: float, bounds: dict[str, float]) -> bool:
    return all(_CHECKS[name](value, bound) for name, bound in bounds.items())


def _fraction(model: type[BaseModel] | None, loc: tuple[str | int, ...]) -> tuple[FractionOf, FieldInfo] | None:
    """The fraction mark of the setting at ``loc`` under ``model``, with its field; None when it is not a fraction."""
    if model is None:
        return None
    field = _field(model, _model_path(loc))
    if field is None:
        return None
    marks = [mark for mark in field.metadata if isinstance(mark, FractionOf)]
    return (marks[0], field) if marks else None


def _field(model: type[BaseModel], path: tuple[str | int, ...]) -> FieldInfo | None:
    """The field at ``path`` (aliases, as the stack file writes them) under ``model``, through nested sections."""
    fields = {str(field.alias or name): field for name, field in model.model_fields.items()}
    field = fields.get(str(path[0]))
    if field is None or len(path) == 1:
        return field
    for candidate in getattr(field.annotation, "__args__", (field.annotation,)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return _field(candidate, path[1:])
    return None


def _shape(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return "a single value"


def _model_path(loc: tuple[str | int, ...]) -> tuple[str | int, ...]:
    # List and dict positions do not change which model a key belongs to.
    return tuple(p for p in loc if isinstance(p, str) and not p.isdigit())
