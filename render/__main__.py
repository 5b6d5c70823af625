"""``python -m render``: the offline render (render/cli.py)."""

from __future__ import annotations

import sys

from render.cli import run

if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
