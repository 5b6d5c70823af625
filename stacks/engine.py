"""The engine as the model makes it: the parallel shape, and the flags each architecture takes, checked against the
model's facts (facts/models.py) before anything is created."""

from __future__ import annotations

import math
from dataclasses import dataclass

from facts.gke import B200_HBM_BYTES, GPUS_PER_NODE
from facts.models import ModelFacts
from stacks.cache import CacheSettings
from stacks.problems import ConfigProblem
from stacks.serving import ServingProfile

GIB = 2**30
MIB = 2**20
# The download Job's default deadline: the weights at this rate, and never under an hour. A floor far below a
# Hugging Face download over Cloud NAT, so that only a stalled download (Xet stalled at 16-20 GB: docs/reference.md) hits it.
DOWNLOAD_FLOOR_MIBPS = 8
DOWNLOAD_LEAST_MINUTES = 60


@dataclass(frozen=True, kw_only=True)
class EngineShape:
    """What the engine runs for this model: its parallel shape and the architecture's flags."""

    tensor_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool
    mtp_tokens: int
    # None for a model without linear-attention layers: vLLM's Mamba cache does not apply.
    mamba_cache_mode: str | None
    mamba_block_size: int | None


def engine_shape(model: ModelFacts, serving: ServingProfile) -> EngineShape:
    hybrid = model.linear_attention_layers > 0
    return EngineShape(
        tensor_parallel_size=serving.tensor_parallel_size,
        data_parallel_size=serving.data_parallel_size,
        expert_parallel=serving.expert_parallel,
        mtp_tokens=mtp_tokens(model, serving),
        mamba_cache_mode=serving.mamba_cache_mode if hybrid else None,
        mamba_block_size=serving.mamba_block_size if hybrid else None,
    )


def mtp_tokens(model: ModelFacts, serving: ServingProfile) -> int:
    """Speculative tokens: the setting, else one on a model with MTP layers (MTP-1 gave +50% on the 27B)."""
    if serving.mtp_tokens is not None:
        return serving.mtp_tokens
    return 1 if model.mtp_layers else 0


def loaded_bytes(model: ModelFacts, serving: ServingProfile) -> int:
    """The weights an engine loads: the main model, and the MTP drafter when it drafts."""
    return model.weight_bytes + (model.mtp_weight_bytes if mtp_tokens(model, serving) else 0)


def weight_bytes_per_gpu(model: ModelFacts, serving: ServingProfile, tensor: int, data: int) -> int:
    """Each GPU's share: tensor parallel splits every layer; a MoE layer's experts are split over all the pod's GPUs,
    with expert parallel or not (vLLM's FusedMoEParallelConfig.make flattens tensor parallel across data parallel:
    vllm/model_executor/layers/fused_moe/config.py)."""
    loaded = loaded_bytes(model, serving)
    experts = model.expert_weight_bytes
    return math.ceil((loaded - experts) / tensor + experts / (tensor * data))


def weights_fit(model: ModelFacts, serving: ServingProfile, tensor: int, data: int) -> bool:
    share = B200_HBM_BYTES * serving.gpu_memory_utilization
    return weight_bytes_per_gpu(model, serving, tensor, data) <= share


def fitting_shapes(model: ModelFacts, serving: ServingProfile) -> list[str]:
    """The shapes of one node whose weights fit each GPU's share of HBM, as the settings write them."""
    shapes = []
    for tensor in (1, 2, 4, 8):
        data = GPUS_PER_NODE // tensor
        if weights_fit(model, serving, tensor, data):
            shapes.append(f"tensorParallelSize {tensor} x dataParallelSize {data}")
    return shapes


