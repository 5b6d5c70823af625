"""The scan on hand-made lines, each worded as vLLM 0.26.0 prints it (the source file named beside it).

Every figure and marker is read from a line of its own, stamped as ``kubectl logs --timestamps`` stamps it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from preflight import logscan

T0 = "2026-11-26T10:00:00.000000Z "


def at(seconds: float, text: str) -> str:
    moment = datetime(2026, 11, 26, 10, 0, tzinfo=UTC).timestamp() + seconds
    return logscan.stamp(datetime.fromtimestamp(moment, UTC)) + " " + text


# (key, line, value read): one line per figure, as vLLM 0.26.0 words it.
FIGURE_LINES = [
    ("weights", "INFO 11-26 10:00:05 [default_loader.py:291] Loading weights took 0.07 seconds", 0.07),
    ("model loading", "INFO 11-26 10:00:05 [gpu_model_runner.py:2200] Model loading took 0.46 GiB memory and 0.85 seconds", 0.85),
    ("model loading", "INFO 11-26 10:00:05 [model_runner.py:306] Model loading took 0.46 GiB and 0.853620 seconds", 0.85362),
    ("dynamo transform", "INFO 11-26 10:00:05 [backends.py:700] Dynamo bytecode transform time: 12.5 s", 12.5),
    ("graph compile", "INFO 11-26 10:00:05 [backends.py:300] Compiling a graph for compile range (1, 16384) takes 9.75 s", 9.75),
    ("torch.compile", "INFO 11-26 10:00:05 [monitor.py:40] torch.compile took 28.37 s in total", 28.37),
    ("profiling/warmup", "INFO 11-26 10:00:05 [monitor.py:50] Initial profiling/warmup run took 85.31 s", 85.31),
    ("init engine", "INFO 11-26 10:00:05 [core.py:250] init engine (profile, create kv cache, warmup model) took 248.70 seconds", 248.7),
    ("graph capture", "INFO 11-26 10:00:05 [gpu_model_runner.py:4000] Graph capturing finished in 3 secs, took 0.5 GiB", 3.0),
    ("kv cache memory", "INFO 11-26 10:00:05 [gpu_worker.py:380] Available KV cache memory: 69.85 GiB", 69.85),
]


@pytest.mark.parametrize(("key", "text", "value"), FIGURE_LINES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(FIGURE_LINES)])
def test_each_figure_is_read_from_its_line_and_timed_from_the_first(key: str, text: str, value: float) -> None:
    scan = logscan.scan([at(0, "start: vllm serve"), at(7.5, text)])
    assert scan.figures == {key: [pytest.approx(value)]}
    assert scan.first_seen == {key: 7.5}
    assert scan.markers == {}


MARKER_LINES = [
    ("compile cache used", "INFO [backends.py:200] Directly load AOT compilation from path /c/x", None),
    ("compile cache used", "INFO [backends.py:200] Directly load the compiled graph(s) for compile range", None),
    (
        "compile cache dir",
        "INFO [backends.py:100] Using cache directory: /c/torch_compile_cache/abc for vLLM's torch.compile",
        "/c/torch_compile_cache/abc",
    ),
    ("flashinfer autotune cache", "INFO [flashinfer.py:9] Using FlashInfer autotune cache file: /c/fi/x.json", "/c/fi/x.json"),
    (
        "kernel JIT at inference",
        "WARNING [jit_monitor.py:30] Triton kernel JIT compilation during inference: _causal_conv1d_fwd_kernel",
        "_causal_conv1d_fwd_kernel",
    ),
    ("cudagraph mode changed", "WARNING [config.py:1] ... setting cudagraph_mode=PIECEWISE", "PIECEWISE"),
    ("attention block size", "INFO [config.py:2] Setting attention block size to 528 tokens to ensure", "528"),
    ("gdn prefill", "INFO [qwen_gdn_linear_attn.py:90] Using Triton/FLA GDN prefill kernel", "Triton/FLA"),
    ("non-default args", "INFO [utils.py:1] non-default args: {'model': '/m', 'port': 8000}", "{'model': '/m', 'port': 8000}"),
    ("server start", "INFO [api_server.py:1] Starting vLLM server on http://0.0.0.0:8000", "http://0.0.0.0:8000"),
    ("error", "Traceback (most recent call last):", None),
    ("error", "(EngineCore pid=1) ERROR 11-26 10:00:05 [core.py:1] EngineCore failed to start.", None),
]


@pytest.mark.parametrize(("key", "text", "value"), MARKER_LINES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(MARKER_LINES)])
def test_each_marker_keeps_its_value_or_else_its_line(key: str, text: str, value: str | None) -> None:
    line = at(2.25, text)
    scan = logscan.scan([at(0, "start: vllm serve"), line])
    assert scan.markers == {key: [value if value is not None else line]}
    assert scan.first_seen == {key: 2.25}
    assert scan.figures == {}


def test_a_warning_that_quotes_an_error_is_not_one() -> None:
    assert logscan.scan([at(0, "WARNING 11-26 10:00:00 [x.py:1] retrying after ERROR from the hub")]).markers == {}


def test_a_long_line_without_a_value_is_kept_by_its_last_300_characters_stripped() -> None:
    text = "ERROR 11-26 10:00:05 [core.py:1] " + "x" * 400 + "end  "
    [kept] = logscan.scan([at(0, " " + text)]).markers["error"]
    assert kept == ("x" * 400 + "end  ")[-300:].strip()
    assert len(kept) == 298


def test_every_appearance_is_kept_and_the_first_one_timed() -> None:
    lines = [
        at(0, "start"),
        at(1, "torch.compile took 28.37 s in total"),
        at(9, "torch.compile took 11.11 s in total"),
        at(2, "Using Triton/FLA GDN prefill kernel"),
        at(4, "Using FlashInfer GDN prefill kernel"),
    ]
    scan = logscan.scan(lines)
    assert scan.figures == {"torch.compile": [28.37, 11.11]}
    assert scan.markers == {"gdn prefill": ["Triton/FLA", "FlashInfer"]}
    assert scan.first_seen == {"torch.compile": 1.0, "gdn prefill": 2.0}


def test_lines_without_a_stamp_are_read_but_not_timed() -> None:
    scan = logscan.scan(
        [
            "torch.compile took 1.5 s in total",
            at(3, "start"),
            "torch.compile took 2.5 s in total",
            "Starting vLLM server on http://h:1",
            at(5, "Starting vLLM server on http://h:2"),
        ]
    )
    assert scan.figures == {"torch.compile": [1.5, 2.5]}
    assert scan.markers == {"server start": ["http://h:1", "http://h:2"]}
    assert scan.first_seen == {"server start": 2.0}


def test_a_scan_reads_as_its_three_parts() -> None:
    scan = logscan.scan([at(0, "start"), at(1, "torch.compile took 2 s in total")])
    assert scan.as_dict() == {"figures": {"torch.compile": [2.0]}, "markers": {}, "first_seen_s": {"torch.compile": 1.0}}


def test_the_stamp_is_rfc_3339_in_utc_with_microseconds_and_reads_back() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 60, tzinfo=UTC)
    assert logscan.stamp(moment) == "2026-01-02T03:04:05.000060Z"
    assert logscan.line_time(logscan.stamp(moment) + " x") == moment


def test_the_stamp_of_now_is_in_utc_whatever_the_machines_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        now = logscan.line_time(logscan.stamp() + " x")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert now is not None and abs((now - datetime.now(UTC)).total_seconds()) < 60


@pytest.mark.parametrize("line", ["2026-01-02T03:04:05Z x", "x 2026-01-02T03:04:05.1Z y", "2026-01-02T03:04:05.1Z"])
def test_only_a_leading_stamp_with_fractions_and_a_space_places_a_line(line: str) -> None:
    assert logscan.line_time(line) is None


def test_the_engine_started_at_the_first_stamped_line() -> None:
    assert logscan.started_at(["no stamp", at(3, "a"), at(1, "b")]) == datetime(2026, 11, 26, 10, 0, 3, tzinfo=UTC)


def test_a_log_without_a_vllm_line_gives_the_parsers_error() -> None:
    lines = [at(0, "start: vllm serve")]
    parsed = logscan.parse_with_project(lines, logscan.started_at(lines))
    assert parsed == {"error": "no vLLM startup line in the log (run kubectl logs on the vLLM container, with --timestamps)"}


def test_the_parsers_phases_leave_out_the_nodes_and_the_images() -> None:
    lines = [
        at(0, "start"),
        at(20, "(EngineCore pid=1) INFO 11-26 10:00:20 [model_runner.py:306] Model loading took 0.46 GiB and 0.85 seconds"),
        at(25, "(EngineCore pid=1) INFO 11-26 10:00:25 [decorators.py:311] Directly load AOT compilation from path /c/x"),
        at(30, "(APIServer pid=2) INFO 11-26 10:00:30 [api_server.py:1] Starting vLLM server on http://0.0.0.0:8000"),
    ]
    parsed = logscan.parse_with_project(lines, logscan.started_at(lines))
    assert "node provisioned" not in parsed["phases"] and "image pulled or streamed" not in parsed["phases"]
    assert parsed["vllmSeconds"] == {"weights": 0.85}
    assert parsed["compileCacheHit"] is True


def test_a_log_without_stamps_says_so() -> None:
    with pytest.raises(ValueError, match=r"^no stamped line in the log$"):
        logscan.started_at(["INFO no stamp"])
