"""A miniature of the stack's model: its architecture and layer pattern made small, random weights, a small tokenizer.

``python -m preflight.miniature OUT --model Qwen/Qwen3.5-27B-FP8`` writes it (the weights need torch and
transformers, on a GPU when there is one). The real ``config.json`` comes from the Hugging Face cache when
present, else from the model catalogue, ``facts/data/models/`` (each folder's PROVENANCE.md). No weights are downloaded.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import importlib
import json
import math
import os
import random
import shutil
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from facts.models import CATALOGUE, hf_cache_snapshot
from preflight.adapt import ModelShape

# The catalogue's copies, read when the Hugging Face cache has none.
VENDORED = CATALOGUE
# Files of the model's repository the engine reads besides the config (the processor of a multimodal model).
PROCESSOR_FILES = ("preprocessor_config.json", "video_preprocessor_config.json")

# Small enough to build in seconds and to leave the GPU's memory to the KV cache, large enough that the
# kernels the engine picks for the real model's head sizes are the ones it runs (the head dims are kept).
HIDDEN = 1024
INTERMEDIATE = 3072
ATTENTION_HEADS = 8
KV_HEADS = 2
LINEAR_KEY_HEADS = 4
# A MoE keeps experts, fewer and narrower: enough that expert parallelism over a node's 8 GPUs gives each some.
EXPERTS = 16
EXPERTS_PER_TOKEN = 4
MOE_INTERMEDIATE = 256
# The architectures the miniature follows, from the layer kinds a config declares.
ARCHITECTURE_KINDS = ("dense", "moe", "hybrid", "hybrid moe")
# The model the preflight runs: the miniature, or the stack's model at its real size with dummy weights.
SIZES = ("miniature", "full")
VISION = {"depth": 2, "hidden_size": 256, "intermediate_size": 512, "num_heads": 4}
BPE_TOKENS = 8000
# Padded like real vocabularies (Qwen's 248320 is a multiple of 256).
VOCAB = 8192
# ChatML's and Qwen's vision markers: the chat template and the multimodal processor need them.
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
)
# Config keys that hold a token id, and the token each means.
TOKEN_KEYS = {
    "image_token_id": "<|image_pad|>",
    "video_token_id": "<|video_pad|>",
    "vision_start_token_id": "<|vision_start|>",
    "vision_end_token_id": "<|vision_end|>",
    "eos_token_id": "<|im_end|>",
    "pad_token_id": "<|endoftext|>",
    "bos_token_id": "<|endoftext|>",
}
# The real model's quantization and its old dtype key: the miniature is bf16 (``dtype``) at every level.
DROPPED = ("quantization_config", "torch_dtype")
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- set content = message['content'] if message['content'] is string else "
    "message['content'] | selectattr('type', 'equalto', 'text') | map(attribute='text') | join('') -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)


class ModelSourceError(LookupError):
    """No config.json of the model in the Hugging Face cache nor vendored."""


def token_id(token: str) -> int:
    return BPE_TOKENS + SPECIAL_TOKENS.index(token)


@dataclass(frozen=True)
class ModelSource:
    model: str
    folder: Path
    config: dict[str, Any]
    # Where the config came from: a cache snapshot (its revision) or the vendored copy.
    provenance: str


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _json_text(value: Any) -> str:
    """JSON as the miniature's files hold it: indented for a person reading them, ASCII (json escapes the rest)."""
    return json.dumps(value, indent=1)


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def vendored_folder(model: str) -> Path:
    return VENDORED / model.replace("/", "--")


def find_source(model: str, env: Mapping[str, str]) -> ModelSource:
    """The model's real config: the Hugging Face cache first, else the vendored copy."""
    snapshot = hf_cache_snapshot(model, env)
    if snapshot is not None:
        config = _read_json(snapshot / "config.json")
        return ModelSource(model, snapshot, config, f"Hugging Face cache, revision {snapshot.name}")
    folder = vendored_folder(model)
    if not (folder / "config.json").exists():
        known = sorted(p.name.replace("--", "/") for p in VENDORED.glob("*") if (p / "config.json").exists())
        raise ModelSourceError(
            f"no config.json of {model}: not in the Hugging Face cache and not vendored (vendored: {', '.join(known)}); "
            f"put its config.json in the cache (huggingface-cli download {model} config.json) or under {folder}"
        )
    config = _read_json(folder / "config.json")
    return ModelSource(model, folder, config, f"vendored copy, {folder.relative_to(VENDORED.parents[2]).as_posix()}/PROVENANCE.md")


