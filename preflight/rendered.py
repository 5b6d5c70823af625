"""What the preflight reads from a stack's offline render (``build/<stack>/``, written by ``python -m render``).

The vLLM container of the serving Deployment (its command, arguments, environment, port, mounts,
preStop and grace period) and the PromQL of the stack's alerts, scaler triggers and dashboard.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# vLLM's metric names as PromQL reads them; a name may hold colons (``vllm:num_requests_running``).
VLLM_SERIES = re.compile(r"\bvllm:[A-Za-z_][A-Za-z0-9_:]*")
# The file the preflight's preparation writes beside the render (the benchmark client, the model id).
PREPARED_FILE = "preflight.json"


class RenderReadError(ValueError):
    """The render output lacks what the preflight needs."""


@dataclass(frozen=True)
class Mount:
    path: str
    volume: str
    kind: str
    read_only: bool


@dataclass(frozen=True)
class EngineSpec:
    """The vLLM container of the stack's serving Deployment, as rendered."""

    deployment: str
    container: str
    image: str
    # Everything before the model argument: ``vllm serve`` in the stack's image.
    launcher: tuple[str, ...]
    model_path: str
    # The flags after the model, in order.
    flags: tuple[str, ...]
    env: dict[str, str]
    # Variables whose value comes from a secret or a field: absent from the render's text.
    env_from_refs: tuple[str, ...]
    port: int
    mounts: tuple[Mount, ...]
    gpus: int
    grace_seconds: int
    prestop_sleep_seconds: float
    probes: dict[str, dict[str, Any]] = field(default_factory=dict)
    shm_bytes: int | None = None

    def flag(self, name: str) -> str | None:
        return flag_value(self.flags, name)

    @property
    def served_name(self) -> str:
        return self.flag("--served-model-name") or self.model_path

    @property
    def shutdown_timeout(self) -> float | None:
        value = self.flag("--shutdown-timeout")
        return None if value is None else float(value)


def flag_value(flags: Sequence[str], name: str) -> str | None:
    """The value of ``name`` given as ``--name=value`` or ``--name value``; the last one wins, as in argparse."""
    found: str | None = None
    for index, arg in enumerate(flags):
        if arg.startswith(name + "="):
            found = arg.split("=", 1)[1]
        elif arg == name and index + 1 < len(flags) and not flags[index + 1].startswith("-"):
            found = flags[index + 1]
        elif arg == name:
            found = ""
    return found


def flag_names(flags: Iterable[str]) -> list[str]:
    """The option names among ``flags``: ``--x=1`` gives ``--x``, ``-O3`` gives ``-O`` (vLLM maps it to --optimization-level)."""
    names = []
    for arg in flags:
        if arg.startswith("--"):
            names.append(arg.split("=", 1)[0])
        elif re.fullmatch(r"-O\d?", arg):
            names.append("-O")
        elif arg.startswith("-") and len(arg) > 1 and not arg[1].isdigit():
            names.append(arg)
    return names


