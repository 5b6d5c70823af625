"""The progress line on a stream made by hand: each step overwrites the last and clears itself, and nothing shows off a terminal."""

from __future__ import annotations

import io
import sys

import pytest

from render.progress import Progress

CLEAR = "\r\x1b[K"  # carriage return, then ANSI "erase in line" (ECMA-48 EL)


class Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty
        self.flushes = 0

    def isatty(self) -> bool:
        return self.tty

    def flush(self) -> None:
        self.flushes += 1


def test_a_shown_step_says_what_it_does_then_clears_the_line_even_when_it_fails() -> None:
    stream = Terminal(tty=True)
    progress = Progress(stream, shown=True)
    with progress.step("loading"):
        assert stream.getvalue() == f"{CLEAR}loading ..." and stream.flushes == 1
    assert stream.getvalue() == f"{CLEAR}loading ...{CLEAR}" and stream.flushes == 2
    with pytest.raises(RuntimeError), progress.step("rendering"):
        raise RuntimeError("boom")
    assert stream.getvalue().endswith(f"{CLEAR}rendering ...{CLEAR}") and stream.flushes == 4


def test_a_hidden_step_writes_nothing() -> None:
    stream = Terminal(tty=False)
    with Progress(stream, shown=False).step("loading"):
        pass
    assert stream.getvalue() == "" and stream.flushes == 0


@pytest.mark.parametrize(("stdout", "stderr", "shown"), [(True, True, True), (True, False, False), (False, True, False)])
def test_progress_shows_on_stderr_only_when_both_streams_are_a_terminal(
    monkeypatch: pytest.MonkeyPatch, stdout: bool, stderr: bool, shown: bool
) -> None:
    err = Terminal(stderr)
    monkeypatch.setattr(sys, "stdout", Terminal(stdout))
    monkeypatch.setattr(sys, "stderr", err)
    progress = Progress.on_terminal()
    assert progress.shown is shown and progress.stream is err
