"""``python -m render``: the offline render of ``render/cli.py`` in this process."""

from __future__ import annotations

import atexit
import gc
import sys


def main(argv: list[str]) -> int:
    # A render is one short process that loads millions of long-lived objects (the provider SDKs' classes)
    # and makes few reference cycles: the cyclic collector's repeated scans of them cost about half its CPU,
    # and the interpreter's last collection at exit scans them again unless frozen (docs/reference.md).
    gc.disable()
    atexit.register(gc.freeze)
    from render.cli import run

    return run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
