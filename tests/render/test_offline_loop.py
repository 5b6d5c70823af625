"""The offline loop: what a render shows on a terminal, and an install that keeps renders fast."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

import render.cli as render_main
from render.cli import main


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_each_slow_step_says_what_it_is_doing_and_leaves_no_line_behind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out, err = Terminal(), Terminal()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["dev", "--out", str(tmp_path)]) == 0
    shown = err.getvalue()
    for step in ("running the program of dev", "writing", "validating every object", "checking the cluster model", "monitoring"):
        assert step in shown
    assert shown.endswith("\r\x1b[K")
    assert "\x1b" not in out.getvalue()


def test_piped_a_render_prints_the_plan_and_nothing_else(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["dev", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert captured.out.startswith((tmp_path / "plan.txt").read_text())


@pytest.mark.parametrize("compiled", [True, False])
def test_a_render_that_must_compile_the_provider_sdks_says_how_to_stop_it(monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    monkeypatch.setattr(render_main, "provider_sdks_compiled", lambda: compiled)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert ("uv sync --compile-bytecode" in render_main._loading_step("dev")) is not compiled
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # Python writes the bytecode on the first render
    assert "uv sync" not in render_main._loading_step("dev")
