"""On a terminal, the render says what it is doing from its first slow step: loading its checks."""

from __future__ import annotations

import os
import subprocess
import sys

from render.engine import PROJECT_ROOT


def on_a_terminal(*args: str) -> str:
    """What ``python -m render <args>`` shows on a terminal (a pseudo-terminal for stdout and stderr)."""
    leader, follower = os.openpty()
    try:
        process = subprocess.Popen([sys.executable, "-m", "render", *args], cwd=PROJECT_ROOT, stdout=follower, stderr=follower)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            shown += chunk
        process.wait()
    finally:
        os.close(leader)
    return shown.decode()


def test_the_render_says_it_is_loading_its_checks_before_anything_else() -> None:
    shown = on_a_terminal("--help")
    assert shown.startswith("\r\x1b[Kloading"), shown[:200]
    assert "usage: python -m render" in shown
