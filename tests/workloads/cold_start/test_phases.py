"""The startup-phase parser, on samples written from Kubernetes' and vLLM 0.26.0's own formats (tests/workloads/cold_start/samples.py)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from ops.cold_start import main
from tests.workloads.cold_start import samples
from workloads.cold_start.phases import Breakdown, MeasureError, Step, against_expected, go_duration, measure, read_log


def at(text: str, stamp: str) -> datetime:
    """The time of the sample line or event that contains ``text``."""
    for line in text.splitlines():
        if stamp in line:
            return datetime.fromisoformat(line.split(" ", 1)[0].replace("Z", "+00:00"))
    raise AssertionError(f"{stamp!r} not in the sample")


def event_time(events: list[dict[str, object]], reason: str, container: str | None = None) -> datetime:
    """The time of the first event of ``reason`` on the pod, or on ``container`` (its ``fieldPath``)."""
    found = next(
        e
        for e in events
        if e["reason"] == reason and (container is None or e["involvedObject"].get("fieldPath") == container)  # type: ignore[attr-defined]
    )
    return datetime.fromisoformat(str(found["firstTimestamp"]).replace("Z", "+00:00"))


def test_a_cold_wake_splits_into_every_phase_vllm_logs() -> None:
    events = samples.events_list(samples.wake_events())
    breakdown = measure(events, samples.COLD_LOG.splitlines())
    phases = dict(breakdown.phases())
    pending, scheduled = (event_time(events["items"], r) for r in ("FailedScheduling", "Scheduled"))
    started = event_time(events["items"], "Started", "spec.containers{vllm}")  # vLLM's, not the FUSE sidecar's before it
    # Each vLLM step ends at the slowest engine's line (DP1 in the sample).
    loading = at(samples.COLD_LOG, "EngineCore_DP1 pid=413) INFO 11-23 12:06:19")
    loaded = at(samples.COLD_LOG, "EngineCore_DP1 pid=413) INFO 11-23 12:06:41")
    # The drafter's compile and profiling come after the model's: the phase ends at the last of them.
    profiled = at(samples.COLD_LOG, "EngineCore_DP1 pid=413) INFO 11-23 12:09:53")
    kv_cache = at(samples.COLD_LOG, "EngineCore_DP1 pid=413) INFO 11-23 12:11:41")
    captured = at(samples.COLD_LOG, "Graph capturing finished in 41 secs")
    serving = at(samples.COLD_LOG, "Starting vLLM server on")
    answered = at(samples.COLD_LOG, "POST /v1/completions")
    assert phases == {
        "node provisioned": (scheduled - pending).total_seconds(),
        "image pulled or streamed": (started - scheduled).total_seconds(),
        "imports and config": (loading - started).total_seconds(),
        "weights loaded": (loaded - loading).total_seconds(),
        "torch.compile, profiling and kernel JIT": (profiled - loaded).total_seconds(),
        "FlashInfer JIT and KV cache": (kv_cache - profiled).total_seconds(),
        "CUDA graph capture": (captured - kv_cache).total_seconds(),
        "server start": (serving - captured).total_seconds(),
        "first answer": (answered - serving).total_seconds(),
    }
    assert breakdown.total_seconds == (answered - pending).total_seconds()
    assert breakdown.compile_cache_hit is False
    # vLLM's own figures: each engine's graphs and profiling runs summed (the drafter's with the model's), the slowest engine's.
    assert breakdown.engine_seconds == {
        "weights": 21.976018,
        "torch.compile": pytest.approx(84.40 + 31.80),
        "profiling and kernel JIT": pytest.approx(77.47 + 0.90),
        "CUDA graph capture": 41.0,
    }
    assert breakdown.inference_jit_kernels == ["_causal_conv1d_fwd_kernel", "fused_sigmoid_gating_delta_rule_update_kernel"]


def test_a_kernel_any_compiler_builds_at_inference_is_listed() -> None:
    # vLLM's JIT monitor names the compiler: Triton's kernels, and TileLang's where a model uses them.
    tile = samples.vllm_line(
        "2026-11-23T12:15:11.000Z", samples.DP1, "jit_monitor.py:135", "TileLang JIT compilation during inference: mhc_pre_fuse.", "WARNING"
    )
    breakdown = measure(samples.events_list(samples.wake_events()), [*samples.COLD_LOG.splitlines(), tile])
    assert breakdown.inference_jit_kernels[-1] == "mhc_pre_fuse" and len(breakdown.inference_jit_kernels) == 3


def test_the_weights_line_without_memory_is_read() -> None:
    # One of vLLM 0.26.0's runners prints "Model loading took %s GiB and %.6f seconds".
    log = samples.COLD_LOG.replace("GiB memory and 21.976018", "GiB and 23.5")
    breakdown = measure(samples.events_list(samples.wake_events()), log.splitlines())
    assert breakdown.engine_seconds["weights"] == 23.5
    assert breakdown.steps["weights-loaded"] == at(samples.COLD_LOG, "EngineCore_DP1 pid=413) INFO 11-23 12:06:41")


def test_a_log_without_an_answer_ends_at_the_servers_start() -> None:
    log = [line for line in samples.COLD_LOG.splitlines() if "POST /v1/" not in line]
    breakdown = measure(samples.events_list(samples.wake_events()), log)
    assert dict(breakdown.phases())["first answer"] is None
    assert breakdown.total_seconds == (at(samples.COLD_LOG, "Starting vLLM server on") - breakdown.steps["pending"]).total_seconds()


def test_the_fuse_sidecars_pull_and_start_are_not_vllms() -> None:
    """The native sidecar is pulled and started first (samples.py): its events must not end vLLM's image phase."""
    pulled = measure(samples.events_list(samples.wake_events(streamed=False)), samples.COLD_LOG.splitlines())
    # Scheduled 12:05:31, vLLM's container started 12:06:52 (the sidecar's at 12:05:35).
    assert dict(pulled.phases())["image pulled or streamed"] == 81.0
    assert pulled.pull_seconds == 69.312  # vLLM's image, not the sidecar's 1.204 s


