"""The JIT and compile caches an engine start writes, where each lives, and which a second start reused.

Each start runs with its own home and temporary folder (``adapt``'s isolated variables) beside the
stack's compile cache (``VLLM_CACHE_ROOT``, a bucket in the pod), so every file a start writes lands
under one of three roots and can be counted, kept or dropped as a new pod would.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What a start keeps from the one before: a new pod on a new node keeps only the shared compile cache.
KEEP = {
    "cold": (),
    "compile-cache": ("compile cache",),
    "all-caches": ("compile cache", "home", "tmp"),
}


@dataclass(frozen=True)
class CacheDir:
    name: str
    variable: str
    default: str
    source: str


# Where each compiler of the engine keeps its cache, read from the sources of the releases that run here.
CACHE_DIRS: tuple[CacheDir, ...] = (
    CacheDir(
        "vLLM compile cache",
        "VLLM_CACHE_ROOT",
        "~/.cache/vllm (or $XDG_CACHE_HOME/vllm)",
        "vllm/envs.py (0.26.0); torch.compile under torch_compile_cache/, FlashInfer autotune results under flashinfer_autotune_cache/",
    ),
    CacheDir(
        "Inductor",
        "TORCHINDUCTOR_CACHE_DIR",
        "$TMPDIR/torchinductor_<user>",
        "vllm/compilation/decorators.py and compiler_interface.py (0.26.0) point it under VLLM_CACHE_ROOT for the graphs they compile",
    ),
    CacheDir(
        "Triton",
        "TRITON_CACHE_DIR",
        "~/.triton/cache",
        "triton/knobs.py (3.6.0): TRITON_CACHE_DIR, else $TRITON_HOME/.triton/cache, TRITON_HOME defaulting to the home folder; "
        "vLLM points it under VLLM_CACHE_ROOT only where Inductor compiles "
        "(vllm/compilation/compiler_interface.py), so kernels compiled outside torch.compile land in the home folder",
    ),
    CacheDir(
        "FlashInfer JIT",
        "FLASHINFER_WORKSPACE_BASE",
        "~ (then .cache/flashinfer/<version>/<arch>/cached_ops)",
        "flashinfer/jit/env.py (0.6.14); prebuilt kernels come from the flashinfer-jit-cache and flashinfer-cubin packages when installed",
    ),
    CacheDir("DeepGEMM JIT", "DG_JIT_CACHE_DIR", "$VLLM_CACHE_ROOT/deep_gemm", "vllm/utils/deep_gemm.py (0.26.0)"),
    CacheDir("CUDA driver JIT (PTX)", "CUDA_CACHE_PATH", "~/.nv/ComputeCache", "CUDA's programming guide, JIT caching"),
)


def inventory(root: Path, depth: int = 2) -> dict[str, list[int]]:
    """Folder (relative, ``depth`` levels down) -> [files, bytes] of everything under ``root``."""
    found: dict[str, list[int]] = {}
    if not root.is_dir():
        return found
    for path in root.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        parts = path.relative_to(root).parts
        key = "/".join(parts[: min(depth, len(parts) - 1)]) or "."
        entry = found.setdefault(key, [0, 0])
        entry[0] += 1
        entry[1] += path.stat().st_size
    return dict(sorted(found.items()))


def written(before: Mapping[str, list[int]], after: Mapping[str, list[int]]) -> dict[str, list[int]]:
    """Folders whose files grew between two inventories: [new files, new bytes]."""
    grown = {}
    for key, (files, size) in after.items():
        old_files, old_size = before.get(key, [0, 0])
        if files > old_files or size > old_size:
            grown[key] = [files - old_files, size - old_size]
    return grown


def prepare_start(roots: Mapping[str, Path], mode: str) -> list[str]:
    """Empties the roots a start of ``mode`` does not keep; returns their names."""
    if mode not in KEEP:
        raise ValueError(f"unknown start {mode!r}; one of {', '.join(KEEP)}")
    dropped = []
    for name, root in roots.items():
        if name in KEEP[mode]:
            continue
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
        dropped.append(name)
    return dropped


def summary(starts: list[dict[str, Any]]) -> dict[str, Any]:
    """Per cache folder: written by the first start, and whether a later start wrote it again (a miss) or not (a hit)."""
    if not starts:
        return {}
    first = starts[0].get("caches", {})
    table: dict[str, Any] = {}
    for root, folders in first.items():
        for folder, (files, size) in folders.get("written", {}).items():
            row = {"root": root, "folder": folder, "cold_files": files, "cold_bytes": size}
            for later in starts[1:]:
                # New files mean a compile the kept cache did not save; a file rewritten in place is not one.
                again = later.get("caches", {}).get(root, {}).get("written", {}).get(folder, [0, 0])[0]
                row[later["name"]] = f"written again ({again} files)" if again else "reused"
            table[f"{root}:{folder}"] = row
    return table
