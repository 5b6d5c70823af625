"""The drain under load, judged against the pod's grace period, preStop and --shutdown-timeout."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from preflight.drain import in_flight, judge
from tests.preflight.runs import RUNS, report


def drain(run: Path) -> dict[str, Any]:
    starts = report(run)["starts"]
    record: dict[str, Any] = starts[-1]["drain"]
    return record


def shutdown_timeout(run: Path) -> float:
    flag = next(word for word in report(run)["rendered"]["command"] if word.startswith("--shutdown-timeout="))
    return float(flag.split("=", 1)[1])


def findings(record: dict[str, Any], clean: float | None = 4.54) -> dict[str, Any]:
    return {f.what: f for f in judge(record, clean_exit_seconds=clean)}


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_the_port_closes_at_sigterm_and_new_connections_are_refused(run: Path) -> None:
    record = drain(run)
    assert record["port_closed_s"] < 0.5
    assert record["requests"]["after-SIGTERM"]["ending"] == "refused"
    # During preStop the engine still serves: the pod's endpoint removal is what keeps clients off it.
    assert record["requests"]["during-preStop"]["ending"] == "answered"


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_in_flight_requests_are_cut_at_the_shutdown_timeout_and_none_is_answered(run: Path) -> None:
    load = in_flight(drain(run))
    assert len(load) == 64
    streams = [r for name, r in load.items() if name.startswith("stream-")]
    plain = [r for name, r in load.items() if name.startswith("plain-")]
    # Tokens flowed until the engine force-killed its core at --shutdown-timeout; none carried a finish_reason.
    timeout = shutdown_timeout(run)
    assert all(timeout - 0.5 < r["last_chunk"] < timeout + 1 and r["finish_reason"] is None for r in streams)
    assert {r["ending"] for r in streams} == {"stream cut"}
    assert {r["ending"] for r in plain} == {"dropped"}


@pytest.mark.parametrize("run", RUNS, ids=lambda run: run.name)
def test_the_api_server_outlives_the_grace_period(run: Path) -> None:
    record = drain(run)
    assert record["exit_s"] is None and record["killed_by_preflight"]
    # The kubelet's SIGKILL is due the grace period after preStop began: 25 s - 5 s.
    assert record["sigkill_due_s"] == pytest.approx(20.0, abs=0.01)


def test_the_real_drain_fails_only_on_the_grace_budget_when_vllm_cuts_at_its_shutdown_timeout() -> None:
    judged = findings(drain(RUNS[0]), clean=report(RUNS[0])["clean_exit_s"])
    # vLLM's own behaviour, bounded by the pod: the engine stopped at the timeout, the API server waited on
    # its connections until the kubelet's SIGKILL; the cut requests are for the client to retry.
    assert judged["exit"].ok is None and "SIGKILL" in judged["exit"].text
    assert judged["in-flight requests"].ok is None
    assert "0 of 64" in judged["in-flight requests"].text and "32 dropped, 32 stream cut" in judged["in-flight requests"].text
    assert "none before --shutdown-timeout 20 s" in judged["in-flight requests"].text
    assert judged["port"].ok is None
    assert judged["grace budget"].ok is False and "= 29.5 s against a grace of 25 s" in judged["grace budget"].text


def test_a_request_lost_before_the_shutdown_timeout_fails_the_drain() -> None:
    record = copy.deepcopy(drain(RUNS[0]))
    stream = next(r for name, r in in_flight(record).items() if name.startswith("stream-"))
    stream["last_chunk"] = 3.0
    judged = findings(record)
    assert judged["in-flight requests"].ok is False and "1 before --shutdown-timeout 20 s" in judged["in-flight requests"].text


def test_an_engine_still_streaming_past_its_shutdown_timeout_fails_the_exit() -> None:
    record = copy.deepcopy(drain(RUNS[0]))
    for name, request in in_flight(record).items():
        if name.startswith("stream-"):
            request["last_chunk"] = 24.0
    assert findings(record)["exit"].ok is False


def test_a_drain_that_answers_everything_and_exits_in_time_passes() -> None:
    record = copy.deepcopy(drain(RUNS[0]))
    for name, request in in_flight(record).items():
        request.update(ending="answered", finish_reason="length")
        record["requests"][name] = request
    record["exit_s"] = 6.0
    judged = findings(record, clean=None)
    assert judged["exit"].ok and judged["in-flight requests"].ok
    assert "grace budget" not in judged


def test_the_budget_holds_when_grace_covers_prestop_timeout_and_teardown() -> None:
    record = copy.deepcopy(drain(RUNS[0]))
    record["plan"]["grace_seconds"] = 30
    assert findings(record)["grace budget"].ok is True
