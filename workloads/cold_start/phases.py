"""A replica's cold start, phase by phase, from the cluster's events and vLLM's own log.

Reads what a real wake leaves behind: ``kubectl get events -o json`` (the
autoscaler's, the scheduler's and the kubelet's events on the pod) and
``kubectl logs --timestamps`` of the vLLM container. Every message matched
here is quoted from the source that prints it (docs/cold-start.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

Step = Literal[
    "pending",
    "scale-up",
    "scheduled",
    "pulled",
    "started",
    "loading",
    "weights-loaded",
    "profiled",
    "kv-cache",
    "graphs-captured",
    "serving",
    "answered",
]

# (phase, from step, to step): what each stretch of a cold start waits for.
PHASES: tuple[tuple[str, Step, Step], ...] = (
    ("node provisioned", "pending", "scheduled"),
    ("image pulled or streamed", "scheduled", "started"),
    ("imports and config", "started", "loading"),
    ("weights loaded", "loading", "weights-loaded"),
    # Every graph's torch.compile (the MTP drafter's after the model's) and the profiling runs, in which
    # Triton compiles the kernels it has not cached.
    ("torch.compile, profiling and kernel JIT", "weights-loaded", "profiled"),
    # FlashInfer compiles its attention modules here when its cache is cold.
    ("FlashInfer JIT and KV cache", "profiled", "kv-cache"),
    ("CUDA graph capture", "kv-cache", "graphs-captured"),
    ("server start", "graphs-captured", "serving"),
    # The first completion after the server started: Triton kernels first met at inference compile here.
    ("first answer", "serving", "answered"),
)

# Event reasons (kubernetes/kubernetes pkg/kubelet/events/event.go, pkg/scheduler/schedule_one.go;
# kubernetes/autoscaler cluster-autoscaler/processors/status/eventing_scale_up_processor.go).
EVENT_STEPS: dict[str, Step] = {"TriggeredScaleUp": "scale-up", "Scheduled": "scheduled", "Pulled": "pulled", "Started": "started"}
# GKE's kubelet reports an image served by image streaming with this reason (GKE image-streaming page).
STREAMING_REASON = "ImageStreaming"
# Events about one container name it in involvedObject.fieldPath (kubernetes/kubernetes
# pkg/kubelet/container/ref.go). The compile cache's FUSE sidecar is a native sidecar, an init container
# pulled and started before vLLM's (gcs-fuse-csi-driver pkg/webhook/mutatingwebhook.go): its Pulled and
# Started are not vLLM's, so those steps are read from vLLM's container alone.
CONTAINER_STEPS: frozenset[Step] = frozenset({"pulled", "started"})


def container_path(container: str) -> str:
    return f"spec.containers{{{container}}}"


# vLLM's own lines, as 0.26.0 prints them (0.18.1's are the same where both print one; docs/cold-start.md).
# With data parallel 8 each engine prints its own; a step ends at the last engine's line.
# vLLM 0.26.0's model runner prints the first (v1/worker/gpu_model_runner.py), its V2 runner, which a
# tensor-parallel start chose, the second (v1/worker/gpu/model_runner.py).
LOADING = re.compile(r"Starting to load model |Loading model from scratch")
# One runner prints "GiB memory and", another "GiB and".
WEIGHTS_LOADED = re.compile(r"Model loading took (?P<gib>[\d.]+) GiB (?:memory )?and (?P<seconds>[\d.]+) seconds")
COMPILED = re.compile(r"torch\.compile (?:and initial profiling/warmup run together )?took (?P<seconds>[\d.]+) s in total")
PROFILED = re.compile(r"Initial profiling/warmup run took (?P<seconds>[\d.]+) s")
COMPILE_CACHE_HIT = re.compile(r"Directly load (?:AOT compilation from path|the compiled graph\(s\))")
KV_CACHE = re.compile(r"GPU KV cache size: [\d,]+ tokens")
GRAPHS_CAPTURED = re.compile(r"Graph capturing finished in (?P<seconds>\d+) secs")
SERVING = re.compile(r"Starting vLLM server on ")
# vLLM's JIT monitor names each compiler's kernel ("Triton kernel JIT ...", "TileLang JIT ...").
INFERENCE_JIT = re.compile(r"JIT compilation during inference: (?P<kernel>\w+)")
# uvicorn's access line of an answered completion (a chat's or a plain one's).
ANSWERED = re.compile(r'"POST /v1/(?:chat/)?completions HTTP/[\d.]+" 200')
# Each process's lines start with "(<name> pid=<pid>) " (vllm/utils/system_utils.py).
PROCESS = re.compile(r"\((?P<process>[\w-]+ pid=\d+)\) ")

# `kubectl logs --timestamps` prefixes each line with RFC 3339 time; vLLM's own stamp has no year.
KUBECTL_STAMP = re.compile(r"^(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")
VLLM_STAMP = re.compile(r"(?:INFO|WARNING|DEBUG|ERROR) (?P<month>\d\d)-(?P<day>\d\d) (?P<time>\d\d:\d\d:\d\d) \[")
# Go's time.Duration as the kubelet prints it: "1m9.312s", "1.8s", "850ms".
GO_DURATION_PART = re.compile(r"(?P<value>[\d.]+)(?P<unit>h|ms|us|µs|ns|m|s)")
GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
PULL_TIME = re.compile(r'Successfully pulled image "[^"]+" in (?P<pull>\S+) \((?P<total>\S+) including waiting\)')


class MeasureError(ValueError):
    """The input holds no cold start of the pod asked for."""


def go_duration(text: str) -> float:
    """Seconds of a Go duration string; refuses anything else."""
    parts = list(GO_DURATION_PART.finditer(text))
    if not parts or "".join(p.group(0) for p in parts) != text:
        raise MeasureError(f"not a Go duration: {text!r}")
    return sum(float(p.group("value")) * GO_UNITS[p.group("unit")] for p in parts)


def _event_time(event: Mapping[str, Any]) -> datetime | None:
    stamp = event.get("firstTimestamp") or event.get("eventTime") or event.get("lastTimestamp")
    return datetime.fromisoformat(str(stamp)) if stamp else None


@dataclass
class Breakdown:
    """One replica's cold start: when each step happened and what vLLM and the kubelet reported."""

    pod: str
    steps: dict[Step, datetime] = field(default_factory=dict)
    streamed: bool = False
    pull_seconds: float | None = None
    compile_cache_hit: bool | None = None
    # vLLM's own durations, the slowest engine's (each summed over that engine's graphs and runs).
    engine_seconds: dict[str, float] = field(default_factory=dict)
    # Kernels compiled at inference (Triton's, TileLang's): each made a request wait after the server started.
    inference_jit_kernels: list[str] = field(default_factory=list)

    def phases(self) -> list[tuple[str, float | None]]:
        """Each phase's wall-clock seconds; None where a step is missing from the input."""
        return [
            (name, (self.steps[end] - self.steps[start]).total_seconds() if start in self.steps and end in self.steps else None)
            for name, start, end in PHASES
        ]

    @property
    def total_seconds(self) -> float | None:
        """From the pod's first event to its first answer, or to the server's start when the log holds no answer."""
        end = self.steps.get("answered") or self.steps.get("serving")
        if "pending" in self.steps and end is not None:
            return (end - self.steps["pending"]).total_seconds()
        return None

    def as_output(self) -> dict[str, object]:
        return {
            "pod": self.pod,
            "phases": {name: seconds for name, seconds in self.phases()},
            "totalSeconds": self.total_seconds,
            "imageStreamed": self.streamed,
            "kubeletPullSeconds": self.pull_seconds,
            "compileCacheHit": self.compile_cache_hit,
            "vllmSeconds": dict(sorted(self.engine_seconds.items())),
            "inferenceJitKernels": list(self.inference_jit_kernels),
        }

    def table(self) -> str:
        lines = [f"cold start of {self.pod}"]
        for name, seconds in self.phases():
            lines.append(f"  {name:<32} {_minutes(seconds)}")
        lines.append(f"  {'total':<32} {_minutes(self.total_seconds)}")
        image = "streamed" if self.streamed else "pulled"
        if self.pull_seconds is not None:
            image += f" (kubelet: {self.pull_seconds:.1f} s)"
        cache = {True: "hit", False: "miss (compiled)", None: "not in the log"}[self.compile_cache_hit]
        lines.append(f"  image {image}; compile cache {cache}")
        if self.engine_seconds:
            own = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in sorted(self.engine_seconds.items()))
            lines.append(f"  vLLM's own figures (slowest engine): {own}")
        if self.inference_jit_kernels:
            lines.append(f"  kernels compiled at inference, after the server started: {len(self.inference_jit_kernels)}")
        return "\n".join(lines) + "\n"