def test_a_streamed_image_and_the_kubelets_own_pull_time_are_reported() -> None:
    streamed = measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines())
    pulled = measure(samples.events_list(samples.wake_events(streamed=False)), samples.COLD_LOG.splitlines())
    assert (streamed.streamed, streamed.pull_seconds) == (True, 1.812)
    assert (pulled.streamed, pulled.pull_seconds) == (False, 69.312)
    slow, fast = (dict(b.phases())["image pulled or streamed"] for b in (pulled, streamed))
    assert slow is not None and fast is not None and slow > fast


def test_a_wake_that_found_the_compile_cache_says_so() -> None:
    breakdown = measure(samples.events_list(samples.wake_events()), samples.WARM_LOG.splitlines())
    assert breakdown.compile_cache_hit is True
    cold = measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines())
    for phase in ("torch.compile, profiling and kernel JIT", "FlashInfer JIT and KV cache", "first answer"):
        warm_phase, cold_phase = (dict(b.phases())[phase] for b in (breakdown, cold))
        assert warm_phase is not None and cold_phase is not None and warm_phase < cold_phase, phase


def test_without_kubectl_timestamps_vllms_own_stamps_take_the_year_of_the_events() -> None:
    bare = [re.sub(r"^\S+ ", "", line) for line in samples.COLD_LOG.splitlines()]
    with_stamps = measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines())
    without = measure(samples.events_list(samples.wake_events()), bare)
    # vLLM's stamp has whole seconds only; uvicorn's access lines carry no time of their own.
    assert dict(without.phases())["first answer"] is None
    for (name, seconds), (_, rounded) in zip(with_stamps.phases()[:-1], without.phases()[:-1], strict=True):
        assert seconds is not None and rounded is not None
        assert abs(seconds - rounded) < 1.0, name


