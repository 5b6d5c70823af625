"""The miniature's rules on hand-made configs and folders: the shrinking, the cache, the tokenizer's files, the MTP names, the writing.

Training the BPE (``train_tokenizer``) needs the tokenizers library and the weights (``write_weights``)
torch and transformers, none of which the project installs: where ``write`` and ``main`` call them, a
recorder stands in and the test checks what they were asked for. The real runs (tests/real_runs/)
served a miniature both wrote.
"""

from __future__ import annotations

import json
import os
import re
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from facts.models import catalogue, hf_cache_snapshot
from preflight import miniature
from preflight.miniature import (
    HIDDEN,
    VENDORED,
    ModelSource,
    ModelSourceError,
    config_digest,
    corpus,
    find_source,
    full_size_config,
    miniature_config,
    mtp_names,
    shape,
    token_id,
    tokenizer_files,
    vendored_folder,
    write,
    write_tokenizer,
)
from tests.preflight.runs import DEV, report

MODEL = "Qwen/Qwen3.5-27B-FP8"
HYBRID = ["linear_attention"] * 3 + ["full_attention"]


def real() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((VENDORED / "Qwen--Qwen3.5-27B-FP8" / "config.json").read_text(encoding="utf-8"))
    return loaded


def text_model(**keys: Any) -> dict[str, Any]:
    return {"architectures": ["Some"], "num_hidden_layers": 40, **keys}


# The shrinking


def test_a_hybrid_model_keeps_two_periods_of_its_interval() -> None:
    small = miniature_config(text_model(full_attention_interval=4, layer_types=HYBRID * 10))
    assert small["num_hidden_layers"] == 8 and small["layer_types"] == HYBRID * 2


def test_without_an_interval_the_period_ends_at_the_first_full_attention_layer() -> None:
    period = ["linear_attention", "linear_attention", "full_attention"]
    small = miniature_config(text_model(layer_types=period * 20))
    assert small["num_hidden_layers"] == 6 and small["layer_types"] == period * 2


def test_a_model_without_a_pattern_keeps_two_layers_of_each_kind() -> None:
    small = miniature_config(text_model(layer_types=["full_attention_x"] * 40))
    assert small["num_hidden_layers"] == 4 and len(small["layer_types"]) == 4
    plain = miniature_config(text_model())
    assert plain["num_hidden_layers"] == 4 and "layer_types" not in plain


def test_a_model_shallower_than_two_periods_keeps_its_depth() -> None:
    assert miniature_config(text_model(num_hidden_layers=3, full_attention_interval=4))["num_hidden_layers"] == 3
    # A config without a depth gets two periods.
    assert miniature_config({"full_attention_interval": 3})["num_hidden_layers"] == 6


def test_the_widths_shrink_and_the_vocabulary_is_the_miniatures() -> None:
    small = miniature_config(text_model(hidden_size=5120, intermediate_size=17408, vocab_size=248320, head_dim=256))
    assert (small["hidden_size"], small["intermediate_size"], small["vocab_size"], small["head_dim"]) == (1024, 3072, 8192, 256)


def test_attention_heads_shrink_only_where_the_model_has_them() -> None:
    small = miniature_config(text_model(num_attention_heads=24, num_key_value_heads=4))
    assert (small["num_attention_heads"], small["num_key_value_heads"]) == (8, 2)
    assert "num_attention_heads" not in miniature_config(text_model()) and "num_key_value_heads" not in miniature_config(text_model())


def test_linear_attention_keeps_the_value_to_key_head_ratio() -> None:
    small = miniature_config(text_model(linear_num_key_heads=16, linear_num_value_heads=48))
    assert (small["linear_num_key_heads"], small["linear_num_value_heads"]) == (4, 12)
    assert "linear_num_key_heads" not in miniature_config(text_model())


def test_mlp_only_layers_keep_those_within_the_miniatures_depth() -> None:
    small = miniature_config(text_model(full_attention_interval=4, mlp_only_layers=[0, 7, 8, 30]))
    assert small["mlp_only_layers"] == [0, 7]
    assert "mlp_only_layers" not in miniature_config(text_model())