def _minutes(seconds: float | None) -> str:
    return "not in the input" if seconds is None else f"{int(seconds // 60)}:{int(seconds % 60):02d}  ({seconds:.0f} s)"


def deployment_pod(deployment: str) -> re.Pattern[str]:
    """The names of a Deployment's pods: ``<deployment>-<pod-template-hash>-<5 characters>``
    (kubernetes/kubernetes pkg/controller/deployment/sync.go names the ReplicaSet, and the API server's
    ``names.SimpleNameGenerator`` adds the five), so ``vllm-epp-...`` is not a pod of ``vllm``."""
    return re.compile(rf"{re.escape(deployment)}-[a-z0-9]{{1,10}}-[a-z0-9]{{5}}")


def _about(event: Mapping[str, Any], container: str) -> bool:
    """Whether the event is about ``container`` (a container event of the pod's other containers is not)."""
    path = (event.get("involvedObject") or {}).get("fieldPath")
    return path is None or path == container_path(container)


def last_started_pod(events: Mapping[str, Any], prefix: str, container: str | None = None) -> str:
    """The pod of Deployment ``prefix`` whose ``container`` (default: named ``prefix``) started last: the latest cold start."""
    own = deployment_pod(prefix)
    started = [
        (time, str(event["involvedObject"]["name"]))
        for event in events.get("items") or []
        if event.get("reason") == "Started"
        and (event.get("involvedObject") or {}).get("kind") == "Pod"
        and own.fullmatch(str((event.get("involvedObject") or {}).get("name", "")))
        and _about(event, container or prefix)
        and (time := _event_time(event)) is not None
    ]
    if not started:
        raise MeasureError(f"no Started event of a pod named {prefix}-... in the events")
    return max(started)[1]


