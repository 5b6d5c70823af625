"""Collects what the stack config is checked against from one vLLM release's own source.

Usage: ``python dev/vllm_facts.py <extracted vllm sdist> <sdist url> <sha256> > facts/data/vllm/<version>.yaml``

Reads the source with ``ast`` (vLLM is not imported; it needs a GPU stack):
- the release and the commit it was built from (``vllm/_version.py``, written by
  the build from git);
- the flags of ``vllm serve`` (and ``-O``, which vLLM's parser maps to
  ``--optimization-level``): every option string passed to ``add_argument`` in
  ``engine/arg_utils.py``, the module of ``FrontendArgs`` and
  ``entrypoints/cli/serve.py``, and the ``--<field>`` of each FrontendArgs
  field; a flag whose EngineArgs/FrontendArgs field is a ``bool`` also takes
  ``--no-<flag>`` (``argparse.BooleanOptionalAction``, see ``get_kwargs``),
  except ``bool | str | None`` fields where ``get_kwargs`` makes them
  optional-valued instead;
- the flags whose help is a deprecation message (still parsed, maybe ignored);
- the choices of the flags the program sets from a closed set: the KV-cache
  dtypes (``CacheDType``), the attention backends (members of
  ``AttentionBackendEnum``) and the mamba cache modes (``MambaCacheMode``);
- the Prometheus metrics the engine exports (``name="vllm:..."``) with their
  kind, and each histogram's default buckets where the source fixes them;
- the flags of ``vllm bench serve`` (``benchmarks/serve.py`` and the dataset
  parser), the literal choices among them and the ``--backend`` names;
- the environment variables ``envs.py`` reads as numbers: ``bool-int`` when
  its getter is ``bool(int(value))`` (``"true"`` fails), ``int`` or ``float``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path
from typing import Any

import yaml

FIELD_CLASSES = ("EngineArgs", "AsyncEngineArgs", "BaseFrontendArgs", "FrontendArgs")
# get_kwargs gives such a field a bare-flag-or-value form, not --no- (vLLM 0.2x and later).
OPTIONAL_VALUED = "type_hints == {bool, str, type(None)}"


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _defining(root: Path, pattern: str, class_name: str) -> Path:
    """The one module under ``root`` matching ``pattern`` that defines ``class_name``."""
    for path in sorted(root.glob(pattern)):
        if any(isinstance(node, ast.ClassDef) and node.name == class_name for node in ast.walk(_tree(path))):
            return path
    raise SystemExit(f"{class_name} not found in {pattern}")


def _fields(tree: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in FIELD_CLASSES:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    found[item.target.id] = ast.unparse(item.annotation)
    return found


def _arguments(tree: ast.Module) -> list[ast.Call]:
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"
    ]


def _options(call: ast.Call) -> list[str]:
    return [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("-")]


def version(root: Path) -> tuple[str, str]:
    """The release and the short commit (``g`` prefix dropped) ``_version.py`` records."""
    values: dict[str, str] = {}
    for node in ast.walk(_tree(root / "_version.py")):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            values |= {t.id: node.value.value for t in node.targets if isinstance(t, ast.Name)}
    return values["version"], values["commit_id"].removeprefix("g")


def serve_flags(root: Path) -> list[str]:
    engine = root / "engine/arg_utils.py"
    frontend = _defining(root, "entrypoints/*/cli_args.py", "FrontendArgs")
    flags: set[str] = set()
    fields: dict[str, str] = {}
    for path in (engine, frontend, root / "entrypoints/cli/serve.py"):
        tree = _tree(path)
        fields |= _fields(tree)
        flags |= {option for call in _arguments(tree) for option in _options(call)}
    flags |= {"--" + name.replace("_", "-") for name in _fields(_tree(frontend))}
    optional_valued = OPTIONAL_VALUED in engine.read_text()

    def negatable(flag: str) -> bool:
        parts = _union(fields.get(flag[2:].replace("-", "_"), ""))
        return "bool" in parts and not (optional_valued and "str" in parts)

    negated = {"--no-" + flag[2:] for flag in flags if flag.startswith("--") and negatable(flag)}
    # FlexibleArgumentParser turns -O<level> and -O <level> into --optimization-level (utils/argparse_utils.py).
    return sorted(flags | negated | {"-O"})


def deprecated_serve_flags(root: Path) -> dict[str, str]:
    """Flag -> the deprecation message its ``add_argument`` gives as help (``_..._DEPRECATION_MESSAGE``)."""
    tree = _tree(root / "engine/arg_utils.py")
    names = _assignments(tree)
    found: dict[str, str] = {}
    for call in _arguments(tree):
        for node in ast.walk(call):
            if isinstance(node, ast.Name) and node.id.endswith("_DEPRECATION_MESSAGE") and _options(call):
                found[_options(call)[0]] = str(ast.literal_eval(names[node.id]))
    return dict(sorted(found.items()))


def _union(annotation: str) -> set[str]:
    return {part.strip() for part in annotation.replace("Optional[", "").replace("]", "").split("|")}


def attention_backends(root: Path) -> list[str]:
    tree = _tree(root / "v1/attention/backends/registry.py")
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "AttentionBackendEnum":
            return [t.id for item in node.body if isinstance(item, ast.Assign) for t in item.targets if isinstance(t, ast.Name)]
    raise SystemExit("AttentionBackendEnum not found")


def _literal(root: Path, path: str, name: str) -> list[str]:
    """The strings of the ``Literal`` alias ``name`` in ``path``."""
    for node in ast.walk(_tree(root / path)):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return [e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    raise SystemExit(f"{name} not found in {path}")


def _assignments(tree: ast.Module) -> dict[str, ast.expr]:
    """Name -> the value first assigned to it anywhere in the module."""
    found: dict[str, ast.expr] = {}
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        value = getattr(node, "value", None)
        for target in targets:
            if isinstance(target, ast.Name) and value is not None:
                found.setdefault(target.id, value)
    return found


def _family_defaults(root: Path) -> dict[str, list[float]]:
    """Bucket family -> default buckets, from ``v1/metrics/buckets.py`` (releases that have it)."""
    path = root / "v1/metrics/buckets.py"
    if not path.exists():
        return {}
    names = _assignments(_tree(path))
    table = names.get("_STATIC_FAMILY_DEFAULTS")
    if not isinstance(table, ast.Dict):
        raise SystemExit("_STATIC_FAMILY_DEFAULTS not found")
    return {
        ast.literal_eval(key): list(ast.literal_eval(names[value.id]))
        for key, value in zip(table.keys, table.values, strict=True)
        if key is not None and isinstance(value, ast.Name)
    }


def _buckets(value: ast.expr, names: dict[str, ast.expr], families: dict[str, list[float]]) -> list[float] | None:
    """The buckets ``value`` fixes: a literal list, a name bound to one, or a family's defaults; None when computed."""
    if isinstance(value, ast.Name) and value.id in names:
        return _buckets(names[value.id], names, families)
    if isinstance(value, ast.List | ast.Tuple):
        try:
            return [float(bound) for bound in ast.literal_eval(value)]
        except ValueError:
            return None
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "histogram_buckets" and value.args:
        family = value.args[0]
        if isinstance(family, ast.Constant) and family.value in families:
            return [float(bound) for bound in families[family.value]]
    return None