def _text(config: Mapping[str, Any]) -> Mapping[str, Any]:
    text = config.get("text_config")
    return text if isinstance(text, Mapping) else config


def _experts(text: Mapping[str, Any]) -> int:
    return int(text.get("num_experts") or text.get("num_local_experts") or 0)


def architecture_kind(config: Mapping[str, Any]) -> str:
    """``dense``, ``moe``, ``hybrid`` (linear attention or Mamba layers beside full attention) or ``hybrid moe``."""
    text = _text(config)
    hybrid = any(kind != "full_attention" for kind in text.get("layer_types") or []) or "linear_num_key_heads" in text
    moe = _experts(text) > 1
    return {(False, False): "dense", (False, True): "moe", (True, False): "hybrid", (True, True): "hybrid moe"}[(hybrid, moe)]


def shape(config: Mapping[str, Any]) -> ModelShape:
    text = _text(config)
    kinds = text.get("layer_types") or []
    head = text.get("linear_key_head_dim")
    return ModelShape(linear_attention="linear_attention" in kinds, linear_key_head_dim=int(head) if head is not None else None)


def _lcm(a: int, b: int) -> int:
    return a * b // math.gcd(a, b)


def _small_text(text: Mapping[str, Any], tensor_parallel: int) -> dict[str, Any]:
    small = dict(text)
    kinds = list(text.get("layer_types") or [])
    period = int(text.get("full_attention_interval") or 0) or (kinds.index("full_attention") + 1 if "full_attention" in kinds else 2)
    layers = min(int(text.get("num_hidden_layers", 2 * period)), 2 * period)
    # Tensor parallelism shards heads and widths: each is made a multiple of it, the heads' ratios kept.
    widen = tensor_parallel // math.gcd(tensor_parallel, KV_HEADS)
    small.update(num_hidden_layers=layers, hidden_size=HIDDEN, intermediate_size=_lcm(INTERMEDIATE, tensor_parallel), vocab_size=VOCAB)
    if kinds:
        # The first layers keep the real order: two periods of the hybrid pattern.
        small["layer_types"] = kinds[:layers]
    if "num_attention_heads" in text:
        small.update(num_attention_heads=ATTENTION_HEADS * widen, num_key_value_heads=KV_HEADS * widen)
        if "head_dim" not in text and "hidden_size" in text:
            # The real head size chooses the kernels: a config without head_dim has it from the real widths.
            small["head_dim"] = int(text["hidden_size"]) // int(text["num_attention_heads"])
    if "linear_num_key_heads" in text:
        # The value/key head ratio of the real model (48/16 for Qwen 3.5 27B).
        ratio = int(text["linear_num_value_heads"]) // int(text["linear_num_key_heads"])
        keys = _lcm(LINEAR_KEY_HEADS, tensor_parallel)
        small.update(linear_num_key_heads=keys, linear_num_value_heads=keys * ratio)
    experts = _experts(text)
    if experts > 1:
        key = "num_experts" if "num_experts" in text else "num_local_experts"
        small[key] = min(experts, EXPERTS)
        small["num_experts_per_tok"] = min(int(text.get("num_experts_per_tok") or 1), EXPERTS_PER_TOKEN, small[key])
        if "moe_intermediate_size" in text:
            small["moe_intermediate_size"] = _lcm(MOE_INTERMEDIATE, tensor_parallel)
        if text.get("shared_expert_intermediate_size"):
            small["shared_expert_intermediate_size"] = _lcm(2 * MOE_INTERMEDIATE, tensor_parallel)
    if "mlp_only_layers" in text:
        small["mlp_only_layers"] = [i for i in text["mlp_only_layers"] if i < layers]
    for key, token in TOKEN_KEYS.items():
        if key in small and small[key] is not None:
            small[key] = token_id(token)
    small["dtype"] = "bfloat16"
    for key in DROPPED:
        small.pop(key, None)
    return small


def miniature_config(config: Mapping[str, Any], *, tensor_parallel: int = 1) -> dict[str, Any]:
    """``config`` made small: the same classes, layer pattern and kinds of layer (dense, MoE, hybrid), smaller widths
    that divide by ``tensor_parallel``, the miniature's token ids, bf16."""
    small = {k: v for k, v in config.items() if k not in DROPPED}
    if "text_config" in config:
        small["text_config"] = _small_text(config["text_config"], tensor_parallel)
    else:
        small.update(_small_text(config, tensor_parallel))
    if isinstance(config.get("vision_config"), Mapping):
        vision = dict(config["vision_config"])
        vision.update(VISION, out_hidden_size=HIDDEN)
        vision["deepstack_visual_indexes"] = [i for i in vision.get("deepstack_visual_indexes") or [] if i < VISION["depth"]]
        small["vision_config"] = vision
    for key, token in TOKEN_KEYS.items():
        if key in small and small[key] is not None:
            small[key] = token_id(token)
    small["dtype"] = "bfloat16"
    return small


