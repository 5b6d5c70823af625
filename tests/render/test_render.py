"""Every stack renders offline, validates against real schemas, and renders the same twice."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from facts.data_files import parse_yaml
from render.chart import chart_objects
from render.cli import main
from render.engine import PROJECT_ROOT, Render, redact, render_stack, stack_settings
from render.files import diff, is_manifest, manifests, write
from render.sdk import capture_stack_traces, captures_stack_traces
from render.validation import ManifestError, kubernetes_version, validate, validate_render
from tests.conftest import render_once, rendered


def test_every_stack_renders_with_every_resource_on_an_explicit_provider(stack: str) -> None:
    render = rendered(stack)
    providers = {r.urn for r in render.resources if r.type.startswith("pulumi:providers:")}
    cloud = [r for r in render.resources if r.custom and not r.type.startswith("pulumi:providers:")]
    assert cloud
    for registration in cloud:
        provider_urn = registration.provider.rsplit("::", 1)[0]
        assert provider_urn in providers, f"{registration.type} {registration.name} uses a default provider"


def test_every_rendered_kubernetes_object_validates_strictly(stack: str) -> None:
    render = rendered(stack)
    checks = validate_render(render)
    assert len(checks) == len(manifests(render)) + len(chart_objects(render)) > 0


def test_validation_rejects_an_unknown_field() -> None:
    with pytest.raises(ManifestError, match=r"Namespace/x: spec: .*'colour' was unexpected"):
        validate({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "spec": {"colour": "red"}}, "1.35")


def test_validation_rejects_an_unknown_field_in_a_custom_resource() -> None:
    monitoring = {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": "x"},
        "spec": {"selector": {}, "endpoints": [{"port": 8000, "interval": "30s", "pathh": "/metrics"}]},
    }
    with pytest.raises(ManifestError, match="pathh"):
        validate(monitoring, "1.35")


def test_validation_uses_the_cluster_minor_version(stack: str) -> None:
    # Judged by the stack's own setting, and on a version no committed stack uses.
    assert kubernetes_version(rendered(stack)) == stack_settings(stack).cluster.version
    older = render_once("dev", config={"llm:project": "example-project", "llm:cluster": {"version": "1.34", "deletionProtection": False}})
    assert kubernetes_version(older) == "1.34"
    assert "Kubernetes 1.34" in validate_render(older)


def test_two_renders_write_identical_files(stack: str, tmp_path: Path) -> None:
    # The worker's own render of the stack, run earlier and after other renders, and one run now.
    write(rendered(stack), tmp_path / "first")
    write(render_stack(stack), tmp_path / "second")
    assert diff(tmp_path / "first", tmp_path / "second") == []


def test_every_file_the_render_writes_reads_back_as_the_object_it_was_written_from(stack: str, tmp_path: Path) -> None:
    render = rendered(stack)
    written = [path for path in write(render, tmp_path / stack) if path.suffix == ".yaml"]
    objects = [redact(render.outputs)]
    objects += [redact(r.inputs) for r in render.resources if is_manifest(r) or r.remote or r.custom]
    objects += [redact(item.manifest) for item in chart_objects(render)]

    def canonical(documents: list[Any]) -> list[str]:
        return sorted(json.dumps(document, sort_keys=True) for document in documents)

    assert canonical([parse_yaml(path.read_text()) for path in written]) == canonical(objects)


def test_the_suites_renders_equal_those_with_the_sdks_stack_traces() -> None:
    # The suite leaves out the stack trace the SDK sends with each resource (tests/conftest.py).
    assert not captures_stack_traces()
    capture_stack_traces(True)
    try:
        assert captures_stack_traces()
        with_traces = render_stack("dev")
    finally:
        capture_stack_traces(False)

    def compared(render: Render) -> Render:
        # The SDK resolves a resource's dependencies concurrently: their order varies from render to render.
        return replace(render, resources=[replace(r, dependencies=tuple(sorted(r.dependencies))) for r in render.resources])

    assert compared(with_traces) == compared(rendered("dev"))


def test_python_m_render_runs_with_the_cyclic_collector_off_and_frozen_at_exit() -> None:
    # Half of a warm render's time with it on (docs/testing.md). Exit handlers run last-registered first:
    # this one reports after the command's own.
    code = (
        "import atexit, gc, runpy, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "sys.argv = ['render', '--help']\n"
        "try:\n    runpy.run_module('render', run_name='__main__')\n"
        "except SystemExit:\n    print('collector', 'on' if gc.isenabled() else 'off')"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert run.stdout.splitlines()[-2:] == ["collector off", "frozen True"]


def test_diff_of_two_stacks_shows_what_changes(tmp_path: Path) -> None:
    write(rendered("dev"), tmp_path / "dev")
    changed = render_stack("dev", config={"llm:project": "another-project", "llm:cluster": {"deletionProtection": False}})
    write(changed, tmp_path / "changed")
    lines = "".join(diff(tmp_path / "dev", tmp_path / "changed"))
    assert "-project: llm-serving-dev" in lines and "+project: another-project" in lines


def test_render_refuses_to_replace_a_folder_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        write(rendered("dev"), tmp_path)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_secrets_print_as_placeholders_and_never_in_plain_text(tmp_path: Path) -> None:
    token = "hf_offline_render_token_value"
    render = render_stack("dev", secrets={"hfToken": token, "apiKey": "sk-offline-api-key"})
    write(render, tmp_path)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert token not in text and "sk-offline-api-key" not in text, path


def test_the_cli_renders_the_dev_stack(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for expected in (
        "gcp:compute/network:Network",
        "gcp:compute/subnetwork:Subnetwork",
        "gcp:container/cluster:Cluster",
        "pulumi:providers:kubernetes",
    ):
        assert expected in out
    assert "Kubernetes objects valid" in out
    assert (tmp_path / "plan.txt").read_text() in out


def test_the_cli_diffs_two_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["dev", "--out", str(tmp_path / "a")])
    main(["dev", "--out", str(tmp_path / "b")])
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--exit-code"]) == 0
    assert "0 files differ" in capsys.readouterr().out


def test_diff_exit_code_fails_only_when_asked_and_something_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(rendered("dev"), tmp_path / "a")
    write(render_stack("dev", config={"llm:project": "another-project"}), tmp_path / "b")
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--exit-code"]) == 1
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    assert "files differ between" in capsys.readouterr().out
