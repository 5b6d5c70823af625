"""The serving section: the vLLM engine profile, held to the facts of the release its image runs."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from facts.engine_flags import managed_flags
from facts.gke import A4_POD_CPU, A4_POD_MEMORY, GPUS_PER_NODE
from facts.kubernetes import ENV_NAME, quantity
from facts.vllm import JIT_CACHE_FOLDERS, TTFT_FAMILY, TTFT_HISTOGRAM, VllmFacts, custom_buckets, facts, supported_releases, tagged_release
from stacks.problems import ConfigProblem, one_of
from stacks.section import ConfigBool, Section, kubernetes_quantity, memory_quantity, pinned_image

# Credentials vLLM and Hugging Face read from the environment.
CREDENTIAL_VARIABLES = {"HF_TOKEN": "hfToken", "HUGGING_FACE_HUB_TOKEN": "hfToken", "VLLM_API_KEY": "apiKey"}
# Variables the program sets on the engine (components/replicas.py), and the key that decides each: a second
# entry of one name in the container's env is refused by server-side apply.
PROGRAM_VARIABLES = {
    "HF_HUB_OFFLINE": "cache.enabled",
    "VLLM_CACHE_ROOT": "the shared compile cache, on unless VLLM_DISABLE_COMPILE_CACHE is 1",
} | {name: "the shared compile cache, which holds the engine's JIT caches too" for name in JIT_CACHE_FOLDERS}
# How vLLM reads a variable it takes as a number (vllm/envs.py), and what the value must then be.
_NUMBER_READS = {
    "bool-int": ("bool(int(value))", "0 or 1"),
    "int": ("int(value)", "an integer"),
    "float": ("float(value)", "a number"),
}
# The `vllm serve` flags the program sets, and the key that sets each (facts/engine_flags.py's table).
MANAGED_FLAGS = managed_flags()
_FLAG = re.compile(r"^(--[a-z0-9][a-z0-9-]*|-O)(=.*)?$|^-O[0-9]$")


def image_release(image: str, version: str | None) -> str:
    """The vLLM release ``image`` runs: its tag's, else the version setting; refused without facts of it.

    Raised problems name ``image`` or ``vllmVersion`` relative to the section.
    """
    tagged = tagged_release(image)
    supported = ", ".join(supported_releases())
    if tagged is not None and version is not None and version != tagged:
        raise ConfigProblem(("vllmVersion",), version, f"contradicts the image's tag (v{tagged}); remove it or fix the tag")
    release = tagged or version
    if release is None:
        raise ConfigProblem(
            ("vllmVersion",),
            None,
            f"is required: the image's tag names no vLLM release ({image}); set the release it runs, one of: {supported}",
        )
    if release not in supported_releases():
        key = "image" if tagged else "vllmVersion"
        shown = image if tagged else release
        raise ConfigProblem(
            (key,), shown, f"runs vLLM {release}, which has no vendored facts to check flags and metrics against; use one of: {supported}"
        )
    return release


class ServingProfile(Section):
    """vLLM engine settings. Defaults are the reference's tuned flags (docs/reference.md)."""

    image: str = "vllm/vllm-openai:v0.18.1"
    """vLLM image, pinned by tag or digest. v0.18.1 fixes v0.18.0's FP8 KV-cache accuracy bug."""
    vllm_version: str | None = None
    """vLLM release the image runs (e.g. 0.33.0) when its tag names none (a digest alone); flags and metrics follow it."""
    port: int = Field(default=8000, ge=1024, le=65535)
    """HTTP port of the OpenAI-compatible server, its probes, metrics and Service."""
    data_parallel_size: int = GPUS_PER_NODE
    """Engines per pod: one full model copy per GPU. Must be 8 (tensor parallel 8 was 4x slower)."""
    max_model_len: int = Field(default=2560, gt=0)
    """Context length. The default 131072 wasted 85x of the KV cache; size it to input + output."""
    max_num_batched_tokens: int = Field(default=16384, gt=0)
    """Tokens per engine step."""
    max_num_seqs: int | None = Field(default=None, gt=0)
    """Concurrent sequences per engine; default: the most the KV cache holds of the workload's mean request, within
    what starts (docs/memory.md). Each costs sampler memory at start, and on a hybrid model a state block."""
    kv_cache_dtype: Literal["auto", "fp8", "fp8_e4m3", "fp8_e5m2"] = "fp8_e4m3"
    """KV cache precision; FP8 holds ~3x the tokens (959K vs 288K per engine)."""
    gpu_memory_utilization: float = Field(default=0.92, gt=0, le=0.95)
    """Share of HBM for the engine; 0.95 with MTP ran out of memory."""
    enable_prefix_caching: ConfigBool = True
    """Prefix caching (it found no hits on Qwen 3.5's hybrid layers: do not count on it)."""
    enable_chunked_prefill: ConfigBool = True
    """Chunked prefill."""
    attention_backend: str | None = "FLASHINFER"
    """Attention backend; unset lets vLLM choose."""
    optimization_level: int = Field(default=3, ge=0, le=3)
    """vLLM compilation level (-O)."""
    mtp_tokens: int = Field(default=1, ge=0, le=2)
    """Multi-token-prediction speculative tokens; 0 disables. MTP-1 gave +50%; MTP-2 was slower."""
    mamba_cache_mode: str | None = "align"
    """Required for Qwen 3.5's hybrid layers, else every prompt is re-processed (10x slower)."""
    mamba_block_size: int | None = Field(default=8, gt=0)
    """Goes with mambaCacheMode align."""
    extra_args: tuple[str, ...] = ()
    """More engine flags, each `--name=value`, appended as given."""
    env: dict[str, str] = Field(default_factory=lambda: {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "1"})
    """Engine environment; the default counts CUDA-graph memory when profiling, which prevents OOM."""
    cold_start_minutes: int = Field(default=25, ge=5, le=120)
    """Time a pod may take to become ready: model load and CUDA graph compile took ~10 min, plus download."""
    cpu: str = "180"
    """CPU request (= limit) of a replica; an A4 node has 224 vCPUs, some kept by GKE."""
    memory: str = "1800Gi"
    """Memory request (= limit) of a replica; an A4 node has ~3.9 TB."""

    @field_validator("image")
    @classmethod
    def _pinned(cls, value: str) -> str:
        return pinned_image(value)

    @field_validator("cpu")
    @classmethod
    def _cpu(cls, value: str) -> str:
        return kubernetes_quantity(value)

    @field_validator("memory")
    @classmethod
    def _memory(cls, value: str) -> str:
        return memory_quantity(value)

    @field_validator("data_parallel_size")
    @classmethod
    def _one_engine_per_gpu(cls, value: int) -> int:
        if value != GPUS_PER_NODE:
            raise ConfigProblem(
                (),
                value,
                f"must equal the GPUs of one A4 node ({GPUS_PER_NODE}): one engine per GPU; "
                "tensor parallel 8 was 4x slower (docs/reference.md)",
            )
        return value

    @field_validator("extra_args")
    @classmethod
    def _flags(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, arg in enumerate(value):
            if not _FLAG.match(arg):
                raise ConfigProblem((index,), arg, "is not a flag in the form --name=value (or --name for a switch)")
            name = "-O" if arg.startswith("-O") else arg.split("=", 1)[0]
            plain = name.replace("--no-", "--", 1)
            if plain in MANAGED_FLAGS:
                raise ConfigProblem((index,), arg, f"is set by the program; use {MANAGED_FLAGS[plain]} instead")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not ENV_NAME.fullmatch(name):
                raise ConfigProblem((name,), name, "is not an environment variable name Kubernetes takes: printable ASCII without '='")
            if name in PROGRAM_VARIABLES:
                raise ConfigProblem(
                    (name,), value[name], f"is set by the program (from {PROGRAM_VARIABLES[name]}); remove it from serving.env"
                )
            if name in CREDENTIAL_VARIABLES:
                key = CREDENTIAL_VARIABLES[name]
                raise ConfigProblem(
                    (name,),
                    "[not shown]",
                    f"holds a credential in plain text; remove it and run `pulumi config set --secret {key} <value>`",
                )
        return value

    @property
    def release(self) -> str:
        """The vLLM release the image runs (validated: it has facts)."""
        return image_release(self.image, self.vllm_version)

    @property
    def facts(self) -> VllmFacts:
        """What the image's vLLM release accepts and exports."""
        return facts(self.release)

    @property
    def ttft_largest_bucket(self) -> float:
        """The largest finite bucket of vLLM's TTFT histogram: the release's, or --custom-histogram-buckets'."""
        custom = custom_buckets(self.extra_args).get(TTFT_FAMILY)
        return max(custom) if custom else self.facts.largest_bucket(TTFT_HISTOGRAM)

    @model_validator(mode="after")
    def _release_facts(self) -> ServingProfile:
        release = image_release(self.image, self.vllm_version)
        known = facts(release)
        for index, arg in enumerate(self.extra_args):
            name = "-O" if arg.startswith("-O") else arg.split("=", 1)[0]
            if name not in known.serve_flags:
                raise ConfigProblem(
                    ("extraArgs", index), arg, f"{name} is not a flag of vllm serve {release} (facts/data/vllm/{release}.yaml lists them)"
                )
        for index, arg in enumerate(self.extra_args):
            try:
                custom_buckets((arg,))
            except ValueError:
                raise ConfigProblem(
                    ("extraArgs", index), arg, 'is not a JSON object of bucket lists, e.g. {"time_to_first_token": [1, 10, 100]}'
                ) from None
        for key, value, choices, what in (
            ("attentionBackend", self.attention_backend, known.attention_backends, "an attention backend"),
            ("mambaCacheMode", self.mamba_cache_mode, known.mamba_cache_modes, "a mamba cache mode"),
            ("kvCacheDtype", self.kv_cache_dtype, known.kv_cache_dtypes, "a KV-cache dtype"),
        ):
            if value is not None and value not in choices:
                raise ConfigProblem((key,), value, f"is not {what} of vLLM {release}; {one_of(choices)}")
        return self

    @field_validator("cpu")
    @classmethod
    def _fits_cpu(cls, value: str) -> str:
        if quantity(value) > A4_POD_CPU:
            raise ConfigProblem((), value, f"is more CPU than an A4 node gives a pod ({A4_POD_CPU} of its 224 vCPUs)")
        return value

    @field_validator("memory")
    @classmethod
    def _fits_memory(cls, value: str) -> str:
        if quantity(value) > A4_POD_MEMORY:
            raise ConfigProblem((), value, f"is more memory than an A4 node gives a pod ({A4_POD_MEMORY / 2**30:.0f}Gi of its 3968Gi)")
        return value

    @model_validator(mode="after")
    def _env_numbers(self) -> ServingProfile:
        numbers = facts(self.release).env_numbers
        for name, text in self.env.items():
            kind = numbers.get(name)
            if kind is None:
                continue
            read, allowed = _NUMBER_READS[kind]
            try:
                ok = (int(text) in (0, 1)) if kind == "bool-int" else (int(text) if kind == "int" else float(text)) is not None
            except ValueError:
                ok = False
            if not ok:
                raise ConfigProblem(
                    ("env", name),
                    text,
                    f"is not {allowed}: vLLM {self.release} reads {name} as {read} (vllm/envs.py), so the engine fails at start",
                )
        return self

    @model_validator(mode="after")
    def _mamba_caching(self) -> ServingProfile:
        # vLLM 0.18.1 and 0.33.0 set the mode to none without prefix caching, and assert chunked prefill
        # with it (vllm/model_executor/models/config.py, MambaModelConfig; docs/vllm.md).
        if self.mamba_cache_mode not in (None, "none"):
            for key, on in (("enablePrefixCaching", self.enable_prefix_caching), ("enableChunkedPrefill", self.enable_chunked_prefill)):
                if not on:
                    raise ConfigProblem(
                        ("mambaCacheMode",),
                        self.mamba_cache_mode,
                        f"needs {key}: true (vLLM turns the mode off without prefix caching and refuses it without chunked "
                        "prefill); turn it on, or unset mambaCacheMode and mambaBlockSize",
                    )
        return self

    @model_validator(mode="after")
    def _batches(self) -> ServingProfile:
        # vLLM 0.18.1 refuses to start otherwise (vllm/config/scheduler.py, verify_max_model_len).
        if not self.enable_chunked_prefill and self.max_num_batched_tokens < self.max_model_len:
            raise ConfigProblem(
                ("maxNumBatchedTokens",),
                self.max_num_batched_tokens,
                f"is below maxModelLen ({self.max_model_len}) with chunked prefill off, which vLLM refuses; "
                "raise it or enable chunked prefill",
            )
        if self.max_num_seqs is not None and self.max_num_batched_tokens < self.max_num_seqs:
            raise ConfigProblem(
                ("maxNumBatchedTokens",), self.max_num_batched_tokens, f"is below maxNumSeqs ({self.max_num_seqs}), which vLLM refuses"
            )
        return self