def test_by_default_the_pod_that_started_last_is_measured() -> None:
    earlier = samples.wake_events(samples.EARLIER_POD, day="2026-11-22")
    breakdown = measure(samples.events_list(earlier, samples.wake_events()), samples.COLD_LOG.splitlines())
    assert breakdown.pod == samples.POD
    chosen = measure(samples.events_list(earlier, samples.wake_events()), samples.COLD_LOG.splitlines(), pod=samples.EARLIER_POD)
    assert chosen.steps["pending"].day == 22


def test_only_the_replicas_deployments_own_pods_are_measured_not_its_namesakes() -> None:
    # A Deployment's pods are <deployment>-<pod-template-hash>-<5 characters> (kubernetes/kubernetes
    # pkg/controller/deployment/sync.go; apiserver's names.SimpleNameGenerator). The gateway's endpoint
    # picker, Deployment vllm-epp, starts its pods in the same wake, here after the replica.
    picker = "vllm-epp-5c8d7f9b4-q7w2z"
    later = [{**e, "firstTimestamp": "2026-11-23T12:06:10Z"} for e in samples.wake_events(picker)]
    events = samples.events_list(samples.wake_events(), later)
    assert measure(events, samples.COLD_LOG.splitlines()).pod == samples.POD


def test_a_step_missing_from_the_input_leaves_its_phases_open() -> None:
    events = [e for e in samples.wake_events() if e["reason"] != "Scheduled"]
    phases = dict(measure(samples.events_list(events), samples.COLD_LOG.splitlines()).phases())
    assert phases["node provisioned"] is None and phases["image pulled or streamed"] is None
    assert phases["weights loaded"] is not None and phases["imports and config"] is not None


@pytest.mark.parametrize(
    ("events", "log", "says"),
    [
        ([], samples.COLD_LOG, "no Started event of a pod named vllm-"),
        (samples.wake_events(), "INFO 11-23 12:00:00 [x.py:1] unrelated", "no vLLM startup line"),
    ],
)
def test_input_without_a_cold_start_is_refused_clearly(events: list[dict[str, object]], log: str, says: str) -> None:
    with pytest.raises(MeasureError, match=says):
        measure(samples.events_list(events), log.splitlines())


@pytest.mark.parametrize(("text", "seconds"), [("1.812s", 1.812), ("1m9.312s", 69.312), ("850ms", 0.85), ("2h0m1s", 7201.0)])
def test_go_durations_as_the_kubelet_prints_them(text: str, seconds: float) -> None:
    assert go_duration(text) == pytest.approx(seconds)


