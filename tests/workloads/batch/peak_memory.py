"""``python -m tests.workloads.batch.peak_memory BUCKET SERVING_URL KUBERNETES_URL PART_LINES``: runs the batch runner
once in this process, then prints its peak resident memory in bytes.

The peak is Linux's ``VmHWM``, which starts afresh at exec: ``ru_maxrss`` keeps the parent's peak across
fork and exec (getrusage(2)), so it would report the test process that built the input.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.workloads.batch.conftest import run_runner


def peak_resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # reported in kB
    raise RuntimeError("no VmHWM in /proc/self/status: the peak memory test needs Linux")


def main(bucket: str, serving_url: str, kubernetes_url: str, part_lines: str) -> None:
    run_runner(bucket, serving_url, kubernetes_url, part_lines=int(part_lines))
    print(peak_resident_bytes())


if __name__ == "__main__":
    main(*sys.argv[1:])
