"""The configuration reference (docs/configuration.md), generated from the settings schema.

``python -m dev.config_reference`` rewrites its table; a test fails when the page
and the schema disagree.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import sys
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from stacks.loading import API_KEY_KEY, HF_TOKEN_KEY
from stacks.settings import StackSettings, sections_in

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
START, END = "<!-- config-reference:start -->", "<!-- config-reference:end -->"


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{v}`" for v in typing.get_args(annotation))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation) if a is not type(None)) + " (optional)"
    if origin is typing.Annotated:
        return _type_name(typing.get_args(annotation)[0])
    if origin in (tuple, list):
        return "list"
    if origin is dict:
        return "map"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    return getattr(annotation, "__name__", str(annotation))


def _default(field: Any) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel) or value is None:
        return ""
    if isinstance(value, tuple):
        value = list(value)
    return f"`{json.dumps(value)}`"


@cache
def _classes(module: str) -> dict[str, ast.ClassDef]:
    """The classes a module defines, by name, from its source parsed once."""
    tree = ast.parse(Path(inspect.getfile(sys.modules[module])).read_text())
    return {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def field_docstrings(model: type[BaseModel]) -> dict[str, str]:
    """Each field's docstring: the string after its annotated assignment in the class body, bases included.

    Read here, not with pydantic's ``use_attribute_docstrings``: that reads every model's source when the
    settings are imported, a cost every render paid (docs/reference.md).
    """
    docstrings: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not issubclass(cls, BaseModel) or cls is BaseModel:
            continue
        for statement, following in itertools.pairwise(_classes(cls.__module__)[cls.__name__].body):
            if (
                isinstance(statement, ast.AnnAssign)
                and isinstance(statement.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docstrings[statement.target.id] = inspect.cleandoc(following.value.value)
    return docstrings


def rows(model: type[BaseModel] = StackSettings, prefix: str = "llm:") -> list[str]:
    lines: list[str] = []
    docstrings = field_docstrings(model)
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias}"
        description = docstrings.get(name, "").replace("\n", " ")
        lines.append(f"| `{key}` | {_type_name(field.annotation)} | {_default(field)} | {description} |")
        for section in sections_in(field.annotation):
            lines.extend(rows(section, f"{key}."))
    return lines


def table() -> str:
    header = ["| key | type | default | what it does |", "| --- | --- | --- | --- |"]
    secrets = [
        f"| `llm:{HF_TOKEN_KEY}` | secret | | Hugging Face token for the model download; only gated models need it |",
        f"| `llm:{API_KEY_KEY}` | secret | | API key the vLLM server requires from clients; unset means none |",
    ]
    return "\n".join(header + rows() + secrets)


def updated(readme: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(readme):
        raise ValueError(f"{PAGE.name} has no {START} ... {END} block")
    return pattern.sub(lambda _: f"{START}\n{table()}\n{END}", readme)


if __name__ == "__main__":
    PAGE.write_text(updated(PAGE.read_text()))
    sys.stdout.write(f"updated the configuration reference in {PAGE.relative_to(PAGE.parent.parent)}\n")
