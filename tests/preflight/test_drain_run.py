"""The drain played against a running engine: the stand-in of tests/preflight/fake_vllm.py, which behaves at
SIGTERM as vLLM 0.26.0 did on the real runs (the port closes at once, streams end with ``[DONE]`` and no
finish_reason at ``--shutdown-timeout``, plain requests get no answer, the process exits half a second later),
and a process that ignores SIGTERM. Times are kept short; each test takes a few seconds.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from preflight import drain
from preflight.engine import Engine

# Real processes over seconds: run after the README's test command (pyproject.toml, .ci/run).
pytestmark = pytest.mark.timeline

FAKE = Path(__file__).with_name("fake_vllm.py")
ROOT = FAKE.parents[2]


# How early or late a measured time may be against the schedule: early only by rounding, late by a loaded
# machine's scheduling (a helper's full run failed on tolerances of 0.2-0.4 s).
EARLY = 0.1
LATE = 1.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_fake(tmp_path: Path, port: int, shutdown_timeout: float) -> Engine:
    argv = [
        sys.executable,
        "-c",
        "from tests.preflight.fake_vllm import main; main()",
        "serve",
        "/m",
        "--served-model-name=m",
        f"--port={port}",
        f"--shutdown-timeout={shutdown_timeout}",
    ]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "VLLM_CACHE_ROOT": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    engine = Engine(argv, env, tmp_path / "engine.log", cwd=tmp_path)
    assert engine.wait_ready(f"http://127.0.0.1:{port}", 30, lambda _: None) is not None
    return engine


def test_a_drain_in_which_the_engine_cuts_at_its_shutdown_timeout_and_exits_in_the_grace(tmp_path: Path) -> None:
    port = free_port()
    engine = start_fake(tmp_path, port, shutdown_timeout=0.6)
    plan = drain.DrainPlan(grace_seconds=4.0, prestop_seconds=1.3, shutdown_timeout=0.6, streamed=2, plain=1, max_tokens=2000)
    said: list[str] = []
    try:
        record = drain.run(engine, f"http://127.0.0.1:{port}", "127.0.0.1", port, "m", plan, said.append)
    finally:
        engine.close()
    assert record["plan"] == plan.__dict__
    assert record["sigterm_s"] == 0.0
    # A sleep or a send on a loaded machine only comes late: each time may run up to LATE past its figure.
    assert -1.3 - LATE <= record["pod_deleted_s"] <= -1.3 + EARLY
    # SIGKILL is due when the grace period ends, counted from the deletion, not from SIGTERM.
    assert record["sigkill_due_s"] == pytest.approx(record["pod_deleted_s"] + 4.0, abs=0.002)
    assert 0 <= record["port_closed_s"] < 0.5 + LATE
    # The stand-in exits 0.5 s after its shutdown timeout, within the grace.
    assert 1.1 - EARLY <= record["exit_s"] <= 1.1 + LATE and record["exit_s"] < record["sigkill_due_s"]
    assert record["killed_by_preflight"] is False and record["returncode"] == 0
    requests: dict[str, Any] = record["requests"]
    assert sorted(requests) == ["after-SIGTERM", "during-preStop", "plain-0", "stream-0", "stream-1"]
    for name in ("stream-0", "stream-1"):
        stream = requests[name]
        assert stream["ending"] == "stream cut" and stream["done_marker"] is True
        assert stream["start"] < -1.2 and stream["first_chunk"] < 0 < stream["last_chunk"] < 0.6 + drain.CUT_SLACK_SECONDS + LATE
        assert stream["end"] >= stream["last_chunk"] and "seconds" not in stream
    assert requests["plain-0"]["ending"] == "dropped" and 1.1 - EARLY - 0.3 <= requests["plain-0"]["end"] <= 1.1 + LATE
    # Sent a second into the preStop sleep, answered before SIGTERM.
    assert requests["during-preStop"]["ending"] == "answered"
    during = requests["during-preStop"]
    assert during["start"] - record["pod_deleted_s"] == pytest.approx(1.0, abs=LATE) and during["end"] < 0
    assert requests["after-SIGTERM"]["ending"] == "refused" and 1.0 - EARLY <= requests["after-SIGTERM"]["start"] <= 1.0 + LATE
    assert said == ["drain: 3 requests in flight; preStop sleep 1 s, then SIGTERM"]
    log = (tmp_path / "engine.log").read_text(encoding="utf-8")
    assert "drain: pod deleted (preStop 1 s, grace 4 s) with 3 requests sent" in log
    assert "signal SIGTERM" in log and "SIGKILL" not in log
    assert "[shutdown] API server: shutdown triggered" in log
    # The load is long and never stops early: vLLM's ignore_eos keeps each request to its max_tokens; the two
    # probes ask for 8 tokens.
    sent = [json.loads(line.split(" /v1/completions ", 1)[1]) for line in log.splitlines() if "] request /v1/completions " in line]
    load = {"model": "m", "prompt": "Once upon a time", "max_tokens": 2000, "ignore_eos": True, "temperature": 0.8}
    assert sorted(sent, key=json.dumps) == sorted(
        [{**load, "stream": True}, {**load, "stream": True}, {**load, "stream": False}, {**load, "max_tokens": 8, "stream": False}],
        key=json.dumps,
    )


def test_an_engine_that_outlives_the_watch_is_killed_and_said_so(tmp_path: Path) -> None:
    port = free_port()
    ignores = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('up', flush=True)\ntime.sleep(60)\n"
    engine = Engine([sys.executable, "-c", ignores], {"PATH": "/usr/bin:/bin"}, tmp_path / "engine.log", cwd=tmp_path)
    plan = drain.DrainPlan(grace_seconds=1.5, prestop_seconds=0.2, shutdown_timeout=0.5, streamed=0, plain=0, observe_after_grace=0.2)
    said: list[str] = []
    try:
        record = drain.run(engine, f"http://127.0.0.1:{port}", "127.0.0.1", port, "m", plan, said.append)
    finally:
        engine.close()
    assert record["killed_by_preflight"] is True
    assert record["exit_s"] is None and record["returncode"] == -9
    # Nothing listened: the port was closed when first looked at.
    assert 0 <= record["port_closed_s"] < 0.5 + LATE
    assert record["sigkill_due_s"] == pytest.approx(record["pod_deleted_s"] + 1.5, abs=0.002)
    assert -0.2 - LATE <= record["pod_deleted_s"] <= -0.2 + EARLY
    assert sorted(record["requests"]) == ["after-SIGTERM", "during-preStop"]
    assert all(r["ending"] == "refused" for r in record["requests"].values())
    assert said[0] == "drain: 0 requests in flight; preStop sleep 0 s, then SIGTERM"
    assert said[1] == "drain: the engine still runs 1 s after SIGTERM; killing it"
    assert "drain: still running at the end of the watch; SIGKILL" in (tmp_path / "engine.log").read_text(encoding="utf-8")
