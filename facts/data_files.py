"""The one reader of the YAML data files the program and the render load (vendored CRDs, metric lists, rules).

libyaml's parser reads the vendored CRDs about ten times faster than PyYAML's
pure-Python one; each file is parsed once per process. Callers share the parsed
document: they must not change it. Large YAML text (a chart's output) goes
through the same parser.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

# PyYAML built without libyaml (no wheel for the platform) still works, only slower.
_LOADER: type[yaml.CSafeLoader] | type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def read_yaml(path: Path) -> Any:
    """The document in ``path``, parsed once per process."""
    with path.open("rb") as stream:
        return yaml.load(stream, Loader=_LOADER)


def parse_yaml(text: str) -> Any:
    """The document in ``text``, a new object on every call."""
    return yaml.load(text, Loader=_LOADER)
