"""The generator of Qwen 3.5 FP8 exclusion lists: the catalogue holds what it writes, in whole names."""

from __future__ import annotations

from dev.fp8_exclusions import qwen35_fp8_exclusions
from facts.models import CATALOGUE, read_config


def config_of(model_id: str) -> dict[str, object]:
    return read_config(CATALOGUE / model_id.replace("/", "--") / "config.json")


def test_the_catalogue_holds_the_generated_lists() -> None:
    for model in ("Qwen/Qwen3.5-27B-FP8", "Qwen/Qwen3.5-397B-A17B-FP8"):
        config = config_of(model)
        assert config["quantization_config"]["modules_to_not_convert"] == qwen35_fp8_exclusions(config)  # type: ignore[index]


def test_the_27b_keeps_three_modules_a_deltanet_layer_four_a_vision_block_and_no_router() -> None:
    names = qwen35_fp8_exclusions(config_of("Qwen/Qwen3.5-27B-FP8"))
    # The LM head, the embeddings, 48 DeltaNet layers x 3, 27 vision blocks x 4, the merger's two, the patch
    # embedding, the positions and the MTP fc.
    assert len(names) == 2 + 48 * 3 + 27 * 4 + 4 + 1
    assert names[:4] == [
        "lm_head",
        "model.language_model.embed_tokens",
        "model.language_model.layers.0.linear_attn.conv1d",
        "model.language_model.layers.0.linear_attn.in_proj_a",
    ]
    assert "model.language_model.layers.3.linear_attn.in_proj_a" not in names  # full attention
    assert not [n for n in names if n.endswith("mlp.gate")]


def test_the_397b_keeps_every_layers_router_and_shared_expert_gate_and_the_mtp_layers() -> None:
    names = qwen35_fp8_exclusions(config_of("Qwen/Qwen3.5-397B-A17B-FP8"))
    assert "model.language_model.layers.59.mlp.gate" in names and "model.language_model.layers.3.mlp.shared_expert_gate" in names
    assert {"mtp.fc", "mtp.layers.0.mlp.gate", "mtp.layers.0.mlp.shared_expert_gate"} <= set(names)
    assert len(names) == 2 + 45 * 3 + 60 * 2 + 27 * 4 + 4 + 1 + 2
