"""What each supported vLLM release accepts and exports, and which release an image runs.

One file per release in ``facts/data/vllm/``, written by ``dev/vllm_facts.py``
from that release's source distribution (docs/vllm.md). A release without a
file is not supported: nothing could check the flags the program sends it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from facts import images
from facts.data_files import read_yaml

FACTS = Path(__file__).parent / "data" / "vllm"
# The release the measured defaults were tuned on (v0.18.1 fixes v0.18.0's FP8 KV-cache bug).
DEFAULT_RELEASE = "0.18.1"
# The metrics the program queries, as vLLM names them (vllm/v1/metrics/loggers.py): one series per
# data-parallel engine, so a replica's value is the sum over its engines. A counter's series adds
# `_total`, a histogram's `_bucket` (facts/metrics.py).
REQUESTS_WAITING = "vllm:num_requests_waiting"
REQUESTS_RUNNING = "vllm:num_requests_running"
KV_CACHE_USAGE = "vllm:kv_cache_usage_perc"
PROMPT_TOKENS = "vllm:prompt_tokens"
GENERATION_TOKENS = "vllm:generation_tokens"
PREEMPTIONS = "vllm:num_preemptions"
SPEC_DECODE_ACCEPTED_TOKENS = "vllm:spec_decode_num_accepted_tokens"
SPEC_DECODE_DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens"
TTFT_HISTOGRAM = "vllm:time_to_first_token_seconds"
TPOT_HISTOGRAM = "vllm:request_time_per_output_token_seconds"
ITL_HISTOGRAM = "vllm:inter_token_latency_seconds"
QUERIED_METRICS = (
    REQUESTS_WAITING,
    REQUESTS_RUNNING,
    KV_CACHE_USAGE,
    PROMPT_TOKENS,
    GENERATION_TOKENS,
    PREEMPTIONS,
    SPEC_DECODE_ACCEPTED_TOKENS,
    SPEC_DECODE_DRAFT_TOKENS,
    TTFT_HISTOGRAM,
    TPOT_HISTOGRAM,
    ITL_HISTOGRAM,
)
# The preflight of dev on one H100 (vLLM 0.26.0, a miniature random-weight Qwen 3.5, 2026-11-26; its report
# and logs are tests/real_runs/2026-11-26-h100-dev): start to /health with every cache cold, with only
# VLLM_CACHE_ROOT kept, and with every cache kept; and the first completion after /health in each, while Triton
# compiled the kernels first met at inference (the batch run's cold start: 104 s). The seconds hold for that
# GPU and model only; the ratios carry the phases to an A4 wake (plan/cold_start_estimate.py).
START_COLD_SECONDS = 345
START_COMPILE_CACHE_ONLY_SECONDS = 247
START_ALL_CACHES_SECONDS = 64
FIRST_ANSWER_SECONDS = 122
FIRST_ANSWER_COMPILE_CACHE_ONLY_SECONDS = 103


@dataclass(frozen=True, kw_only=True)
class FullSizeStart:
    """A cold start of the served model at its real size, phase by phase, on one GPU kind (seconds; the slowest engine's)."""

    gpu: str
    run: str
    # vLLM's "Model loading took ... and N seconds": dummy weights, so the weights' read is not in it.
    weights_load: float
    torch_compile: float
    first_profiling: float
    # Triton's and DeepGEMM's kernel warm-up before CUDA graph capture, and the shapes it ran.
    kernel_warmup: float
    warmup_shapes: str
    graph_capture: float
    # The process's start to the API server's start.
    ready: float

    @property
    def besides_weights(self) -> float:
        """Ready less the weights' load: vLLM's start as the cold-start estimate counts it (the weights are a phase of their own)."""
        return self.ready - self.weights_load


# Qwen 3.5 27B at full size (its published config and FP8 quantization_config, --load-format=dummy), vLLM 0.26.0,
# four engines starting at once on four H200s of one host (nvidia-h200-x4), 2026-11-28, vLLM's defaults: each
# figure the upper end of what the four engines printed (a wake waits for its slowest engine). B200 has no run yet.
FULL_SIZE_COLD_START = FullSizeStart(
    gpu="H200",
    run="Qwen 3.5 27B FP8 at full size with dummy weights, vLLM 0.26.0, four engines starting at once on nvidia-h200-x4 (2026-11-28)",
    weights_load=12,
    torch_compile=100,
    first_profiling=130,
    kernel_warmup=205,
    warmup_shapes="1,500-2,200",
    graph_capture=138,
    ready=830,
)
# From SIGTERM with nothing in flight to the process's exit, vLLM 0.26.0 took 4-7 s to tear down (its engine
# manager and background resources; the real runs under tests/real_runs/, one H100, 2026-11-26): the grace must leave this after the drain.
SHUTDOWN_TEARDOWN_SECONDS = 7
# Where vLLM keeps its compile cache (vllm/envs.py, VLLM_CACHE_ROOT): the replicas point it at the shared bucket.
CACHE_ROOT_ENV = "VLLM_CACHE_ROOT"
# The engine's JIT caches beside vLLM's own (VLLM_CACHE_ROOT): each variable moves one into the shared compile
# cache, under the folder named here. Left in the container they are lost with the node, and a new node paid
# ~76 s of Triton and ~100 s of FlashInfer compiles (docs/cold-start.md, "The engine's JIT caches"):
# - TRITON_CACHE_DIR, default ~/.triton/cache: triton-lang/triton python/triton/knobs.py (cache_dir);
# - FLASHINFER_WORKSPACE_BASE, default the home; the cache is <base>/.cache/flashinfer:
#   flashinfer-ai/flashinfer flashinfer/jit/env.py (FLASHINFER_BASE_DIR);
# - TORCHINDUCTOR_CACHE_DIR, default /tmp/torchinductor_<user>: pytorch/pytorch
#   torch/_inductor/runtime/cache_dir_utils.py (default_cache_dir).
JIT_CACHE_FOLDERS = {"TRITON_CACHE_DIR": "triton", "FLASHINFER_WORKSPACE_BASE": "flashinfer", "TORCHINDUCTOR_CACHE_DIR": "torchinductor"}
# From 0.33.0 this flag replaces a family's buckets; TTFT's family key (vllm/v1/metrics/buckets.py).
CUSTOM_BUCKETS_FLAG = "--custom-histogram-buckets"
TTFT_FAMILY = "time_to_first_token"
# vllm/vllm-openai tags a release v<major>.<minor>.<patch>, optionally with a suffix (e.g. -cu130).
_RELEASE_TAG = re.compile(r"^v?(?P<release>\d+\.\d+\.\d+)(?:[-+][\w.-]*)?$")


@dataclass(frozen=True)
class VllmFacts:
    """One release's flags, choices and metrics, read from its source."""

    release: str
    commit: str
    serve_flags: frozenset[str]
    deprecated_flags: dict[str, str]
    kv_cache_dtypes: tuple[str, ...]
    attention_backends: tuple[str, ...]
    mamba_cache_modes: tuple[str, ...]
    metrics: dict[str, str]
    histogram_buckets: dict[str, tuple[float, ...]]
    bench_serve_flags: frozenset[str]
    bench_serve_choices: dict[str, tuple[str, ...]]
    # Environment variables envs.py reads as numbers: bool-int (bool(int(value))), int or float.
    env_numbers: dict[str, str]

    def takes(self, flag: str) -> bool:
        """Whether ``vllm serve`` parses ``flag`` and acts on it (a deprecated flag may be ignored)."""
        return flag in self.serve_flags and flag not in self.deprecated_flags

    def largest_bucket(self, histogram: str) -> float:
        """The largest finite bucket of ``histogram``: a quantile above it reads as +Inf."""
        return max(self.histogram_buckets[histogram])


def supported_releases() -> tuple[str, ...]:
    """The releases with facts, oldest first."""
    return tuple(sorted((p.stem for p in FACTS.glob("*.yaml")), key=lambda r: tuple(int(n) for n in r.split("."))))


@cache
def facts(release: str) -> VllmFacts:
    """The facts of ``release``; raises ``KeyError`` naming the supported releases when it has none."""
    if release not in supported_releases():
        raise KeyError(f"no facts of vLLM {release}; supported: {', '.join(supported_releases())}")
    data: dict[str, Any] = read_yaml(FACTS / f"{release}.yaml")
    return VllmFacts(
        release=release,
        commit=str(data["commit"]),
        serve_flags=frozenset(data["serveFlags"]),
        deprecated_flags=dict(data["deprecatedServeFlags"]),
        kv_cache_dtypes=tuple(data["kvCacheDtypes"]),
        attention_backends=tuple(data["attentionBackends"]),
        mamba_cache_modes=tuple(data["mambaCacheModes"]),
        metrics=dict(str(entry).split() for entry in data["metrics"]),
        histogram_buckets={name: tuple(bounds) for name, bounds in data["histogramBuckets"].items()},
        bench_serve_flags=frozenset(data["benchServeFlags"]),
        bench_serve_choices={flag: tuple(values) for flag, values in data["benchServeChoices"].items()},
        env_numbers=dict(data["envNumbers"]),
    )


def tagged_release(image: str) -> str | None:
    """The release an image's tag names (``vllm/vllm-openai:v0.33.0`` -> ``0.33.0``), or None."""
    reference = images.parse(image)
    match = _RELEASE_TAG.match(reference.tag) if reference and reference.tag else None
    return match["release"] if match else None


def custom_buckets(extra_args: tuple[str, ...]) -> dict[str, list[float]]:
    """Family -> buckets that ``--custom-histogram-buckets=<json>`` among ``extra_args`` sets; raises ``ValueError`` on bad JSON."""
    for arg in extra_args:
        name, _, value = arg.partition("=")
        if name == CUSTOM_BUCKETS_FLAG:
            table = json.loads(value)
            if not isinstance(table, dict) or not all(
                isinstance(bounds, list) and bounds and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
                for bounds in table.values()
            ):
                raise ValueError("not a JSON object of bucket lists")
            return {str(family): [float(b) for b in bounds] for family, bounds in table.items()}
    return {}
