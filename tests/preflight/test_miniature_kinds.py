"""The miniature follows the model's architecture: dense, MoE, hybrid and hybrid MoE, and the stack's tensor parallelism."""

from __future__ import annotations

from typing import Any

import pytest

from preflight.miniature import ARCHITECTURE_KINDS, architecture_kind, find_source, miniature_config
from tests.preflight.model_configs import QWEN3_MOE


def catalogued(model: str) -> dict[str, Any]:
    return find_source(model, {"HF_HUB_CACHE": "/nonexistent"}).config


LLAMA_70B = catalogued("meta-llama/Llama-3.3-70B-Instruct")
QWEN35_27B = catalogued("Qwen/Qwen3.5-27B-FP8")
QWEN35_MOE = catalogued("Qwen/Qwen3.5-397B-A17B-FP8")
CONFIGS = {"dense": LLAMA_70B, "moe": QWEN3_MOE, "hybrid": QWEN35_27B, "hybrid moe": QWEN35_MOE}


def text(config: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = config.get("text_config") or config
    return found


@pytest.mark.parametrize("kind", list(CONFIGS))
def test_each_kind_is_read_from_the_config(kind: str) -> None:
    assert architecture_kind(CONFIGS[kind]) == kind
    assert kind in ARCHITECTURE_KINDS


def test_a_dense_model_keeps_its_class_and_head_size_without_a_pattern_or_experts() -> None:
    without = {key: value for key, value in LLAMA_70B.items() if key != "head_dim"}
    small = miniature_config(without)
    assert small["architectures"] == ["LlamaForCausalLM"]
    # A config without head_dim: 8192 / 64 = 128 is written, or the miniature's 1024 / 8 would be chosen.
    assert small["head_dim"] == 128 == miniature_config(LLAMA_70B)["head_dim"]
    assert small["num_hidden_layers"] == 4 and "layer_types" not in small
    assert not any(key.startswith(("num_experts", "linear_")) for key in small)
    assert small["num_attention_heads"] % small["num_key_value_heads"] == 0


@pytest.mark.parametrize("config", [QWEN3_MOE, QWEN35_MOE], ids=["qwen3-moe", "qwen3.5-moe"])
def test_a_moe_model_keeps_its_experts_fewer_and_narrower(config: dict[str, Any]) -> None:
    real, small = text(config), text(miniature_config(config))
    assert 1 < small["num_experts"] < real["num_experts"]
    assert 1 <= small["num_experts_per_tok"] <= min(real["num_experts_per_tok"], small["num_experts"])
    assert small["moe_intermediate_size"] < real["moe_intermediate_size"]
    if "shared_expert_intermediate_size" in real:
        assert 0 < small["shared_expert_intermediate_size"] < real["shared_expert_intermediate_size"]
    for key in ("decoder_sparse_step", "norm_topk_prob"):
        assert small.get(key) == real.get(key)


def test_the_hybrid_moe_keeps_its_layer_pattern_and_mtp_layer() -> None:
    small = text(miniature_config(QWEN35_MOE))
    assert small["layer_types"] == ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3 + ["full_attention"]
    assert small["mtp_num_hidden_layers"] == 1 and small["head_dim"] == 256 and small["linear_key_head_dim"] == 128


@pytest.mark.parametrize("kind", list(CONFIGS))
@pytest.mark.parametrize("tensor_parallel", [1, 2, 4, 8])
def test_every_sharded_width_divides_by_the_tensor_parallelism(kind: str, tensor_parallel: int) -> None:
    small = text(miniature_config(CONFIGS[kind], tensor_parallel=tensor_parallel))
    assert small["num_attention_heads"] % tensor_parallel == 0
    assert small["num_key_value_heads"] % tensor_parallel == 0
    assert small["num_attention_heads"] % small["num_key_value_heads"] == 0
    for key in ("linear_num_key_heads", "linear_num_value_heads", "moe_intermediate_size", "shared_expert_intermediate_size"):
        if key in small:
            assert small[key] % tensor_parallel == 0, key
    assert small["intermediate_size"] % tensor_parallel == 0


def test_without_tensor_parallelism_qwen35s_miniature_is_the_one_the_real_runs_served() -> None:
    assert miniature_config(QWEN35_27B, tensor_parallel=1) == miniature_config(QWEN35_27B)
    assert text(miniature_config(QWEN35_27B))["num_key_value_heads"] == 2


def test_wider_tensor_parallelism_widens_the_heads_and_keeps_their_ratio() -> None:
    one, eight = text(miniature_config(QWEN35_27B)), text(miniature_config(QWEN35_27B, tensor_parallel=8))
    assert (eight["num_key_value_heads"], eight["num_attention_heads"]) == (8, 32)
    assert eight["linear_num_value_heads"] // eight["linear_num_key_heads"] == one["linear_num_value_heads"] // one["linear_num_key_heads"]
