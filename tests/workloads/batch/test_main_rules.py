"""``python -m workloads.batch run`` in-process: its settings from the pod's environment, SIGTERM, the poll loop, the command line.

The runner's own work (``run_waiting``) is recorded here, not run: what it does is the runner's tests' business.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import signal
import socket
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import google.cloud.storage as storage
import pytest

from workloads.batch import __main__ as entry
from workloads.batch import layout
from workloads.batch.metrics import Progress
from workloads.batch.report import Reservation
from workloads.batch.runner import ModelRoute, RunnerSettings

REQUIRED = {
    layout.ENV_BUCKET: "the-bucket",
    layout.ENV_SERVING_URL: "http://vllm.llm-serving.svc:8000/v1",
    layout.ENV_CONCURRENCY_PER_REPLICA: "64",
}


def test_each_setting_comes_from_its_variable() -> None:
    expected = {"phases": {"weights": {"seconds": 12.5}}}
    settings = entry.settings_from_env(
        {
            **REQUIRED,
            layout.ENV_SERVED_MODEL: "Qwen/Qwen3.5-27B-FP8",
            layout.ENV_MODEL_TASK: "embed",
            layout.ENV_API_KEY: "sk-test",
            layout.ENV_WORKERS: "6",
            layout.ENV_PRICE_PER_REPLICA_HOUR: "88.93",
            layout.ENV_ESTIMATED_USD_PER_MILLION_TOKENS: "0.41",
            layout.ENV_EXPECTED_COLD_START: json.dumps(expected),
            layout.ENV_IDLE_TAIL_SECONDS: "330",
            layout.ENV_DRAIN_SECONDS: "25.5",
            layout.ENV_COMMITTED_USD_PER_HOUR: "1067.16",
            layout.ENV_RESERVATION_HOLDS_EVERY_REPLICA: "true",
        }
    )
    defaults = RunnerSettings("b", "u", 1)
    assert replace(settings, runner_id=defaults.runner_id) == replace(
        defaults,
        bucket="the-bucket",
        serving_url="http://vllm.llm-serving.svc:8000/v1",
        concurrency_per_replica=64,
        served_model="Qwen/Qwen3.5-27B-FP8",
        task="embed",
        api_key="sk-test",
        workers=6,
        price_per_replica_hour=88.93,
        estimated_usd_per_million_tokens=0.41,
        expected_cold_start=expected,
        idle_tail_seconds=330.0,
        drain_seconds=25.5,
        reservation=Reservation(1067.16, holds_every_replica=True),
    )


def test_several_models_come_from_their_table_and_need_no_one_model_variable() -> None:
    table = [
        {"name": "chat", "url": "http://chat:8000/v1", "task": "generate", "deployment": "chat", "requestsPerReplica": 2000},
        {
            "name": "embed",
            "url": "http://embed:8000/v1",
            "task": "embed",
            "deployment": "embed",
            "requestsPerReplica": 500,
            "expectedColdStart": {"phases": {}},
        },
    ]
    settings = entry.settings_from_env({layout.ENV_BUCKET: "the-bucket", layout.ENV_MODELS: json.dumps(table)})
    assert settings.models == (
        ModelRoute("chat", "http://chat:8000/v1", "generate", "chat", 2000),
        ModelRoute("embed", "http://embed:8000/v1", "embed", "embed", 500, {"phases": {}}),
    )
    assert settings.tasks() == {"chat": "generate", "embed": "embed"}


@pytest.mark.parametrize("blank", [False, True], ids=["unset", "empty"])
def test_an_optional_variable_unset_or_empty_takes_the_default(blank: bool) -> None:
    optional = (
        layout.ENV_SERVED_MODEL,
        layout.ENV_MODEL_TASK,
        layout.ENV_API_KEY,
        layout.ENV_WORKERS,
        layout.ENV_PRICE_PER_REPLICA_HOUR,
        layout.ENV_ESTIMATED_USD_PER_MILLION_TOKENS,
        layout.ENV_EXPECTED_COLD_START,
        layout.ENV_IDLE_TAIL_SECONDS,
        layout.ENV_DRAIN_SECONDS,
        layout.ENV_COMMITTED_USD_PER_HOUR,
        layout.ENV_RESERVATION_HOLDS_EVERY_REPLICA,
    )
    settings = entry.settings_from_env(REQUIRED | (dict.fromkeys(optional, "") if blank else {}))
    assert (settings.served_model, settings.task, settings.api_key, settings.workers) == (None, "generate", None, 1)
    assert (settings.price_per_replica_hour, settings.estimated_usd_per_million_tokens, settings.expected_cold_start) == (None, None, None)
    assert (settings.idle_tail_seconds, settings.drain_seconds, settings.reservation) == (0.0, 50.0, None)


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({}, f"{layout.ENV_BUCKET}, {layout.ENV_SERVING_URL}, {layout.ENV_CONCURRENCY_PER_REPLICA}"),
        ({**REQUIRED, layout.ENV_SERVING_URL: ""}, layout.ENV_SERVING_URL),
        ({layout.ENV_SERVING_URL: "u"}, f"{layout.ENV_BUCKET}, {layout.ENV_CONCURRENCY_PER_REPLICA}"),
    ],
    ids=["none", "one-empty", "two"],
)
def test_a_missing_or_empty_required_variable_is_named(given: dict[str, str], named: str) -> None:
    with pytest.raises(SystemExit) as refusal:
        entry.settings_from_env(given)
    assert str(refusal.value) == f"batch run: set {named} in the runner's environment"


@pytest.fixture
def sigterm() -> Iterator[None]:
    """The test process's own SIGTERM handler, put back after the test."""
    before = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, before)


