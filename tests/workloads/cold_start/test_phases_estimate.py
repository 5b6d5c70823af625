"""The phase parser against the estimate a real render of the dev stack outputs (a render: seconds; the hand-made
estimates are in test_phases.py, which mutation testing runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ops.cold_start import main
from render.engine import reveal
from tests.conftest import rendered
from tests.workloads.cold_start import samples
from workloads.cold_start.phases import against_expected, measure


def test_a_measured_wake_reads_against_the_stacks_own_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    estimates = reveal(rendered("dev").outputs)["estimates"]
    phases = estimates["coldStart"]["phases"]
    cold = measure(samples.events_list(samples.wake_events()), samples.COLD_LOG.splitlines())
    warm = measure(samples.events_list(samples.wake_events()), samples.WARM_LOG.splitlines())
    cold_rows = {name: (measured, expected) for name, measured, expected in against_expected(cold, estimates["coldStart"])}
    assert cold_rows["node provisioned"] == (dict(cold.phases())["node provisioned"], phases["nodeProvisioning"]["seconds"])
    assert cold_rows["compile, CUDA graphs and ready"][1] == phases["compileColdCache"]["seconds"]
    warm_rows = {name: expected for name, _, expected in against_expected(warm, estimates["coldStart"])}
    assert warm_rows["compile, CUDA graphs and ready"] == phases["compileWarmCache"]["seconds"]
    (tmp_path / "events.json").write_text(json.dumps(samples.events_list(samples.wake_events())))
    (tmp_path / "vllm.log").write_text(samples.COLD_LOG)
    (tmp_path / "estimates.json").write_text(json.dumps(estimates))
    files = ["--events", str(tmp_path / "events.json"), "--logs", str(tmp_path / "vllm.log")]
    assert main([*files, "--estimates", str(tmp_path / "estimates.json")]) == 0
    assert "against the estimate of a wake to 1 replica(s):" in capsys.readouterr().out
