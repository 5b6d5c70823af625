"""The configuration reference (docs/configuration.md) cannot drift from the schema."""

from __future__ import annotations

from dev.config_reference import PAGE, table, updated
from stacks.settings import known_keys


def test_the_configuration_page_matches_the_schema() -> None:
    page = PAGE.read_text()
    assert updated(page) == page, "run `uv run python -m dev.config_reference` and commit docs/configuration.md"


def test_reference_lists_every_key_of_every_section() -> None:
    text = table()
    for path, keys in known_keys().items():
        prefix = "llm:" + "".join(f"{part}." for part in path)
        for key in keys:
            assert f"| `{prefix}{key}` |" in text


def test_every_key_is_described() -> None:
    for line in table().splitlines()[2:]:
        assert line.rstrip(" |").split("|")[-1].strip(), line
