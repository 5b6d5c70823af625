"""``python -m ops.cold_start``: saved kubectl output in, the breakdown out, beside a hand-written estimate.

The events and logs are the samples of tests/workloads/cold_start/samples.py (Kubernetes' and vLLM 0.26.0's
own formats); what the command prints is held to the parser's own breakdown and to the figures written here.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from ops.cold_start import main
from tests.conftest import rendered
from tests.workloads.cold_start import samples
from workloads.cold_start.phases import against_expected, measure

# What `pulumi stack output estimates --json` holds of a wake to 3 replicas, with every phase's figure.
ESTIMATES = {
    "coldStart": {
        "replicas": 3,
        "phases": {
            "nodeProvisioning": {"seconds": 330},
            "image": {"seconds": 30},
            "weights": {"seconds": 34},
            "compileColdCache": {"seconds": 600},
            "compileWarmCache": {"seconds": 111},
            "firstAnswerColdKernels": {"seconds": 212},
        },
    }
}
# Another Deployment's pod that started a day later: the command measures the replicas' own.
OTHER_POD = "benchmark-6c8d7f9b4-q7w2e"


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    events = samples.events_list(samples.wake_events(), samples.wake_events(OTHER_POD, day="2026-11-24"))
    (tmp_path / "events.json").write_text(json.dumps(events))
    (tmp_path / "vllm.log").write_text(samples.COLD_LOG)
    return ["--events", str(tmp_path / "events.json"), "--logs", str(tmp_path / "vllm.log")]


def breakdown() -> str:
    return measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines()).table()


def test_the_breakdown_of_the_replicas_pod_that_started_last_is_printed(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(files) == 0
    assert capsys.readouterr().out == breakdown()
    assert main([*files, "--pod", samples.POD]) == 0
    assert capsys.readouterr().out == breakdown()


def test_the_log_may_come_on_standard_input(files: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(samples.COLD_LOG))
    assert main([*files[:2], "--logs", "-"]) == 0
    assert capsys.readouterr().out == breakdown()


def test_the_breakdown_as_json(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*files, "--json"]) == 0
    out = capsys.readouterr().out
    expected = measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines()).as_output()
    assert json.loads(out) == expected
    # Indented for a reader, one key a line.
    assert out.startswith('{\n  "pod": ')


def test_a_pod_without_a_cold_start_is_refused_on_standard_error(files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*files, "--pod", "vllm-none"]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err.startswith("cold start: no event of pod vllm-none")


def test_each_phase_is_printed_beside_its_estimate(tmp_path: Path, files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "estimates.json").write_text(json.dumps(ESTIMATES))
    assert main([*files, "--estimates", str(tmp_path / "estimates.json")]) == 0
    out = capsys.readouterr().out
    assert out.startswith(breakdown())
    lines = out.removeprefix(breakdown()).splitlines()
    assert lines[0] == "against the estimate of a wake to 3 replica(s):"
    measured = {
        name: value
        for name, value, _ in against_expected(
            measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines()), ESTIMATES["coldStart"]
        )
    }
    expected = {
        "node provisioned": 330,
        "image pulled or streamed": 30,
        "weights loaded": 34,
        "compile, CUDA graphs and ready": 600,
        "first answer": 212,
    }
    rows = {}
    for line in lines[1:]:
        # Two spaces, the phase in 32 columns, then each figure right-aligned in 10.
        match = re.fullmatch(r"  (.{32}) (.{10}) measured  (.{10}) expected", line)
        assert match, line
        rows[match[1].rstrip()] = (match[2].strip(), match[3].strip())
    assert rows == {
        name: ("-" if measured[name] is None else f"{measured[name]:.0f} s", f"{seconds} s") for name, seconds in expected.items()
    }


def test_an_estimate_without_a_cold_start_prints_no_figures(tmp_path: Path, files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "estimates.json").write_text(json.dumps({"coldStart": None}))
    assert main([*files, "--estimates", str(tmp_path / "estimates.json")]) == 0
    lines = capsys.readouterr().out.removeprefix(breakdown()).splitlines()
    assert lines[0] == "against the estimate of a wake to ? replica(s):"
    assert len(lines) == 6 and all(line.endswith("          - expected") for line in lines[1:])


def test_the_command_says_what_it_does_and_what_each_option_is(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--help"])
    assert stopped.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert shown.startswith(
        "usage: python -m ops.cold_start [-h] --events EVENTS --logs LOGS [--pod POD] [--model MODEL] [--estimates ESTIMATES] [--json]"
    )
    assert "[--json] A replica's last cold start, phase by phase. options:" in shown
    assert "--events EVENTS output of `kubectl get events -o json` in the stack's namespace" in shown
    assert "--logs LOGS output of `kubectl logs --timestamps <pod>` ('-' reads stdin)" in shown
    assert "--pod POD the pod (default: the vllm-... pod that started last)" in shown
    assert "--estimates ESTIMATES output of `pulumi stack output estimates --json`: print the expected figures beside" in shown
    assert "--json print the breakdown as JSON" in shown


def test_both_saved_outputs_are_required(capsys: pytest.CaptureFixture[str]) -> None:
    for missing in (["--logs", "vllm.log"], ["--events", "events.json"]):
        with pytest.raises(SystemExit) as stopped:
            main(missing)
        assert stopped.value.code == 2
    assert "--events" in capsys.readouterr().err


def model_events(name: str, day: str) -> list[dict[str, Any]]:
    """A wake's events of a model's replica set in a stack of several: its pods and container carry the set's name."""
    text = json.dumps(samples.wake_events(day=day)).replace("spec.containers{vllm}", f"spec.containers{{{name}}}")
    found: list[dict[str, Any]] = json.loads(text.replace(samples.POD, samples.POD.replace("vllm", name, 1)))
    return found