def _quantity_bytes(text: str) -> int | None:
    match = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", text)
    if match is None:
        return None
    scale = {None: 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[match[2]]
    return int(match[1]) * scale


def _serve_index(words: Sequence[str]) -> int | None:
    """Index of ``serve`` in ``vllm serve ...`` or ``python -m vllm.entrypoints.cli.main serve ...``."""
    for index, word in enumerate(words[:-1]):
        if word == "serve" and any(w.endswith("vllm") or w.startswith("vllm.") for w in words[:index]):
            return index
    return None


def engine_container(deployment: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The container of ``deployment`` that runs ``vllm serve``, or None."""
    for container in deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []):
        words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        if _serve_index(words) is not None:
            return dict(container)
    return None


def engine_spec(deployment: Mapping[str, Any]) -> EngineSpec:
    """The vLLM container of a rendered Deployment; raises ``RenderReadError`` when it runs none."""
    container = engine_container(deployment)
    name = deployment.get("metadata", {}).get("name", "?")
    if container is None:
        raise RenderReadError(f"Deployment {name} runs no `vllm serve` container")
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    serve = _serve_index(words)
    assert serve is not None
    rest = words[serve + 1 :]
    if rest and not rest[0].startswith("-"):
        model, flags = rest[0], tuple(rest[1:])
    else:
        model, flags = flag_value(rest, "--model") or "", tuple(rest)
    env: dict[str, str] = {}
    refs: list[str] = []
    for item in container.get("env") or []:
        if "value" in item:
            env[str(item["name"])] = str(item["value"])
        else:
            refs.append(str(item["name"]))
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod.get("volumes") or []}
    mounts = []
    for mount in container.get("volumeMounts") or []:
        volume = volumes.get(mount["name"], {})
        kind = next((k for k in volume if k != "name"), "unknown")
        mounts.append(Mount(str(mount["mountPath"]), str(mount["name"]), kind, bool(mount.get("readOnly", False))))
    shm = next((v for v in volumes.values() if v.get("emptyDir", {}).get("medium") == "Memory"), None)
    ports = [p for p in container.get("ports") or [] if p.get("containerPort")]
    port = int(flag_value(flags, "--port") or (ports[0]["containerPort"] if ports else 8000))
    limits = (container.get("resources") or {}).get("limits") or {}
    sleep = ((container.get("lifecycle") or {}).get("preStop") or {}).get("sleep") or {}
    return EngineSpec(
        deployment=str(name),
        container=str(container.get("name", "")),
        image=str(container.get("image", "")),
        launcher=tuple(words[: serve + 1]),
        model_path=model,
        flags=flags,
        env=env,
        env_from_refs=tuple(refs),
        port=port,
        mounts=tuple(mounts),
        gpus=int(limits.get("nvidia.com/gpu", 0)),
        # Kubernetes' default when the pod names none.
        grace_seconds=int(pod.get("terminationGracePeriodSeconds", 30)),
        prestop_sleep_seconds=float(sleep.get("seconds", 0)),
        probes={kind: dict(container[kind]) for kind in ("startupProbe", "readinessProbe", "livenessProbe") if kind in container},
        shm_bytes=_quantity_bytes(str(shm["emptyDir"].get("sizeLimit", ""))) if shm else None,
    )


def _load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def read_engine(folder: Path, deployment: str | None = None) -> EngineSpec:
    """The engine of the render in ``folder`` (``build/<stack>``): the one Deployment that runs ``vllm serve``, or
    with several models the one named ``deployment``."""
    found = []
    for path in sorted((folder / "kubernetes").glob("*.deployment.*.yaml")):
        document = _load_yaml(path)
        if isinstance(document, dict) and engine_container(document) is not None:
            found.append(document)
    if deployment is not None:
        found = [document for document in found if document.get("metadata", {}).get("name") == deployment]
    if len(found) != 1:
        raise RenderReadError(
            f"{folder}: expected one Deployment running `vllm serve`, found {len(found)}; render the stack first: python -m render <stack>"
        )
    return engine_spec(found[0])


def queries(folder: Path) -> list[tuple[str, str]]:
    """(where, PromQL) of every query in the render: alert conditions, scaler triggers, dashboard charts."""
    found: list[tuple[str, str]] = []
    for path in sorted((folder / "cloud").glob("AlertPolicy.*.yaml")):
        policy = _load_yaml(path)
        name = path.name.removeprefix("AlertPolicy.").removesuffix(".yaml")
        for condition in policy.get("conditions") or []:
            query = (condition.get("conditionPrometheusQueryLanguage") or {}).get("query")
            if query:
                found.append((f"alert {name}", str(query)))
    for path in sorted((folder / "kubernetes").glob("*.scaledobject.*.yaml")):
        scaler = _load_yaml(path)
        for trigger in scaler.get("spec", {}).get("triggers") or []:
            if trigger.get("type") == "prometheus":
                found.append((f"scaler {scaler['metadata']['name']} trigger {trigger.get('name')}", str(trigger["metadata"]["query"])))
    board = folder / "monitoring" / "dashboard.json"
    if board.exists():
        layout = json.loads(board.read_text(encoding="utf-8"))
        for tile in layout.get("mosaicLayout", {}).get("tiles", []):
            widget = tile.get("widget", {})
            for data in widget.get("xyChart", {}).get("dataSets", []):
                query = data.get("timeSeriesQuery", {}).get("prometheusQuery")
                if query:
                    found.append((f"dashboard chart {widget.get('title')!r}", str(query)))
    return found


def vllm_reads(found: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """vLLM series name -> where the stack reads it, from (where, PromQL) pairs."""
    reads: dict[str, list[str]] = {}
    for where, query in found:
        for name in sorted(set(VLLM_SERIES.findall(query))):
            reads.setdefault(name, [])
            if where not in reads[name]:
                reads[name].append(where)
    return dict(sorted(reads.items()))


def read_prepared(folder: Path) -> dict[str, Any]:
    """What ``python -m preflight <stack> --prepare`` wrote beside the render; empty when it never ran."""
    path = folder / PREPARED_FILE
    if not path.exists():
        return {}
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded
