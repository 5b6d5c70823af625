"""What a start at full size prints about memory and time, read from its log, and the memory held against the plan.

``preflight <stack> --size full`` runs the stack's model at its real size (``--load-format=dummy``). Each engine
process prints its memory lines; each start step ends at the last engine's line, as the project's cold-start
parser counts them (``workloads/cold_start/phases.py``). Every pattern is quoted from vLLM 0.26.0, the file
named beside it (the lines are those of the real runs under tests/real_runs/).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

from facts.engine_memory import GIB, Engine, MemoryBudget, counts_cuda_graphs, engine_memory
from facts.models import model_facts
from facts.vllm import FullSizeStart
from preflight.adapt import ParallelShape, parallel_shape
from preflight.logscan import STAMP, line_time
from preflight.rendered import flag_value
from workloads.cold_start.phases import GRAPHS_CAPTURED, KV_CACHE, LOADING, PROCESS, PROFILED, SERVING, WEIGHTS_LOADED

# A measured term may differ from the plan by this fraction before the preflight fails, naming the term.
TOLERANCE = 0.10
NUMBER = r"(?P<v>[\d,]+(?:\.\d+)?)"

# (term, pattern, source file under vllm/): one figure per engine process.
MEMORY_LINES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("weights_gib", re.compile(rf"Model loading took {NUMBER} GiB"), "v1/worker/gpu_model_runner.py"),
    ("kv_cache_gib", re.compile(rf"Available KV cache memory: {NUMBER} GiB"), "v1/worker/gpu_worker.py"),
    ("kv_tokens", re.compile(rf"GPU KV cache size: {NUMBER} tokens"), "v1/core/kv_cache_utils.py"),
    ("max_concurrency", re.compile(rf"Maximum concurrency for [\d,]+ tokens per request: {NUMBER}x"), "v1/core/kv_cache_utils.py"),
    ("cuda_graph_estimated_gib", re.compile(rf"Estimated CUDA graph memory: {NUMBER} GiB total"), "v1/worker/gpu_model_runner.py"),
    ("cuda_graph_gib", re.compile(rf"CUDA graph pool memory: {NUMBER} GiB \(actual\)"), "v1/worker/gpu_worker.py"),
    ("activation_peak_gib", re.compile(rf"{NUMBER} GiB for peak activation"), "v1/worker/gpu_worker.py"),
    ("non_torch_gib", re.compile(rf"{NUMBER} GiB for non-torch memory"), "v1/worker/gpu_worker.py"),
    # Printed only when the check fails: "max_num_seqs (8192) exceeds available Mamba cache blocks (1450)".
    ("mamba_blocks", re.compile(rf"exceeds available Mamba cache blocks \({NUMBER}\)"), "config/compilation.py"),
)
# A line's own process name, as vLLM prefixes it (the bar's description follows it).
PROCESS_PREFIX = re.compile(r"^\([\w-]+ pid=\d+\) ")
CONCURRENCY_LENGTH = re.compile(r"Maximum concurrency for (?P<v>[\d,]+) tokens per request")
# The start of CUDA graph capture, after the kernel warm-up (Triton, DeepGEMM, FlashInfer's autotune).
# Its progress bar's lines are no step: their stamp, where they have one, is the bar's end.
CAPTURE_START = re.compile(r"Torch profiler disabled for CUDA graph capture")
COMPILED = re.compile(r"torch\.compile took (?P<s>[\d.]+) s in total")
# A warm-up's progress bar (tqdm) as it ends: "DeepGemm(fp8_gemm_nt) warmup (W=...): 100%|...| 1234/1234".
WARMUP_BAR = re.compile(
    # Each bar's description starts the line's text, follows the process's name, a carriage return or the end of another bar.
    r"(?:^|\r|\]|\) )(?P<desc>[^:\r|\]]*?(?:DeepGemm\(|[Ww]arm)[^:\r|]*): *\d+%\|[^|]*\| *\d+/(?P<total>\d+)"
)

# (step, pattern, which line ends it): the start steps, in order.
STEPS: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("loading", LOADING, "first"),
    ("weights loaded", WEIGHTS_LOADED, "last"),
    ("profiled", PROFILED, "last"),
    ("KV cache", KV_CACHE, "last"),
    ("warmed up", CAPTURE_START, "last"),
    ("graphs captured", GRAPHS_CAPTURED, "last"),
    ("ready", SERVING, "first"),
)
# (phase, from step, to step): what each stretch of a full-size start spends.
PHASES: tuple[tuple[str, str, str], ...] = (
    ("imports and config", "started", "loading"),
    ("weights loaded", "loading", "weights loaded"),
    # Every graph's torch.compile and the profiling runs (the MTP drafter's after the model's).
    ("torch.compile and profiling", "weights loaded", "profiled"),
    ("memory profiling and KV cache", "profiled", "KV cache"),
    ("kernel warm-up", "KV cache", "warmed up"),
    ("CUDA graph capture", "warmed up", "graphs captured"),
    ("server start", "graphs captured", "ready"),
)


@dataclass
class EngineMemory:
    """One engine process's memory lines; None where the engine printed none."""

    weights_gib: float | None = None
    kv_cache_gib: float | None = None
    kv_tokens: float | None = None
    max_concurrency: float | None = None
    # The request length the concurrency is given for (--max-model-len).
    concurrency_tokens: int | None = None
    cuda_graph_estimated_gib: float | None = None
    cuda_graph_gib: float | None = None
    activation_peak_gib: float | None = None
    non_torch_gib: float | None = None
    mamba_blocks: float | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _process(line: str) -> str:
    match = PROCESS.search(line)
    return match["process"] if match else ""


def read_memory(lines: Iterable[str]) -> dict[str, EngineMemory]:
    """Each engine process's memory lines (the process as vLLM names it, ``EngineCore_DP0 pid=...``); the last of each wins."""
    found: dict[str, EngineMemory] = {}
    for line in lines:
        for term, pattern, _ in MEMORY_LINES:
            if match := pattern.search(line):
                setattr(found.setdefault(_process(line), EngineMemory()), term, _number(match["v"]))
        if length := CONCURRENCY_LENGTH.search(line):
            found.setdefault(_process(line), EngineMemory()).concurrency_tokens = int(_number(length["v"]))
    return found


@dataclass(frozen=True)
class TermCheck:
    """One memory term of one engine against the plan."""

    engine: str
    term: str
    measured: float
    planned: float

    @property
    def deviation(self) -> float:
        """(measured - planned) / planned; infinite where the plan says zero and the engine does not."""
        if self.planned == 0:
            return 0.0 if self.measured == 0 else float("inf")
        return (self.measured - self.planned) / self.planned

    @property
    def ok(self) -> bool:
        return abs(self.deviation) <= TOLERANCE

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "deviation": round(self.deviation, 4), "ok": self.ok}

    def text(self) -> str:
        return (
            f"{self.engine or 'the engine'}: {self.term} measured {self.measured:,.2f}, planned {self.planned:,.2f} "
            f"({self.deviation:+.1%}; at most {TOLERANCE:.0%} either way)"
        )


PLANNED_TERMS = tuple(f.name for f in fields(EngineMemory) if f.name != "concurrency_tokens")


def against_plan(measured: Mapping[str, EngineMemory], planned: Mapping[str, float]) -> list[TermCheck]:
    """Every term both an engine printed and the plan holds, engine by engine.

    ``planned`` maps a term of ``PLANNED_TERMS`` to its planned value for one engine (one GPU's share under
    tensor parallelism, as each worker prints it); a term the plan does not hold is not compared.
    """
    unknown = sorted(set(planned) - set(PLANNED_TERMS))
    if unknown:
        raise ValueError(f"the plan holds terms no engine prints: {', '.join(unknown)}; the terms are {', '.join(PLANNED_TERMS)}")
    checks: list[TermCheck] = []
    for engine, memory in sorted(measured.items()):
        for term in PLANNED_TERMS:
            value = getattr(memory, term)
            if value is not None and term in planned:
                checks.append(TermCheck(engine, term, float(value), float(planned[term])))
    return checks


# vLLM chooses these by the GPU and the usage context when the command line leaves them out
# (vllm/engine/arg_utils.py, EngineArgs._set_default_max_num_seqs_and_batched_tokens_args): the plan needs them given.
PLAN_FLAGS = ("--max-model-len", "--max-num-seqs", "--max-num-batched-tokens")
# vLLM's defaults where a flag is absent (vllm/config/cache.py, CacheConfig.gpu_memory_utilization: 0.92 in 0.26.0;
# vllm/config/compilation.py, -O2).
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92
DEFAULT_OPTIMIZATION_LEVEL = 2
OPTIMIZATION = re.compile(r"^-O(?P<v>\d)$|^--optimization-level=(?P<long>\d)$")


class NoPlanError(ValueError):
    """The command line leaves a term of the memory plan to vLLM's choice on the GPU."""


def _optimization_level(flags: tuple[str, ...]) -> int:
    if "--enforce-eager" in flags:
        return 0
    found = [int(m["v"] or m["long"]) for arg in flags if (m := OPTIMIZATION.match(arg))]
    return found[-1] if found else DEFAULT_OPTIMIZATION_LEVEL


def _mtp_tokens(flags: tuple[str, ...]) -> int:
    text = flag_value(flags, "--speculative-config")
    if not text:
        return 0
    spec = json.loads(text)
    return int(spec.get("num_speculative_tokens") or 0) if spec.get("method") == "mtp" else 0


def engine_of(flags: tuple[str, ...], env: Mapping[str, str], *, hbm_bytes: int, release: str, capability: tuple[int, int]) -> Engine:
    """The memory plan's engine for the command line this machine runs (its data parallelism adapted) on this GPU."""
    missing = [name for name in PLAN_FLAGS if flag_value(flags, name) is None]
    if missing:
        raise NoPlanError(f"the command line leaves {', '.join(missing)} to vLLM's choice on the GPU")
    shape: ParallelShape = parallel_shape(flags)
    optional = {"mamba_cache_mode": mode} if (mode := flag_value(flags, "--mamba-cache-mode")) else {}
    return Engine(
        hbm_bytes=hbm_bytes,
        gpu_memory_utilization=float(flag_value(flags, "--gpu-memory-utilization") or DEFAULT_GPU_MEMORY_UTILIZATION),
        max_model_len=int(flag_value(flags, "--max-model-len") or 0),
        max_num_seqs=int(flag_value(flags, "--max-num-seqs") or 0),
        max_num_batched_tokens=int(flag_value(flags, "--max-num-batched-tokens") or 0),
        kv_cache_dtype=flag_value(flags, "--kv-cache-dtype") or "auto",
        mtp_tokens=_mtp_tokens(flags),
        tensor_parallel=shape.tensor,
        data_parallel=shape.data,
        cuda_graphs=counts_cuda_graphs(release, dict(env), _optimization_level(flags)),
        # FlashInfer keeps full decode graphs with draft tokens on Blackwell only (facts/engine_memory.py, Engine).
        full_graphs_with_drafts=capability[0] >= 10,
        release=release,
        **optional,
    )


def planned_terms(budget: MemoryBudget) -> dict[str, float]:
    """The plan's figures under the names of the engine's memory lines (``PLANNED_TERMS``)."""
    terms = {
        "weights_gib": budget.weights / GIB,
        "kv_cache_gib": budget.available_kv / GIB,
        "kv_tokens": float(budget.kv_tokens),
        "max_concurrency": budget.requests,
        "cuda_graph_estimated_gib": budget.cuda_graphs / GIB,
    }
    if budget.hybrid:
        terms["mamba_blocks"] = float(budget.blocks)
    return terms


def plan_for(
    config: Mapping[str, Any],
    model: str,
    flags: tuple[str, ...],
    env: Mapping[str, str],
    *,
    hbm_bytes: int,
    release: str,
    capability: tuple[int, int],
) -> dict[str, float]:
    """The memory plan (facts/engine_memory.py) of ``model`` under ``flags`` on this GPU, as terms to hold each engine to."""
    engine = engine_of(flags, env, hbm_bytes=hbm_bytes, release=release, capability=capability)
    return planned_terms(engine_memory(model_facts(config, model_id=model), engine))


