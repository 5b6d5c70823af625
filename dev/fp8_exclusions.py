"""Writes the modules a Qwen 3.5 FP8 checkpoint keeps in bf16 into the catalogue's config.json, whole name by name.

Usage: ``python -m dev.fp8_exclusions Qwen/Qwen3.5-27B-FP8 Qwen/Qwen3.5-397B-A17B-FP8``

Qwen's FP8 checkpoints list every module they keep out of FP8 in ``quantization_config.modules_to_not_convert``
by its whole name, and vLLM's FP8 method skips a module only when its whole name is in the list
(``facts.models.vllm_skips``). Where the published file cannot be read, the list is built from the config the way
those checkpoints build it: the LM head and the embeddings; each Gated DeltaNet layer's ``conv1d``,
``in_proj_a`` and ``in_proj_b``; each vision block's attention and MLP Linears, the merger's, the patch
embedding and the learned positions; the MTP ``fc``; for a MoE, each layer's router (``mlp.gate``) and
shared-expert gate, the MTP layers' too. Names are the checkpoint's (``model.language_model.``, ``model.visual.``,
``mtp.``), sorted as the published files sort them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from typing import Any

from facts.models import catalogue_folder, read_config

TEXT = "model.language_model"
VISION = "model.visual"
VISION_BLOCK = ("attn.proj", "attn.qkv", "mlp.linear_fc1", "mlp.linear_fc2")
VISION_OTHER = ("merger.linear_fc1", "merger.linear_fc2", "patch_embed.proj", "pos_embed")
DELTANET = ("conv1d", "in_proj_a", "in_proj_b")
MOE_GATES = ("mlp.gate", "mlp.shared_expert_gate")


def qwen35_fp8_exclusions(config: Mapping[str, Any]) -> list[str]:
    """The whole names a Qwen 3.5 FP8 checkpoint of ``config`` keeps in bf16."""
    text = config["text_config"]
    kinds = text["layer_types"]
    moe = int(text.get("num_experts") or 0) > 0
    names = ["lm_head", f"{TEXT}.embed_tokens"]
    for index, kind in enumerate(kinds):
        if kind == "linear_attention":
            names += [f"{TEXT}.layers.{index}.linear_attn.{part}" for part in DELTANET]
        if moe:
            names += [f"{TEXT}.layers.{index}.{part}" for part in MOE_GATES]
    vision = config.get("vision_config")
    if isinstance(vision, Mapping):
        names += [f"{VISION}.blocks.{block}.{part}" for block in range(int(vision["depth"])) for part in VISION_BLOCK]
        names += [f"{VISION}.{part}" for part in VISION_OTHER]
    mtp_layers = int(text.get("mtp_num_hidden_layers") or 0)
    if mtp_layers:
        names.append("mtp.fc")
        if moe:
            names += [f"mtp.layers.{index}.{part}" for index in range(mtp_layers) for part in MOE_GATES]
    return sorted(names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="catalogued Qwen 3.5 FP8 model ids")
    args = parser.parse_args(argv)
    for model in args.models:
        path = catalogue_folder(model) / "config.json"
        config = read_config(path)
        config["quantization_config"]["modules_to_not_convert"] = qwen35_fp8_exclusions(config)
        path.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
