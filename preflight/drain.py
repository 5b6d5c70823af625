"""The drain under load, as Kubernetes ends a pod, judged against the stack's grace period, preStop and shutdown timeout.

The pod's deletion starts the preStop hook and the grace period together; the kubelet sends SIGTERM
when preStop ends and SIGKILL when the grace period ends (kubernetes.io, "Termination of Pods").
The preflight plays that timeline against the engine with streamed and plain requests in flight,
and records when the port closed, how each request ended and when the engine exited.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from preflight.engine import Engine
from preflight.probes import completion, port_open


@dataclass(frozen=True)
class DrainPlan:
    grace_seconds: float
    prestop_seconds: float
    shutdown_timeout: float
    streamed: int = 8
    plain: int = 8
    max_tokens: int = 2000
    # How long to watch the engine after the pod's SIGKILL would have come, to see when it exits on its own.
    observe_after_grace: float = 30.0


@dataclass(frozen=True)
class Finding:
    what: str
    ok: bool | None
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "ok": self.ok, "text": self.text}


# How far from --shutdown-timeout a request may end and still count as cut by it (the clock, the stream's last buffer).
CUT_SLACK_SECONDS = 1.0


def run(engine: Engine, url: str, host: str, port: int, served: str, plan: DrainPlan, progress: Callable[[str], None]) -> dict[str, Any]:
    """Plays a pod's deletion against ``engine`` under load; times in the record are seconds from SIGTERM."""
    results: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()
    prompt = "Once upon a time"

    def send(name: str, body: dict[str, Any], path: str = "/v1/completions", timeout: float = 600.0) -> None:
        record: dict[str, Any] = {}
        with lock:
            results[name] = record
        completion(url + path, body, timeout=timeout, record=record)

    def body(stream: bool, max_tokens: int) -> dict[str, Any]:
        return {"model": served, "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": True, "temperature": 0.8, "stream": stream}

    threads = [
        threading.Thread(target=send, args=(f"{'stream' if stream else 'plain'}-{index}", body(stream, plan.max_tokens)), daemon=True)
        for stream, count in ((True, plan.streamed), (False, plan.plain))
        for index in range(count)
    ]
    for thread in threads:
        thread.start()
    # In flight: wait until every stream has sent its first tokens (the engine admitted them all).
    waited = time.monotonic()
    while time.monotonic() - waited < 120:
        with lock:
            started = sum(1 for r in results.values() if r.get("first_chunk"))
            ended = sum(1 for r in results.values() if "end" in r)
        if started >= plan.streamed or ended:
            break
        time.sleep(0.2)
    deleted = time.monotonic()
    engine.note(
        f"drain: pod deleted (preStop {plan.prestop_seconds:.0f} s, grace {plan.grace_seconds:.0f} s) with {len(threads)} requests sent"
    )
    progress(f"drain: {len(threads)} requests in flight; preStop sleep {plan.prestop_seconds:.0f} s, then SIGTERM")
    during_prestop = threading.Thread(target=send, args=("during-preStop", body(False, 8)), kwargs={"timeout": 60.0}, daemon=True)
    time.sleep(min(1.0, plan.prestop_seconds))
    during_prestop.start()
    time.sleep(max(0.0, deleted + plan.prestop_seconds - time.monotonic()))
    sigterm = time.monotonic()
    engine.send_signal()
    closed: list[float] = []

    def watch_port() -> None:
        while engine.running and not closed:
            if not port_open(host, port, timeout=0.2):
                closed.append(time.monotonic())
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=watch_port, daemon=True)
    watcher.start()
    time.sleep(1.0)
    after = threading.Thread(target=send, args=("after-SIGTERM", body(False, 8)), kwargs={"timeout": 30.0}, daemon=True)
    after.start()
    deadline = deleted + plan.grace_seconds + plan.observe_after_grace
    exited = engine.wait_exit(max(0.0, deadline - time.monotonic()))
    exit_after = None if exited is None or engine.exit_time is None else engine.exit_time - sigterm
    killed = engine.running
    if killed:
        progress(f"drain: the engine still runs {deadline - sigterm:.0f} s after SIGTERM; killing it")
        engine.note("drain: still running at the end of the watch; SIGKILL")
        engine.kill()
    for thread in [*threads, during_prestop, after]:
        thread.join(timeout=30)
    watcher.join(timeout=2)
    with lock:
        requests = {name: _relative(record, sigterm) for name, record in sorted(results.items())}
    return {
        "plan": plan.__dict__,
        "pod_deleted_s": round(deleted - sigterm, 3),
        "sigterm_s": 0.0,
        "sigkill_due_s": round(deleted + plan.grace_seconds - sigterm, 3),
        "port_closed_s": round(closed[0] - sigterm, 3) if closed else None,
        "exit_s": None if exit_after is None else round(exit_after, 3),
        "killed_by_preflight": killed,
        "returncode": engine.returncode,
        "requests": requests,
    }


