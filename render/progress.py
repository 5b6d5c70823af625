"""Says which slow step a render is in, on a terminal only: piped or in CI the output is the plan alone."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

# Erase the line: each step overwrites the last, and none is left behind.
_CLEAR = "\r\x1b[K"


class Progress:
    def __init__(self, stream: TextIO, *, shown: bool) -> None:
        self.stream = stream
        self.shown = shown

    @classmethod
    def on_terminal(cls) -> Progress:
        return cls(sys.stderr, shown=sys.stdout.isatty() and sys.stderr.isatty())

    @contextmanager
    def step(self, what: str) -> Iterator[None]:
        if self.shown:
            self.stream.write(f"{_CLEAR}{what} ...")
            self.stream.flush()
        try:
            yield
        finally:
            if self.shown:
                self.stream.write(_CLEAR)
                self.stream.flush()
