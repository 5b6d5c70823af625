"""Programs from ``workloads/`` shipped into the cluster, one way for all of them.

A program's files go into a ConfigMap keyed by their repository path (``/`` as ``.``: a key holds no
``/``), and a volume lays them out again at those paths under the program's root, so a pod imports
them by the names they have in this repository (the root on ``PYTHONPATH``) or runs one of them by its
path. The image stays stock; a digest of the files lets a pod template restart on new code.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPOSITORY = Path(__file__).resolve().parent.parent


def key_of(path: str) -> str:
    return path.replace("/", ".")


@dataclass(frozen=True)
class Program:
    name: str  # the ConfigMap's and the volume's
    paths: tuple[str, ...]  # repository paths, sorted
    root: str  # where the files appear in the container

    def files(self) -> dict[str, str]:
        """The ConfigMap's data: each file's text by its key."""
        return {key_of(path): (REPOSITORY / path).read_text(encoding="utf-8") for path in self.paths}

    def config_map(self, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": namespace, "labels": labels},
            "data": self.files(),
        }

    def volume(self) -> dict[str, Any]:
        items = [{"key": key_of(path), "path": path} for path in self.paths]
        return {"name": self.name, "configMap": {"name": self.name, "items": items}}

    def mount(self) -> dict[str, Any]:
        return {"name": self.name, "mountPath": self.root, "readOnly": True}

    def path_of(self, path: str) -> str:
        """Where the repository file ``path`` is in the container."""
        assert path in self.paths, f"{path} is not shipped with {self.name}"
        return f"{self.root}/{path}"

    def digest(self) -> str:
        """Changes with any file: a pod template that carries it restarts on new code."""
        digest = hashlib.sha256()
        for name, text in sorted(self.files().items()):
            digest.update(f"{name}\0{text}\0".encode())
        return digest.hexdigest()[:16]


def program(name: str, patterns: tuple[str, ...], root: str) -> Program:
    """The files matching ``patterns`` (globs relative to the repository root)."""
    paths = sorted({path.relative_to(REPOSITORY).as_posix() for pattern in patterns for path in REPOSITORY.glob(pattern)})
    if not paths:
        raise ValueError(f"{name}: no file matches {patterns}")
    return Program(name, tuple(paths), root)