def metrics(root: Path) -> tuple[list[str], dict[str, list[float]]]:
    """``name kind`` of each metric (the kind from its constructor), and each histogram's fixed buckets."""
    found: set[str] = set()
    buckets: dict[str, list[float]] = {}
    families = _family_defaults(root)
    for path in sorted((root / "v1").rglob("*.py")):
        tree = _tree(path)
        names = _assignments(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            callee = ast.unparse(node.func).lower()
            kind = next((k for k in ("counter", "gauge", "histogram") if k in callee), None)
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            if kind is None or "name" not in keywords:
                continue
            for name in _metric_names(keywords["name"], tree):
                found.add(f"{name} {kind}")
                fixed = _buckets(keywords["buckets"], names, families) if "buckets" in keywords else None
                if kind == "histogram" and fixed is not None:
                    buckets[name] = fixed
    return sorted(found), dict(sorted(buckets.items()))


def _metric_names(value: ast.expr, tree: ast.Module) -> list[str]:
    """``vllm:`` names a constructor's ``name=`` takes: a string, or the loop variable over (name, doc) tables."""
    if isinstance(value, ast.Constant):
        return [str(value.value)] if str(value.value).startswith("vllm:") else []
    if not isinstance(value, ast.Name):
        return []
    # for name, doc in counter_specs: the tables are every list assigned to counter_specs.
    tables = {
        generator.iter.id
        for generator in ast.walk(tree)
        if isinstance(generator, ast.comprehension | ast.For)
        and isinstance(generator.target, ast.Tuple)
        and isinstance(generator.target.elts[0], ast.Name)
        and generator.target.elts[0].id == value.id
        and isinstance(generator.iter, ast.Name)
    }
    return [
        str(row.elts[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in tables for t in node.targets)
        for row in ast.walk(node.value)
        if isinstance(row, ast.Tuple) and row.elts and isinstance(row.elts[0], ast.Constant) and str(row.elts[0].value).startswith("vllm:")
    ]


def bench_serve(root: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The flags of ``vllm bench serve`` and, for each flag with literal choices, those choices."""
    datasets = root / "benchmarks/datasets"
    paths = [root / "benchmarks/serve.py", *(sorted(datasets.glob("*.py")) if datasets.is_dir() else [root / "benchmarks/datasets.py"])]
    flags: set[str] = set()
    choices: dict[str, list[str]] = {}
    for path in paths:
        for call in _arguments(_tree(path)):
            options = _options(call)
            flags |= set(options)
            given = next((k.value for k in call.keywords if k.arg == "choices"), None)
            if options and isinstance(given, ast.List | ast.Tuple) and all(isinstance(e, ast.Constant) for e in given.elts):
                choices[options[0]] = [str(ast.literal_eval(e)) for e in given.elts]
    backends = _assignments(_tree(root / "benchmarks/lib/endpoint_request_func.py")).get("ASYNC_REQUEST_FUNCS")
    if not isinstance(backends, ast.Dict):
        raise SystemExit("ASYNC_REQUEST_FUNCS not found")
    choices["--backend"] = [str(ast.literal_eval(key)) for key in backends.keys if key is not None]
    return sorted(flags), dict(sorted(choices.items()))


_CHOICE_HELPERS = {"env_with_choices", "env_list_with_choices", "env_set_with_choices"}


def _conversion(node: ast.AST, functions: dict[str, ast.FunctionDef]) -> str | None:
    """How a getter turns the variable's text into a value: ``bool-int``, ``int``, ``float``, or None (text)."""
    found: set[str] = set()
    for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
        name = call.func.id if isinstance(call.func, ast.Name) else None
        inner = call.args[0] if call.args else None
        inner_name = inner.func.id if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) else None
        if (name == "bool" and inner_name == "int") or name == "maybe_convert_bool":
            found.add("bool-int")
        elif name in ("int", "maybe_convert_int"):
            found.add("int")
        elif name == "float":
            found.add("float")
        elif name in functions and name not in _CHOICE_HELPERS:
            kind = _conversion(functions[name], {k: v for k, v in functions.items() if k != name})
            found |= {kind} if kind else set()
    return next((kind for kind in ("bool-int", "int", "float") if kind in found), None)


def env_numbers(root: Path) -> dict[str, str]:
    """Variable -> how ``envs.py`` reads it as a number, for those it reads as one."""
    tree = _tree(root / "envs.py")
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    table = _assignments(tree)["environment_variables"]
    assert isinstance(table, ast.Dict)
    found = {}
    for key, value in zip(table.keys, table.values, strict=True):
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            getter = functions.get(value.id, value) if isinstance(value, ast.Name) else value
            if kind := _conversion(getter, functions):
                found[key.value] = kind
    return dict(sorted(found.items()))


def facts(source: Path, url: str, sha256: str) -> dict[str, Any]:
    root = source / "vllm"
    release, commit = version(root)
    metric_kinds, buckets = metrics(root)
    bench_flags, bench_choices = bench_serve(root)
    return {
        "version": release,
        "tag": f"v{release}",
        "commit": commit,
        "source": url,
        "sha256": sha256,
        "serveFlags": serve_flags(root),
        "deprecatedServeFlags": deprecated_serve_flags(root),
        "kvCacheDtypes": _literal(root, "config/cache.py", "CacheDType"),
        "attentionBackends": attention_backends(root),
        "mambaCacheModes": _literal(root, "config/cache.py", "MambaCacheMode"),
        "metrics": metric_kinds,
        "histogramBuckets": buckets,
        "benchServeFlags": bench_flags,
        "benchServeChoices": bench_choices,
        "envNumbers": env_numbers(root),
    }


def main(source: str, url: str, sha256: str) -> None:
    found = facts(Path(source), url, sha256)
    print(f"# Facts of vLLM {found['tag']} (commit {found['commit']}), read from its source distribution")
    print("# by dev/vllm_facts.py (vLLM is Apache-2.0). Regenerate; do not edit.")
    print(yaml.safe_dump(found, sort_keys=False, width=200), end="")


if __name__ == "__main__":
    main(*sys.argv[1:4])
