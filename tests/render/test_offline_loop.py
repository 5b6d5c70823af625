"""The offline loop: what a render shows on a terminal, and an install that keeps renders fast."""

from __future__ import annotations

import io
import sys
import tomllib
from pathlib import Path

import pytest

from render.__main__ import main
from render.engine import PROJECT_ROOT


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


def test_the_install_compiles_bytecode_so_no_render_compiles_the_provider_sdks() -> None:
    uv = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["tool"]["uv"]
    assert uv.get("compile-bytecode") is True
