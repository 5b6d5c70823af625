"""``python -m preflight <stack>``: its options, what it hands the run, what it prints and its exit codes.

The render (``prepare``) and the run on a GPU (``execute``) are replaced by recorders: they are tested on
their own, and this file checks what the command line asks of them. The run's result is a real run's report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import preflight.prepare
import preflight.run
from preflight import report
from preflight.cli import DESCRIPTION, main, parser
from preflight.run import Options
from tests.preflight.runs import DEV

RESULT: dict[str, Any] = json.loads((DEV / "report.json").read_text(encoding="utf-8"))
PASSED = {**RESULT, "verdict": {"ok": True, "failures": [], "drain_findings": []}}


class Calls:
    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result
        self.prepared: list[str] = []
        self.executed: list[Options] = []

    def prepare(self, stack: str) -> Path:
        self.prepared.append(stack)
        return Path("build") / "rendered-by-prepare" / stack

    def execute(self, options: Options) -> dict[str, Any]:
        self.executed.append(options)
        return self.result


def calls(monkeypatch: pytest.MonkeyPatch, result: dict[str, Any]) -> Calls:
    found = Calls(result)
    monkeypatch.setattr(preflight.prepare, "prepare", found.prepare)
    monkeypatch.setattr(preflight.run, "execute", found.execute)
    return found


def test_the_defaults_are_the_documented_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = calls(monkeypatch, PASSED)
    assert main(["dev", "--rendered", "r"]) == 0
    assert recorded.prepared == []
    assert recorded.executed == [
        Options(
            stack="dev",
            rendered=Path("r"),
            work=Path("build/preflight/dev"),
            engine="auto",
            starts=("cold", "all-caches"),
            compare=(),
            prompts=300,
            ready_timeout=1500.0,
            first_answer_budget=10.0,
            drain=True,
            drain_requests=32,
            observe_after_grace=30.0,
            port=None,
            size="miniature",
        )
    ]


def test_each_option_reaches_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = calls(monkeypatch, PASSED)
    argv = [
        "batch",
        "--rendered=r",
        "--work=w",
        "--engine=docker",
        "--starts=cold,,compile-cache",
        "--compare=no-mtp,defaults",
        "--prompts=0",
        "--no-drain",
        "--drain-requests=4",
        "--observe-after-grace=2.5",
        "--port=9000",
        "--ready-timeout=60.5",
        "--first-answer-budget=1.5",
        "--size=full",
    ]
    assert main(argv) == 0
    assert recorded.executed == [
        Options(
            stack="batch",
            rendered=Path("r"),
            work=Path("w"),
            engine="docker",
            starts=("cold", "compile-cache"),
            compare=("no-mtp", "defaults"),
            prompts=0,
            ready_timeout=60.5,
            first_answer_budget=1.5,
            drain=False,
            drain_requests=4,
            observe_after_grace=2.5,
            port=9000,
            size="full",
        )
    ]


def test_an_engine_outside_the_choices_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        parser().parse_args(["dev", "--engine=kubectl"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert "invalid choice: 'kubectl'" in error
    assert all(choice in error for choice in ("auto", "local", "docker", "podman"))


def test_without_a_render_the_stack_is_prepared_first(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = calls(monkeypatch, PASSED)
    assert main(["dev"]) == 0
    assert recorded.prepared == ["dev"]
    assert [o.rendered for o in recorded.executed] == [Path("build/rendered-by-prepare/dev")]


@pytest.mark.parametrize("given", [[], ["--rendered", "elsewhere"]])
def test_prepare_alone_renders_says_what_to_carry_and_stops(
    given: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    recorded = calls(monkeypatch, PASSED)
    assert main(["dev", "--prepare", *given]) == 0
    assert recorded.prepared == ["dev"] and recorded.executed == []
    rendered = Path("build/rendered-by-prepare/dev")
    assert capsys.readouterr().out == (
        f"prepared {rendered}: carry it to the GPU machine and run python -m preflight dev --rendered {rendered}\n"
    )


def test_the_report_is_printed_with_where_it_was_saved(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls(monkeypatch, RESULT)
    assert main(["dev", "--rendered", "r", "--work", "w"]) == 1
    assert capsys.readouterr().out == report.text(RESULT) + f"report: {Path('w') / 'report.json'}\n"


@pytest.mark.parametrize(
    ("result", "code"),
    [
        (PASSED, 0),
        (RESULT, 1),
        ({**PASSED, "refused": "no GPU"}, 2),
        ({**RESULT, "refused": "no GPU"}, 2),
        ({**PASSED, "refused": ""}, 0),
    ],
)
def test_the_exit_code_says_passed_failed_or_could_not_run(
    result: dict[str, Any], code: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls(monkeypatch, result)
    assert main(["dev", "--rendered", "r"]) == code


def test_the_help_says_what_it_checks_and_each_exit_code(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["--help"])
    shown = capsys.readouterr().out
    assert shown.startswith("usage: python -m preflight [-h]")
    # The description keeps its lines (a raw formatter).
    assert DESCRIPTION in shown
    assert "Exits 0 when nothing failed, 1 naming each failure, 2 when it cannot run here" in DESCRIPTION
    assert "each keeps the caches its name says (cold, compile-cache, all-caches); default cold,all-caches" in " ".join(shown.split())


@pytest.mark.parametrize("engine", ["auto", "local", "docker", "podman"])
def test_each_engine_can_be_named(engine: str) -> None:
    assert parser().parse_args(["dev", f"--engine={engine}"]).engine == engine


# What each option's help says, as the help shows it (words joined by one space).
HELP = (
    "stack the stack to check (Pulumi.<stack>.yaml)",
    "--rendered RENDERED run from this render (build/<stack>) without rendering: for a GPU machine without the project's environment",
    "--prepare render the stack and write build/<stack>/preflight.json, then stop",
    "--work WORK where the miniature, logs, caches and report go (default build/preflight/<stack>)",
    "--engine {auto,local,docker,podman} auto: the stack's image when Docker or Podman is here, else the installed vLLM",
    "--size {miniature,full} miniature (default), or full: the stack's model at its real size and quantization with dummy weights "
    "(vLLM's dummy load format), its memory lines held to the render's plan; 12-14 min cold",
    "--compare COMPARE throughput variants after the stack's: no-mtp, defaults",
    "--prompts PROMPTS prompts of the throughput run (0: none)",
    "--no-drain stop the last start without load instead of the drain test",
    "--drain-requests DRAIN_REQUESTS streamed and as many plain requests in flight at SIGTERM",
    "--observe-after-grace OBSERVE_AFTER_GRACE seconds to keep watching a draining engine after its SIGKILL was due",
    "--port PORT the port the engine listens on here (default: the stack's, or a free one when that is taken)",
    "--ready-timeout READY_TIMEOUT seconds to wait for /health 200",
    "--first-answer-budget FIRST_ANSWER_BUDGET seconds after Ready within which the first completion must be answered",
)


def test_each_option_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parser().parse_args(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert [line for line in HELP if line not in shown] == []