def check_engine(model: ModelFacts, serving: ServingProfile, cache: CacheSettings) -> None:
    """Refuse what this model cannot run: a shape not of one node or too small for its weights, flags its architecture lacks,
    a cache smaller than its weights. Problems name keys from the stack's root."""
    tensor, data = serving.tensor_parallel_size, serving.data_parallel_size
    shapes = fitting_shapes(model, serving)
    fits = f"shapes that fit {model.model_id}: {'; '.join(shapes)}" if shapes else f"no shape of one node fits {model.model_id}"
    if tensor * data != GPUS_PER_NODE:
        key = "dataParallelSize" if "data_parallel_size" in serving.model_fields_set else "tensorParallelSize"
        raise ConfigProblem(
            ("serving", key),
            data if key == "dataParallelSize" else tensor,
            f"makes a pod of dataParallelSize {data} x tensorParallelSize {tensor} = {tensor * data} GPUs; an A4 pod takes the "
            f"node's {GPUS_PER_NODE}; {fits}",
        )
    if serving.expert_parallel and not model.experts:
        raise ConfigProblem(("serving", "expertParallel"), True, f"needs a mixture-of-experts model; {model.model_id} is dense")
    if serving.mtp_tokens and not model.mtp_layers:
        raise ConfigProblem(
            ("serving", "mtpTokens"),
            serving.mtp_tokens,
            f"needs MTP layers; {model.model_id}'s config.json has none: set 0 or leave it unset",
        )
    if not weights_fit(model, serving, tensor, data):
        per_gpu = weight_bytes_per_gpu(model, serving, tensor, data)
        raise ConfigProblem(
            ("serving", "tensorParallelSize"),
            tensor,
            f"leaves {per_gpu / GIB:.1f} GiB of {model.model_id}'s weights on each GPU, above its share of a B200's HBM "
            f"({B200_HBM_BYTES * serving.gpu_memory_utilization / GIB:.1f} GiB at gpuMemoryUtilization "
            f"{serving.gpu_memory_utilization:g}); {fits}",
        )
    _check_mamba(model, serving)
    needed = math.ceil((model.weight_bytes + model.mtp_weight_bytes) / GIB)
    if cache.enabled and cache.size_gi < needed:
        raise ConfigProblem(
            ("cache", "sizeGi"),
            cache.size_gi,
            f"cannot hold {model.model_id}'s weights ({needed} GiB by its config.json, MTP layers included); use at least {needed}",
        )


def _check_mamba(model: ModelFacts, serving: ServingProfile) -> None:
    if not model.linear_attention_layers:
        for key, field in (("mambaCacheMode", "mamba_cache_mode"), ("mambaBlockSize", "mamba_block_size")):
            value = getattr(serving, field)
            if field in serving.model_fields_set and value is not None:
                raise ConfigProblem(
                    ("serving", key), value, f"applies to hybrid models only; {model.model_id} has no linear-attention layers: remove it"
                )
        return
    # vLLM 0.18.1 and 0.33.0 set the mode to none without prefix caching, and assert chunked prefill
    # with it (vllm/model_executor/models/config.py, MambaModelConfig; docs/vllm.md).
    if serving.mamba_cache_mode not in (None, "none"):
        for key, on in (("enablePrefixCaching", serving.enable_prefix_caching), ("enableChunkedPrefill", serving.enable_chunked_prefill)):
            if not on:
                raise ConfigProblem(
                    ("serving", "mambaCacheMode"),
                    serving.mamba_cache_mode,
                    f"needs {key}: true (vLLM turns the mode off without prefix caching and refuses it without chunked "
                    "prefill); turn it on, or unset mambaCacheMode and mambaBlockSize",
                )


def download_deadline_minutes(model: ModelFacts, cache: CacheSettings) -> int:
    """The download Job's deadline: the setting, else the checkpoint (MTP layers included) at the floor rate, an hour at least."""
    if cache.download_deadline_minutes is not None:
        return cache.download_deadline_minutes
    minutes = math.ceil((model.weight_bytes + model.mtp_weight_bytes) / (DOWNLOAD_FLOOR_MIBPS * MIB) / 60)
    return max(minutes, DOWNLOAD_LEAST_MINUTES)