@dataclass
class StartPhases:
    """A start's steps (seconds from the process's start, at the last engine's line) and what they took."""

    steps: dict[str, float] = field(default_factory=dict)
    # vLLM's own figures, the slowest engine's, each summed over that engine's graphs and runs.
    vllm_seconds: dict[str, float] = field(default_factory=dict)
    # Shapes each engine's kernel warm-up ran, summed over its progress bars; the largest engine's.
    warmup_shapes: int | None = None

    def phases(self) -> dict[str, float | None]:
        return {
            name: round(self.steps[end] - self.steps[start], 3) if start in self.steps and end in self.steps else None
            for name, start, end in PHASES
        }

    @property
    def ready_s(self) -> float | None:
        return self.steps.get("ready")

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "phases": self.phases(),
            "vllmSeconds": self.vllm_seconds,
            "warmupShapes": self.warmup_shapes,
            "readySeconds": self.ready_s,
        }


def start_phases(lines: Iterable[str]) -> StartPhases:
    """The start by phase from a stamped log (``kubectl logs --timestamps``, or the preflight's own stamps).

    The log's first stamped line is the process's start.
    """
    start: datetime | None = None
    at: dict[str, datetime] = {}
    own: dict[str, dict[str, float]] = {}
    bars: dict[str, dict[str, int]] = {}

    def add(line: str, figure: str, seconds: float) -> None:
        figures = own.setdefault(_process(line), {})
        figures[figure] = figures.get(figure, 0.0) + seconds

    for line in lines:
        # A bar's updates end in carriage returns: the preflight writes each as a line of its own, with no stamp;
        # a reader that stamps every piece it splits off leaves the bar right after its stamp.
        for bar in WARMUP_BAR.finditer(PROCESS_PREFIX.sub("", STAMP.sub("", line, count=1), count=1)):
            totals = bars.setdefault(_process(line), {})
            totals[bar["desc"].strip()] = max(totals.get(bar["desc"].strip(), 0), int(bar["total"]))
        time = line_time(line)
        if time is None:
            continue
        start = start or time
        for step, pattern, which in STEPS:
            if pattern.search(line) and (step not in at or which == "last"):
                at[step] = max(at.get(step, time), time)
        if match := COMPILED.search(line):
            add(line, "torch.compile", float(match["s"]))
        elif match := PROFILED.search(line):
            add(line, "profiling run", float(match["seconds"]))
        elif match := GRAPHS_CAPTURED.search(line):
            add(line, "CUDA graph capture", float(match["seconds"]))
    result = StartPhases()
    if start is None:
        return result
    result.steps = {"started": 0.0, **{step: round((time - start).total_seconds(), 3) for step, time in at.items()}}
    for figures in own.values():
        for figure, seconds in figures.items():
            result.vllm_seconds[figure] = round(max(result.vllm_seconds.get(figure, 0.0), seconds), 3)
    if bars:
        result.warmup_shapes = max(sum(totals.values()) for totals in bars.values())
    return result


def as_full_size_start(phases: StartPhases, *, gpu: str, run: str) -> FullSizeStart:
    """A start read from a full-size log as the cold-start estimate takes it (facts/vllm.py ``FULL_SIZE_COLD_START``)."""
    wall = phases.phases()
    needed = {"weights loaded": wall["weights loaded"], "kernel warm-up": wall["kernel warm-up"], "ready": phases.ready_s}
    needed |= {f"vLLM's {name}": phases.vllm_seconds.get(name) for name in ("torch.compile", "profiling run", "CUDA graph capture")}
    missing = [name for name, value in needed.items() if value is None]
    if missing:
        raise ValueError(f"the log lacks what the estimate takes: {', '.join(missing)}")
    return FullSizeStart(
        gpu=gpu,
        run=run,
        weights_load=float(wall["weights loaded"] or 0.0),
        torch_compile=phases.vllm_seconds["torch.compile"],
        first_profiling=phases.vllm_seconds["profiling run"],
        kernel_warmup=float(wall["kernel warm-up"] or 0.0),
        warmup_shapes=f"{phases.warmup_shapes:,}" if phases.warmup_shapes else "not printed",
        graph_capture=phases.vllm_seconds["CUDA graph capture"],
        ready=float(phases.ready_s or 0.0),
    )
