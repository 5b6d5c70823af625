"""The expected cold start of a wake: each phase's figure, the sum, and what a wake costs."""

from __future__ import annotations

from typing import Any

import pytest

from facts.models import catalogue_folder, facts_in
from plan.cold_start_estimate import (
    COMPILE_COLD_SECONDS,
    COMPILE_WARM_SECONDS,
    FIRST_ANSWER_COLD_SECONDS,
    IMAGE_PULLED_SECONDS,
    IMAGE_STREAMED_SECONDS,
    NODE_PROVISIONING_SECONDS,
    ColdStart,
    image_streamed,
)
from plan.stack import plan_stack
from stacks.settings import StackSettings

# What a node reads at a wake of the default stack: the 27B and its MTP drafter (facts/models.py).
QWEN = facts_in(catalogue_folder("Qwen/Qwen3.5-27B-FP8"), "Qwen/Qwen3.5-27B-FP8")
WEIGHT_BYTES = QWEN.weight_bytes + QWEN.mtp_weight_bytes


def wake(**values: Any) -> ColdStart:
    settings = StackSettings.model_validate({"project": "example-project", **values})
    cold_start = plan_stack(settings, "test").estimate.cold_start
    assert cold_start is not None
    return cold_start


def test_a_wake_sums_node_image_weights_and_compile_with_a_cold_or_a_warm_cache() -> None:
    cold_start = wake(nodes=1)
    weights = WEIGHT_BYTES / (2400 * 2**20)
    assert cold_start.weights.seconds == pytest.approx(weights)
    base = NODE_PROVISIONING_SECONDS + IMAGE_STREAMED_SECONDS + weights
    # Cold, Ready waits for the first answer's kernel compiles too (the startup probe sends it).
    assert cold_start.seconds(warm=False) == pytest.approx(base + COMPILE_COLD_SECONDS + FIRST_ANSWER_COLD_SECONDS)
    assert cold_start.seconds(warm=True) == pytest.approx(base + COMPILE_WARM_SECONDS)


def test_the_cold_compile_is_the_full_size_start_on_its_gpu_not_the_miniatures_scaled() -> None:
    # Qwen 3.5 27B at full size on H200s (facts/vllm.py): Ready after 830 s, of which 12 s loaded the dummy weights.
    cold_start = wake(nodes=1)
    assert cold_start.compile_cold.seconds == 818
    source = cold_start.compile_cold.source
    assert source.startswith("H200, measured at full size") and "no B200 run yet" in source
    for phase in ("torch.compile 100 s", "first profiling run 130 s", "warm-up 205 s over 1,500-2,200 shapes", "CUDA graph capture 138 s"):
        assert phase in source


def test_the_warm_phases_keep_the_miniatures_ratios_to_the_full_size_cold_start_and_say_so() -> None:
    # The preflight of dev on one H100 (tests/real_runs/2026-11-26-h100-dev): 345 s to /health cold, 247 s with only
    # VLLM_CACHE_ROOT kept and its first answer 103 s later, 64 s with every cache kept, and the cold first answer 122 s
    # after /health: a kernel compile, the same kernels at full size, so not scaled.
    cold_start = wake(nodes=1)
    assert cold_start.compile_warm.seconds == pytest.approx(818 * 64 / 345)
    assert cold_start.compile_cache_only.seconds == pytest.approx(818 * (247 + 103) / 345)
    assert cold_start.first_answer_cold.seconds == 122
    sources = (cold_start.compile_warm, cold_start.compile_cache_only, cold_start.first_answer_cold)
    assert all("2026-11-26-h100-dev" in figure.source for figure in sources)
    assert all("no full-size start with warm caches measured yet" in f.source for f in sources[:2])


def test_nodes_waking_together_share_the_caches_throughput() -> None:
    one, twelve = wake(nodes=1), wake(nodes=12)
    assert one.weights.seconds is not None and twelve.weights.seconds is not None
    assert twelve.weights.seconds == pytest.approx(12 * one.weights.seconds)
    doubled = wake(nodes=12, cache={"throughputMibps": 4800})
    assert doubled.weights.seconds == pytest.approx(twelve.weights.seconds / 2)


def test_a_wake_costs_every_node_for_the_whole_cold_start() -> None:
    cold_start = wake(nodes=12, capacity={"mode": "spot", "pricePerNodeHour": 88.93})
    for warm in (False, True):
        seconds = cold_start.seconds(warm=warm)
        assert seconds is not None
        assert cold_start.cost(warm=warm) == pytest.approx(12 * 88.93 * seconds / 3600, abs=0.01)


def test_a_wake_on_reserved_nodes_adds_nothing_their_node_time_is_billed_anyway() -> None:
    cold_start = wake(nodes=12, capacity={"mode": "reservation", "reservation": {"name": "a4", "nodes": 12}})
    for warm in (False, True):
        seconds = cold_start.seconds(warm=warm)
        assert seconds is not None
        assert cold_start.cost(warm=warm) == 0
        assert cold_start.committed_cost(warm=warm) == pytest.approx(12 * 88.93 * seconds / 3600, abs=0.01)
    # A faster wake saves time there, not money.
    assert cold_start.sizing is not None and cold_start.sizing.saves_per_wake == 0
    assert cold_start.sizing.break_even_wakes_per_month() is None