def read_events(breakdown: Breakdown, events: Mapping[str, Any], container: str) -> None:
    """The scheduling and kubelet steps of ``breakdown.pod`` from ``kubectl get events -o json``; the
    image's pull and the start are ``container``'s."""
    found = False
    for event in events.get("items") or []:
        subject = event.get("involvedObject") or {}
        if subject.get("kind") != "Pod" or subject.get("name") != breakdown.pod:
            continue
        time = _event_time(event)
        if time is None:
            continue
        found = True
        steps = breakdown.steps
        # The pod's first event (the scheduler's FailedScheduling, as no A4 node exists yet) marks its wait.
        steps["pending"] = min(steps.get("pending", time), time)
        reason = str(event.get("reason"))
        mine = _about(event, container)
        if reason == STREAMING_REASON and mine:
            breakdown.streamed = True
        step = EVENT_STEPS.get(reason)
        if step is None or step in steps or (step in CONTAINER_STEPS and not mine):
            continue
        steps[step] = time
        if step == "pulled" and (pulled := PULL_TIME.search(str(event.get("message", "")))):
            breakdown.pull_seconds = go_duration(pulled.group("pull"))
    if not found:
        raise MeasureError(f"no event of pod {breakdown.pod} in the events")


def _line_time(line: str, year: int) -> datetime | None:
    if stamp := KUBECTL_STAMP.match(line):
        return datetime.fromisoformat(stamp.group("stamp"))
    if own := VLLM_STAMP.search(line):
        # vLLM logs in the container's time zone, UTC in the vllm-openai image.
        return datetime.strptime(f"{year}-{own['month']}-{own['day']} {own['time']}", "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)
    return None


def read_log(breakdown: Breakdown, lines: Iterable[str]) -> None:
    """vLLM's steps from its log: each ends at the last engine's line."""
    year = breakdown.steps["pending"].year if "pending" in breakdown.steps else datetime.now(UTC).year
    seen: dict[Step, datetime] = {}
    hit = compiled = False
    # Per engine process, then the slowest engine's: an engine compiles and profiles each of its graphs in turn.
    per_process: dict[str, dict[str, float]] = {}

    def last(step: Step, time: datetime) -> None:
        seen[step] = max(seen.get(step, time), time)

    def add(line: str, figure: str, seconds: float) -> None:
        process = match["process"] if (match := PROCESS.search(line)) else ""
        own = per_process.setdefault(process, {})
        own[figure] = own.get(figure, 0.0) + seconds

    for line in lines:
        time = _line_time(line, year)
        if time is None:
            continue
        if LOADING.search(line):
            last("loading", time)
        elif match := WEIGHTS_LOADED.search(line):
            last("weights-loaded", time)
            add(line, "weights", float(match["seconds"]))
        elif match := COMPILED.search(line):
            compiled = True
            last("profiled", time)
            add(line, "torch.compile", float(match["seconds"]))
        elif match := PROFILED.search(line):
            last("profiled", time)
            add(line, "profiling and kernel JIT", float(match["seconds"]))
        elif COMPILE_CACHE_HIT.search(line):
            hit = True
        elif KV_CACHE.search(line):
            last("kv-cache", time)
        elif match := GRAPHS_CAPTURED.search(line):
            last("graphs-captured", time)
            add(line, "CUDA graph capture", float(match["seconds"]))
        elif SERVING.search(line):
            seen.setdefault("serving", time)
        elif match := INFERENCE_JIT.search(line):
            breakdown.inference_jit_kernels.append(match["kernel"])
        elif ANSWERED.search(line) and "serving" in seen:
            seen.setdefault("answered", time)
    if not seen:
        raise MeasureError("no vLLM startup line in the log (run kubectl logs on the vLLM container, with --timestamps)")
    breakdown.steps.update(seen)
    for own in per_process.values():
        for figure, seconds in own.items():
            breakdown.engine_seconds[figure] = round(max(breakdown.engine_seconds.get(figure, 0.0), seconds), 6)
    breakdown.compile_cache_hit = True if hit else (False if compiled else None)


# Each measured phase against the expected one (plan/cold_start_estimate.py, estimates' `coldStart.phases`);
# vLLM's startup besides the weights is one expected figure, by whether the compile cache was hit.
EXPECTED_PHASE = {
    "node provisioned": "nodeProvisioning",
    "image pulled or streamed": "image",
    "weights loaded": "weights",
}
COMPILE_PHASES = (
    "imports and config",
    "torch.compile, profiling and kernel JIT",
    "FlashInfer JIT and KV cache",
    "CUDA graph capture",
    "server start",
)


def against_expected(breakdown: Breakdown, cold_start: Mapping[str, Any]) -> list[tuple[str, float | None, float | None]]:
    """(phase, measured seconds, expected seconds) from the estimates' ``coldStart`` output."""
    expected = cold_start.get("phases") or {}

    def seconds(key: str) -> float | None:
        value = (expected.get(key) or {}).get("seconds")
        return None if value is None else float(value)

    measured = dict(breakdown.phases())
    rows = [(name, measured[name], seconds(key)) for name, key in EXPECTED_PHASE.items()]
    startup = [measured[name] for name in COMPILE_PHASES]
    compile_key = "compileWarmCache" if breakdown.compile_cache_hit else "compileColdCache"
    total = None if any(value is None for value in startup) else sum(value or 0.0 for value in startup)
    rows.append(("compile, CUDA graphs and ready", total, seconds(compile_key)))
    # With warm caches no kernel is left to compile at the first answer: no figure to hold it to.
    rows.append(("first answer", measured["first answer"], None if breakdown.compile_cache_hit else seconds("firstAnswerColdKernels")))
    return rows


def measure(events: Mapping[str, Any], log_lines: Iterable[str], *, pod: str | None = None, prefix: str = "vllm") -> Breakdown:
    """The cold start of ``pod`` (default: the ``prefix-...`` pod that started last)."""
    # The replicas' container has the Deployment's name (components/replicas.py).
    breakdown = Breakdown(pod or last_started_pod(events, prefix))
    read_events(breakdown, events, prefix)
    read_log(breakdown, log_lines)
    return breakdown
