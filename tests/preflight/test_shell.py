"""The preflight's command end to end on a machine without a GPU: a stand-in engine (fake_vllm.py), the real render.

It proves the shell's plumbing (starts, requests, metrics, the benchmark client, the drain, the report and
the exit code); what an engine does is proved by the real runs (tests/real_runs/).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from preflight.cli import parser
from preflight.miniature import config_digest, find_source, miniature_config
from tests.preflight.runs import DEV

# Real processes over seconds: run after the README's test command (pyproject.toml, .ci/run).
pytestmark = pytest.mark.timeline

PROJECT = Path(__file__).resolve().parent.parent.parent
SHIM = 'from tests.preflight.fake_vllm import main\n\nif __name__ == "__main__":\n    main()\n'
FAKE_TORCH = (
    "import types\n"
    "cuda = types.SimpleNamespace(device_count=lambda: 1, get_device_capability=lambda i: (9, 0), get_device_name=lambda i: 'stand-in',\n"
    "    get_device_properties=lambda i: types.SimpleNamespace(total_memory=80 * 2**30))\n"
    "version = types.SimpleNamespace(cuda='13.0')\n"
)


def stand_in(site: Path, release: str = "0.26.0") -> None:
    """A ``vllm`` of ``release`` and a ``torch`` with one Hopper GPU, importable from ``site``."""
    cli = site / "vllm" / "entrypoints" / "cli"
    cli.mkdir(parents=True)
    for folder in (site / "vllm", site / "vllm" / "entrypoints", cli):
        (folder / "__init__.py").write_text("")
    (cli / "main.py").write_text(SHIM)
    (site / f"vllm-{release}.dist-info").mkdir()
    (site / f"vllm-{release}.dist-info" / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {release}\n")
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(FAKE_TORCH)


def miniature_in_place(work: Path) -> None:
    """The miniature as an earlier run left it, so no torch is needed to build one."""
    model = work / "model"
    model.mkdir(parents=True)
    (model / "model.safetensors").write_text("")
    digest = config_digest(miniature_config(find_source("Qwen/Qwen3.5-27B-FP8", {}).config))
    (model / "preflight-miniature.json").write_text(json.dumps({"digest": digest, "model": "Qwen/Qwen3.5-27B-FP8"}))


def short_drain(tmp_path: Path) -> Path:
    """The dev stack's render with its preStop sleep and grace period 3 s shorter (2 s and 22 s): the drain
    plays the preStop in real time, and the grace still falls short of preStop, shutdown timeout and teardown."""
    rendered = tmp_path / "rendered"
    shutil.copytree(DEV / "rendered", rendered)
    deployment = rendered / "kubernetes" / "llm-serving.deployment.vllm.yaml"
    text = deployment.read_text(encoding="utf-8")
    for old, new in (
        ("preStop:\n            sleep:\n              seconds: 5\n", "preStop:\n            sleep:\n              seconds: 2\n"),
        ("terminationGracePeriodSeconds: 25\n", "terminationGracePeriodSeconds: 22\n"),
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    deployment.write_text(text, encoding="utf-8")
    return rendered


def preflight(
    tmp_path: Path, *args: str, release: str = "0.26.0", rendered: Path = DEV / "rendered"
) -> tuple[subprocess.CompletedProcess[str], Path]:
    site, work = tmp_path / "site", tmp_path / "work"
    stand_in(site, release)
    miniature_in_place(work)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(PROJECT)]),
        # The stand-in's shutdown timeout, 20 s in the render, is 0.5 s: it exits 1 s after SIGTERM.
        "FAKE_VLLM_TIME_SCALE": "0.025",
        "HF_HOME": str(tmp_path / "hf"),
    }
    # A port of its own: the stack's 8000 may be held by another run on this machine between the check and the bind.
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        port = str(spare.getsockname()[1])
    argv = [sys.executable, "-m", "preflight", "dev", "--rendered", str(rendered), "--work", str(work), "--engine", "local"]
    argv += ["--port", port, *args]
    done = subprocess.run(argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    return done, work


def test_help_says_what_it_runs_and_how_it_exits() -> None:
    text = parser().format_help()
    assert "exact vLLM command line" in text and "Exits 0 when nothing failed, 1 naming each failure, 2 when it cannot run here" in text
    assert "--rendered" in text and "--compare" in text


def test_a_release_the_facts_do_not_cover_is_refused_with_exit_2(tmp_path: Path) -> None:
    done, work = preflight(tmp_path, release="0.25.0")
    assert done.returncode == 2, done.stderr
    assert "vLLM 0.25.0" in done.stdout and "0.18.1, 0.26.0, 0.33.0" in done.stdout
    assert json.loads((work / "report.json").read_text())["refused"].startswith("vLLM 0.25.0")


@pytest.mark.long
def test_a_full_run_reports_every_section_and_exits_1_naming_the_drain(tmp_path: Path) -> None:
    done, work = preflight(
        tmp_path,
        *("--starts", "cold,all-caches", "--prompts", "5", "--drain-requests", "2", "--observe-after-grace", "1"),
        rendered=short_drain(tmp_path),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "waiting" in done.stderr or "/health 200" in done.stderr
    result = json.loads((work / "report.json").read_text())
    assert [s["name"] for s in result["starts"]] == ["1-cold", "2-all-caches"]
    assert all(s["metrics"]["ok"] for s in result["starts"])
    assert result["starts"][1]["throughput"]["completed"] == 5
    assert {a["what"] for a in result["adaptations"]} >= {
        "--data-parallel-size",
        "model",
        "--gdn-prefill-backend",
        "env VLLM_CACHE_ROOT",
        "--port",
    }
    assert result["caches"]["compile cache:torch_compile_cache/abc"]["2-all-caches"] == "reused"
    assert [f["what"] for f in result["verdict"]["failures"]] == ["drain: in-flight requests", "drain: grace budget"]
    assert "FAILED (2):" in done.stdout and (work / "report.txt").read_text() in done.stdout