def test_an_autoscaled_stack_wakes_to_its_most_replicas() -> None:
    assert wake(nodes=0, autoscaling={"enabled": True, "maxReplicas": 8}).replicas == 8


def test_a_stack_that_never_serves_has_no_wake() -> None:
    settings = StackSettings.model_validate({"project": "example-project", "nodes": 0})
    assert plan_stack(settings, "test").estimate.cold_start is None


def test_flex_start_has_no_figure_for_its_wait_so_no_total_and_no_cost() -> None:
    cold_start = wake(capacity={"mode": "flex-start", "pricePerNodeHour": 40.0})
    assert cold_start.node.seconds is None and "queue" in cold_start.node.source
    assert cold_start.seconds(warm=True) is None and cold_start.cost(warm=True) is None


def test_without_the_registry_the_image_is_pulled_whole() -> None:
    assert wake().image.seconds == IMAGE_STREAMED_SECONDS
    assert wake(registry={"enabled": False}).image.seconds == IMAGE_PULLED_SECONDS


@pytest.mark.parametrize(
    ("image", "streamed"),
    [
        ("europe-west4-docker.pkg.dev/p/docker-hub/vllm/vllm-openai:v0.18.1", True),
        ("us-central1-docker.pkg.dev/p/docker-hub/vllm/vllm-openai:v0.18.1", False),
        ("vllm/vllm-openai:v0.18.1", False),
        ("nvcr.io/nvidia/vllm:25.10", False),
    ],
)
def test_only_artifact_registry_in_the_clusters_region_counts_as_streamed(image: str, streamed: bool) -> None:
    assert image_streamed(image, "europe-west4") is streamed


def test_without_the_cache_the_weights_have_no_figure() -> None:
    cold_start = wake(cache={"enabled": False})
    assert cold_start.weights.seconds is None and cold_start.seconds(warm=False) is None


def test_a_cache_too_slow_for_the_wake_shows_the_throughput_that_fits_and_its_trade() -> None:
    assert wake(nodes=1).sizing is None
    twelve = wake(nodes=12, cache={"pricePerMibpsMonth": 0.1}, capacity={"mode": "spot", "pricePerNodeHour": 88.93})
    sizing = twelve.sizing
    assert sizing is not None
    assert sizing.throughput_mibps == 12 * 2400
    assert sizing.weights.seconds == pytest.approx(wake(nodes=1).weights.seconds)
    assert sizing.extra_per_month == pytest.approx((12 * 2400 - 2400) * 0.1)
    assert twelve.weights.seconds is not None and sizing.weights.seconds is not None
    saved = twelve.weights.seconds - sizing.weights.seconds
    assert sizing.saves_per_wake == pytest.approx(12 * 88.93 * saved / 3600, abs=0.01)


def test_with_the_compile_cache_off_every_wake_compiles() -> None:
    cold_start = wake(serving={"env": {"VLLM_DISABLE_COMPILE_CACHE": "1"}})
    assert cold_start.seconds(warm=True) == cold_start.seconds(warm=False)


def test_the_sized_cache_says_how_many_wakes_a_month_pay_for_its_throughput() -> None:
    # 12 nodes at $88.93 reading the 27B's weights; Hyperdisk ML at $0.12 per MiB/s-month.
    twelve = wake(nodes=12, capacity={"mode": "spot", "pricePerNodeHour": 88.93})
    assert twelve.sizing is not None
    extra = (12 * 2400 - 2400) * 0.12
    saved_seconds = WEIGHT_BYTES / (200 * 2**20) - WEIGHT_BYTES / (2400 * 2**20)
    saves = 12 * 88.93 * saved_seconds / 3600
    output = twelve.sizing.as_output()
    assert output["breakEvenWakesPerMonth"] == pytest.approx(extra / saves, rel=0.01)
    free = wake(nodes=12, cache={"pricePerMibpsMonth": 0}, capacity={"mode": "spot", "pricePerNodeHour": 88.93})
    assert free.sizing is not None and free.sizing.as_output()["breakEvenWakesPerMonth"] == 0
    unpriced = wake(nodes=12, capacity={"mode": "flex-start"})
    assert unpriced.sizing is not None and unpriced.sizing.as_output()["breakEvenWakesPerMonth"] is None


def test_the_weights_phase_reads_the_models_own_weights() -> None:
    # The 70B in bf16 reads about 4.6 times the 27B's bytes at the same throughput (no MTP drafter).
    llama = facts_in(catalogue_folder("meta-llama/Llama-3.3-70B-Instruct"), "meta-llama/Llama-3.3-70B-Instruct")
    cold_start = wake(model={"id": "meta-llama/Llama-3.3-70B-Instruct"}, cache={"sizeGi": 200})
    assert cold_start.weights.seconds == pytest.approx(llama.weight_bytes / (2400 * 2**20))
    assert cold_start.weights.source.startswith("131.4 GiB of weights at 2,400 MiB/s")
    # Without MTP the drafter is not read.
    assert wake(serving={"mtpTokens": 0}).weights.seconds == pytest.approx(QWEN.weight_bytes / (2400 * 2**20))