def test_sigterm_marks_the_drain_and_says_so(sigterm: None, caplog: pytest.LogCaptureFixture) -> None:
    progress = Progress()
    entry.drain_on_sigterm(progress)
    assert progress.draining.value == 0
    with caplog.at_level(logging.INFO, logger="batch"):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)  # the handler runs in the main thread at its next bytecode
    assert progress.draining.value == 1
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("batch", logging.INFO, "SIGTERM: finishing the parts in flight, then handing the claim back")
    ]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Pod:
    """What the runner's pod gives ``run``, and what ``run`` did with it."""

    port: int
    deployments: list[tuple[str, str]] = field(default_factory=list)
    # Per call of run_waiting: the settings, the waiting count exported then, the scraped metrics, when.
    calls: list[tuple[RunnerSettings, int, str, float]] = field(default_factory=list)
    # What the n-th call does to the drain flag (by index), e.g. {1: "drain"}.
    after: dict[int, str] = field(default_factory=dict)


@pytest.fixture
def pod(emulator: str, sigterm: None, monkeypatch: pytest.MonkeyPatch) -> Pod:
    port = _free_port()
    state = Pod(port)
    bucket = storage.Client().create_bucket(f"main-{port}-{time.time_ns()}")
    for name in ("one", "two", "three"):
        bucket.blob(f"{layout.INPUT}{name}.jsonl").upload_from_string(b"{}\n")
    bucket.blob(f"{layout.CLAIMS}two.jsonl/1").upload_from_string(b"{}")  # not this one's generation: still counted
    env = {**REQUIRED, layout.ENV_BUCKET: bucket.name, layout.ENV_NAMESPACE: "llm-serving", layout.ENV_REPLICAS_DEPLOYMENT: "vllm"}
    for name, value in (env | {layout.ENV_METRICS_PORT: str(port)}).items():
        monkeypatch.setenv(name, value)

    class Api:
        @classmethod
        def in_cluster(cls, namespace: str, name: str) -> Any:
            state.deployments.append((namespace, name))
            return "the deployment"

    def run_waiting(settings: RunnerSettings, client: storage.Client, deployment: Any, progress: Progress) -> list[str]:
        assert isinstance(client, storage.Client) and deployment == "the deployment"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            metrics = response.read().decode()
        state.calls.append((settings, progress.waiting_files.value, metrics, time.monotonic()))
        if state.after.get(len(state.calls)) == "drain":
            os.kill(os.getpid(), signal.SIGTERM)
        return []

    original = entry.settings_from_env
    monkeypatch.setattr(entry, "settings_from_env", lambda environ: replace(original(environ), poll_seconds=0.3))
    monkeypatch.setattr(entry, "DeploymentApi", Api)
    monkeypatch.setattr(entry, "run_waiting", run_waiting)
    return state


def test_run_once_reads_the_pods_settings_exports_the_waiting_count_and_runs_what_waits(pod: Pod) -> None:
    entry.run(once=True)
    assert pod.deployments == [("llm-serving", "vllm")]
    ((settings, waiting, metrics, _),) = pod.calls
    assert settings.bucket == os.environ[layout.ENV_BUCKET] and settings.concurrency_per_replica == 64
    assert waiting == 3
    assert f"{layout.WAITING_FILES} 3.0" in metrics.splitlines()
    # SIGTERM is the drain's, not the default's (which would end this test's process).
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN)


def test_run_looks_again_after_each_poll_until_sigterm(pod: Pod) -> None:
    pod.after = {3: "drain"}
    entry.run(once=False)
    times = [at for *_, at in pod.calls]
    assert len(times) == 3
    assert all(later - earlier >= 0.3 for earlier, later in itertools.pairwise(times))


def test_sigterm_during_the_poll_ends_the_wait(pod: Pod) -> None:
    # Poll for a minute: a wait SIGTERM did not end would run it out.
    original = entry.settings_from_env
    entry.settings_from_env = lambda environ: replace(original(environ), poll_seconds=60.0)
    pod.after = {1: "drain"}
    started = time.monotonic()
    entry.run(once=False)
    assert len(pod.calls) == 1
    assert time.monotonic() - started < 30


def test_the_metrics_port_defaults_to_the_layouts(pod: Pod, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(layout.ENV_METRICS_PORT)
    monkeypatch.setattr(layout, "METRICS_PORT", pod.port)
    entry.run(once=True)
    assert len(pod.calls) == 1


@pytest.mark.parametrize(("argv", "once"), [(["run", "--once"], True), (["run"], False)])
def test_the_command_runs_once_or_on(argv: list[str], once: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    runs: list[bool] = []
    monkeypatch.setattr(entry, "run", runs.append)
    # A root logger without handlers, as in the pod (pytest's own and its level come back after the test).
    monkeypatch.setattr(logging.root, "handlers", [])
    monkeypatch.setattr(logging.root, "level", logging.WARNING)
    entry.main(argv)
    assert runs == [once]
    # Timestamped INFO lines: the pod's log is how an operator follows a batch.
    (handler,) = logging.root.handlers
    assert logging.root.level == logging.INFO
    assert handler.formatter is not None and handler.formatter._fmt == "%(asctime)s %(levelname)s %(name)s: %(message)s"


def test_the_command_needs_run_and_says_what_it_does(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(entry, "run", lambda once: pytest.fail("ran"))
    with pytest.raises(SystemExit) as refused:
        entry.main([])
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m workloads.batch ")
    assert err.endswith("error: the following arguments are required: command\n")
    with pytest.raises(SystemExit):
        entry.main(["--help"])
    assert " run run waiting batches (in the cluster; settings from the environment) " in " ".join(capsys.readouterr().out.split()) + " "
    with pytest.raises(SystemExit):
        entry.main(["run", "--help"])
    assert " --once run what is waiting, then exit " in " ".join(capsys.readouterr().out.split()) + " "
