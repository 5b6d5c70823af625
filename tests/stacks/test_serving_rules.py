"""The serving section's rules on hand-made settings, without a render: the release an image runs, and each range at its bounds.

The bounds are vLLM's and the A4 node's (docs/config-rules.md, docs/reference.md): ports 1024-65535, at most 0.95 of
HBM, -O0 to -O3, 0 to 2 MTP tokens, 220 vCPU and 3850Gi for a pod.
"""

from __future__ import annotations

from typing import Any

import pytest

from facts.vllm import supported_releases
from stacks.problems import ConfigProblem
from stacks.serving import ServingProfile, image_release
from tests.stacks import handed

DIGEST = "sha256:" + "0123456789abcdef" * 4
# The releases facts/data/vllm/ holds facts of.
SUPPORTED = ", ".join(supported_releases())


def refusal(image: str, version: str | None) -> ConfigProblem:
    with pytest.raises(ConfigProblem) as error:
        image_release(image, version)
    return error.value


def problem(**serving: Any) -> str:
    return handed.problem(serving=serving)


@pytest.mark.parametrize(
    ("image", "version", "release"),
    [
        ("vllm/vllm-openai:v0.18.1", None, "0.18.1"),
        ("vllm/vllm-openai:v0.33.0", "0.33.0", "0.33.0"),
        (f"vllm/vllm-openai:v0.18.1@{DIGEST}", None, "0.18.1"),
        (f"vllm/vllm-openai@{DIGEST}", "0.26.0", "0.26.0"),
    ],
)
def test_the_release_is_the_tags_else_the_version_setting(image: str, version: str | None, release: str) -> None:
    assert image_release(image, version) == release


def test_a_version_that_contradicts_the_tag_is_refused() -> None:
    found = refusal("vllm/vllm-openai:v0.18.1", "0.33.0")
    assert (found.path, found.value, found.reason) == (
        ("vllmVersion",),
        "0.33.0",
        "contradicts the image's tag (v0.18.1); remove it or fix the tag",
    )


def test_a_digest_alone_needs_the_version_setting() -> None:
    image = f"vllm/vllm-openai@{DIGEST}"
    found = refusal(image, None)
    assert (found.path, found.value, found.reason) == (
        ("vllmVersion",),
        None,
        f"is required: the image's tag names no vLLM release ({image}); set the release it runs, one of: {SUPPORTED}",
    )


def test_a_tagged_release_without_facts_is_refused_at_the_image() -> None:
    found = refusal("vllm/vllm-openai:v0.10.0", None)
    assert (found.path, found.value, found.reason) == (
        ("image",),
        "vllm/vllm-openai:v0.10.0",
        f"runs vLLM 0.10.0, which has no vendored facts to check flags and metrics against; use one of: {SUPPORTED}",
    )


def test_a_version_setting_without_facts_is_refused_at_the_version() -> None:
    found = refusal(f"vllm/vllm-openai@{DIGEST}", "0.10.0")
    assert (found.path, found.value, found.reason) == (
        ("vllmVersion",),
        "0.10.0",
        f"runs vLLM 0.10.0, which has no vendored facts to check flags and metrics against; use one of: {SUPPORTED}",
    )


def test_the_profile_names_its_release() -> None:
    assert ServingProfile(image=f"vllm/vllm-openai@{DIGEST}", vllm_version="0.33.0").release == "0.33.0"
    assert problem(image=f"vllm/vllm-openai@{DIGEST}").startswith("llm:serving.vllmVersion: is required")


# Each range at both bounds: (key, lowest taken, highest taken, just below, just above); None where there is no bound.
RANGES: list[tuple[str, Any, Any, Any, Any]] = [
    ("port", 1024, 65535, 1023, 65536),
    ("gpuMemoryUtilization", 0.01, 0.95, 0, 0.951),
    ("optimizationLevel", 0, 3, -1, 4),
    ("mtpTokens", 0, 2, -1, 3),
    ("coldStartMinutes", 5, 120, 4, 121),
    ("maxModelLen", 2304, None, 0, None),
    ("maxNumSeqs", 1, None, 0, None),
    ("mambaBlockSize", 1, None, 0, None),
    ("cpu", "1", "220", None, "220.001"),
    ("memory", "1Gi", "3850Gi", None, "3851Gi"),
]


@pytest.mark.parametrize(("key", "low", "high", "below", "above"), RANGES, ids=[r[0] for r in RANGES])
def test_each_range_takes_its_bounds_and_refuses_past_them(key: str, low: Any, high: Any, below: Any, above: Any) -> None:
    for value in (low, high):
        if value is not None:
            field = next(name for name, info in ServingProfile.model_fields.items() if info.alias == key)
            assert getattr(ServingProfile.model_validate({key: value}), field) == value
    for value in (below, above):
        if value is not None:
            assert problem(**{key: value}).startswith(f"llm:serving.{key}: {value!r}"), value


def test_a_pod_larger_than_an_a4_node_gives_is_refused_naming_the_node() -> None:
    assert problem(cpu="221") == "llm:serving.cpu: '221' is more CPU than an A4 node gives a pod (220 of its 224 vCPUs)"
    assert problem(memory="3851Gi") == "llm:serving.memory: '3851Gi' is more memory than an A4 node gives a pod (3850Gi of its 3968Gi)"


def test_a_step_may_hold_as_many_tokens_as_sequences_and_not_fewer() -> None:
    assert ServingProfile(max_num_seqs=16384).max_num_batched_tokens == 16384
    assert problem(maxNumSeqs=16385) == "llm:serving.maxNumBatchedTokens: 16384 is below maxNumSeqs (16385), which vLLM refuses"


def test_without_chunked_prefill_a_step_holds_a_whole_context() -> None:
    off = {"enableChunkedPrefill": False, "mambaCacheMode": None, "maxNumSeqs": 256}
    assert ServingProfile.model_validate({**off, "maxModelLen": 2560, "maxNumBatchedTokens": 2560}).max_num_batched_tokens == 2560
    assert problem(**off, maxModelLen=2560, maxNumBatchedTokens=2559) == (
        "llm:serving.maxNumBatchedTokens: 2559 is below maxModelLen (2560) with chunked prefill off, which vLLM refuses; "
        "raise it or enable chunked prefill"
    )


@pytest.mark.parametrize("key", ["enablePrefixCaching", "enableChunkedPrefill"])
def test_the_mamba_cache_mode_needs_prefix_caching_and_chunked_prefill(key: str) -> None:
    assert problem(**{key: False}).startswith(f"llm:serving.mambaCacheMode: 'align' needs {key}: true")
    assert ServingProfile.model_validate({key: False, "mambaCacheMode": "none"}).mamba_cache_mode == "none"


def test_data_parallel_takes_the_gpus_tensor_parallel_leaves() -> None:
    assert ServingProfile().data_parallel_size == 8
    assert ServingProfile.model_validate({"tensorParallelSize": 2}).data_parallel_size == 4
    assert ServingProfile.model_validate({"tensorParallelSize": 2, "dataParallelSize": 2}).data_parallel_size == 2
    for size in (4, 7):
        assert problem(dataParallelSize=size).startswith(
            f"llm:serving.dataParallelSize: {size} makes a pod of dataParallelSize {size} x tensorParallelSize 1 = {size} GPUs; "
            "an A4 pod takes the node's 8; shapes that fit Qwen/Qwen3.5-27B-FP8: tensorParallelSize 1 x dataParallelSize 8"
        )