def test_the_command_prints_the_breakdown_from_saved_kubectl_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "events.json").write_text(json.dumps(samples.events_list(samples.wake_events())))
    (tmp_path / "vllm.log").write_text(samples.COLD_LOG)
    assert main(["--events", str(tmp_path / "events.json"), "--logs", str(tmp_path / "vllm.log")]) == 0
    table = capsys.readouterr().out
    assert f"cold start of {samples.POD}" in table
    assert "image streamed (kubelet: 1.8 s); compile cache miss (compiled)" in table
    assert main(["--events", str(tmp_path / "events.json"), "--logs", str(tmp_path / "vllm.log"), "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output["pod"] == samples.POD and output["imageStreamed"] is True
    assert main(["--events", str(tmp_path / "events.json"), "--logs", str(tmp_path / "vllm.log"), "--pod", "vllm-none"]) == 2
    assert "no event of pod vllm-none" in capsys.readouterr().err


def test_the_output_holds_every_figure_of_the_breakdown() -> None:
    breakdown = measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines())
    output = breakdown.as_output()
    assert output == {
        "pod": samples.POD,
        "phases": dict(breakdown.phases()),
        "totalSeconds": breakdown.total_seconds,
        "imageStreamed": True,
        "kubeletPullSeconds": 1.812,
        "compileCacheHit": False,
        "vllmSeconds": breakdown.engine_seconds,
        "inferenceJitKernels": ["_causal_conv1d_fwd_kernel", "fused_sigmoid_gating_delta_rule_update_kernel"],
    }
    phases, figures = output["phases"], output["vllmSeconds"]
    assert isinstance(phases, dict) and isinstance(figures, dict)
    assert list(phases) == [
        "node provisioned",
        "image pulled or streamed",
        "imports and config",
        "weights loaded",
        "torch.compile, profiling and kernel JIT",
        "FlashInfer JIT and KV cache",
        "CUDA graph capture",
        "server start",
        "first answer",
    ]
    assert list(figures) == ["CUDA graph capture", "profiling and kernel JIT", "torch.compile", "weights"]


# A wake by hand, in round seconds from its first event: 300 s to a node, 60 to start, 30 of imports, 60 of weights,
# 150 of compiling, the KV cache in the same second (vLLM stamps whole seconds), 40 of graphs, 20 to serve, 45 to answer.
HAND_MADE: dict[Step, int] = {
    "pending": 0,
    "scheduled": 300,
    "started": 360,
    "loading": 390,
    "weights-loaded": 450,
    "profiled": 600,
    "kv-cache": 600,
    "graphs-captured": 640,
    "serving": 660,
    "answered": 705,
}
ESTIMATE = {
    "phases": {
        "nodeProvisioning": {"seconds": 280},
        "image": {"seconds": 90},
        "weights": {"seconds": 45},
        "compileColdCache": {"seconds": 600},
        "compileWarmCache": {"seconds": 200},
        "firstAnswerColdKernels": {"seconds": 120},
    }
}


def hand_made(hit: bool | None, without: Step | None = None) -> Breakdown:
    start = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    steps = {step: start + timedelta(seconds=at) for step, at in HAND_MADE.items() if step != without}
    return Breakdown(pod=samples.POD, steps=steps, compile_cache_hit=hit)


def test_a_cold_wake_reads_against_the_cold_figures() -> None:
    # vLLM's startup besides the weights is one figure: 30 + 150 + 0 + 40 + 20 s.
    assert against_expected(hand_made(hit=False), ESTIMATE) == [
        ("node provisioned", 300.0, 280.0),
        ("image pulled or streamed", 60.0, 90.0),
        ("weights loaded", 60.0, 45.0),
        ("compile, CUDA graphs and ready", 240.0, 600.0),
        ("first answer", 45.0, 120.0),
    ]
    # A log that never said whether the cache was found is held to the cold figures.
    assert against_expected(hand_made(hit=None), ESTIMATE) == against_expected(hand_made(hit=False), ESTIMATE)


def test_a_warm_wake_reads_against_the_warm_figure_and_no_first_answer_figure() -> None:
    rows = against_expected(hand_made(hit=True), ESTIMATE)
    assert rows[-2:] == [("compile, CUDA graphs and ready", 240.0, 200.0), ("first answer", 45.0, None)]


def test_a_startup_step_missing_from_the_log_leaves_the_compile_row_open() -> None:
    rows = dict((name, measured) for name, measured, _ in against_expected(hand_made(hit=False, without="kv-cache"), ESTIMATE))
    assert rows["compile, CUDA graphs and ready"] is None and rows["weights loaded"] == 60.0


def test_a_figure_missing_from_the_estimate_is_left_open() -> None:
    some = {"phases": {"nodeProvisioning": {"seconds": 280}, "image": {}}}
    assert [expected for _, _, expected in against_expected(hand_made(hit=False), some)] == [280.0, None, None, None, None]
    assert [expected for _, _, expected in against_expected(hand_made(hit=False), {})] == [None] * 5


def test_the_table_shows_each_phase_in_minutes_and_seconds() -> None:
    breakdown = hand_made(hit=True)
    breakdown.pull_seconds = 69.312
    breakdown.engine_seconds = {"weights": 21.5, "CUDA graph capture": 40.0}
    breakdown.inference_jit_kernels = ["a", "b"]
    assert breakdown.table() == "\n".join(
        [
            f"cold start of {samples.POD}",
            "  node provisioned                 5:00  (300 s)",
            "  image pulled or streamed         1:00  (60 s)",
            "  imports and config               0:30  (30 s)",
            "  weights loaded                   1:00  (60 s)",
            "  torch.compile, profiling and kernel JIT 2:30  (150 s)",
            "  FlashInfer JIT and KV cache      0:00  (0 s)",
            "  CUDA graph capture               0:40  (40 s)",
            "  server start                     0:20  (20 s)",
            "  first answer                     0:45  (45 s)",
            "  total                            11:45  (705 s)",
            "  image pulled (kubelet: 69.3 s); compile cache hit",
            "  vLLM's own figures (slowest engine): CUDA graph capture 40.0 s, weights 21.5 s",
            "  kernels compiled at inference, after the server started: 2",
            "",
        ]
    )


def test_the_table_says_what_the_input_did_not_hold() -> None:
    breakdown = hand_made(hit=None, without="pending")
    breakdown.streamed = True
    lines = breakdown.table().splitlines()
    assert lines[1] == "  node provisioned                 not in the input"
    assert lines[10] == "  total                            not in the input"
    assert lines[11:] == ["  image streamed; compile cache not in the log"]


def test_events_stamped_only_by_event_time_or_last_timestamp_are_read() -> None:
    # Events written by newer reporters carry eventTime and no firstTimestamp; a series may keep only lastTimestamp.
    events = samples.wake_events()
    for e in events:
        e["firstTimestamp"] = None
    for e in events[:5]:
        e["eventTime"], e["lastTimestamp"] = e.pop("lastTimestamp"), None
    untimed = {**events[0], "reason": "Scheduled", "eventTime": None, "lastTimestamp": None}
    breakdown = measure(samples.events_list([untimed, *events]), samples.COLD_LOG.splitlines())
    assert breakdown.steps["pending"] == datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
    assert breakdown.steps["scheduled"] == datetime(2026, 11, 23, 12, 5, 31, tzinfo=UTC)
    assert breakdown.steps["started"] == datetime(2026, 11, 23, 12, 5, 45, tzinfo=UTC)


def test_a_pod_still_waiting_after_the_last_start_is_not_the_one_measured() -> None:
    waiting = samples.event("vllm-7d9f8c6b5-zzzzz", "FailedScheduling", "0/3 nodes are available.", "2026-11-23T12:30:00Z")
    assert measure(samples.events_list(samples.wake_events(), [waiting]), samples.COLD_LOG.splitlines()).pod == samples.POD


def test_a_deployment_named_otherwise_is_measured_by_its_own_container() -> None:
    def renamed(value: object) -> object:
        return json.loads(json.dumps(value).replace("vllm-7d9f8c6b5", "qwen-7d9f8c6b5").replace("{vllm}", "{qwen}"))

    events = renamed(samples.events_list(samples.wake_events()))
    breakdown = measure(events, samples.COLD_LOG.splitlines(), prefix="qwen")  # type: ignore[arg-type]
    assert breakdown.pod == "qwen-7d9f8c6b5-x2k9p"
    assert breakdown.steps["started"] == datetime(2026, 11, 23, 12, 5, 45, tzinfo=UTC)
    assert breakdown.pull_seconds == 1.812


def test_a_restarted_container_keeps_its_first_start() -> None:
    again = samples.event(samples.POD, "Started", "Started container vllm", "2026-11-23T12:20:00Z", "spec.containers{vllm}")
    breakdown = measure(samples.events_list(samples.wake_events(), [again]), samples.COLD_LOG.splitlines())
    assert breakdown.steps["started"] == datetime(2026, 11, 23, 12, 5, 45, tzinfo=UTC)


@pytest.mark.parametrize("text", ["", "1.8s!", "ms"])
def test_anything_but_a_go_duration_is_refused(text: str) -> None:
    with pytest.raises(MeasureError, match=f"^not a Go duration: {re.escape(repr(text))}$"):
        go_duration(text)


def test_a_log_without_a_startup_line_says_how_to_get_one() -> None:
    with pytest.raises(
        MeasureError, match=r"^no vLLM startup line in the log \(run kubectl logs on the vLLM container, with --timestamps\)$"
    ):
        read_log(Breakdown(samples.POD), ["2026-11-23T12:00:00Z unrelated"])


def test_vllms_own_stamps_take_the_year_of_the_pods_first_event_else_this_years() -> None:
    bare = [re.sub(r"^\S+ ", "", line) for line in samples.COLD_LOG.splitlines()]
    earlier = measure(samples.events_list(samples.wake_events(day="2024-11-23")), bare)
    assert earlier.steps["loading"] == datetime(2024, 11, 23, 12, 6, 19, tzinfo=UTC)
    alone = Breakdown(samples.POD)
    read_log(alone, bare)
    assert alone.steps["loading"].year == datetime.now(UTC).year


def test_each_step_ends_at_the_latest_line_even_when_lines_arrive_out_of_order() -> None:
    # Without kubectl's stamps, two engines' lines can reach the log in another order than their own stamps.
    late, early = (
        f"({process}) INFO 11-23 {at} [gpu_model_runner.py:5250] Starting to load model /models/m..."
        for process, at in ((samples.DP0, "12:06:19"), (samples.DP1, "12:06:18"))
    )
    breakdown = Breakdown(samples.POD, steps={"pending": datetime(2026, 11, 23, 12, tzinfo=UTC)})
    read_log(breakdown, ["untimed line before the start", late, early])
    assert breakdown.steps["loading"] == datetime(2026, 11, 23, 12, 6, 19, tzinfo=UTC)


def test_a_single_process_logs_its_figures_without_a_prefix() -> None:
    lines = [
        "2026-11-23T12:06:18.000Z INFO 11-23 12:06:18 [gpu_model_runner.py:5250] Starting to load model /models/m...",
        "2026-11-23T12:06:30.000Z INFO 11-23 12:06:30 [monitor.py:81] Initial profiling/warmup run took 0.45 s",
    ]
    breakdown = Breakdown(samples.POD)
    read_log(breakdown, lines)
    assert breakdown.engine_seconds == {"profiling and kernel JIT": 0.45}
    assert breakdown.steps["profiled"] == datetime(2026, 11, 23, 12, 6, 30, tzinfo=UTC)
    # Neither compiled nor loaded from the cache (an eager run): the log does not say.
    assert breakdown.compile_cache_hit is None


def test_a_warm_wake_ends_profiling_at_its_last_profiling_run() -> None:
    breakdown = measure(samples.events_list(samples.wake_events()), samples.WARM_LOG.splitlines())
    assert breakdown.steps["profiled"] == datetime(2026, 11, 23, 12, 6, 53, 102000, tzinfo=UTC)


def test_a_compile_that_profiled_in_the_same_run_ends_the_phase() -> None:
    # vLLM prints one line for both where they ran together ("torch.compile and initial profiling/warmup run together").
    lines = [
        "2026-11-23T12:06:18.000Z INFO 11-23 12:06:18 [gpu_model_runner.py:5250] Starting to load model /models/m...",
        "2026-11-23T12:07:02.000Z INFO 11-23 12:07:02 [monitor.py:53] "
        "torch.compile and initial profiling/warmup run together took 30.50 s in total",
    ]
    breakdown = Breakdown(samples.POD)
    read_log(breakdown, lines)
    assert breakdown.steps["profiled"] == datetime(2026, 11, 23, 12, 7, 2, tzinfo=UTC)
    assert (breakdown.engine_seconds, breakdown.compile_cache_hit) == ({"torch.compile": 30.5}, False)


def test_a_repeated_event_counts_from_its_first_time() -> None:
    # The scheduler's FailedScheduling repeats while no node exists: one event, its count and lastTimestamp growing.
    events = samples.wake_events()
    events[0] = {**events[0], "count": 9, "lastTimestamp": "2026-11-23T12:04:50Z"}
    breakdown = measure(samples.events_list(events), samples.COLD_LOG.splitlines())
    assert breakdown.steps["pending"] == datetime(2026, 11, 23, 12, 0, tzinfo=UTC)
