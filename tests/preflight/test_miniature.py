"""The miniature keeps the model's architecture and layer pattern and takes its config from the cache or the vendored copy."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from preflight.miniature import (
    SPECIAL_TOKENS,
    VOCAB,
    ModelSourceError,
    find_source,
    miniature_config,
    shape,
    token_id,
    vendored_folder,
)
from tests.preflight.runs import DEV, report

MODEL = "Qwen/Qwen3.5-27B-FP8"


def real() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((vendored_folder(MODEL) / "config.json").read_text(encoding="utf-8"))
    return loaded


def test_the_miniature_is_the_one_the_real_runs_served() -> None:
    assert report(DEV)["model"]["config"] == miniature_config(real())


def test_the_architecture_and_two_periods_of_the_layer_pattern_are_kept() -> None:
    big, small = real(), miniature_config(real())
    text, big_text = small["text_config"], big["text_config"]
    assert small["architectures"] == big["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    assert text["num_hidden_layers"] == 2 * big_text["full_attention_interval"] == 8
    assert text["layer_types"] == big_text["layer_types"][:8]
    assert text["layer_types"].count("full_attention") == 2
    for key in (
        "head_dim",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        "mtp_num_hidden_layers",
        "rope_parameters",
    ):
        assert text[key] == big_text[key], key
    assert (
        text["linear_num_value_heads"] // text["linear_num_key_heads"]
        == big_text["linear_num_value_heads"] // big_text["linear_num_key_heads"]
    )
    assert small["vision_config"]["out_hidden_size"] == text["hidden_size"]


def test_token_ids_point_into_the_miniatures_vocabulary() -> None:
    small = miniature_config(real())
    for key in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id"):
        assert small[key] < VOCAB
    assert small["image_token_id"] == token_id("<|image_pad|>")
    assert small["text_config"]["eos_token_id"] == token_id("<|im_end|>")
    assert len(SPECIAL_TOKENS) == len(set(SPECIAL_TOKENS))


def test_fp8_quantization_is_dropped_for_bf16() -> None:
    quantized = {**real(), "quantization_config": {"quant_method": "fp8"}}
    small = miniature_config(quantized)
    assert "quantization_config" not in small and small["dtype"] == "bfloat16"


def test_the_shape_says_deltanet_with_128_wide_keys() -> None:
    found = shape(real())
    assert found.linear_attention and found.linear_key_head_dim == 128


def test_the_hugging_face_cache_comes_before_the_vendored_copy(tmp_path: Path) -> None:
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen3.5-27B-FP8" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps({**real(), "marker": 1}))
    source = find_source(MODEL, {"HF_HOME": str(tmp_path)})
    assert source.config["marker"] == 1 and source.provenance == "Hugging Face cache, revision abc123"


def test_without_a_cache_the_vendored_copy_is_read_with_its_provenance(tmp_path: Path) -> None:
    source = find_source(MODEL, {"HF_HOME": str(tmp_path)})
    assert source.provenance.endswith("Qwen--Qwen3.5-27B-FP8/PROVENANCE.md")
    assert (source.folder / "preprocessor_config.json").exists()


def test_a_model_neither_cached_nor_vendored_is_named_with_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ModelSourceError, match=re.escape("huggingface-cli download meta-llama/Llama-3.1-8B config.json")):
        find_source("meta-llama/Llama-3.1-8B", {"HF_HOME": str(tmp_path)})


def test_the_vendored_copy_cites_its_public_source() -> None:
    provenance = (vendored_folder(MODEL) / "PROVENANCE.md").read_text(encoding="utf-8")
    assert "https://huggingface.co/Qwen/Qwen3.5-27B-FP8/blob/main/config.json" in provenance
    assert "Revision" in provenance
