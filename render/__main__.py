"""``python -m render``: the offline render (render/cli.py), with the cyclic garbage collector off.

A render is one short process that loads millions of long-lived objects (the provider SDKs' classes) and makes
few reference cycles: the collector's repeated scans of them, and its last collection at exit unless they are
frozen, took half of a warm render's time (docs/testing.md, "What a render and the suite cost").
"""

from __future__ import annotations

import atexit
import gc
import sys

if __name__ == "__main__":
    gc.disable()
    atexit.register(gc.freeze)
    from render.cli import run

    sys.exit(run(sys.argv[1:]))
