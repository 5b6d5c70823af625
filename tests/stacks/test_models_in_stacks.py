"""Stacks for each kind of model: the flags its architecture takes, the shapes that fit it, and what is refused, naming the key."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from facts.models import CATALOGUE, catalogue, catalogued
from render.engine import Render
from stacks.engine import loaded_bytes, weight_bytes_per_gpu
from stacks.serving import ServingProfile
from tests.conftest import render_with
from tests.stacks.handed import parsed, problem

LLAMA = "meta-llama/Llama-3.3-70B-Instruct"
LLAMA_FP8 = "RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic"
QWEN_397B = "Qwen/Qwen3.5-397B-A17B-FP8"
QWEN_397B_NVFP4 = "nvidia/Qwen3.5-397B-A17B-NVFP4"


def command(render: Render) -> list[str]:
    deployment = render.one("kubernetes:apps/v1:Deployment", "vllm").inputs
    found: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["command"]
    return found


def flags(render: Render) -> dict[str, str]:
    return {arg.split("=", 1)[0]: arg.split("=", 1)[1] if "=" in arg else "" for arg in command(render)[3:]}


def test_the_70b_gets_no_mtp_and_no_mamba_flags() -> None:
    written = flags(render_with("dev", model={"id": LLAMA}, cache={"sizeGi": 200}))
    assert not {"--speculative-config", "--mamba-cache-mode", "--mamba-block-size", "--tensor-parallel-size"} & set(written)
    assert written["--data-parallel-size"] == "8"


def test_the_70b_in_fp8_runs_tensor_parallel_2_by_data_parallel_4() -> None:
    render = render_with("dev", model={"id": LLAMA_FP8}, serving={"tensorParallelSize": 2})
    args = command(render)
    assert "--tensor-parallel-size=2" in args and "--data-parallel-size=4" in args
    assert args.index("--tensor-parallel-size=2") + 1 == args.index("--data-parallel-size=4")
    # The startup probe waits for an answer from each of the four engines, not from eight.
    deployment = render.one("kubernetes:apps/v1:Deployment", "vllm").inputs
    assert deployment["spec"]["template"]["spec"]["containers"][0]["startupProbe"]["exec"]["command"][-1] == "4"


@pytest.mark.parametrize("model_id", [QWEN_397B, QWEN_397B_NVFP4])
def test_the_397b_runs_tensor_parallel_8_with_expert_parallel_and_its_mtp_and_mamba_flags(model_id: str) -> None:
    serving = {"tensorParallelSize": 8, "expertParallel": True}
    written = flags(render_with("dev", model={"id": model_id}, serving=serving, cache={"sizeGi": 400}))
    assert (written["--tensor-parallel-size"], written["--data-parallel-size"], written["--enable-expert-parallel"]) == ("8", "1", "")
    assert json.loads(written["--speculative-config"]) == {"method": "mtp", "num_speculative_tokens": 1}
    assert (written["--mamba-cache-mode"], written["--mamba-block-size"]) == ("align", "8")


def test_a_users_own_config_json_renders_a_model_the_catalogue_lacks(tmp_path: Path) -> None:
    config = json.loads((CATALOGUE / "meta-llama--Llama-3.3-70B-Instruct" / "config.json").read_text(encoding="utf-8"))
    # Llama 3.1 8B's published dimensions.
    config |= {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert "acme/llama-8b" not in catalogue()
    written = flags(render_with("dev", model={"id": "acme/llama-8b", "config": str(tmp_path / "config.json")}))
    assert written["--data-parallel-size"] == "8" and "--speculative-config" not in written and "--mamba-cache-mode" not in written


def test_a_model_with_no_config_is_refused_naming_the_setting() -> None:
    assert problem(model={"id": "acme/unknown"}).startswith(
        "llm:model.config: is required for acme/unknown: the catalogue (Qwen/Qwen3-Embedding-8B, "
    )


def test_a_config_that_is_not_there_is_refused() -> None:
    assert problem(model={"id": "acme/unknown", "config": "models/acme/config.json"}) == (
        "llm:model.config: 'models/acme/config.json' is not a config.json file (a path relative to the project root)"
    )


@pytest.mark.parametrize(
    ("serving", "key", "shown"),
    [({"dataParallelSize": 4}, "dataParallelSize", "4"), ({"tensorParallelSize": 2, "dataParallelSize": 8}, "dataParallelSize", "8")],
)
def test_a_shape_whose_gpus_are_not_8_is_refused_with_the_shapes_that_fit(serving: dict[str, Any], key: str, shown: str) -> None:
    found = problem(model={"id": LLAMA_FP8}, serving=serving)
    assert found.startswith(f"llm:serving.{key}: {shown} makes a pod of")
    assert found.endswith(
        "shapes that fit RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic: tensorParallelSize 1 x dataParallelSize 8; "
        "tensorParallelSize 2 x dataParallelSize 4; tensorParallelSize 4 x dataParallelSize 2; tensorParallelSize 8 x dataParallelSize 1"
    )


def test_weights_that_do_not_fit_the_shape_are_refused_with_the_shapes_that_do() -> None:
    # The 70B in bf16 (131.4 GiB) on one GPU, against 70% of a B200's 180 GB.
    found = problem(model={"id": LLAMA}, serving={"gpuMemoryUtilization": 0.7}, cache={"sizeGi": 200})
    assert found.startswith("llm:serving.tensorParallelSize: 1 leaves 131.4 GiB of meta-llama/Llama-3.3-70B-Instruct's weights on each GPU")
    assert found.endswith(
        "shapes that fit meta-llama/Llama-3.3-70B-Instruct: tensorParallelSize 2 x dataParallelSize 4; "
        "tensorParallelSize 4 x dataParallelSize 2; tensorParallelSize 8 x dataParallelSize 1"
    )


def test_a_moe_models_experts_are_split_over_every_gpu_of_the_pod() -> None:
    # vLLM shards the experts over data x tensor parallel ranks: the 397B's 360 GiB of experts fit eight engines of one GPU.
    moe = catalogued(QWEN_397B)
    assert moe is not None
    serving = ServingProfile()
    assert weight_bytes_per_gpu(moe, serving, 1, 8) == weight_bytes_per_gpu(moe, serving, 8, 1) + math.ceil(
        (loaded_bytes(moe, serving) - moe.expert_weight_bytes) * (1 - 1 / 8)
    )


@pytest.mark.parametrize(
    "flag", ["--tensor-parallel-size=2", "--enable-expert-parallel", "--data-parallel-size-local=2", "--pipeline-parallel-size=2"]
)
def test_parallel_flags_in_extra_args_are_refused_naming_the_setting(flag: str) -> None:
    found = problem(serving={"extraArgs": [flag]})
    assert found.startswith(f"llm:serving.extraArgs[0]: '{flag}' is set by the program; use serving.")


def test_mtp_on_a_model_without_mtp_layers_is_refused() -> None:
    assert problem(model={"id": LLAMA_FP8}, serving={"mtpTokens": 1}) == (
        "llm:serving.mtpTokens: 1 needs MTP layers; RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic's config.json has none: "
        "set 0 or leave it unset"
    )


def test_expert_parallel_on_a_dense_model_and_mamba_flags_on_a_full_attention_model_are_refused() -> None:
    assert problem(model={"id": LLAMA_FP8}, serving={"expertParallel": True}).startswith("llm:serving.expertParallel: true needs a mixture")
    assert problem(model={"id": LLAMA_FP8}, serving={"mambaBlockSize": 16}).startswith("llm:serving.mambaBlockSize: 16 applies to hybrid")


def test_a_cache_smaller_than_the_weights_is_refused_with_the_size_needed() -> None:
    assert problem(model={"id": LLAMA}) == (
        "llm:cache.sizeGi: 100 cannot hold meta-llama/Llama-3.3-70B-Instruct's weights (132 GiB by its config.json, MTP layers "
        "included); use at least 132"
    )
    assert problem(model={"id": QWEN_397B}, serving={"tensorParallelSize": 8}).startswith("llm:cache.sizeGi: 100 cannot hold")


def test_a_model_in_the_hugging_face_cache_is_read_from_its_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "hub" / "models--acme--cached-70b" / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text((CATALOGUE / "meta-llama--Llama-3.3-70B-Instruct" / "config.json").read_text(), encoding="utf-8")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    settings = parsed(model={"id": "acme/cached-70b"}, cache={"sizeGi": 200})
    llama = catalogued(LLAMA)
    assert llama is not None and settings.model.facts.parameters == llama.parameters
