"""``python -m render``: hands the render to the resident renderer when one answers, else renders here.

Imports nothing heavy before that choice: a render the resident process runs costs this process only its start.
"""

from __future__ import annotations

import atexit
import gc
import sys

from render import resident


def main(argv: list[str]) -> int:
    code = resident.forward(argv)
    if code is not None:
        return code
    # A render is one short process that loads millions of long-lived objects (the provider SDKs' classes)
    # and makes few reference cycles: the cyclic collector's repeated scans of them cost about half its CPU,
    # and the interpreter's last collection at exit scans them again unless frozen (docs/reference.md).
    gc.disable()
    atexit.register(gc.freeze)
    from render.cli import run

    code = run(argv)
    if code == 0 and resident.start(sys.modules) and sys.stderr.isatty():
        print(
            f"a resident renderer now keeps the SDKs loaded for the next renders ({resident.IDLE_SECONDS // 60} min;"
            " RENDER_RESIDENT=0 turns it off, docs/reference.md)",
            file=sys.stderr,
        )
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
