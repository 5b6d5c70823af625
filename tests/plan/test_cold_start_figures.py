"""The cold-start estimate as the stack outputs it: each figure's source, the totals in minutes, the wake's cost,
the sized cache's trade, and when the compile cache counts as on.

The wakes here are built by hand with round figures, so each total and rounding is worked out in the comments.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from plan.cold_start_estimate import (
    CacheDisk,
    ColdStart,
    Figure,
    Sizing,
    Wake,
    compile_cache_enabled,
    expected,
    image,
    node_provisioning,
    sizing,
    weights,
)

MIB = 2**20


def cold_start(node: float | None = 300, sized: Sizing | None = None) -> ColdStart:
    return ColdStart(
        replicas=2,
        node=Figure(node, "node"),
        image=Figure(30, "image"),
        weights=Figure(30.4, "weights"),
        compile_cold=Figure(600, "cold"),
        compile_warm=Figure(100, "warm"),
        first_answer_cold=Figure(200, "first"),
        compile_cache_only=Figure(350, "only"),
        price_per_node_hour=36.0,
        sizing=sized,
    )


def test_the_output_gives_each_phase_the_totals_in_tenths_of_a_minute_and_the_wakes_cost() -> None:
    assert cold_start().as_output() == {
        "replicas": 2,
        "phases": {
            "nodeProvisioning": {"seconds": 300, "source": "node"},
            "image": {"seconds": 30, "source": "image"},
            "weights": {"seconds": 30, "source": "weights"},
            "compileColdCache": {"seconds": 600, "source": "cold"},
            "compileWarmCache": {"seconds": 100, "source": "warm"},
            "firstAnswerColdKernels": {"seconds": 200, "source": "first"},
            "compileCacheOnly": {"seconds": 350, "source": "only"},
        },
        # Cold: 300 + 30 + 30.4 + 600 + 200 = 1,160.4 s, 19.34 min, up to 19.4; warm: 460.4 s, 7.67 min, up to 7.7.
        "minutes": {"coldCompileCache": 19.4, "warmCompileCache": 7.7},
        # 2 nodes x $36 x 1,160.4 s = $23.208, and x 460.4 s = $9.208, to the cent.
        "wakeCost": {"coldCompileCache": 23.21, "warmCompileCache": 9.21},
    }


def test_a_phase_without_a_figure_leaves_no_total_and_no_cost() -> None:
    output = cold_start(node=None).as_output()
    assert output["phases"]["nodeProvisioning"] == {"seconds": None, "source": "node"}  # type: ignore[index]
    assert output["minutes"] == {"coldCompileCache": None, "warmCompileCache": None}
    assert output["wakeCost"] == {"coldCompileCache": None, "warmCompileCache": None}


def test_a_phase_of_no_time_adds_nothing() -> None:
    assert cold_start(node=0).seconds(warm=True) == pytest.approx(0 + 30 + 30.4 + 100)


def test_a_sized_cache_is_in_the_output_with_its_trade() -> None:
    sized = Sizing(throughput_mibps=7200, weights=Figure(11.6, "sized"), extra_per_month=100.126, saves_per_wake=3.0)
    assert cold_start(sized=sized).as_output()["cacheSizedForWake"] == {
        "throughputMibps": 7200,
        "weights": {"seconds": 12, "source": "sized"},
        "extraPerMonth": 100.13,
        "savesPerWake": 3.0,
        # $100.126 a month against $3 a wake: 33.38 wakes, to a tenth.
        "breakEvenWakesPerMonth": 33.4,
    }
    assert "cacheSizedForWake" not in cold_start().as_output()


def test_throughput_that_costs_nothing_pays_off_at_once_and_one_that_saves_nothing_never() -> None:
    assert Sizing(7200, Figure(11.6, "sized"), extra_per_month=0, saves_per_wake=None).break_even_wakes_per_month() == 0.0
    assert Sizing(7200, Figure(11.6, "sized"), extra_per_month=1, saves_per_wake=None).break_even_wakes_per_month() is None
    assert Sizing(7200, Figure(11.6, "sized"), extra_per_month=1, saves_per_wake=0.0).break_even_wakes_per_month() is None


def test_a_cache_sized_for_three_nodes_saves_their_wait_at_the_node_price() -> None:
    cache = CacheDisk(
        size_gi=100,
        throughput_mibps=2400,
        price_per_gib_month=0.08,
        price_per_mibps_month=0.12,
        snapshot_price_per_gib_month=0.05,
        weight_bytes=29 * 10**9,
    )
    sized = sizing(cache, 3, 100_000.0)
    assert sized is not None and sized.throughput_mibps == 3 * 2400
    # Each node reads 29 GB at 800 MiB/s now and at 2,400 MiB/s sized; three nodes at $100,000 an hour wait less.
    saved = 29e9 / (800 * MIB) - 29e9 / (2400 * MIB)
    assert sized.saves_per_wake == round(3 * 100_000 * saved / 3600, 2)
    assert sized.extra_per_month == pytest.approx((7200 - 2400) * 0.12)
    assert sizing(cache, 1, 100_000.0) is None


def test_each_figure_says_where_it_comes_from() -> None:
    assert node_provisioning("spot").source == "reference: Autopilot provisioned an A4 node in 5-6 min"
    assert node_provisioning("flex-start").source.startswith("no reference figure: flex-start waits")
    streamed = image("europe-west4-docker.pkg.dev/p/docker-hub/vllm/vllm-openai:v0.18.1", "europe-west4")
    assert streamed.source == "ai-on-gke startup-latency guide: a 5.4 GB image, creation to serving in 30 s with image streaming"
    pulled = image("vllm/vllm-openai:v0.18.1", "europe-west4")
    assert (
        pulled.source == "ai-on-gke startup-latency guide: a 5.4 GB image, creation to serving in 191 s pulled whole (not streamable here)"
    )
    assert weights(None, 2).source == "no reference figure: without the cache each replica downloads the weights from Hugging Face"
    cache = CacheDisk(100, 2400, 0.08, 0.12, 0.05, 30 * 2**30)
    assert weights(cache, 12).source == "30.0 GiB of weights at 2,400 MiB/s shared by 12 node(s): 200 MiB/s each"


def test_the_compile_figures_say_whether_the_compile_cache_is_on() -> None:
    wake = Wake(
        replicas=1,
        first_step="spot",
        image_ref="vllm/vllm-openai:v0.18.1",
        region="europe-west4",
        cache=None,
        compile_cache=True,
        price_per_node_hour=None,
    )
    on = expected(wake)
    assert on is not None and on.compile_cold.source.startswith("H200, measured at full size")
    off = expected(replace(wake, compile_cache=False))
    assert off is not None and off.compile_warm.source == (
        "the compile cache is off (VLLM_DISABLE_COMPILE_CACHE): every wake compiles, its first answer included"
    )


@pytest.mark.parametrize(
    ("env", "enabled"),
    [
        ({}, True),
        ({"VLLM_DISABLE_COMPILE_CACHE": "0"}, True),
        ({"VLLM_DISABLE_COMPILE_CACHE": "1"}, False),
        ({"VLLM_DISABLE_COMPILE_CACHE": " 1 "}, False),
        # bool(int("-1")) is True: vLLM turns the cache off.
        ({"VLLM_DISABLE_COMPILE_CACHE": "-1"}, False),
        ({"VLLM_DISABLE_COMPILE_CACHE": "00"}, True),
        # Not a number: vLLM would stop at start (the settings refuse it first); the cache is not counted off.
        ({"VLLM_DISABLE_COMPILE_CACHE": "X1"}, True),
        ({"VLLM_DISABLE_COMPILE_CACHE": "true"}, True),
    ],
)
def test_the_compile_cache_is_off_only_when_vllms_switch_reads_as_a_true_number(env: dict[str, str], enabled: bool) -> None:
    assert compile_cache_enabled(env) is enabled