def _relative(record: dict[str, Any], origin: float) -> dict[str, Any]:
    out = dict(record)
    for key in ("start", "end", "first_chunk", "last_chunk"):
        if isinstance(out.get(key), float):
            out[key] = round(out[key] - origin, 3)
    out.pop("seconds", None)
    return out


def _ended(request: dict[str, Any]) -> float:
    """When a request stopped getting anything: its last token, else its end, else never."""
    for key in ("last_chunk", "end"):
        if isinstance(request.get(key), (int, float)):
            return float(request[key])
    return float("inf")


def in_flight(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The load's requests (not the probes sent during preStop and after SIGTERM)."""
    return {name: r for name, r in record["requests"].items() if name.startswith(("stream-", "plain-"))}


def judge(record: dict[str, Any], *, clean_exit_seconds: float | None) -> list[Finding]:
    """What the drain shows against the pod's settings; ``ok`` False is a failure, None a fact to act on."""
    plan = record["plan"]
    grace, prestop, timeout = float(plan["grace_seconds"]), float(plan["prestop_seconds"]), float(plan["shutdown_timeout"])
    after_prestop = grace - prestop
    findings: list[Finding] = []
    load = in_flight(record)
    streams = [r for name, r in load.items() if name.startswith("stream-") and r.get("last_chunk") is not None]
    # vLLM stops its engine at --shutdown-timeout: a token later means the engine outlived it.
    stopped_in_time = all(float(r["last_chunk"]) <= timeout + CUT_SLACK_SECONDS for r in streams)
    exit_s = record.get("exit_s")
    if exit_s is None:
        findings.append(
            Finding(
                "exit",
                None if stopped_in_time else False,
                f"the engine had not exited {record['sigkill_due_s'] + plan['observe_after_grace']:.0f} s after SIGTERM; "
                f"the pod's grace leaves {after_prestop:.0f} s after the {prestop:.0f} s preStop, so the kubelet SIGKILLs it"
                + (
                    ": its engine stopped at --shutdown-timeout and vLLM's API server waited on open connections, which the SIGKILL bounds"
                    if stopped_in_time
                    else f": its engine was still streaming after --shutdown-timeout {timeout:.0f} s"
                ),
            )
        )
    else:
        findings.append(
            Finding(
                "exit",
                exit_s <= after_prestop,
                f"the engine exited {exit_s:.1f} s after SIGTERM; the grace leaves {after_prestop:.0f} s after preStop"
                + ("" if exit_s <= after_prestop else ": the kubelet SIGKILLs it first"),
            )
        )
    lost = {name: r for name, r in load.items() if r.get("ending") != "answered"}
    if load:
        kinds: dict[str, int] = {}
        for r in lost.values():
            key = r.get("ending", "?") + (" ([DONE] sent)" if r.get("done_marker") else "")
            kinds[key] = kinds.get(key, 0) + 1
        detail = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
        early = [r for r in lost.values() if _ended(r) < timeout - CUT_SLACK_SECONDS]
        findings.append(
            Finding(
                "in-flight requests",
                True if not lost else (False if early else None),
                f"{len(load) - len(lost)} of {len(load)} in-flight requests answered with a finish_reason"
                + (
                    f"; lost: {detail}, {len(early) or 'none'} before --shutdown-timeout {timeout:.0f} s"
                    + ("" if early else " (vLLM cuts what is left then: its client must retry them, as the batch runner does)")
                    if lost
                    else ""
                ),
            )
        )
    closed = record.get("port_closed_s")
    findings.append(
        Finding(
            "port",
            None,
            "the port stayed open until the engine exited"
            if closed is None
            else f"the port closed {closed:.2f} s after SIGTERM: new connections are refused while requests drain, "
            f"so clients stay off the pod only if its endpoint is removed within the {prestop:.0f} s preStop",
        )
    )
    if clean_exit_seconds is not None:
        need = prestop + timeout + clean_exit_seconds
        findings.append(
            Finding(
                "grace budget",
                need <= grace,
                f"preStop {prestop:.0f} s + --shutdown-timeout {timeout:.0f} s + teardown {clean_exit_seconds:.1f} s (a clean exit here) "
                f"= {need:.1f} s against a grace of {grace:.0f} s",
            )
        )
    return findings
