"""The plan, the render folder and its diff, on hand-made renders (no stack render, no chart)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import render.files
from render.chart import ChartObject
from render.engine import Render, Secret
from render.files import changed_files, diff, flatten, plan, short, write
from tests.render.registrations import registration

SERVICE = "gcp:projects/service:Service"
COMPONENT = "llm:index:Serving"


@pytest.fixture(autouse=True)
def no_charts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(render.files, "chart_objects", lambda given: [])
    monkeypatch.setattr(render.files, "render_chart", lambda given: [])


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
        ([{"b": 1, "a": 2}], '[{"a": 2, "b": 1}]'),
        ({"channel": "REGULAR"}, "REGULAR"),
        ({"b": 1, "a": {"c": None}}, '{"a": {"c": null}, "b": 1}'),
        (["ReadOnlyMany", 2, None], "ReadOnlyMany,2,null"),
        ([], ""),
        ({}, "{}"),
        (8000, "8000"),
    ],
)
def test_a_value_is_shown_on_one_line_as_yaml_or_json_writes_it(value: Any, shown: str) -> None:
    assert short(value) == shown


def test_nested_values_flatten_to_dotted_keys_with_lists_and_empty_maps_whole() -> None:
    assert flatten({"a": {"b": {"c": 1}, "d": [1, 2]}, "e": {}, "f": "x"}) == {"a.b.c": 1, "a.d": [1, 2], "e": {}, "f": "x"}


def stack() -> Render:
    component = registration(COMPONENT, "serving", {}, custom=False)
    api = registration(SERVICE, "compute", {"service": "compute.googleapis.com"})
    deployment = registration(
        "kubernetes:apps/v1:Deployment",
        "vllm",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "vllm", "namespace": "serving"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": "vllm/vllm-openai:v1"}]}}},
        },
        parent=component.urn,
        custom_timeouts={"create": "35m"},
    )
    claim = registration(
        "kubernetes:core/v1:PersistentVolumeClaim",
        "cache",
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "cache"}, "spec": {"accessModes": ["ReadOnlyMany"]}},
        parent=component.urn,
    )
    chart = registration(
        "kubernetes:helm.sh/v4:Chart",
        "keda",
        {"chart": "keda", "version": "2.20.2", "values": {"operator": {"replicas": 1}, "token": Secret("s3cret")}},
        custom=False,
        remote=True,
    )
    provider = registration("pulumi:providers:kubernetes", "k8s", {"kubeconfig": Secret("x")})
    board = registration("gcp:monitoring/dashboard:Dashboard", "serving", {"dashboardJson": '{"b":1,"a":[2]}'})
    return Render(
        "dev",
        [component, api, deployment, claim, chart, provider, board],
        outputs={"endpoint": "http://10.0.0.2", "estimates": {"costPerHour": 1.5, "nodes": 2}, "key": Secret("k")},
        warnings=["capacity: spot may be preempted"],
    )


def test_the_plan_groups_resources_by_component_with_their_highlights_awaits_values_and_outputs() -> None:
    lines = plan(stack()).splitlines()
    assert lines[:4] == ["stack dev: 6 resources", "", "warning: capacity: spot may be preempted", ""]
    assert lines[4] == "stack"
    assert lines[5].split() == [SERVICE, "compute", "service=compute.googleapis.com"]
    assert lines[6].split() == ["kubernetes:helm.sh/v4:Chart", "keda", "chart=keda", "version=2.20.2"]
    assert lines[7:9] == ["      operator.replicas = 1", "      token = [secret]"]
    assert lines[9].split() == ["pulumi:providers:kubernetes", "k8s"] and lines[9] == lines[9].rstrip()
    assert lines[10].split() == ["gcp:monitoring/dashboard:Dashboard", "serving"]
    assert lines[11:13] == ["", f"serving ({COMPONENT})"]
    assert lines[13].split() == ["kubernetes:apps/v1:Deployment", "vllm", "replicas=2", "image=vllm/vllm-openai:v1"]
    # What is awaited is render/awaits.py's to say; the plan shows it with the resource's own timeout.
    assert lines[14].startswith("      awaits: rollout complete") and lines[14].endswith(", up to 35m")
    assert lines[15].split() == ["kubernetes:core/v1:PersistentVolumeClaim", "cache", "accessModes=ReadOnlyMany"]
    assert lines[16].startswith("      awaits: ")
    assert lines[17:] == [
        "",
        "outputs",
        "  endpoint: http://10.0.0.2",
        "  estimates:",
        "    costPerHour: 1.5",
        "    nodes: 2",
        "  key: [secret]",
    ]


def test_a_chart_resource_lists_what_it_renders(monkeypatch: pytest.MonkeyPatch) -> None:
    item = ChartObject("chart keda", "keda", {"kind": "Job", "metadata": {"name": "migrate", "namespace": "keda"}})
    monkeypatch.setattr(render.files, "render_chart", lambda given: [item])
    lines = plan(stack()).splitlines()
    (renders,) = [line for line in lines if "renders" in line]
    assert renders.startswith("      renders Job keda/migrate; awaits: completion")


def test_the_folder_holds_the_plan_the_outputs_each_manifest_chart_and_cloud_resource_and_the_dashboard(tmp_path: Path) -> None:
    folder = tmp_path / "dev"
    written = write(stack(), folder)
    names = [str(p.relative_to(folder)) for p in written]
    assert names == sorted(
        [
            "plan.txt",
            "outputs.yaml",
            "cloud/Service.compute.yaml",
            "kubernetes/serving.deployment.vllm.yaml",
            "kubernetes/persistentvolumeclaim.cache.yaml",
            "charts/keda.yaml",
            "cloud/provider-kubernetes.k8s.yaml",
            "cloud/Dashboard.serving.yaml",
            "monitoring/serving.json",
        ]
    )
    assert (folder / "plan.txt").read_text() == plan(stack())
    assert yaml.safe_load((folder / "outputs.yaml").read_text())["key"] == "[secret]"
    assert yaml.safe_load((folder / "charts" / "keda.yaml").read_text())["values"]["token"] == "[secret]"
    assert yaml.safe_load((folder / "kubernetes" / "serving.deployment.vllm.yaml").read_text())["spec"]["replicas"] == 2
    assert json.loads((folder / "monitoring" / "serving.json").read_text()) == {"b": 1, "a": [2]}
    assert (folder / "monitoring" / "serving.json").read_text().startswith('{\n  "b": 1')


def test_a_chart_object_is_written_under_its_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    item = ChartObject("chart keda", "keda", {"kind": "Job", "metadata": {"name": "migrate", "namespace": "keda"}, "x": Secret(1)})
    monkeypatch.setattr(
        render.files, "chart_objects", lambda given: [item, ChartObject("c", "keda", {"kind": "Role", "metadata": {"name": "r"}})]
    )
    folder = tmp_path / "dev"
    write(stack(), folder)
    assert yaml.safe_load((folder / "charts" / "keda" / "keda.job.migrate.yaml").read_text())["x"] == "[secret]"
    assert (folder / "charts" / "keda" / "role.r.yaml").exists()
    monkeypatch.setattr(render.files, "chart_objects", lambda given: [item, item])
    with pytest.raises(ValueError, match=r"^two objects of chart keda render to .*charts/keda/keda\.job\.migrate\.yaml$"):
        write(stack(), folder)


def test_a_render_folder_is_replaced_whole_and_another_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dev"
    write(stack(), folder)
    (folder / "kubernetes" / "stale.yaml").write_text("old")
    write(stack(), folder)
    assert not (folder / "kubernetes" / "stale.yaml").exists()
    other = tmp_path / "src"
    other.mkdir()
    (other / "main.py").write_text("x")
    with pytest.raises(FileExistsError, match=r"src exists and is not a render folder; choose another --out$"):
        write(stack(), other)
    assert (other / "main.py").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    write(stack(), empty)
    assert (empty / "plan.txt").exists()


def test_two_resources_writing_one_file_are_refused(tmp_path: Path) -> None:
    twice = stack()
    twice.resources.append(registration(SERVICE, "compute", {"service": "other"}, stack="prod::llm-serving"))
    with pytest.raises(ValueError, match=r"^two resources render to .*cloud/Service\.compute\.yaml$"):
        write(twice, tmp_path / "dev")


def test_the_diff_of_two_folders_names_each_changed_added_and_removed_file(tmp_path: Path) -> None:
    before, after = tmp_path / "a", tmp_path / "b"
    for folder, files in (
        (before, {"same.txt": "x\n", "changed.txt": "1\n", "gone.txt": "g\n"}),
        (after, {"same.txt": "x\n", "changed.txt": "2\n", "new.txt": "n\n"}),
    ):
        (folder / "sub").mkdir(parents=True)
        for name, text in files.items():
            (folder / "sub" / name).write_text(text)
        (folder / "resources.json").write_text(folder.name)
    lines = diff(before, after, ("old", "new"))
    assert [line for line in lines if line.startswith(("---", "+++"))] == [
        "--- old/sub/changed.txt\n",
        "+++ new/sub/changed.txt\n",
        "--- old/sub/gone.txt\n",
        "+++ /dev/null\n",
        "--- /dev/null\n",
        "+++ new/sub/new.txt\n",
    ]
    assert changed_files(lines) == 3
    assert diff(before, before) == []
    assert diff(before, after)[0] == f"--- {before}/sub/changed.txt\n"