def test_token_ids_are_the_miniatures_where_the_model_has_them() -> None:
    small = miniature_config(text_model(eos_token_id=248044, pad_token_id=None, image_token_id=248056))
    assert (small["eos_token_id"], small["pad_token_id"], small["image_token_id"]) == (8002, None, 8006)
    assert "bos_token_id" not in small


def test_nested_text_config_token_ids_are_the_miniatures_too() -> None:
    small = miniature_config({"text_config": text_model(eos_token_id=1, bos_token_id=2, video_token_id=None), "vision_start_token_id": 5})
    assert (small["text_config"]["eos_token_id"], small["text_config"]["bos_token_id"]) == (8002, 8000)
    assert small["text_config"]["video_token_id"] is None and small["vision_start_token_id"] == 8003
    assert "eos_token_id" not in small


def test_the_special_tokens_follow_the_bpe_vocabulary_in_order() -> None:
    ids = [token_id(t) for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>")]
    assert ids == [8000, 8001, 8002, 8003, 8004]
    assert [token_id(t) for t in ("<|vision_pad|>", "<|image_pad|>", "<|video_pad|>")] == [8005, 8006, 8007]


def test_quantization_and_the_old_dtype_key_are_dropped_at_each_level() -> None:
    small = miniature_config({**text_model(), "quantization_config": {"quant_method": "fp8"}, "torch_dtype": "float8", "dtype": "float8"})
    assert "quantization_config" not in small and "torch_dtype" not in small and small["dtype"] == "bfloat16"
    nested = miniature_config({"text_config": {**text_model(), "quantization_config": {}, "torch_dtype": "float8"}, "dtype": "float8"})
    assert "quantization_config" not in nested["text_config"] and "torch_dtype" not in nested["text_config"]
    assert nested["text_config"]["dtype"] == nested["dtype"] == "bfloat16"


def test_a_text_configs_keys_stay_in_it() -> None:
    small = miniature_config({"architectures": ["A"], "text_config": text_model(head_dim=256)})
    assert small["architectures"] == ["A"] and "head_dim" not in small and small["text_config"]["head_dim"] == 256


def test_the_vision_tower_is_two_small_blocks_feeding_the_miniatures_width() -> None:
    vision = {
        "depth": 27,
        "hidden_size": 1152,
        "intermediate_size": 4304,
        "num_heads": 16,
        "patch_size": 16,
        "deepstack_visual_indexes": [0, 1, 2, 8],
    }
    small = miniature_config({"text_config": text_model(), "vision_config": vision})["vision_config"]
    assert small == {
        "depth": 2,
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_heads": 4,
        "patch_size": 16,
        "out_hidden_size": HIDDEN,
        "deepstack_visual_indexes": [0, 1],
    }
    assert miniature_config({"vision_config": {"depth": 3}})["vision_config"]["deepstack_visual_indexes"] == []
    assert miniature_config({"vision_config": None})["vision_config"] is None


def test_the_shape_reads_a_flat_or_nested_config() -> None:
    assert shape(text_model(layer_types=HYBRID, linear_key_head_dim="128")) == shape(
        {"text_config": text_model(layer_types=HYBRID, linear_key_head_dim=128)}
    )
    found = shape({"text_config": text_model(layer_types=HYBRID, linear_key_head_dim=128)})
    assert found.linear_attention and found.linear_key_head_dim == 128
    plain = shape({"text_config": "not a mapping", "layer_types": ["full_attention"]})
    assert not plain.linear_attention and plain.linear_key_head_dim is None
    assert not shape({}).linear_attention


# Where the config comes from


def snapshot(hub: Path, name: str, model: str = MODEL, mtime: float | None = None) -> Path:
    folder = hub / f"models--{model.replace('/', '--')}" / "snapshots" / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"revision": name}))
    if mtime is not None:
        os.utime(folder / "config.json", (mtime, mtime))
    return folder


