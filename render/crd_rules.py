"""The CEL rules (``x-kubernetes-validations``) of a CRD schema, checked offline as the API server checks a create.

The API server defaults the object, then evaluates each rule with ``self`` bound to
the value where the rule is declared, only where that value is present. Rules that
read ``oldSelf`` compare with the stored object: they apply to updates only.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import cel
from cel.stdlib import add_stdlib_to_context

_RULES = "x-kubernetes-validations"
# CEL keywords a property name must be escaped from (Kubernetes' property-name escaping).
_KEYWORDS = frozenset(
    {
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    }
)
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}
_CEL_ERRORS = (RuntimeError, TypeError, ValueError, KeyError)


@dataclass(frozen=True)
class Violation:
    path: str
    message: str
    rule: str


def declared_rules(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """``(schema path, rule)`` for every rule in ``schema``; ``[]`` stands for any array item, ``{}`` for any map value."""
    for rule in schema.get(_RULES, []):
        yield path or "(root)", rule
    for name, child in schema.get("properties", {}).items():
        yield from declared_rules(child, f"{path}.{name}" if path else name)
    if isinstance(schema.get("items"), dict):
        yield from declared_rules(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from declared_rules(schema["additionalProperties"], f"{path}{{}}")


@cache
def _program(rule: str) -> cel.Program | None:
    try:
        return cel.compile(rule)
    except _CEL_ERRORS:
        return None


@cache
def _has_function(name: str) -> bool:
    # The library names an unknown function the same way whichever way it is called.
    for call in (f'"".{name}("")', f'{name}("")', f'"".{name}()'):
        try:
            cel.evaluate(call, _context(None))
        except _CEL_ERRORS as error:
            if f"Undefined variable or function: '{name}'" in str(error):
                continue
        return True
    return False


def why_unchecked(rule: str) -> str | None:
    """Why ``rule`` cannot be checked offline (it does not compile, or calls a function the library lacks), else None."""
    program = _program(rule)
    if program is None:
        return "does not compile"
    missing = [name for name in program.functions() if re.fullmatch(r"[A-Za-z][\w.]*", name) and not _has_function(name)]
    return f"calls {', '.join(missing)}, which the CEL library lacks" if missing else None


def _context(value: Any) -> cel.Context:
    context = cel.Context(variables={"self": value})
    # Kubernetes' CEL environment has the cel-go string, list and set extensions (split, ...).
    add_stdlib_to_context(context)
    return context


def _escaped(name: str) -> str:
    if name in _KEYWORDS:
        return f"__{name}__"
    return re.sub(r"__|[.\-/]", lambda match: _ESCAPES[match.group()], name)


def _field(schema: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The schema of an object's field ``name``: declared, or the map's value schema."""
    extra = schema.get("additionalProperties")
    declared: dict[str, Any] | None = schema.get("properties", {}).get(name)
    return declared if declared is not None else extra if isinstance(extra, dict) else None


def _within(schema: dict[str, Any], name: str, item: Any, convert: Callable[[dict[str, Any], Any], Any]) -> Any:
    child = _field(schema, name)
    return item if child is None else convert(child, item)


def _defaulted(schema: dict[str, Any], value: Any) -> Any:
    """``value`` with every absent field that has a ``default`` filled in, as the API server does before validating."""
    if isinstance(value, dict):
        filled = dict(value)
        properties = schema.get("properties", {})
        for name, child in properties.items():
            if name not in filled and "default" in child:
                filled[name] = copy.deepcopy(child["default"])
        return {name: _within(schema, name, item, _defaulted) for name, item in filled.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_defaulted(schema["items"], item) for item in value]
    return value


def _cel_value(schema: dict[str, Any], value: Any) -> Any:
    """``value`` as the rule sees it: declared property names escaped, durations and timestamps typed."""
    if isinstance(value, dict):
        declared = schema.get("properties", {})
        return {_escaped(name) if name in declared else name: _within(schema, name, item, _cel_value) for name, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_cel_value(schema["items"], item) for item in value]
    conversion = {"duration": "duration", "date-time": "timestamp"}.get(schema.get("format", ""))
    if isinstance(value, str) and conversion:
        try:
            return cel.evaluate(f"{conversion}(value)", {"value": value})
        except _CEL_ERRORS:
            return value  # a malformed value is the schema check's to report
    return value


def _message(rule: dict[str, Any], context: cel.Context) -> str:
    if "messageExpression" in rule:
        program = _program(rule["messageExpression"])
        try:
            message = program.execute(context) if program else None
        except _CEL_ERRORS:
            message = None
        if isinstance(message, str) and message:
            return message
    return str(rule.get("message") or rule["rule"])


def _broken_at(schema: dict[str, Any], value: Any, path: str) -> Iterator[Violation]:
    if _RULES in schema:
        where = path or "(root)"
        context = _context(_cel_value(schema, value))
        for rule in schema[_RULES]:
            program = _program(rule["rule"])
            if program is None or "oldSelf" in program.variables():
                continue  # uncompilable rules are listed by why_unchecked; transition rules apply to updates
            try:
                passed = program.execute(context)
            except _CEL_ERRORS as error:
                # The API server rejects an object whose rule errors, too (as when it reads an absent field).
                reason = f"no such key: {error}" if isinstance(error, KeyError) else str(error)
                yield Violation(where, f"{_message(rule, context)} (the rule could not be evaluated: {reason})", rule["rule"])
                continue
            if passed is not True:
                yield Violation(where, _message(rule, context), rule["rule"])
    if isinstance(value, dict):
        for name, item in value.items():
            child = _field(schema, name)
            if child is not None:
                yield from _broken_at(child, item, f"{path}.{name}" if path else name)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            yield from _broken_at(schema["items"], item, f"{path}.{index}" if path else str(index))


def violations(schema: dict[str, Any], obj: dict[str, Any]) -> list[Violation]:
    """Every rule of the CRD schema ``schema`` that the object ``obj``, as created, breaks."""
    return list(_broken_at(schema, _defaulted(schema, obj), ""))
