from __future__ import annotations

import pytest

import render.cli


@pytest.fixture(autouse=True)
def _no_neighbours(monkeypatch: pytest.MonkeyPatch) -> None:
    """The render command's tests render the committed stacks; whether the repository's other stack files (a user's
    own among them) share their names is the question of tests/render/test_neighbours.py, on files it writes."""
    monkeypatch.setattr(render.cli, "check_neighbours", lambda stack: "")