def test_the_newest_snapshot_with_a_config_is_read(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    snapshot(hub, "old", mtime=1_000)
    newest = snapshot(hub, "new", mtime=3_000)
    snapshot(hub, "middle", mtime=2_000)
    (hub / f"models--{MODEL.replace('/', '--')}" / "snapshots" / "bare").mkdir()
    assert hf_cache_snapshot(MODEL, {"HF_HOME": str(tmp_path)}) == newest
    source = find_source(MODEL, {"HF_HOME": str(tmp_path)})
    assert (source.model, source.folder, source.config) == (MODEL, newest, {"revision": "new"})
    assert source.provenance == "Hugging Face cache, revision new"


def test_hf_hub_cache_comes_before_hf_home_and_home(tmp_path: Path) -> None:
    hub = snapshot(tmp_path / "hub-cache", "a")
    home = snapshot(tmp_path / "home" / "hub", "b")
    user = snapshot(tmp_path / "user" / ".cache" / "huggingface" / "hub", "c")
    env = {"HF_HUB_CACHE": str(tmp_path / "hub-cache"), "HF_HOME": str(tmp_path / "home"), "HOME": str(tmp_path / "user")}
    assert hf_cache_snapshot(MODEL, env) == hub
    assert hf_cache_snapshot(MODEL, {**env, "HF_HUB_CACHE": ""}) == home
    assert hf_cache_snapshot(MODEL, {"HF_HOME": "", "HOME": str(tmp_path / "user")}) == user


def test_a_cache_path_may_start_with_a_tilde(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    found = snapshot(tmp_path / "hub", "a")
    assert hf_cache_snapshot(MODEL, {"HF_HUB_CACHE": "~/hub"}) == found
    # Without HOME in the environment given, the user's home (~) is read.
    home = snapshot(tmp_path / ".cache" / "huggingface" / "hub", "b")
    assert hf_cache_snapshot(MODEL, {}) == home


def test_another_models_snapshot_or_one_without_a_config_is_not_read(tmp_path: Path) -> None:
    snapshot(tmp_path / "hub", "a", model="Qwen/Other")
    assert hf_cache_snapshot(MODEL, {"HF_HOME": str(tmp_path)}) is None
    (tmp_path / "hub" / "models--Qwen--Qwen3.5-27B-FP8" / "snapshots" / "empty").mkdir(parents=True)
    assert hf_cache_snapshot(MODEL, {"HF_HOME": str(tmp_path)}) is None


def test_the_vendored_copy_is_named_by_the_model_id() -> None:
    assert vendored_folder(MODEL) == VENDORED / "Qwen--Qwen3.5-27B-FP8"
    assert Path(miniature.__file__).parent.parent / "facts" / "data" / "models" == VENDORED


def test_the_refusal_lists_every_vendored_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vendored = tmp_path / "facts" / "data" / "models"
    for name in ("b--two", "a--one", "c--no-config"):
        (vendored / name).mkdir(parents=True)
    for name in ("b--two", "a--one"):
        (vendored / name / "config.json").write_text('{"x": 1}', encoding="utf-8")
    monkeypatch.setattr(miniature, "VENDORED", vendored)
    with pytest.raises(ModelSourceError, match=re.escape("(vendored: a/one, b/two);")):
        find_source("org/other", {"HF_HOME": str(tmp_path)})
    source = find_source("a/one", {"HF_HOME": str(tmp_path)})
    assert source.provenance == "vendored copy, facts/data/models/a--one/PROVENANCE.md" and source.config == {"x": 1}


def test_the_vendored_copy_is_read_with_where_its_provenance_is(tmp_path: Path) -> None:
    source = find_source(MODEL, {"HF_HOME": str(tmp_path)})
    assert (source.model, source.folder, source.config) == (MODEL, vendored_folder(MODEL), real())
    assert source.provenance == "vendored copy, facts/data/models/Qwen--Qwen3.5-27B-FP8/PROVENANCE.md"


def test_a_model_neither_cached_nor_vendored_is_refused_with_the_vendored_ones_and_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ModelSourceError) as refused:
        find_source("meta-llama/Llama-3.1-8B", {"HF_HOME": str(tmp_path)})
    assert str(refused.value) == (
        f"no config.json of meta-llama/Llama-3.1-8B: not in the Hugging Face cache and not vendored (vendored: {', '.join(catalogue())}); "
        f"put its config.json in the cache (huggingface-cli download meta-llama/Llama-3.1-8B config.json) or under "
        f"{VENDORED / 'meta-llama--Llama-3.1-8B'}"
    )


# What is written


def test_the_digest_is_the_one_the_real_run_recorded() -> None:
    assert config_digest(miniature_config(real())) == report(DEV)["model"]["miniature"]["digest"]


def test_the_digest_ignores_key_order_and_follows_each_value() -> None:
    digest = config_digest({"a": 1, "b": [2, 3]})
    assert re.fullmatch(r"[0-9a-f]{16}", digest)
    assert config_digest({"b": [2, 3], "a": 1}) == digest
    assert config_digest({"a": 1, "b": [3, 2]}) != digest


def test_the_corpus_is_this_pythons_library_then_lines_of_its_words() -> None:
    texts = list(corpus())
    library = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    assert len(library) > 120 and len(texts) == 120 + 500
    assert texts[:120] == [path.read_text(encoding="utf-8") for path in library[:120]]
    words = set((library[0].parent / "os.py").read_text(encoding="utf-8").split())
    lines = texts[120:]
    assert all(len(line.split(" ")) == 60 and set(line.split(" ")) <= words for line in lines)
    assert len(set(lines)) == 500
    assert list(corpus(limit=2)) == texts[:2] + lines


def test_the_corpus_is_the_same_each_time() -> None:
    assert list(corpus(limit=1)) == list(corpus(limit=1))


def test_the_tokenizer_files_name_chatmls_tokens_by_the_miniatures_ids() -> None:
    files = tokenizer_files()
    assert set(files) == {"tokenizer_config.json", "chat_template.jinja", "generation_config.json"}
    settings = json.loads(files["tokenizer_config.json"])
    decoder = settings.pop("added_tokens_decoder")
    assert settings == {
        "tokenizer_class": "Qwen2Tokenizer",
        "model_max_length": 262144,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "bos_token": None,
        "unk_token": None,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
        "chat_template": files["chat_template.jinja"],
    }
    assert list(decoder) == [str(i) for i in range(8000, 8008)]
    assert decoder["8002"] == {
        "content": "<|im_end|>",
        "lstrip": False,
        "normalized": False,
        "rstrip": False,
        "single_word": False,
        "special": True,
    }
    assert [entry["content"] for entry in decoder.values()] == list(miniature.SPECIAL_TOKENS)
    assert json.loads(files["generation_config.json"]) == {"eos_token_id": [8002, 8000], "pad_token_id": 8000}


def test_the_chat_template_wraps_each_message_in_chatml() -> None:
    template = tokenizer_files()["chat_template.jinja"]
    assert "'<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n'" in template
    assert "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}" in template


class Recorder:
    """Stands in for a step that needs a library the project does not install, and records each call."""

    def __init__(self, answer: Any = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.answer = answer

    def tokenizer(self, out: Path) -> None:
        self.calls.append((out,))
        (out / "tokenizer.json").write_text("{}", encoding="utf-8")

    def weights(self, out: Path, config: Any) -> Any:
        self.calls.append((out, config))
        (out / "model.safetensors").write_bytes(b"weights")
        return self.answer


@pytest.fixture
def trainer(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder()
    monkeypatch.setattr(miniature, "train_tokenizer", recorder.tokenizer)
    return recorder


@pytest.fixture
def weights(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    recorder = Recorder({"tensors": 3})
    monkeypatch.setattr(miniature, "write_weights", recorder.weights)
    return recorder


def test_the_tokenizer_is_trained_then_its_files_written(tmp_path: Path, trainer: Recorder) -> None:
    write_tokenizer(tmp_path)
    assert trainer.calls == [(tmp_path,)]
    for name, text in tokenizer_files().items():
        assert (tmp_path / name).read_text(encoding="utf-8") == text
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "chat_template.jinja",
        "generation_config.json",
        "tokenizer.json",
        "tokenizer_config.json",
    ]


def source_in(folder: Path, config: dict[str, Any]) -> ModelSource:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "preprocessor_config.json").write_text('{"patch_size": 16}', encoding="utf-8")
    return ModelSource("org/model", folder, config, "a test's folder")


def test_a_miniature_without_weights_is_its_config_tokenizer_and_processor(tmp_path: Path, trainer: Recorder, weights: Recorder) -> None:
    out = tmp_path / "out" / "model"
    made = write(out, source_in(tmp_path / "source", real()), weights=False)
    small = miniature_config(real())
    assert json.loads((out / "config.json").read_text(encoding="utf-8")) == small
    assert made == {
        "model": "org/model",
        "source": "a test's folder",
        "digest": config_digest(small),
        "size": "miniature",
        "kind": "hybrid",
    }
    assert json.loads((out / "preflight-miniature.json").read_text(encoding="utf-8")) == made
    # The one processor file the source has is copied; the other is not made up.
    assert (out / "preprocessor_config.json").read_text(encoding="utf-8") == '{"patch_size": 16}'
    assert not (out / "video_preprocessor_config.json").exists()
    assert trainer.calls == [(out,)] and weights.calls == []


def test_the_weights_are_asked_for_with_the_miniatures_config(tmp_path: Path, trainer: Recorder, weights: Recorder) -> None:
    out = tmp_path / "out"
    made = write(out, source_in(tmp_path / "source", real()))
    assert weights.calls == [(out, miniature_config(real()))]
    assert made["weights"] == {"tensors": 3}
    assert json.loads((out / "preflight-miniature.json").read_text(encoding="utf-8"))["weights"] == {"tensors": 3}


def test_a_second_write_of_the_same_config_reuses_the_first(tmp_path: Path, trainer: Recorder, weights: Recorder) -> None:
    out = tmp_path / "out"
    first = write(out, source_in(tmp_path / "source", real()))
    marker = (out / "preflight-miniature.json").read_text(encoding="utf-8")
    again = write(out, source_in(tmp_path / "source", real()))
    assert again == {**first, "reused": True}
    assert len(trainer.calls) == len(weights.calls) == 1
    assert (out / "preflight-miniature.json").read_text(encoding="utf-8") == marker


def test_another_config_or_missing_weights_are_written_again(tmp_path: Path, trainer: Recorder, weights: Recorder) -> None:
    out = tmp_path / "out"
    write(out, source_in(tmp_path / "source", real()))
    other = {**real(), "tie_word_embeddings": True}
    made = write(out, source_in(tmp_path / "source", other))
    assert "reused" not in made and made["digest"] == config_digest(miniature_config(other))
    assert len(weights.calls) == 2
    (out / "model.safetensors").unlink()
    assert "reused" not in write(out, source_in(tmp_path / "source", other))
    assert len(weights.calls) == 3


def test_main_writes_the_default_models_miniature_and_prints_what_it_made(
    tmp_path: Path, trainer: Recorder, weights: Recorder, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "no-cache"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    assert miniature.main([str(tmp_path / "out"), "--no-weights"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["model"] == MODEL and printed["source"].startswith("vendored copy")
    assert printed == json.loads((tmp_path / "out" / "preflight-miniature.json").read_text(encoding="utf-8"))
    assert weights.calls == []
    assert miniature.main([str(tmp_path / "out2")]) == 0
    assert json.loads(capsys.readouterr().out)["weights"] == {"tensors": 3}
    with pytest.raises(ModelSourceError):
        miniature.main([str(tmp_path / "out3"), "--model", "org/unknown"])


# The MTP layers


def names(prefix: str) -> list[str]:
    return [
        f"{prefix}0.linear_attn.in_proj.weight",
        f"{prefix}3.self_attn.q_proj.weight",
        f"{prefix}3.mlp.up_proj.weight",
        f"{prefix}30.self_attn.q_proj.weight",
        "model.visual.blocks.3.attn.qkv.weight",
    ]


def test_each_mtp_layer_copies_the_first_full_attention_layer() -> None:
    found = mtp_names(names("model.language_model.layers."), {"layer_types": HYBRID * 2}, 2)
    assert found == {
        "mtp.layers.0.self_attn.q_proj.weight": "model.language_model.layers.3.self_attn.q_proj.weight",
        "mtp.layers.0.mlp.up_proj.weight": "model.language_model.layers.3.mlp.up_proj.weight",
        "mtp.layers.1.self_attn.q_proj.weight": "model.language_model.layers.3.self_attn.q_proj.weight",
        "mtp.layers.1.mlp.up_proj.weight": "model.language_model.layers.3.mlp.up_proj.weight",
    }


def test_a_text_only_models_layers_are_found_under_model_layers() -> None:
    found = mtp_names(names("model.layers."), {"layer_types": ["full_attention"] * 4}, 1)
    assert found == {"mtp.layers.0.linear_attn.in_proj.weight": "model.layers.0.linear_attn.in_proj.weight"}


def test_the_real_models_mtp_layer_is_a_copy_of_layer_3() -> None:
    text = miniature_config(real())["text_config"]
    found = mtp_names(names("model.language_model.layers."), text, int(text["mtp_num_hidden_layers"]))
    assert set(found.values()) == {
        "model.language_model.layers.3.self_attn.q_proj.weight",
        "model.language_model.layers.3.mlp.up_proj.weight",
    }


def test_the_command_line_says_what_it_writes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        miniature.main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert shown.startswith("usage: python -m preflight.miniature [-h]")
    assert "A miniature of the stack's model: its architecture and layer pattern made small" in shown
    assert "--no-weights config, tokenizer and processor files only" in shown


def test_the_full_size_folder_is_the_real_config_with_the_small_tokenizers_ids_and_no_weights(
    tmp_path: Path, trainer: Recorder, weights: Recorder
) -> None:
    config = {**real(), "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    out = tmp_path / "full"
    made = write(out, source_in(tmp_path / "source", config), size="full")
    written = json.loads((out / "config.json").read_text(encoding="utf-8"))
    assert written == full_size_config(config)
    assert written["quantization_config"] == config["quantization_config"]
    assert written["text_config"]["hidden_size"] == config["text_config"]["hidden_size"]
    assert made["size"] == "full" and "weights" not in made
    assert trainer.calls == [(out,)] and weights.calls == []
    assert not (out / "model.safetensors").exists()
    # A second start reuses the folder: there are no weights to wait for.
    assert write(out, source_in(tmp_path / "source", config), size="full")["reused"] is True
    with pytest.raises(ValueError, match="size 'half': one of miniature, full"):
        write(out, source_in(tmp_path / "source", config), size="half")


def test_full_size_keeps_every_value_but_the_special_token_ids_at_both_levels() -> None:
    config = find_source("Qwen/Qwen3.5-27B-FP8", {"HF_HUB_CACHE": "/nonexistent"}).config
    full = full_size_config(config)
    assert full["image_token_id"] == token_id("<|image_pad|>") and full["vision_end_token_id"] == token_id("<|vision_end|>")
    assert full["text_config"]["eos_token_id"] == token_id("<|im_end|>")
    ids = {"image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id"}
    assert {k: v for k, v in full.items() if k not in ids | {"text_config"}} == {
        k: v for k, v in config.items() if k not in ids | {"text_config"}
    }
    assert {k: v for k, v in full["text_config"].items() if k != "eos_token_id"} == {
        k: v for k, v in config["text_config"].items() if k != "eos_token_id"
    }
    assert config["image_token_id"] == 248056, "the source is left as it was"


def test_the_model_folder_is_written_by_its_command_line(
    tmp_path: Path, trainer: Recorder, weights: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    assert miniature.main([str(tmp_path / "m"), "--model", "Qwen/Qwen3.5-27B-FP8", "--size", "full"]) == 0
    assert json.loads(capsys.readouterr().out)["size"] == "full"
    assert miniature.main([str(tmp_path / "t"), "--model", "Qwen/Qwen3.5-27B-FP8", "--tensor-parallel", "8", "--no-weights"]) == 0
    small = json.loads((tmp_path / "t" / "config.json").read_text(encoding="utf-8"))
    assert small["text_config"]["num_key_value_heads"] == 8
