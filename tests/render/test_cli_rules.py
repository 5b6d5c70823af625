"""The render command's own logic on hand-made renders: what it writes and prints, in which order, and its exit codes.

The checks it runs are replaced by stand-ins here (each has its own hand-made tests); the stacks' real renders are
tested in tests/render/test_render.py.
"""

from __future__ import annotations

import importlib.util
import io
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

import pytest

import render.cli
from render.cli import _loading_step, check_render, main, run
from render.engine import Render
from render.files import write
from render.progress import Progress
from render.review import estimate_changes
from stacks.problems import StackConfigError
from tests.render.registrations import registration


def hand_made(stack: str, replicas: int = 1, cost: float = 1.5) -> Render:
    deployment = registration(
        "kubernetes:apps/v1:Deployment",
        "vllm",
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "vllm"}, "spec": {"replicas": replicas}},
    )
    return Render(stack, [deployment], outputs={"estimates": {"costPerHour": cost, "nodes": replicas}})


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each check replaced by a stand-in that records its call."""
    called: list[str] = []

    def stand_in(name: str, result: Any) -> Any:
        def check(given: Render) -> Any:
            assert isinstance(given, Render), name  # each check is given the render
            called.append(name)
            return result

        return check

    monkeypatch.setattr(render.cli, "validate_render", stand_in("validate", ["a", "b"]))
    monkeypatch.setattr(render.cli, "kubernetes_version", stand_in("version", "1.35"))
    monkeypatch.setattr(render.cli, "check_cluster", stand_in("cluster", [1, 2, 3]))
    monkeypatch.setattr(render.cli, "check_provider", stand_in("provider", 4))
    monkeypatch.setattr(render.cli, "check_lifecycle", stand_in("lifecycle", None))
    monkeypatch.setattr(render.cli, "lifecycle_text", stand_in("lifecycle text", "LIFECYCLE\n"))
    monkeypatch.setattr(render.cli, "check_refresh", stand_in("refresh", None))
    monkeypatch.setattr(render.cli, "refresh_text", stand_in("refresh text", "REFRESH\n"))
    monkeypatch.setattr(render.cli, "check_monitoring", stand_in("monitoring", 5))
    monkeypatch.setattr(render.cli, "render_stack", lambda stack: hand_made(stack, replicas=2 if stack == "prod" else 1))
    return called


def test_check_render_runs_every_check_in_order_and_reports_each(checks: list[str]) -> None:
    stream = io.StringIO()
    report = check_render(hand_made("dev"), Progress(stream, shown=True))
    steps = [part.removesuffix(" ...") for part in stream.getvalue().split("\r\x1b[K") if part]
    assert steps == [
        "validating every object against the Kubernetes schema and the vendored CRDs",
        "checking the cluster model",
        "checking GCP inputs against the provider's schema",
        "checking the stack's creation order and destroy",
        "checking what an up after `pulumi refresh` would change",
        "checking the monitoring queries",
    ]
    assert check_render(hand_made("dev")) == report  # no progress given: none shown
    assert checks[:9] == [
        "validate",
        "version",
        "cluster",
        "provider",
        "lifecycle",
        "lifecycle text",
        "refresh",
        "refresh text",
        "monitoring",
    ]
    assert report == [
        "\n2 Kubernetes objects valid (strict: Kubernetes 1.35 schema, vendored CRDs and their CEL rules)\n",
        "cluster model: 3 objects of the program and its charts; identities unique, references resolved, no GKE refusal\n",
        "provider: 4 GCP resources meet google-beta's schema checks (docs/provider.md)\n",
        "\nLIFECYCLE\n",
        "REFRESH\n",
        "monitoring: 5 PromQL queries parse and read only exported metrics; dashboard reads as the Dashboards API type\n",
    ]


def test_a_render_writes_its_folder_prints_the_plan_and_the_checks_and_keeps_the_lifecycle(
    checks: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "out"
    assert main(["dev", "--out", str(folder)]) == 0
    printed = capsys.readouterr().out
    plan = (folder / "plan.txt").read_text()
    assert printed.startswith(plan)
    assert printed.endswith(f"dashboard reads as the Dashboards API type\nwritten to {folder}\n")
    assert "\n2 Kubernetes objects valid" in printed
    assert (folder / "lifecycle.txt").read_text() == "LIFECYCLE\nREFRESH\n"
    assert (folder / "resources.json").exists()


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (
            ["--help"],
            [
                "usage: python -m render [-h] [--out OUT] stack",
                "Render a stack offline: plan, manifests, cloud inputs.",
                "the stack: Pulumi.<stack>.yaml",
                "output folder (default: build/<stack>)",
                "python -m render diff <before> <after> [--exit-code] compares two stacks or render folders;",
                "python -m render review <stack> <before> <after> writes one stack's section of the pull-request review.",
            ],
        ),
        (
            ["review", "--help"],
            [
                "usage: python -m render review [-h] [--note NOTE] [--max-lines MAX_LINES] stack before after",
                "the base's render folder",
                "a line under the heading (a new stack, a base that did not render)",
            ],
        ),
        (
            ["diff", "--help"],
            [
                "usage: python -m render diff [-h] [--exit-code] before after",
                "Diff two stacks, or two render folders.",
                "a stack name or a render folder",
                "exit 1 when they differ",
            ],
        ),
    ],
)
def test_the_commands_help_says_what_each_argument_is(argv: list[str], shown: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(argv)
    text = " ".join(capsys.readouterr().out.split())
    for part in shown:
        assert " ".join(part.split()) in text, part


def test_the_render_shows_its_steps_on_a_terminal(checks: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    stream = io.StringIO()
    monkeypatch.setattr(Progress, "on_terminal", classmethod(lambda cls: cls(stream, shown=True)))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert main(["dev", "--out", str(tmp_path / "out")]) == 0
    steps = [part.removesuffix(" ...") for part in stream.getvalue().split("\r\x1b[K") if part]
    assert steps[:3] == [
        "running the program of dev under the mock engine (loads the provider SDKs)",
        f"rendering the charts and writing {tmp_path / 'out'}",
        "comparing the names it creates with the other stacks of its project",
    ]
    assert steps[3] == "validating every object against the Kubernetes schema and the vendored CRDs"


def test_the_render_compares_the_stack_with_its_neighbours_and_reports_it_last(
    checks: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    compared: list[str] = []

    def neighbours(stack: str) -> str:
        compared.append(stack)
        return "neighbours: NONE\n"

    monkeypatch.setattr(render.cli, "check_neighbours", neighbours)
    assert main(["dev", "--out", str(tmp_path)]) == 0
    assert compared == ["dev"]
    assert capsys.readouterr().out.endswith(f"dashboard reads as the Dashboards API type\nneighbours: NONE\nwritten to {tmp_path}\n")


def test_a_stack_sharing_a_name_with_another_of_its_project_is_refused_with_exit_code_2(
    checks: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def neighbours(stack: str) -> str:
        raise StackConfigError([f"stacks {stack} and mine both create VPC network llm-serving"])

    monkeypatch.setattr(render.cli, "check_neighbours", neighbours)
    assert run(["dev", "--out", str(tmp_path)]) == 2
    assert "error: stack configuration has 1 problem:\n  - stacks dev and mine both create VPC network" in capsys.readouterr().err
    assert checks == []  # refused before the checks run


def test_the_default_folder_is_build_and_the_stack(checks: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(render.cli, "BUILD", tmp_path / "build")
    assert main(["qa"]) == 0
    assert (tmp_path / "build" / "qa" / "plan.txt").read_text().startswith("stack qa: 1 resources")


def test_the_diff_of_two_stacks_shows_estimates_classified_changes_and_files(checks: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "dev", "prod"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("estimates:\n  nodes: 1 -> 2\n\n")
    assert "--- dev/kubernetes/deployment.vllm.yaml\n+++ prod/kubernetes/deployment.vllm.yaml\n" in out
    assert out.endswith("files differ between dev and prod\n")
    assert "\nresource changes: 1 update\n" in out
    assert main(["diff", "dev", "prod", "--exit-code"]) == 1
    capsys.readouterr()
    assert main(["diff", "dev", "dev", "--exit-code"]) == 0
    same = capsys.readouterr().out
    assert same.startswith("estimates: unchanged\n\n") and same.endswith("0 files differ between dev and dev\n")


def test_a_folder_from_an_older_renderer_is_diffed_without_classifying(
    checks: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "old"
    write(hand_made("dev"), old)  # no resources.json
    assert main(["diff", str(old), "dev"]) == 0
    out = capsys.readouterr().out
    assert "resource changes: not classified (" in out and "resources.json" in out
    assert "files differ between" in out


def test_estimate_changes_names_each_changed_added_and_removed_figure(tmp_path: Path) -> None:
    before, after, empty = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    for folder in (before, after, empty):
        folder.mkdir()
    (before / "outputs.yaml").write_text("estimates:\n  cost: {perHour: 2.5}\n  gone: 1\n  same: x\n")
    (after / "outputs.yaml").write_text("estimates:\n  cost: {perHour: 3}\n  added: true\n  same: x\n")
    assert estimate_changes(before, after) == [
        "estimates:\n",
        "  added: - -> true\n",
        "  cost.perHour: 2.5 -> 3\n",
        "  gone: 1 -> -\n",
        "\n",
    ]
    assert estimate_changes(before, before) == ["estimates: unchanged\n\n"]
    assert estimate_changes(empty, empty) == ["estimates: unchanged\n\n"]
    (empty / "outputs.yaml").write_text("")
    assert estimate_changes(empty, before)[1] == "  cost.perHour: - -> 2.5\n"


def test_the_loading_step_says_how_to_save_time_when_python_writes_no_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    plain = "running the program of dev under the mock engine (loads the provider SDKs)"
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert _loading_step("dev") == plain
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(render.cli, "provider_sdks_compiled", lambda: True)
    assert _loading_step("dev") == plain
    monkeypatch.setattr(render.cli, "provider_sdks_compiled", lambda: False)
    assert _loading_step("dev") == (
        plain + "; they have no bytecode and Python writes none here: `uv sync --compile-bytecode` once saves ~10 s a render"
    )


def test_the_bytecode_check_looks_where_python_reads_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    origin = tmp_path / "pulumi_gcp" / "__init__.py"
    (origin.parent / "compute").mkdir(parents=True)
    origin.touch()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: ModuleSpec(name, None, origin=str(origin)))
    assert not render.cli.provider_sdks_compiled()
    compiled = Path(importlib.util.cache_from_source(str(origin.parent / "compute" / "_inputs.py")))
    compiled.parent.mkdir()
    compiled.touch()
    assert render.cli.provider_sdks_compiled()


def test_the_renders_own_errors_are_a_message_and_exit_code_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def refuse(argv: list[str]) -> int:
        raise StackConfigError(["Pulumi.dev.yaml: bad"])

    monkeypatch.setattr(render.cli, "main", refuse)
    assert run(["dev"]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    monkeypatch.setattr(render.cli, "main", lambda argv: 0)
    assert run(["dev"]) == 0