@pytest.fixture
def rag_files(tmp_path: Path) -> list[str]:
    """The rag stack's estimates, and the events of both its models' wakes: the generator's the later."""
    generator, embedder = rendered("rag").outputs["estimates"]
    events = samples.events_list(model_events(embedder, "2026-11-23"), model_events(generator, "2026-11-24"))
    (tmp_path / "events.json").write_text(json.dumps(events))
    (tmp_path / "vllm.log").write_text(samples.COLD_LOG)
    (tmp_path / "estimates.json").write_text(json.dumps(rendered("rag").outputs["estimates"]))
    return ["--events", str(tmp_path / "events.json"), "--logs", str(tmp_path / "vllm.log")]


def test_with_several_models_the_model_names_the_pod_and_its_own_estimate(rag_files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    estimates = rendered("rag").outputs["estimates"]
    _, embedder = estimates
    assert main([*rag_files, "--model", embedder, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pod"] == samples.POD.replace("vllm", embedder, 1)
    path = str(Path(rag_files[1]).parent / "estimates.json")
    assert main([*rag_files, "--model", embedder, "--estimates", path]) == 0
    replicas = estimates[embedder]["coldStart"]["replicas"]
    assert f"against the estimate of a wake to {replicas} replica(s):" in capsys.readouterr().out


def test_with_several_models_and_none_named_the_command_lists_them(rag_files: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    names = ", ".join(rendered("rag").outputs["estimates"])
    path = str(Path(rag_files[1]).parent / "estimates.json")
    assert main([*rag_files, "--estimates", path]) == 2
    assert f"the stack serves several models ({names}): name one with --model" in capsys.readouterr().err
    assert main([*rag_files, "--estimates", path, "--model", "vllm"]) == 2
    assert f"no model vllm in the estimates; the stack's models: {names}" in capsys.readouterr().err
    # Without the estimates, the default vllm matches no pod: the replica sets that started one are named.
    assert main(rag_files) == 2
    err = capsys.readouterr().err
    assert err.startswith("cold start: no Started event of a pod named vllm-...")
    assert f"replica sets started in the events: {names}" in err
