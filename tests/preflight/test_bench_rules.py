"""The throughput run: the stack's client pointed here with each change's reason, and a client process run, timed out or failing.

The client is a small Python process that saves a real run's result (tests/real_runs/) where it is told.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from preflight.adapt import Adaptation
from preflight.bench import OWN, client_argv, python_launcher, ratio, run
from tests.preflight.runs import BATCH
from workloads.benchmark_summary import summarize

SAVED = BATCH / "bench" / "stack.json"
CLIENT = [
    "vllm",
    "bench",
    "serve",
    "--backend=openai",
    "--base-url=http://127.0.0.1:8000",
    "--num-prompts=300",
    "--tokenizer=org/m",
    "--ignore-eos",
]


def point(client: list[str], launcher: list[str] | None = None) -> tuple[list[str], list[Adaptation]]:
    return client_argv(
        client,
        base_url="http://127.0.0.1:8123",
        tokenizer="/w/model",
        prompts=300,
        result_dir="/w/bench",
        result_file="stack.json",
        launcher=launcher or ["/venv/bin/python", "-m", "vllm.entrypoints.cli.main"],
    )


def test_the_client_runs_through_the_launcher_with_its_own_flags_then_the_preflights() -> None:
    argv, _ = point(CLIENT)
    assert argv == [
        "/venv/bin/python",
        "-m",
        "vllm.entrypoints.cli.main",
        "bench",
        "serve",
        "--backend=openai",
        "--ignore-eos",
        "--base-url=http://127.0.0.1:8123",
        "--tokenizer=/w/model",
        "--num-prompts=300",
        "--result-dir=/w/bench",
        "--result-filename=stack.json",
    ]


def test_each_change_names_the_rendered_value_and_why_and_an_unchanged_flag_is_not_one() -> None:
    _, changes = point(CLIENT)
    assert changes == [
        Adaptation("bench --base-url", "http://127.0.0.1:8000", "http://127.0.0.1:8123", "the engine runs on this machine"),
        Adaptation("bench --tokenizer", "org/m", "/w/model", "the miniature's tokenizer (the stack's is downloaded from Hugging Face)"),
        Adaptation("bench --result-dir", None, "/w/bench", "the preflight's own folder"),
        Adaptation("bench --result-filename", None, "stack.json", "the preflight's own folder"),
    ]
    _, more = point([*CLIENT[:5], "--num-prompts=10", "--tokenizer"])
    assert [c for c in more if c.what == "bench --num-prompts"] == [
        Adaptation("bench --num-prompts", "10", "300", "a short run: minutes of one GPU, not the cluster benchmark's")
    ]
    # A flag without =value gives no rendered value, and a value holding = is kept whole.
    assert [c.rendered for c in more if c.what == "bench --tokenizer"] == [None]
    _, split = point(["vllm", "bench", "serve", "--base-url=http://h/?a=b"])
    assert split[0].rendered == "http://h/?a=b"


def test_the_preflights_flags_replace_the_stacks_in_either_form() -> None:
    argv, _ = point(["vllm", "bench", "serve", "--num-prompts=1", "--result-dir", "--seed=3", "--base-url=http://h/?a=b"])
    assert [a for a in argv if a.startswith(OWN)] == [
        "--base-url=http://127.0.0.1:8123",
        "--tokenizer=/w/model",
        "--num-prompts=300",
        "--result-dir=/w/bench",
        "--result-filename=stack.json",
    ]
    assert "--seed=3" in argv


@pytest.mark.parametrize("client", [["vllm", "serve", "m", "--port=1"], ["vllm", "bench"], ["python", "bench", "serve"]])
def test_anything_but_the_benchmark_is_refused_naming_what_it_is(client: list[str]) -> None:
    with pytest.raises(ValueError) as refused:
        point(client)
    assert str(refused.value) == f"not a `vllm bench serve` command: {' '.join(client[:3])}"


def test_vllm_runs_through_this_interpreter() -> None:
    assert python_launcher() == [sys.executable, "-m", "vllm.entrypoints.cli.main"]


@pytest.mark.parametrize(
    ("numerator", "denominator", "found"),
    [
        ({"total_token_throughput": 3.0}, {"total_token_throughput": 4.0}, 0.75),
        ({}, {"total_token_throughput": 4.0}, None),
        ({"total_token_throughput": 3.0}, {}, None),
        ({"total_token_throughput": 3.0}, None, None),
        ({"total_token_throughput": None, "x": 1}, {"total_token_throughput": 4.0}, 0.0),
        ({"output_throughput": 1.0}, {"output_throughput": 2.0, "total_token_throughput": 8.0}, 0.0),
    ],
)
def test_a_ratio_of_throughputs(numerator: dict[str, float] | None, denominator: dict[str, float] | None, found: float | None) -> None:
    assert ratio(numerator, denominator) == found


def test_a_ratio_of_another_figure() -> None:
    assert ratio({"output_throughput": 1.0}, {"output_throughput": 2.0}, "output_throughput") == 0.5


def client(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "client.py"
    script.write_text(body, encoding="utf-8")
    return [sys.executable, str(script)]


SAVING = f"""\
import os, shutil, sys
print("client of", os.environ["MARK"], flush=True)
print("to stderr", file=sys.stderr)
shutil.copyfile({str(SAVED)!r}, sys.argv[1])
sys.exit(int(sys.argv[2]))
"""


def test_a_saved_result_is_summed_by_the_projects_summary_with_the_exit_code_and_duration(tmp_path: Path) -> None:
    result, log = tmp_path / "r.json", tmp_path / "bench.log"
    argv = [*client(tmp_path, SAVING), str(result), "4"]
    summary = run(argv, env={**os.environ, "MARK": "mine"}, log=log, result=result, timeout=30)
    saved = json.loads(SAVED.read_text(encoding="utf-8"))
    assert summary == {**summarize([saved]), "returncode": 4, "duration_s": saved["duration"]}
    assert log.read_text(encoding="utf-8").splitlines() == [" ".join(argv), "client of mine", "to stderr"]


def test_a_client_that_saves_nothing_is_an_error_naming_its_exit_and_log(tmp_path: Path) -> None:
    argv = client(tmp_path, "import sys; sys.exit(3)")
    found = run(argv, env=dict(os.environ), log=tmp_path / "bench-x.log", result=tmp_path / "none.json", timeout=30)
    assert found == {"error": "the client exited 3 and saved no result (see bench-x.log)"}


def test_a_result_without_detail_is_the_summarys_error_with_the_exit_code(tmp_path: Path) -> None:
    result = tmp_path / "r.json"
    result.write_text(json.dumps({"completed": 1}), encoding="utf-8")
    found = run(client(tmp_path, "pass"), env=dict(os.environ), log=tmp_path / "l.log", result=result, timeout=30)
    assert found["returncode"] == 0 and found["error"].startswith("no per-request data (")
    assert set(found) == {"error", "returncode"}


def test_a_client_past_its_time_is_stopped(tmp_path: Path) -> None:
    # 0.1 s of a process that would sleep a minute.
    argv = client(tmp_path, "import time; time.sleep(60)")
    found = run(argv, env=dict(os.environ), log=tmp_path / "l.log", result=tmp_path / "r.json", timeout=0.1)
    assert found == {"error": "the client ran past 0 s"}
