"""What a model is, read from its own ``config.json``: layers, sizes under its quantization, state per token and sequence.

The catalogue (``facts/data/models/<org>--<name>/``, each folder with its PROVENANCE.md) holds the files of the
models the program knows; any other model's file comes from ``llm:model.config`` or the Hugging Face cache.
Weights are counted module by module as vLLM loads them: every Linear under the checkpoint's quantization
(FP8 blocks of 128 x 128 with a float32 scale each; FP8 per channel; NVFP4, 4 bits with an FP8 scale per 16
elements), the modules the checkpoint keeps out of it, embeddings and norms, in bf16.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

CATALOGUE = Path(__file__).parent / "data" / "models"
# sentence-transformers' file: a repository that ships it is meant for embeddings whatever its architecture.
SENTENCE_TRANSFORMERS = "modules.json"
# Bytes of one element: vLLM keeps unquantized weights in bf16 and conv/recurrent state in the model's dtype
# (MambaStateDtypeCalculator, mamba_cache_dtype and mamba_ssm_cache_dtype "auto").
MODEL_DTYPE_BYTES = 2
# Bytes of the recurrent (SSM) state by the config's mamba_ssm_dtype, which vLLM takes for Qwen 3.5 when
# --mamba-ssm-cache-dtype is auto (vllm/model_executor/models/config.py, Qwen3_5ForConditionalGenerationConfig).
SSM_DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
# The KV cache's bytes per element by --kv-cache-dtype ("auto": the model's dtype).
KV_DTYPE_BYTES = {"auto": 2, "bfloat16": 2, "float16": 2, "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1}
NVFP4_GROUP = 16
FP8_SCALE_BYTES = 4  # float32 block or channel scales

Quantization = Literal["bf16", "fp8", "nvfp4"]
Task = Literal["generate", "embed"]


class ModelConfigError(ValueError):
    """A config.json the facts cannot be read from; the message says which key and why."""


@dataclass(frozen=True)
class _Linear:
    name: str  # the module's name in the checkpoint, as the quantization's exclusions name it
    rows: int  # output features
    columns: int  # input features
    count: int = 1  # identical modules (the experts of one layer)
    expert: bool = False
    # vLLM's module where it builds this one with others (qkv_proj, gate_up_proj, in_proj_qkvz, in_proj_ba: its
    # packed_modules_mapping; a layer's experts) and, for a fused one, the checkpoint names of all its shards.
    fused: str = ""
    shards: tuple[str, ...] = ()
    # False where vLLM builds the module unquantized whatever the list: the MoE router and shared-expert gate
    # (ReplicatedLinear(quant_config=None), qwen3_next.py); the LM head but under ModelOpt (a ParallelLMHead:
    # Fp8Config quantizes LinearBase only, compressed-tensors only a head its groups target).
    quantizable: bool = True


def _fused(prefix: str, fused: str, shards: tuple[str, ...], sizes: tuple[tuple[int, int], ...]) -> Iterator[_Linear]:
    """The shards of one module vLLM fuses, each with its own size (rows, columns)."""
    names = tuple(f"{prefix}.{shard}" for shard in shards)
    for name, (rows, columns) in zip(names, sizes, strict=True):
        yield _Linear(name, rows, columns, fused=f"{prefix}.{fused}", shards=names)


def vllm_skips(
    module: str, shards: tuple[str, ...], matches: Callable[[str], bool], excluded: Sequence[str], *, experts_by_entry: bool = True
) -> bool:
    """Whether vLLM builds ``module`` unquantized: vLLM 0.26.0's rule (``is_layer_skipped`` in
    vllm/model_executor/layers/quantization/utils/quant_utils.py; 0.33.0 the same, 0.18.1 without the first test).

    ``matches`` tests one name against the list as the method does (for ``fp8``: the name is in the list, whole).
    A fused module is skipped when its own name matches, else when every shard matches; some but not all is
    refused at start ("Detected some but not all shards ... are quantized"). A layer's experts are skipped when
    an entry that names experts contains the experts' prefix (not so for compressed-tensors, whose
    ``should_ignore_layer`` in compressed_tensors/utils.py is otherwise the same rule: ``experts_by_entry``).
    Names are compared as the checkpoint spells them: vLLM renames the list by the prefix map that names its
    modules (``apply_vllm_mapper``, the model's ``hf_to_vllm_mapper``), so the test is the same.
    """
    if shards:
        if matches(module):
            return True
        skipped = {matches(shard) for shard in shards}
        if len(skipped) > 1:
            raise ModelConfigError(
                f"config.json's quantization_config keeps some but not all of {', '.join(shards)} unquantized: "
                f"vLLM fuses them into {module} and refuses to start"
            )
        return skipped.pop()
    if experts_by_entry and module.endswith(".experts"):
        return any(module in entry for entry in excluded if "experts" in entry)
    return matches(module)


@dataclass(frozen=True)
class _Scheme:
    kind: Quantization
    block: tuple[int, int] | None  # FP8 block shape; None: one scale per output channel
    excluded: tuple[str, ...]
    # The config's quant_method: which test of a name against the list vLLM applies.
    method: str = "fp8"

    def matches(self, name: str) -> bool:
        if self.method == "compressed-tensors":
            # Equal, or "re:" a regular expression matched from the start (compressed_tensors/utils.py,
            # _is_equal_or_regex_match).
            return any(re.match(p[3:], name) if p.startswith("re:") else p == name for p in self.excluded)
        # fp8 and modelopt: the whole name, exactly (Fp8Config.get_quant_method, ModelOpt's first test).
        return name in self.excluded

    def keeps(self, linear: _Linear) -> bool:
        """Whether vLLM loads ``linear`` in bf16 under this quantization."""
        if self.kind == "bf16" or not linear.quantizable:
            return True
        module = linear.fused or linear.name
        # ModelOpt then keeps a module its list names in part or by a glob (modelopt.py, is_layer_excluded).
        if self.method == "modelopt" and any(p in module or fnmatch.fnmatchcase(module, p) for p in self.excluded):
            return True
        experts_by_entry = self.method != "compressed-tensors"
        return vllm_skips(module, linear.shards, self.matches, self.excluded, experts_by_entry=experts_by_entry)

    def bytes(self, linear: _Linear) -> int:
        elements = linear.rows * linear.columns
        if self.keeps(linear):
            size = elements * MODEL_DTYPE_BYTES
        elif self.kind == "fp8":
            if self.block is None:
                scales = linear.rows
            else:
                scales = math.ceil(linear.rows / self.block[0]) * math.ceil(linear.columns / self.block[1])
            size = elements + scales * FP8_SCALE_BYTES
        else:
            size = elements // 2 + math.ceil(elements / NVFP4_GROUP) + 2 * FP8_SCALE_BYTES
        return size * linear.count


@dataclass(frozen=True, kw_only=True)
class ModelFacts:
    model_id: str
    architecture: str
    """The config's ``architectures[0]``."""
    task: Task
    """What the model is for: generation, or embeddings (its repository ships sentence-transformers' modules.json)."""
    quantization: Quantization
    parameters: int
    """The main model's parameters (vision tower included, MTP layers excluded)."""
    weight_bytes: int
    """The main model as loaded under its quantization, MTP drafter excluded."""
    expert_weight_bytes: int
    """The part of weight_bytes in routed experts (0 for a dense model)."""
    mtp_layers: int
    mtp_weight_bytes: int
    """The MTP drafter as loaded (its own layers; it shares the embeddings and the LM head)."""
    hidden_size: int
    vocab_size: int
    layers: int
    full_attention_layers: int
    linear_attention_layers: int
    """Gated DeltaNet (linear-attention) layers: their state is per sequence, not per token."""
    kv_heads: int
    head_dim: int
    experts: int
    """Routed experts per MoE layer, 0 for a dense model."""
    recurrent_state_bytes_per_sequence: int
    """All linear-attention layers' conv state (the model's dtype) and recurrent state (its mamba_ssm_dtype) of one sequence."""
    max_context: int

    @property
    def hybrid(self) -> bool:
        """Linear-attention layers beside full attention: vLLM's Mamba cache flags apply."""
        return self.linear_attention_layers > 0

    @property
    def moe(self) -> bool:
        return self.experts > 0

    def kv_bytes_per_token(self, kv_cache_dtype: str) -> int:
        """K and V of one token in every full-attention layer."""
        return self.full_attention_layers * 2 * self.kv_heads * self.head_dim * KV_DTYPE_BYTES[kv_cache_dtype]


def _int(text: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = text.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModelConfigError(f"config.json has no usable {key!r} (a non-negative integer): {value!r}")
    return value


def _text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    text = config.get("text_config")
    return text if isinstance(text, Mapping) else config


def _layer_kinds(text: Mapping[str, Any], layers: int) -> list[str]:
    kinds = text.get("layer_types")
    if isinstance(kinds, list):
        if len(kinds) != layers:
            raise ModelConfigError(f"config.json's layer_types has {len(kinds)} entries for {layers} num_hidden_layers")
        unknown = sorted({k for k in kinds if k not in ("full_attention", "linear_attention")})
        if unknown:
            raise ModelConfigError(f"config.json's layer_types has kinds the facts do not know: {', '.join(map(str, unknown))}")
        return [str(k) for k in kinds]
    interval = text.get("full_attention_interval")
    if isinstance(interval, int) and interval > 0:
        return ["full_attention" if (i + 1) % interval == 0 else "linear_attention" for i in range(layers)]
    return ["full_attention"] * layers


def _scheme(config: Mapping[str, Any]) -> _Scheme:
    quant = config.get("quantization_config")
    if not isinstance(quant, Mapping):
        return _Scheme("bf16", None, ())
    method = quant.get("quant_method")
    if method == "fp8":
        block = quant.get("weight_block_size")
        shape = (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 else None
        # vLLM reads ignored_layers first, then modules_to_not_convert (Fp8Config.from_config).
        excluded = quant.get("ignored_layers") or quant.get("modules_to_not_convert") or []
        return _Scheme("fp8", shape, tuple(excluded))
    if method == "modelopt":
        algo = str(quant.get("quant_algo", "")).upper()
        kinds: dict[str, Quantization] = {"FP8": "fp8", "NVFP4": "nvfp4"}
        if algo not in kinds:
            raise ModelConfigError(f"config.json's quantization_config: ModelOpt quant_algo {algo!r} is not FP8 or NVFP4")
        return _Scheme(kinds[algo], None, tuple(quant.get("exclude_modules") or quant.get("ignore") or []), "modelopt")
    if method == "compressed-tensors":
        groups = quant.get("config_groups") or {}
        weights = [g.get("weights") or {} for g in groups.values() if isinstance(g, Mapping)]
        if weights and all(w.get("type") == "float" and w.get("num_bits") == 8 for w in weights):
            block = weights[0].get("block_structure")
            shape = (int(block[0]), int(block[1])) if isinstance(block, list) and len(block) == 2 else None
            return _Scheme("fp8", shape, tuple(quant.get("ignore") or []), "compressed-tensors")
        if weights and all(w.get("type") == "float" and w.get("num_bits") == 4 and w.get("group_size") == NVFP4_GROUP for w in weights):
            return _Scheme("nvfp4", None, tuple(quant.get("ignore") or []), "compressed-tensors")
        raise ModelConfigError("config.json's quantization_config: compressed-tensors weights that are neither FP8 nor NVFP4")
    raise ModelConfigError(f"config.json's quantization_config: quant_method {method!r} is not one of fp8, modelopt, compressed-tensors")


def _attention(prefix: str, text: Mapping[str, Any], hidden: int, heads: int, kv_heads: int, head_dim: int) -> Iterator[_Linear]:
    # Qwen 3.5's gated attention projects a gate beside each query head (vllm/model_executor/models/qwen3_next.py).
    gate = 2 if text.get("attn_output_gate") else 1
    sizes = ((heads * head_dim * gate, hidden), (kv_heads * head_dim, hidden), (kv_heads * head_dim, hidden))
    yield from _fused(f"{prefix}.self_attn", "qkv_proj", ("q_proj", "k_proj", "v_proj"), sizes)
    yield _Linear(f"{prefix}.self_attn.o_proj", hidden, heads * head_dim)


def _linear_attention(prefix: str, text: Mapping[str, Any], hidden: int) -> Iterator[_Linear]:
    key = _int(text, "linear_num_key_heads") * _int(text, "linear_key_head_dim")
    value_heads = _int(text, "linear_num_value_heads")
    value = value_heads * _int(text, "linear_value_head_dim")
    # Qwen 3.5's checkpoint keeps the four apart; vLLM fuses them in two (qwen3_5.py, packed_modules_mapping).
    yield from _fused(f"{prefix}.linear_attn", "in_proj_qkvz", ("in_proj_qkv", "in_proj_z"), ((2 * key + value, hidden), (value, hidden)))
    yield from _fused(f"{prefix}.linear_attn", "in_proj_ba", ("in_proj_b", "in_proj_a"), ((value_heads, hidden), (value_heads, hidden)))
    yield _Linear(f"{prefix}.linear_attn.out_proj", hidden, value)


def _linear_attention_other(text: Mapping[str, Any]) -> int:
    """Conv1d weights, A_log, dt_bias and the gated norm of one linear-attention layer."""
    key = _int(text, "linear_num_key_heads") * _int(text, "linear_key_head_dim")
    value_heads = _int(text, "linear_num_value_heads")
    value = value_heads * _int(text, "linear_value_head_dim")
    return (2 * key + value) * _int(text, "linear_conv_kernel_dim") + 2 * value_heads + _int(text, "linear_value_head_dim")


def _mlp(prefix: str, text: Mapping[str, Any], hidden: int, index: int) -> Iterator[_Linear]:
    experts = _int(text, "num_experts", 0) or _int(text, "n_routed_experts", 0)
    sparse_step = _int(text, "decoder_sparse_step", 1) or 1
    dense_only = text.get("mlp_only_layers") or []
    if experts and index not in dense_only and (index + 1) % sparse_step == 0:
        size = _int(text, "moe_intermediate_size")
        # vLLM builds a layer's experts as one module, "<layer>.mlp.experts".
        for name, rows, columns in (("gate_proj", size, hidden), ("up_proj", size, hidden), ("down_proj", hidden, size)):
            yield _Linear(f"{prefix}.mlp.experts.0.{name}", rows, columns, count=experts, expert=True, fused=f"{prefix}.mlp.experts")
        yield _Linear(f"{prefix}.mlp.gate", experts, hidden, quantizable=False)
        shared = _int(text, "shared_expert_intermediate_size", 0)
        if shared:
            yield from _mlp_projections(f"{prefix}.mlp.shared_expert", shared, hidden)
            yield _Linear(f"{prefix}.mlp.shared_expert_gate", 1, hidden, quantizable=False)
        return
    yield from _mlp_projections(f"{prefix}.mlp", _int(text, "intermediate_size"), hidden)


def _mlp_projections(prefix: str, size: int, hidden: int) -> Iterator[_Linear]:
    yield from _fused(prefix, "gate_up_proj", ("gate_proj", "up_proj"), ((size, hidden), (size, hidden)))
    yield _Linear(f"{prefix}.down_proj", hidden, size)


def _vision(vision: Mapping[str, Any]) -> tuple[list[_Linear], int]:
    """The vision tower's Linears and its other parameters (Qwen3-VL's, which Qwen 3.5 inherits)."""
    hidden = _int(vision, "hidden_size")
    inner = _int(vision, "intermediate_size")
    merged = hidden * _int(vision, "spatial_merge_size", 2) ** 2
    linears: list[_Linear] = []
    for block in range(_int(vision, "depth")):
        prefix = f"model.visual.blocks.{block}"
        linears += [
            _Linear(f"{prefix}.attn.qkv", 3 * hidden, hidden),
            _Linear(f"{prefix}.attn.proj", hidden, hidden),
            _Linear(f"{prefix}.mlp.linear_fc1", inner, hidden),
            _Linear(f"{prefix}.mlp.linear_fc2", hidden, inner),
        ]
    linears += [
        _Linear("model.visual.merger.linear_fc1", merged, merged),
        _Linear("model.visual.merger.linear_fc2", _int(vision, "out_hidden_size"), merged),
    ]
    patch = _int(vision, "in_channels", 3) * _int(vision, "temporal_patch_size", 2) * _int(vision, "patch_size") ** 2 * hidden
    # Biases of every Linear, two LayerNorms (weight and bias) a block, the merger's norm, learned positions.
    biases = _int(vision, "depth") * (3 * hidden + hidden + inner + hidden) + merged + _int(vision, "out_hidden_size")
    norms = _int(vision, "depth") * 4 * hidden + 2 * hidden
    other = patch + hidden + biases + norms + _int(vision, "num_position_embeddings", 0) * hidden
    return linears, other


def _task(architecture: str, sentence_transformers: bool) -> Task:
    # vLLM's pooling architectures end so (vllm/model_executor/models/registry.py, _EMBEDDING_MODELS).
    if sentence_transformers or architecture.endswith(("Model", "ForEmbedding", "EmbeddingModel")):
        return "embed"
    return "generate"


def model_facts(config: Mapping[str, Any], *, model_id: str, sentence_transformers: bool = False) -> ModelFacts:
    """The facts of ``config`` (a parsed config.json); ``sentence_transformers``: its repository ships modules.json."""
    architectures = config.get("architectures")
    if not isinstance(architectures, list) or not architectures or not isinstance(architectures[0], str):
        raise ModelConfigError("config.json has no 'architectures' list naming the model class")
    architecture = architectures[0]
    task = _task(architecture, sentence_transformers)
    text = _text(config)
    scheme = _scheme(config)
    hidden = _int(text, "hidden_size")
    layers = _int(text, "num_hidden_layers")
    heads = _int(text, "num_attention_heads")
    kv_heads = _int(text, "num_key_value_heads", heads)
    head_dim = _int(text, "head_dim", hidden // heads if heads else 0)
    vocab = _int(text, "vocab_size")
    kinds = _layer_kinds(text, layers)
    multimodal = isinstance(config.get("vision_config"), Mapping)
    base = "model.language_model" if multimodal else "model"
    qk_norm = str(text.get("model_type", config.get("model_type", ""))).startswith("qwen3")

    def layer(prefix: str, kind: str, index: int) -> tuple[list[_Linear], int]:
        if kind == "full_attention":
            mixer = _attention(prefix, text, hidden, heads, kv_heads, head_dim)
        else:
            mixer = _linear_attention(prefix, text, hidden)
        other = 2 * hidden + (2 * head_dim if kind == "full_attention" and qk_norm else 0)
        if kind == "linear_attention":
            other += _linear_attention_other(text)
        return [*mixer, *_mlp(prefix, text, hidden, index)], other

    linears: list[_Linear] = []
    other = hidden  # the final norm
    other += vocab * hidden  # the input embeddings, never quantized
    if task == "generate":
        linears.append(_Linear("lm_head", vocab, hidden, quantizable=scheme.method == "modelopt"))
    for index, kind in enumerate(kinds):
        found, extra = layer(f"{base}.layers.{index}", kind, index)
        linears += found
        other += extra
    if multimodal and task == "generate":
        found, extra = _vision(config["vision_config"])
        linears += found
        other += extra
    mtp_layers = _int(text, "mtp_num_hidden_layers", 0) or _int(text, "num_nextn_predict_layers", 0)
    # vLLM builds the drafter's fc unquantized under ModelOpt NVFP4 (qwen3_5_mtp.py, fc_quant).
    mtp: list[_Linear] = (
        [_Linear("mtp.fc", hidden, 2 * hidden, quantizable=not (scheme.method == "modelopt" and scheme.kind == "nvfp4"))]
        if mtp_layers
        else []
    )
    mtp_other = 3 * hidden if mtp_layers else 0  # the norms of the embedding, the hidden state and the output
    for index in range(mtp_layers):
        found, extra = layer(f"mtp.layers.{index}", "full_attention", 0)
        mtp += found
        mtp_other += extra

    linear_layers = kinds.count("linear_attention")
    if linear_layers:
        key = _int(text, "linear_num_key_heads") * _int(text, "linear_key_head_dim")
        value_heads = _int(text, "linear_num_value_heads")
        conv = (2 * key + value_heads * _int(text, "linear_value_head_dim")) * (_int(text, "linear_conv_kernel_dim") - 1)
        recurrent = value_heads * _int(text, "linear_key_head_dim") * _int(text, "linear_value_head_dim")
        ssm_bytes = SSM_DTYPE_BYTES.get(str(text.get("mamba_ssm_dtype")), MODEL_DTYPE_BYTES)
        state = linear_layers * (conv * MODEL_DTYPE_BYTES + recurrent * ssm_bytes)
    else:
        state = 0
    return ModelFacts(
        model_id=model_id,
        architecture=architecture,
        task=task,
        quantization=scheme.kind,
        parameters=sum(x.rows * x.columns * x.count for x in linears) + other,
        weight_bytes=sum(scheme.bytes(x) for x in linears) + other * MODEL_DTYPE_BYTES,
        expert_weight_bytes=sum(scheme.bytes(x) for x in linears if x.expert),
        mtp_layers=mtp_layers,
        mtp_weight_bytes=sum(scheme.bytes(x) for x in mtp) + mtp_other * MODEL_DTYPE_BYTES,
        hidden_size=hidden,
        vocab_size=vocab,
        layers=layers,
        full_attention_layers=kinds.count("full_attention"),
        linear_attention_layers=linear_layers,
        kv_heads=kv_heads,
        head_dim=head_dim,
        experts=_int(text, "num_experts", 0) or _int(text, "n_routed_experts", 0),
        recurrent_state_bytes_per_sequence=state,
        max_context=_int(text, "max_position_embeddings"),
    )


def catalogue_folder(model_id: str) -> Path:
    return CATALOGUE / model_id.replace("/", "--")


def catalogue() -> list[str]:
    """The model ids the catalogue holds."""
    return sorted(p.name.replace("--", "/", 1) for p in CATALOGUE.iterdir() if (p / "config.json").exists())


def read_config(path: Path) -> dict[str, Any]:
    """A config.json, refused with a reason when it is not a JSON object."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelConfigError(f"cannot read {path.name} as JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ModelConfigError(f"{path.name} is not a JSON object")
    return value


@cache
def facts_in(folder: Path, model_id: str) -> ModelFacts:
    """The facts of the config.json in ``folder`` (a catalogue folder, a cache snapshot, a user's folder)."""
    modules = (folder / SENTENCE_TRANSFORMERS).exists()
    return model_facts(read_config(folder / "config.json"), model_id=model_id, sentence_transformers=modules)


def catalogued(model_id: str) -> ModelFacts | None:
    """The facts of a catalogued model, None for a model the catalogue lacks."""
    folder = catalogue_folder(model_id)
    return facts_in(folder, model_id) if (folder / "config.json").exists() else None


def hf_cache_snapshot(model_id: str, env: Mapping[str, str]) -> Path | None:
    """The newest snapshot of ``model_id`` with a config.json in the Hugging Face cache, or None."""
    home = env.get("HF_HUB_CACHE") or str(Path(env.get("HF_HOME") or Path(env.get("HOME", "~")) / ".cache" / "huggingface") / "hub")
    snapshots = Path(home).expanduser() / f"models--{model_id.replace('/', '--')}" / "snapshots"
    # A missing folder globs to nothing.
    found = [s for s in snapshots.glob("*") if (s / "config.json").exists()]
    return max(found, key=lambda s: (s / "config.json").stat().st_mtime) if found else None
