"""Every stack setting the docs name exists: a key a reader copies into Pulumi.<stack>.yaml must be one the settings read.

A backticked name counts as a setting when it starts with ``llm:`` or with a section of the settings and a dot
(`serving.maxModelLen`, `batch.enabled: true`, `gateway.endpointPicker*`); file and module names do not.
"""

from __future__ import annotations

import re
from pathlib import Path

from stacks.loading import SECRET_KEYS
from stacks.settings import known_keys

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# `llm:` or a section, dotted names with list indexes, an optional trailing * for "every key starting so".
NAME = re.compile(r"`(llm:)?([a-z][A-Za-z0-9]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\])*)(\*?)")
FILE = re.compile(r"\.(py|md|ya?ml|json|jsonl|go|txt|toml|sh|mjs|lock)$")


def unknown_key(prefixed: bool, name: str, glob: bool) -> str | None:
    """The first part of a setting's name that the settings do not have; None for a known key or not a setting."""
    table = known_keys()
    table[()] = [*table[()], *(key.removeprefix("llm:") for key in SECRET_KEYS)]
    parts = re.sub(r"\[\d+\]", "", name).split(".")
    if FILE.search(name) or not (prefixed or (len(parts) > 1 and (parts[0],) in table)):
        return None
    path: tuple[str, ...] = ()
    for index, part in enumerate(parts):
        if path not in table:
            return None  # below a value or a free map (serving.env.<NAME>): not the settings' to know
        last = index == len(parts) - 1
        if part not in table[path] and not (glob and last and any(key.startswith(part) for key in table[path])):
            return ".".join(parts[: index + 1])
        path = (*path, part)
    return None


def test_every_setting_the_docs_and_the_readme_name_exists() -> None:
    wrong = [
        f"{doc.relative_to(ROOT)}:{number}: `{match[1] or ''}{match[2]}{match[3]}` ({bad} is no setting)"
        for doc in DOCS
        for number, line in enumerate(doc.read_text().splitlines(), 1)
        for match in NAME.finditer(line)
        for bad in [unknown_key(bool(match[1]), match[2], bool(match[3]))]
        if bad
    ]
    assert wrong == []


def test_a_misspelt_or_invented_setting_is_found_and_files_and_free_maps_are_not() -> None:
    assert unknown_key(False, "batch.sizing.runner_workers", False) == "batch.sizing"
    assert unknown_key(True, "serving.maxModelLength", False) == "serving.maxModelLength"
    assert unknown_key(True, "nodez", False) == "nodez"
    assert unknown_key(False, "serving.maxModelLen", False) is None
    assert unknown_key(True, "hfToken", False) is None
    assert unknown_key(False, "gateway.endpointPicker", True) is None
    assert unknown_key(False, "serving.env.VLLM_CACHE_ROOT", False) is None
    assert unknown_key(False, "batch.py", False) is None
    assert unknown_key(False, "facts.batch_sizing", False) is None
