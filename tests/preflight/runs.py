"""The real runs kept under tests/real_runs/: where they are and how to read them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

REAL_RUNS = Path(__file__).resolve().parent.parent / "real_runs"
DEV = REAL_RUNS / "2026-11-26-h100-dev"
BATCH = REAL_RUNS / "2026-11-26-h100-batch"
# dev again once the render put Triton's, FlashInfer's and Inductor's caches under the compile cache.
JIT_CACHES = REAL_RUNS / "2026-11-26-h100-dev-jit-caches"
RUNS = (DEV, BATCH, JIT_CACHES)


def report(run: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((run / "report.json").read_text(encoding="utf-8"))
    return loaded


def log_lines(run: Path, name: str) -> list[str]:
    return (run / name).read_text(encoding="utf-8").splitlines()


def start(run: Path, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in report(run)["starts"] if s["name"] == name)
    return found
