"""The drain's judgement on hand-made records, at each boundary: the grace left after preStop, the shutdown
timeout (and the slack for a stream's last buffer), the grace budget, and each finding's words and figures."""

from __future__ import annotations

from typing import Any

import pytest

from preflight.drain import CUT_SLACK_SECONDS, Finding, in_flight, judge

# Grace 25 s, preStop 5 s, --shutdown-timeout 13 s: SIGKILL is due 20 s after SIGTERM.
PLAN = {"grace_seconds": 25, "prestop_seconds": 5.0, "shutdown_timeout": 13.0, "observe_after_grace": 30.0}
ANSWERED: dict[str, Any] = {"ending": "answered", "last_chunk": 3.0, "end": 3.1}


def record(exit_s: float | None = 10.0, port_closed_s: float | None = 0.1, requests: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"plan": PLAN, "sigkill_due_s": 20.0, "port_closed_s": port_closed_s, "exit_s": exit_s, "requests": requests or {}}


def found(rec: dict[str, Any], what: str, clean: float | None = None) -> Finding:
    [finding] = [f for f in judge(rec, clean_exit_seconds=clean) if f.what == what]
    return finding


def test_an_engine_that_exits_within_the_grace_left_after_prestop_is_ok() -> None:
    assert found(record(exit_s=20.0), "exit") == Finding(
        "exit", True, "the engine exited 20.0 s after SIGTERM; the grace leaves 20 s after preStop"
    )
    assert found(record(exit_s=20.05), "exit") == Finding(
        "exit", False, "the engine exited 20.1 s after SIGTERM; the grace leaves 20 s after preStop: the kubelet SIGKILLs it first"
    )


def test_an_engine_still_running_is_a_fact_when_it_stopped_streaming_at_its_timeout() -> None:
    rec = record(
        exit_s=None,
        requests={"stream-0": {"ending": "stream cut", "last_chunk": 13.0 + CUT_SLACK_SECONDS}, "stream-1": {"ending": "refused"}},
    )
    assert found(rec, "exit") == Finding(
        "exit",
        None,
        "the engine had not exited 50 s after SIGTERM; the pod's grace leaves 20 s after the 5 s preStop, so the kubelet SIGKILLs it: "
        "its engine stopped at --shutdown-timeout and vLLM's API server waited on open connections, which the SIGKILL bounds",
    )


def test_an_engine_still_streaming_after_its_timeout_fails() -> None:
    rec = record(
        exit_s=None,
        requests={"stream-0": {"ending": "stream cut", "last_chunk": 14.1}, "plain-0": {"ending": "dropped", "last_chunk": 40.0}},
    )
    assert found(rec, "exit") == Finding(
        "exit",
        False,
        "the engine had not exited 50 s after SIGTERM; the pod's grace leaves 20 s after the 5 s preStop, so the kubelet SIGKILLs it: "
        "its engine was still streaming after --shutdown-timeout 13 s",
    )
    # Only streams are held to the timeout: a plain request's figure is not a token.
    late_plain = record(exit_s=None, requests={"plain-0": {"ending": "dropped", "last_chunk": 40.0}})
    assert found(late_plain, "exit").ok is None


def test_every_in_flight_request_answered_is_ok() -> None:
    rec = record(requests={"stream-0": ANSWERED, "plain-0": ANSWERED, "during-preStop": {"ending": "refused"}})
    assert found(rec, "in-flight requests") == Finding(
        "in-flight requests", True, "2 of 2 in-flight requests answered with a finish_reason"
    )


def test_requests_cut_at_the_timeout_are_a_fact_to_retry_and_counted_by_how_they_ended() -> None:
    rec = record(
        requests={
            "stream-0": {"ending": "stream cut", "done_marker": True, "last_chunk": 13.0 - CUT_SLACK_SECONDS},
            "stream-1": {"ending": "stream cut", "done_marker": True, "last_chunk": 12.5},
            "plain-0": {"ending": "dropped", "end": 50.0},
            "plain-1": {"error": "?"},
            "plain-2": ANSWERED,
        }
    )
    assert found(rec, "in-flight requests") == Finding(
        "in-flight requests",
        None,
        "1 of 5 in-flight requests answered with a finish_reason; lost: 1 ?, 1 dropped, 2 stream cut ([DONE] sent), none before "
        "--shutdown-timeout 13 s (vLLM cuts what is left then: its client must retry them, as the batch runner does)",
    )


def test_a_request_lost_before_the_timeout_fails() -> None:
    rec = record(
        requests={
            "stream-0": {"ending": "stream cut", "last_chunk": 11.9},
            "plain-0": {"ending": "dropped", "end": 2.0},
            "stream-1": ANSWERED,
        }
    )
    assert found(rec, "in-flight requests") == Finding(
        "in-flight requests",
        False,
        "1 of 3 in-flight requests answered with a finish_reason; lost: 1 dropped, 1 stream cut, 2 before --shutdown-timeout 13 s",
    )


def test_no_load_no_request_finding() -> None:
    assert [f.what for f in judge(record(), clean_exit_seconds=None)] == ["exit", "port"]


@pytest.mark.parametrize(
    ("closed", "text"),
    [
        (None, "the port stayed open until the engine exited"),
        (
            0.104,
            "the port closed 0.10 s after SIGTERM: new connections are refused while requests drain, "
            "so clients stay off the pod only if its endpoint is removed within the 5 s preStop",
        ),
    ],
)
def test_the_port_is_reported_as_a_fact(closed: float | None, text: str) -> None:
    assert found(record(port_closed_s=closed), "port") == Finding("port", None, text)


def test_prestop_timeout_and_teardown_must_fit_the_grace() -> None:
    # 5 + 13 + 7 = 25 s: exactly the grace.
    assert found(record(), "grace budget", clean=7.0) == Finding(
        "grace budget", True, "preStop 5 s + --shutdown-timeout 13 s + teardown 7.0 s (a clean exit here) = 25.0 s against a grace of 25 s"
    )
    assert found(record(), "grace budget", clean=7.1).ok is False


def test_only_the_load_is_in_flight() -> None:
    rec = record(requests={"stream-0": ANSWERED, "plain-3": ANSWERED, "during-preStop": ANSWERED, "after-SIGTERM": ANSWERED})
    assert sorted(in_flight(rec)) == ["plain-3", "stream-0"]


def test_a_finding_reads_as_a_dict() -> None:
    assert Finding("port", None, "t").as_dict() == {"what": "port", "ok": None, "text": "t"}
