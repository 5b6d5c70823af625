"""The preflight of a stack of several models: each model's engine, one after the other; an embedding model is
named as not run, with why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import preflight.run
from preflight.cli import main
from preflight.prepare import prepared
from preflight.rendered import PREPARED_FILE, read_engine
from preflight.run import Options
from render.engine import stack_settings
from tests.preflight.test_rendered_rules import deployment, engine


def test_the_preparation_holds_each_generating_model_and_says_why_an_embedding_one_is_not_run() -> None:
    found = prepared(stack_settings("rag"), "rag")
    models = found["models"]
    assert list(models) == ["qwen3-5-27b-fp8", "qwen3-embedding-8b"]
    assert models["qwen3-5-27b-fp8"]["model"] == "Qwen/Qwen3.5-27B-FP8"
    assert "--model=Qwen/Qwen3.5-27B-FP8" in models["qwen3-5-27b-fp8"]["bench_client"]
    assert "Qwen/Qwen3-Embedding-8B is an embedding model" in models["qwen3-embedding-8b"]["refused"]


def test_the_engine_of_one_model_is_read_by_its_deployments_name(tmp_path: Path) -> None:
    for name in ("generator", "embedder"):
        path = tmp_path / "kubernetes" / f"ns.deployment.{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(deployment(engine(args=[f"--served-model-name={name}"]), name=name)), encoding="utf-8")
    assert read_engine(tmp_path, "embedder").served_name == "embedder"
    assert read_engine(tmp_path, "generator").deployment == "generator"


def test_each_generating_model_is_run_in_turn_with_its_own_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    models: dict[str, Any] = {
        "first": {"model": "a/first"},
        "embedder": {"refused": "an embedding model: not run"},
        "second": {"model": "b"},
    }
    (tmp_path / PREPARED_FILE).write_text(json.dumps({"stack": "rag", "models": models}), encoding="utf-8")
    runs: list[Options] = []

    def execute(options: Options) -> dict[str, Any]:
        runs.append(options)
        return {"stack": "rag", "verdict": {"ok": options.deployment == "first", "failures": [], "drain_findings": []}}

    monkeypatch.setattr(preflight.run, "execute", execute)
    monkeypatch.setattr("preflight.report.text", lambda result: "")
    # The second model failed: the exit says so.
    assert main(["rag", "--rendered", str(tmp_path), "--work", str(tmp_path / "work")]) == 1
    assert [(run.deployment, run.work) for run in runs] == [
        ("first", tmp_path / "work" / "first"),
        ("second", tmp_path / "work" / "second"),
    ]
    assert "embedder: not run: an embedding model: not run" in capsys.readouterr().out
