"""Collects what the stack config is checked against from vLLM's own source.

Usage: ``python tools/vllm_facts.py <extracted vllm sdist> <sdist url> <sha256> > stacks/data/vllm.yaml``

Reads the source with ``ast`` (vLLM is not imported; it needs a GPU stack):
- the flags of ``vllm serve`` (and ``-O``, which vLLM's parser maps to
  ``--optimization-level``): every option string passed to ``add_argument`` in
  ``engine/arg_utils.py``, ``entrypoints/openai/cli_args.py`` and
  ``entrypoints/cli/serve.py``, and the ``--<field>`` of each FrontendArgs
  field; a flag whose EngineArgs/FrontendArgs field is a ``bool`` also takes
  ``--no-<flag>`` (``argparse.BooleanOptionalAction``, see ``get_kwargs``);
- the attention backends (members of ``AttentionBackendEnum``) and the mamba
  cache modes (the ``MambaCacheMode`` literal);
- the Prometheus metrics the engine exports (``name="vllm:..."``) with their kind.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

FLAG_FILES = ("engine/arg_utils.py", "entrypoints/openai/cli_args.py", "entrypoints/cli/serve.py")
FIELD_CLASSES = {
    "engine/arg_utils.py": ("EngineArgs", "AsyncEngineArgs"),
    "entrypoints/openai/cli_args.py": ("BaseFrontendArgs", "FrontendArgs"),
}


def _tree(root: Path, path: str) -> ast.Module:
    return ast.parse((root / path).read_text())


def _fields(tree: ast.Module, classes: tuple[str, ...]) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    found[item.target.id] = ast.unparse(item.annotation)
    return found


def serve_flags(root: Path) -> list[str]:
    flags: set[str] = set()
    fields: dict[str, str] = {}
    for path in FLAG_FILES:
        tree = _tree(root, path)
        fields |= _fields(tree, FIELD_CLASSES.get(path, ()))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
                strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                flags |= {value for value in strings if value.startswith("-")}
    frontend = _fields(_tree(root, "entrypoints/openai/cli_args.py"), FIELD_CLASSES["entrypoints/openai/cli_args.py"])
    flags |= {"--" + name.replace("_", "-") for name in frontend}
    negated = {"--no-" + flag[2:] for flag in flags if flag.startswith("--") and _is_bool(fields.get(flag[2:].replace("-", "_"), ""))}
    # FlexibleArgumentParser turns -O<level> and -O <level> into --optimization-level (utils/argparse_utils.py).
    return sorted(flags | negated | {"-O"})


def _is_bool(annotation: str) -> bool:
    return "bool" in {part.strip() for part in annotation.replace("Optional[", "").replace("]", "").split("|")}


def attention_backends(root: Path) -> list[str]:
    tree = _tree(root, "v1/attention/backends/registry.py")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "AttentionBackendEnum":
            return [t.id for item in node.body if isinstance(item, ast.Assign) for t in item.targets if isinstance(t, ast.Name)]
    raise SystemExit("AttentionBackendEnum not found")


def mamba_cache_modes(root: Path) -> list[str]:
    tree = _tree(root, "config/cache.py")
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MambaCacheMode" for t in node.targets):
            return [e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    raise SystemExit("MambaCacheMode not found")


def metrics(root: Path) -> list[str]:
    """``name kind`` of each metric: the kind from the constructor (``_counter_cls``, ``_gauge_cls``, ...)."""
    found: set[str] = set()
    for path in (root / "v1").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            callee = ast.unparse(node.func).lower()
            kind = next((k for k in ("counter", "gauge", "histogram") if k in callee), None)
            for keyword in node.keywords:
                value = keyword.value.value if isinstance(keyword.value, ast.Constant) else None
                if kind and keyword.arg == "name" and isinstance(value, str) and value.startswith("vllm:"):
                    found.add(f"{value} {kind}")
    return sorted(found)


def main(source: str, url: str, sha256: str) -> None:
    root = Path(source) / "vllm"
    print("# Facts of vLLM 0.18.1, read from its source distribution by tools/vllm_facts.py (Apache-2.0).")
    print(f"# Source: {url}")
    print(f"# sha256: {sha256}")
    for key, values in (
        ("serveFlags", serve_flags(root)),
        ("attentionBackends", attention_backends(root)),
        ("mambaCacheModes", mamba_cache_modes(root)),
        ("metrics", metrics(root)),
    ):
        print(f"{key}:")
        print("\n".join(f"  - {value!r}" if value.startswith("-") else f"  - {value}" for value in values))


if __name__ == "__main__":
    main(*sys.argv[1:4])
