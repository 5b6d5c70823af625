"""The chart's objects are in the render, as Helm renders them with the program's values and transforms."""

from __future__ import annotations

from pathlib import Path

import pytest

from render.chart import ChartError, chart_objects, render_chart, split_manifests
from render.cli import main
from render.engine import Registration, Render
from render.validation import validate_render
from tests.conftest import render_with, rendered

CHART = "kubernetes:helm.sh/v4:Chart"


def kinds(render: Render) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for item in chart_objects(render):
        found.setdefault(item.manifest["kind"], []).append(item.manifest["metadata"]["name"])
    return found


def by_kind(render: Render, kind: str) -> dict[str, object]:
    (only,) = [item.manifest for item in chart_objects(render) if item.manifest["kind"] == kind]
    return only


def test_the_gateway_render_holds_the_endpoint_picker_and_its_gke_objects() -> None:
    found = kinds(rendered("gateway"))
    assert found["Deployment"] == ["vllm-epp"] and found["Service"] == ["vllm-epp"]
    assert found["InferencePool"] == ["vllm"]
    assert found["HealthCheckPolicy"] == ["vllm"] and found["GCPBackendPolicy"] == ["vllm"] and found["PodMonitoring"] == ["vllm"]
    assert {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} <= set(found)


@pytest.mark.parametrize("version", ["v1.4.0", "v1.5.0"])
def test_the_programs_values_reach_the_rendered_chart(version: str) -> None:
    render = render_with("gateway", gateway={"chartVersion": version, "endpointPickerCpu": "12", "endpointPickerReplicas": 2})
    picker = by_kind(render, "Deployment")
    assert picker["spec"]["replicas"] == 2  # type: ignore[index]
    resources = picker["spec"]["template"]["spec"]["containers"][0]["resources"]  # type: ignore[index]
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == "12"
    check = by_kind(render, "HealthCheckPolicy")["spec"]["default"]["config"]["httpHealthCheck"]  # type: ignore[index]
    assert check["port"] == 8000
    pool = by_kind(render, "InferencePool")
    assert pool["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "vllm", "app.kubernetes.io/instance": "gateway"}  # type: ignore[index]
    assert validate_render(render)


def test_the_programs_transforms_reach_the_charts_objects() -> None:
    render = render_with("gateway", gateway={"backendTimeoutSeconds": 900})
    assert by_kind(render, "GCPBackendPolicy")["spec"]["default"]["timeoutSec"] == 900  # type: ignore[index]
    check = by_kind(render, "HealthCheckPolicy")["spec"]["default"]["config"]["httpHealthCheck"]  # type: ignore[index]
    assert check["portSpecification"] == "USE_FIXED_PORT" and check["port"] == 8000


def test_helms_splitter_also_splits_a_separator_glued_to_the_next_line() -> None:
    text = "a: 1\n---apiVersion: v1\nkind: ConfigMap\n---\n# only a comment\n---\nb: 2\n"
    assert split_manifests(text) == [{"a": 1}, {"apiVersion": "v1", "kind": "ConfigMap"}, {"b": 2}]


def test_a_chart_version_without_vendored_source_is_refused_naming_it() -> None:
    registration = rendered("gateway").one(CHART)
    unknown = Registration(**{**registration.__dict__, "inputs": {**registration.inputs, "version": "v9.9.9"}})
    with pytest.raises(ChartError, match=r"chart inferencepool v9\.9\.9 .* render/vendor/charts/inferencepool-v9\.9\.9/inferencepool"):
        render_chart(unknown)


def test_the_render_writes_the_charts_objects_beside_the_programs(tmp_path: Path) -> None:
    assert main(["gateway", "--out", str(tmp_path / "gateway")]) == 0
    written = {p.name for p in (tmp_path / "gateway" / "charts" / "vllm").iterdir()}
    assert "llm-serving.inferencepool.vllm.yaml" in written and "llm-serving.deployment.vllm-epp.yaml" in written
    assert "llm-serving.podmonitoring.vllm.yaml" in written


def test_a_caller_that_changes_a_charts_objects_leaves_the_next_callers_unchanged() -> None:
    render = rendered("batch")
    first = chart_objects(render)
    before = [item.manifest["metadata"].get("name") for item in first]
    for item in first:
        item.manifest["metadata"]["name"] = "changed"
        item.manifest.setdefault("spec", {})["changed"] = True
    again = chart_objects(render)
    assert [item.manifest["metadata"].get("name") for item in again] == before
    assert not any(item.manifest.get("spec", {}).get("changed") for item in again)