def config_digest(config: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def corpus(limit: int = 120) -> Iterator[str]:
    """Local text to train the tokenizer on: this Python's own standard library sources, in a fixed order."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for path in sorted(stdlib.glob("*.py"))[:limit]:
        yield path.read_text(encoding="utf-8")
    words = (stdlib / "os.py").read_text(encoding="utf-8").split()
    rng = random.Random(0)
    for _ in range(500):
        yield " ".join(rng.choice(words) for _ in range(60))


def tokenizer_files() -> dict[str, str]:
    """What the engine reads besides ``tokenizer.json``, by file name: the tokenizer's settings, the chat template, the ends."""
    decoder = {
        str(token_id(t)): {"content": t, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False, "special": True}
        for t in SPECIAL_TOKENS
    }
    settings = {
        "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": 262144,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "bos_token": None,
        "unk_token": None,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
        "added_tokens_decoder": decoder,
        "chat_template": CHAT_TEMPLATE,
    }
    generation = {"eos_token_id": [token_id("<|im_end|>"), token_id("<|endoftext|>")], "pad_token_id": token_id("<|endoftext|>")}
    return {
        "tokenizer_config.json": _json_text(settings),
        "chat_template.jinja": CHAT_TEMPLATE,
        "generation_config.json": _json_text(generation),
    }


# Not mutated: it needs the tokenizers library, which comes with transformers on the GPU machine and not
# with the project; the real runs (tests/real_runs/) served a miniature with the tokenizer it wrote.
def train_tokenizer(out: Path) -> None:  # pragma: no mutate block
    """``tokenizer.json``: a byte-level BPE trained on ``corpus()``, ChatML's special tokens after it."""
    lib: Any = importlib.import_module("tokenizers")
    AddedToken, Tokenizer = lib.AddedToken, lib.Tokenizer  # noqa: N806
    decoders, models, pre_tokenizers, processors, trainers = lib.decoders, lib.models, lib.pre_tokenizers, lib.processors, lib.trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=BPE_TOKENS, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(corpus(), trainer=trainer)
    if tokenizer.get_vocab_size() != BPE_TOKENS:
        raise RuntimeError(f"the BPE trainer made {tokenizer.get_vocab_size()} tokens, not {BPE_TOKENS}: too little text")
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    for token in SPECIAL_TOKENS:
        if tokenizer.token_to_id(token) != token_id(token):
            raise RuntimeError(f"{token} got id {tokenizer.token_to_id(token)}, not {token_id(token)}")
    tokenizer.save(str(out / "tokenizer.json"))


def write_tokenizer(out: Path) -> None:
    """A byte-level BPE trained on local text, ChatML's special tokens after it, and a ChatML chat template."""
    train_tokenizer(out)
    for name, text in tokenizer_files().items():
        _write(out / name, text)


# The next two are not mutated: they need torch, transformers and safetensors, which the project does not
# install; the real runs (tests/real_runs/) served the weights they wrote. The MTP tensors' names come from
# mtp_names, which is tested.
def write_weights(out: Path, config: Mapping[str, Any]) -> dict[str, Any]:  # pragma: no mutate block
    """Random bf16 weights of ``config``'s model class (transformers), plus the MTP layers transformers leaves out."""
    torch: Any = importlib.import_module("torch")
    transformers: Any = importlib.import_module("transformers")
    save_file = importlib.import_module("safetensors.torch").save_file

    architecture = str(config["architectures"][0])
    model_class = getattr(transformers, architecture)
    loaded = transformers.AutoConfig.from_pretrained(str(out))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    with torch.device(device):
        model = model_class._from_config(loaded, dtype=torch.bfloat16)
    tensors = {name: tensor.detach().contiguous() for name, tensor in model.state_dict().items()}
    text = _text(config)
    mtp_layers = int(text.get("mtp_num_hidden_layers") or 0)
    if mtp_layers:
        tensors.update(_mtp_tensors(tensors, text, mtp_layers))
    tensors = {name: tensor.cpu() for name, tensor in tensors.items()}
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    count = sum(t.numel() for t in tensors.values())
    return {"tensors": len(tensors), "parameters": count, "bytes": (out / "model.safetensors").stat().st_size, "device": device}


def mtp_names(names: Iterable[str], text: Mapping[str, Any], layers: int) -> dict[str, str]:
    """Qwen 3.5's MTP layers as vLLM loads them (vllm/model_executor/models/qwen3_5_mtp.py: ``mtp.*``), each from its source.

    Each MTP layer is a full-attention decoder layer: a copy of the model's first one, found under either
    prefix transformers gives a text model's layers (a multimodal model nests it under ``language_model``).
    """
    kinds = list(text.get("layer_types") or [])
    first = kinds.index("full_attention")
    names = list(names)
    prefix = next(p for p in (f"model.language_model.layers.{first}.", f"model.layers.{first}.") if any(n.startswith(p) for n in names))
    return {f"mtp.layers.{index}.{name[len(prefix) :]}": name for index in range(layers) for name in names if name.startswith(prefix)}


def _mtp_tensors(tensors: Mapping[str, Any], text: Mapping[str, Any], layers: int) -> dict[str, Any]:  # pragma: no mutate block
    """The MTP block's tensors: the layers ``mtp_names`` names, copied; ``fc`` maps the concatenated embedding and
    hidden state back to the hidden size; the norms start at zero, which Qwen 3.5's RMSNorm (scale 1 + w) reads as identity.
    """
    torch: Any = importlib.import_module("torch")
    hidden = int(text["hidden_size"])
    sample = next(iter(tensors.values()))
    generator = torch.Generator(device=sample.device).manual_seed(1)
    found: dict[str, Any] = {name: tensors[source].clone() for name, source in mtp_names(tensors, text, layers).items()}
    fc = torch.randn(hidden, 2 * hidden, generator=generator, device=sample.device) * 0.02
    found["mtp.fc.weight"] = fc.to(torch.bfloat16)
    for norm in ("mtp.norm.weight", "mtp.pre_fc_norm_hidden.weight", "mtp.pre_fc_norm_embedding.weight"):
        found[norm] = torch.zeros(hidden, dtype=torch.bfloat16, device=sample.device)
    return found


def full_size_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` at its real size, its quantization_config kept, its special-token ids the small tokenizer's.

    vLLM's Qwen3-VL processor matches the config's image, video and vision start/end ids against the
    tokenizer at start; every other value is the checkpoint's, so vLLM builds the real layers and kernels.
    """
    full = copy.deepcopy(dict(config))
    for level in (full, full.get("text_config")):
        if isinstance(level, dict):
            for key, token in TOKEN_KEYS.items():
                if level.get(key) is not None:
                    level[key] = token_id(token)
    return full


def write(out: Path, source: ModelSource, *, weights: bool = True, tensor_parallel: int = 1, size: str = "miniature") -> dict[str, Any]:
    """The model folder in ``out``: the miniature (``size="miniature"``), or the real config for
    ``--load-format=dummy`` with no weights (``size="full"``). Reuses weights written earlier for the same config."""
    if size not in SIZES:
        raise ValueError(f"size {size!r}: one of {', '.join(SIZES)}")
    out.mkdir(parents=True, exist_ok=True)
    config = full_size_config(source.config) if size == "full" else miniature_config(source.config, tensor_parallel=tensor_parallel)
    weights = weights and size == "miniature"
    digest = config_digest(config)
    marker = out / "preflight-miniature.json"
    if marker.exists() and _read_json(marker).get("digest") == digest and (not weights or (out / "model.safetensors").exists()):
        made: dict[str, Any] = _read_json(marker)
        made["reused"] = True
        return made
    _write(out / "config.json", _json_text(config))
    for name in PROCESSOR_FILES:
        if (source.folder / name).exists():
            shutil.copyfile(source.folder / name, out / name)
    write_tokenizer(out)
    made = {"model": source.model, "source": source.provenance, "digest": digest, "size": size, "kind": architecture_kind(source.config)}
    if weights:
        made["weights"] = write_weights(out, config)
    _write(marker, _json_text(made))
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m preflight.miniature", description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument("--model", default="Qwen/Qwen3.5-27B-FP8")
    parser.add_argument("--no-weights", action="store_true", help="config, tokenizer and processor files only")
    parser.add_argument("--tensor-parallel", type=int, default=1, help="the stack's tensor parallelism: the miniature's heads divide by it")
    parser.add_argument("--size", choices=SIZES, default="miniature", help="full: the real config for --load-format=dummy, no weights")
    args = parser.parse_args(argv)
    source = find_source(args.model, os.environ)
    made = write(args.out, source, weights=not args.no_weights, tensor_parallel=args.tensor_parallel, size=args.size)
    print(json.dumps(made))
    return 0


if __name__ == "__main__":
    sys.exit(main())
