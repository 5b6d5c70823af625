"""What one engine start printed, line by line, beside what the project's cold-start parser makes of it.

The preflight writes each line of the engine's output prefixed with its arrival time in RFC 3339, as
``kubectl logs --timestamps`` does, so ``workloads.cold_start.phases`` reads it as it would read a pod's log.
Every pattern below is quoted from vLLM 0.26.0 (sdist sha256 23e9fa19..., facts/data/vllm/0.26.0.yaml).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from workloads.cold_start.phases import Breakdown, MeasureError, read_log

STAMP = re.compile(r"^(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z) ")

# (key, pattern, source): the figures a start prints.
FIGURES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("weights", re.compile(r"Loading weights took (?P<s>[\d.]+) seconds"), "model_executor/model_loader/default_loader.py"),
    (
        "model loading",
        re.compile(r"Model loading took (?P<gib>[\d.]+) GiB(?: memory)? and (?P<s>[\d.]+) seconds"),
        "v1/worker/gpu_model_runner.py",
    ),
    ("dynamo transform", re.compile(r"Dynamo bytecode transform time: (?P<s>[\d.]+) s"), "compilation/backends.py"),
    ("graph compile", re.compile(r"Compiling a graph for compile range .+? takes (?P<s>[\d.]+) s"), "compilation/backends.py"),
    ("torch.compile", re.compile(r"torch\.compile took (?P<s>[\d.]+) s in total"), "compilation/monitor.py"),
    ("profiling/warmup", re.compile(r"Initial profiling/warmup run took (?P<s>[\d.]+) s"), "compilation/monitor.py"),
    ("init engine", re.compile(r"init engine \(profile, create kv cache, warmup model\) took (?P<s>[\d.]+) s"), "v1/engine/core.py"),
    ("graph capture", re.compile(r"Graph capturing finished in (?P<s>[\d.]+) secs"), "v1/worker/gpu_model_runner.py"),
    ("kv cache memory", re.compile(r"Available KV cache memory: (?P<gib>[\d.]+) GiB"), "v1/worker/gpu_worker.py"),
)
MARKERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("compile cache used", re.compile(r"Directly load (?:AOT compilation from path|the compiled graph)")),
    ("compile cache dir", re.compile(r"Using cache directory: (?P<v>\S+) for vLLM's torch\.compile")),
    ("flashinfer autotune cache", re.compile(r"Using FlashInfer autotune cache file: (?P<v>\S+)")),
    ("kernel JIT at inference", re.compile(r"Triton kernel JIT compilation during inference: (?P<v>\S+)")),
    ("cudagraph mode changed", re.compile(r"setting cudagraph_mode=(?P<v>\S+)")),
    ("attention block size", re.compile(r"Setting attention block size to (?P<v>\d+) tokens")),
    ("gdn prefill", re.compile(r"Using (?P<v>.+?) GDN prefill kernel")),
    ("non-default args", re.compile(r"non-default args: (?P<v>\{.*\})")),
    ("server start", re.compile(r"Starting vLLM server on (?P<v>\S+)")),
    # vLLM's own ERROR lines and Python tracebacks; a WARNING that quotes an error is not one.
    ("error", re.compile(r"Traceback \(most recent call last\)| ERROR \d\d-\d\d ")),
)


def line_time(line: str) -> datetime | None:
    match = STAMP.match(line)
    return datetime.fromisoformat(match["stamp"]) if match else None


@dataclass
class Scan:
    figures: dict[str, list[float]]
    markers: dict[str, list[str]]
    # Seconds from the first line to each marker's first appearance.
    first_seen: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {"figures": self.figures, "markers": self.markers, "first_seen_s": self.first_seen}


def scan(lines: Iterable[str]) -> Scan:
    figures: dict[str, list[float]] = {}
    markers: dict[str, list[str]] = {}
    first: dict[str, float] = {}
    start: datetime | None = None
    for line in lines:
        time = line_time(line)
        if start is None and time is not None:
            start = time
        for key, pattern, _ in FIGURES:
            if match := pattern.search(line):
                figures.setdefault(key, []).append(float(match["s"] if "s" in match.groupdict() else match["gib"]))
                if start and time:
                    first.setdefault(key, (time - start).total_seconds())
        for key, pattern in MARKERS:
            if match := pattern.search(line):
                value = match.groupdict().get("v") or line[-300:].strip()
                markers.setdefault(key, []).append(value)
                if start and time:
                    first.setdefault(key, (time - start).total_seconds())
    return Scan(figures, markers, first)


def started_at(lines: list[str]) -> datetime:
    """The start of the engine: the stamp of the log's first line (the preflight's own ``start:`` line)."""
    first = next((time for line in lines if (time := line_time(line)) is not None), None)
    if first is None:
        raise ValueError("no stamped line in the log")
    return first


def parse_with_project(lines: list[str], started: datetime) -> dict[str, Any]:
    """The project's cold-start parser (``workloads.cold_start.phases.read_log``) over one start's log, as it is.

    The process's start stands in for the kubelet's ``Started`` event, which ends the pod's wait.
    """
    breakdown = Breakdown(pod="preflight")
    breakdown.steps["started"] = started
    try:
        read_log(breakdown, lines)
    except MeasureError as error:
        return {"error": str(error)}
    phases = {name: seconds for name, seconds in breakdown.phases() if name not in ("node provisioned", "image pulled or streamed")}
    return {"phases": phases, "vllmSeconds": dict(sorted(breakdown.engine_seconds.items())), "compileCacheHit": breakdown.compile_cache_hit}


def stamp(moment: datetime | None = None) -> str:
    """RFC 3339 with microseconds, as the log prefix."""
    moment = moment or datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
