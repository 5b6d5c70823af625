"""The model facts, read from each catalogued config.json and checked against the published sizes and a measured load."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from facts.models import CATALOGUE, ModelConfigError, catalogue, catalogued, facts_in, model_facts, read_config

GIB = 2**30
QWEN_27B = "Qwen/Qwen3.5-27B-FP8"
QWEN_397B_FP8 = "Qwen/Qwen3.5-397B-A17B-FP8"
QWEN_397B_NVFP4 = "nvidia/Qwen3.5-397B-A17B-NVFP4"
LLAMA = "meta-llama/Llama-3.3-70B-Instruct"
LLAMA_FP8 = "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
EMBEDDING = "Qwen/Qwen3-Embedding-8B"
# vLLM 0.26.0 on one H200 loading the 27B's published config with FP8 dummy weights (docs/reference.md, "Model sizes").
MEASURED_27B_GIB = 28.54
MEASURED_27B_WITH_MTP_GIB = 28.99


def config_of(model_id: str) -> dict[str, Any]:
    return read_config(CATALOGUE / model_id.replace("/", "--") / "config.json")


def test_every_catalogued_model_has_its_provenance_and_facts() -> None:
    assert catalogue() == sorted([QWEN_27B, QWEN_397B_FP8, QWEN_397B_NVFP4, LLAMA, LLAMA_FP8, EMBEDDING])
    for model_id in catalogue():
        provenance = (CATALOGUE / model_id.replace("/", "--") / "PROVENANCE.md").read_text(encoding="utf-8")
        assert f"https://huggingface.co/{model_id}/" in provenance
        facts = catalogued(model_id)
        assert facts is not None and facts.model_id == model_id


def test_the_27b_weighs_what_vllm_loaded_within_5_percent() -> None:
    facts = catalogued(QWEN_27B)
    assert facts is not None
    assert facts.weight_bytes / GIB == pytest.approx(MEASURED_27B_GIB, rel=0.05)
    assert (facts.weight_bytes + facts.mtp_weight_bytes) / GIB == pytest.approx(MEASURED_27B_WITH_MTP_GIB, rel=0.05)
    assert facts.mtp_weight_bytes / GIB == pytest.approx(MEASURED_27B_WITH_MTP_GIB - MEASURED_27B_GIB, rel=0.1)


def test_the_27b_is_a_hybrid_with_mtp() -> None:
    facts = catalogued(QWEN_27B)
    assert facts is not None
    assert (facts.architecture, facts.task, facts.quantization) == ("Qwen3_5ForConditionalGeneration", "generate", "fp8")
    assert facts.parameters / 1e9 == pytest.approx(27, rel=0.03)
    assert (facts.layers, facts.full_attention_layers, facts.linear_attention_layers) == (64, 16, 48)
    assert (facts.mtp_layers, facts.experts, facts.expert_weight_bytes) == (1, 0, 0)
    assert (facts.kv_heads, facts.head_dim, facts.max_context) == (4, 256, 262144)
    # 16 layers x K and V x 4 heads x 256, one byte each in FP8, two in the model's dtype.
    assert facts.kv_bytes_per_token("fp8_e4m3") == 16 * 2 * 4 * 256
    assert facts.kv_bytes_per_token("auto") == 2 * facts.kv_bytes_per_token("fp8")
    # Per DeltaNet layer: the conv window (3 of 4) over q, k (2 x 16 x 128) and v (48 x 128) in bf16, the 48 x 128 x 128
    # state in the config's mamba_ssm_dtype, float32: vLLM 0.26.0's 1,450 blocks of 69.41 GiB need the float32 size.
    assert facts.recurrent_state_bytes_per_sequence == 48 * (3 * (2 * 2048 + 6144) * 2 + 48 * 128 * 128 * 4)
    assert facts.hybrid and not facts.moe


def test_the_397b_checkpoints_hold_the_published_parameters_mostly_in_experts() -> None:
    fp8, nvfp4 = catalogued(QWEN_397B_FP8), catalogued(QWEN_397B_NVFP4)
    assert fp8 is not None and nvfp4 is not None
    for facts in (fp8, nvfp4):
        assert facts.parameters / 1e9 == pytest.approx(397, rel=0.01)
        assert (facts.experts, facts.full_attention_layers, facts.linear_attention_layers, facts.mtp_layers) == (512, 15, 45, 1)
        assert facts.moe and facts.hybrid
        assert facts.expert_weight_bytes > 0.9 * facts.weight_bytes
    assert (fp8.quantization, nvfp4.quantization) == ("fp8", "nvfp4")
    # One byte an FP8 weight, a bit over half a byte an NVFP4 one (4 bits and an FP8 scale per 16).
    assert fp8.expert_weight_bytes / nvfp4.expert_weight_bytes == pytest.approx(1 / (0.5 + 1 / 16), rel=0.01)
    # NVIDIA's card: ~233 GB on disk for routed experts in NVFP4, the rest bf16.
    assert nvfp4.weight_bytes / 1e9 == pytest.approx(233, rel=0.05)


def test_the_70b_is_dense_full_attention_without_mtp_and_fp8_halves_it() -> None:
    bf16, fp8 = catalogued(LLAMA), catalogued(LLAMA_FP8)
    assert bf16 is not None and fp8 is not None
    for facts in (bf16, fp8):
        assert facts.parameters / 1e9 == pytest.approx(70.6, rel=0.01)
        assert (facts.mtp_layers, facts.linear_attention_layers, facts.experts, facts.recurrent_state_bytes_per_sequence) == (0, 0, 0, 0)
        assert not facts.hybrid and not facts.moe
        assert facts.kv_bytes_per_token("auto") == 80 * 2 * 8 * 128 * 2
    assert (bf16.quantization, fp8.quantization) == ("bf16", "fp8")
    assert bf16.weight_bytes == pytest.approx(2 * bf16.parameters, rel=0.001)
    # FP8 but for the embeddings and the LM head, kept in bf16 (2 x 128256 x 8192 parameters).
    assert fp8.weight_bytes == pytest.approx(fp8.parameters + 2 * 128256 * 8192, rel=0.002)


def test_the_embedding_model_is_known_by_its_sentence_transformers_modules_and_has_no_lm_head() -> None:
    facts = catalogued(EMBEDDING)
    assert facts is not None
    assert (facts.architecture, facts.task, facts.quantization) == ("Qwen3ForCausalLM", "embed", "bf16")
    assert facts.parameters / 1e9 == pytest.approx(7.57, rel=0.01)
    generating = model_facts(config_of(EMBEDDING), model_id=EMBEDDING)
    assert generating.task == "generate"
    assert generating.parameters - facts.parameters == 151665 * 4096


# The 27B's list as the catalogue first wrote it: dotted parts, which vLLM's FP8 method matches against no module.
SHORT_NAMES = ["lm_head", "model.visual", "linear_attn.in_proj_a", "linear_attn.in_proj_b", "mlp.gate", "mtp.fc"]


def fp8_saving(rows: int, columns: int) -> int:
    """Bytes a Linear loses from bf16 to FP8 in 128 x 128 blocks with a float32 scale each."""
    return 2 * rows * columns - (rows * columns + -(-rows // 128) * -(-columns // 128) * 4)


def test_vllm_keeps_in_bf16_only_what_the_list_names_whole() -> None:
    config = config_of(QWEN_27B)
    short = json.loads(json.dumps(config))
    short["quantization_config"]["modules_to_not_convert"] = SHORT_NAMES
    vision = config["vision_config"]
    width, inner, merged = vision["hidden_size"], vision["intermediate_size"], vision["hidden_size"] * 4
    block = fp8_saving(3 * width, width) + fp8_saving(width, width) + fp8_saving(inner, width) + fp8_saving(width, inner)
    tower = vision["depth"] * block + fp8_saving(merged, merged) + fp8_saving(vision["out_hidden_size"], merged)
    # in_proj_b and in_proj_a: 48 value heads each (vLLM fuses them into one in_proj_ba; the facts count the
    # scales shard by shard, 40 of 4 bytes more a layer than vLLM's one row of blocks).
    deltanet = 48 * 2 * fp8_saving(48, config["text_config"]["hidden_size"])
    whole, by_short = model_facts(config, model_id="x"), model_facts(short, model_id="x")
    assert whole.weight_bytes - by_short.weight_bytes == tower + deltanet
    assert (tower + deltanet) / GIB == pytest.approx(0.45, abs=0.01)
    # The LM head is no Linear vLLM's FP8 method quantizes, and mtp.fc is its whole name: neither moves.
    assert whole.mtp_weight_bytes == by_short.mtp_weight_bytes


def test_the_catalogued_27b_names_every_deltanet_projection_it_keeps_whole() -> None:
    listed = config_of(QWEN_27B)["quantization_config"]["modules_to_not_convert"]
    linear = [i for i, kind in enumerate(config_of(QWEN_27B)["text_config"]["layer_types"]) if kind == "linear_attention"]
    for index in linear:
        for part in ("in_proj_a", "in_proj_b"):
            assert f"model.language_model.layers.{index}.linear_attn.{part}" in listed
    assert {"lm_head", "mtp.fc", "model.visual.blocks.26.attn.qkv", "model.visual.merger.linear_fc2"} <= set(listed)
    assert not set(SHORT_NAMES) - {"lm_head", "mtp.fc"} & set(listed)


def test_a_fused_module_listed_in_part_is_refused_as_vllm_refuses_it() -> None:
    config = config_of(QWEN_27B)
    config["quantization_config"]["modules_to_not_convert"].remove("model.language_model.layers.0.linear_attn.in_proj_a")
    with pytest.raises(
        ModelConfigError,
        match=r"some but not all of .*layers\.0\.linear_attn\.in_proj_b, .*in_proj_a unquantized: vLLM fuses them into .*in_proj_ba",
    ):
        model_facts(config, model_id="x")
    # The fused name itself keeps both shards (vLLM 0.26.0 tests it first).
    config["quantization_config"]["modules_to_not_convert"].append("model.language_model.layers.0.linear_attn.in_proj_ba")
    assert model_facts(config, model_id="x").weight_bytes == catalogued(QWEN_27B).weight_bytes  # type: ignore[union-attr]


def test_a_moes_router_is_never_quantized_and_one_listed_expert_keeps_its_layers_experts() -> None:
    config = config_of(QWEN_397B_FP8)
    listed = config["quantization_config"]["modules_to_not_convert"]
    without_gates = json.loads(json.dumps(config))
    without_gates["quantization_config"]["modules_to_not_convert"] = [n for n in listed if "gate" not in n]
    # vLLM builds the router and the shared-expert gate with no quantization config (qwen3_next.py).
    assert model_facts(without_gates, model_id="x").weight_bytes == model_facts(config, model_id="x").weight_bytes
    one_expert = json.loads(json.dumps(config))
    one_expert["quantization_config"]["modules_to_not_convert"].append("model.language_model.layers.0.mlp.experts.7.down_proj")
    base, kept = model_facts(config, model_id="x"), model_facts(one_expert, model_id="x")
    assert kept.expert_weight_bytes - base.expert_weight_bytes == pytest.approx(base.expert_weight_bytes / 60, rel=0.01)


def test_compressed_tensors_matches_whole_names_or_re_and_modelopt_globs() -> None:
    config = config_of(LLAMA_FP8)
    base = model_facts(config, model_id="x").weight_bytes
    config["quantization_config"]["ignore"] = ["lm_head", "self_attn.o_proj"]
    assert model_facts(config, model_id="x").weight_bytes == base
    config["quantization_config"]["ignore"] = ["lm_head", "re:.*self_attn.o_proj$"]
    assert model_facts(config, model_id="x").weight_bytes > base
    nvfp4 = config_of(QWEN_397B_NVFP4)
    everything = json.loads(json.dumps(nvfp4))
    everything["quantization_config"]["exclude_modules"].append("*experts*")
    kept = model_facts(everything, model_id="x")
    assert kept.weight_bytes == pytest.approx(2 * kept.parameters, rel=0.001)


def test_an_unquantized_config_is_bf16_and_a_quantization_config_decides_it() -> None:
    config = config_of(QWEN_27B)
    del config["quantization_config"]
    facts = model_facts(config, model_id="x")
    assert facts.quantization == "bf16" and facts.weight_bytes == pytest.approx(2 * facts.parameters, rel=0.001)
    config["quantization_config"] = {"quant_method": "awq", "bits": 4}
    with pytest.raises(ModelConfigError, match="quant_method 'awq' is not one of fp8, modelopt, compressed-tensors"):
        model_facts(config, model_id="x")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"architectures": []}, "no 'architectures' list"),
        ({"hidden_size": "big"}, "no usable 'hidden_size'"),
        ({"layer_types": ["full_attention"]}, "layer_types has 1 entries for 80 num_hidden_layers"),
        ({"layer_types": ["mamba"] * 80}, "kinds the facts do not know: mamba"),
    ],
)
def test_a_config_without_what_the_facts_need_is_refused_naming_the_key(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ModelConfigError, match=message):
        model_facts({**config_of(LLAMA), **change}, model_id="x")


def test_a_folder_of_a_users_own_config_is_read_with_its_modules(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(config_of(EMBEDDING)), encoding="utf-8")
    assert facts_in(tmp_path, "me/mine").task == "generate"
    embedding = tmp_path / "embedding"
    embedding.mkdir()
    (embedding / "config.json").write_text(json.dumps(config_of(EMBEDDING)), encoding="utf-8")
    (embedding / "modules.json").write_text("[]", encoding="utf-8")
    assert facts_in(embedding, "me/mine").task == "embed"
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("[1]", encoding="utf-8")
    with pytest.raises(ModelConfigError, match=r"config\.json is not a JSON object"):
        facts_in(tmp_path / "broken", "me/broken")


def test_a_model_the_catalogue_lacks_has_no_facts() -> None:
    assert catalogued("someone/else") is None


def test_the_nvfp4_checkpoints_globs_keep_all_but_the_routed_experts_in_bf16_under_vllms_modelopt_rule() -> None:
    facts = catalogued(QWEN_397B_NVFP4)
    assert facts is not None
    text = config_of(QWEN_397B_NVFP4)["text_config"]
    experts = text["num_hidden_layers"] * text["num_experts"] * 3 * text["moe_intermediate_size"] * text["hidden_size"]
    assert facts.weight_bytes - facts.expert_weight_bytes == 2 * (facts.parameters - experts)


def test_the_lm_head_follows_the_list_only_under_modelopt() -> None:
    fp8 = config_of(QWEN_27B)
    fp8["quantization_config"]["modules_to_not_convert"].remove("lm_head")
    # Fp8Config quantizes LinearBase layers only; the head is a ParallelLMHead.
    assert model_facts(fp8, model_id="x").weight_bytes == catalogued(QWEN_27B).weight_bytes  # type: ignore[union-attr]
    nvfp4 = config_of(QWEN_397B_NVFP4)
    nvfp4["quantization_config"]["exclude_modules"].remove("lm_head")
    head = config_of(QWEN_397B_NVFP4)["text_config"]["vocab_size"] * 4096
    saved = catalogued(QWEN_397B_NVFP4).weight_bytes - model_facts(nvfp4, model_id="x").weight_bytes  # type: ignore[union-attr]
    assert saved == pytest.approx(2 * head - head * (0.5 + 1 / 16), rel=0.001)
