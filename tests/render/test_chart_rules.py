"""How a chart resource becomes objects, on hand-made charts: Helm's rendering, namespaces, transforms (no stack render)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import pytest

import render.chart
from render.chart import (
    CHART_TYPE,
    ChartError,
    ChartObject,
    chart_folder,
    chart_name,
    chart_objects,
    describe,
    render_chart,
    split_manifests,
)
from render.engine import Registration, Render

# Kinds the Kubernetes API serves without a namespace (`kubectl api-resources --namespaced=false`,
# https://kubernetes.io/docs/reference/kubernetes-api/), and GKE's ComputeClass (cluster-scoped CRD,
# https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes).
CLUSTER_KINDS = (
    ("storage.k8s.io/v1", "StorageClass"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("v1", "Namespace"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("apiregistration.k8s.io/v1", "APIService"),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
    ("snapshot.storage.k8s.io/v1", "VolumeSnapshotClass"),
    ("cloud.google.com/v1", "ComputeClass"),
)


def registration(resource: str = "picker", **inputs: Any) -> Registration:
    return Registration(
        urn=f"urn:pulumi:dev::llm::{CHART_TYPE}::{resource}",
        type=CHART_TYPE,
        name=resource,
        custom=False,
        remote=True,
        inputs=inputs,
        parent="",
        provider="",
        dependencies=(),
        custom_timeouts={},
        protect=False,
        retain_on_delete=False,
        ignore_changes=(),
        replace_on_changes=(),
        delete_before_replace=False,
    )


@pytest.fixture
def charts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vendored-charts folder holding chart ``demo`` 1.0.0: a few namespaced objects and one of each cluster-scoped kind."""
    chart = tmp_path / "demo-1.0.0" / "demo"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: demo\nversion: 1.0.0\n")
    (chart / "values.yaml").write_text("replicas: 1\n")
    (chart / "templates" / "NOTES.txt").write_text("kind: ConfigMap\nmetadata:\n  name: notes\n")
    (chart / "templates" / "b-workload.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}-app\n"
        "spec:\n  replicas: {{ .Values.replicas }}\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: other\n"
    )
    (chart / "templates" / "c-release.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: release\ndata:\n  namespace: '{{ .Release.Namespace }}'\n"
    )
    cluster = "\n---\n".join(f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {kind.lower()}" for api, kind in CLUSTER_KINDS)
    (chart / "templates" / "a-cluster.yaml").write_text(cluster + "\n")
    monkeypatch.setattr(render.chart, "CHARTS", tmp_path)
    return tmp_path


def by_name(objects: list[ChartObject]) -> dict[str, dict[str, Any]]:
    return {item.manifest["metadata"]["name"]: item.manifest for item in objects}


def test_a_charts_name_is_the_last_part_of_its_reference() -> None:
    assert chart_name(registration(chart="oci://registry.k8s.io/gateway-api-inference-extension/charts/inferencepool")) == "inferencepool"
    assert chart_name(registration(chart="oci://example.com/charts/keda/")) == "keda"
    assert chart_name(registration(chart="keda")) == "keda"


def test_a_chart_is_described_by_its_release_chart_and_version() -> None:
    assert describe(registration("kedaChart", chart="keda", version="2.20.2", name="keda")) == "chart keda (keda 2.20.2)"
    assert describe(registration("kedaChart", chart="keda", version="2.20.2")) == "chart kedaChart (keda 2.20.2)"
    assert describe(registration("kedaChart", chart="keda")) == "chart kedaChart (keda )"


def test_a_chart_without_vendored_source_is_refused_naming_chart_version_and_resource(charts: Path) -> None:
    assert chart_folder(registration(chart="demo", version="1.0.0")) == charts / "demo-1.0.0" / "demo"
    with pytest.raises(ChartError, match=r"^chart demo 2\.0\.0 of resource picker is not vendored: .*demo-2\.0\.0/demo "):
        chart_folder(registration(chart="demo", version="2.0.0"))
    with pytest.raises(ChartError, match=r"^chart demo \(no version\) of resource picker is not vendored"):
        chart_folder(registration(chart="demo"))


def test_namespaced_objects_take_the_releases_namespace_and_cluster_scoped_ones_none(charts: Path) -> None:
    objects = by_name(render_chart(registration(chart="demo", version="1.0.0", namespace="serving", name="rel")))
    assert objects["rel-app"]["metadata"]["namespace"] == "serving"
    assert objects["elsewhere"]["metadata"]["namespace"] == "other"  # a namespace the template sets is kept
    for _, kind in CLUSTER_KINDS:
        assert "namespace" not in objects[kind.lower()]["metadata"], kind
    # Helm renders the templates in the release's namespace.
    assert objects["release"]["data"] == {"namespace": "serving"}


def test_without_a_namespace_no_object_is_given_one(charts: Path) -> None:
    objects = by_name(render_chart(registration(chart="demo", version="1.0.0")))
    assert "namespace" not in objects["picker-app"]["metadata"]
    assert objects["elsewhere"]["metadata"]["namespace"] == "other"


def test_the_chart_renders_with_its_values_release_and_source_in_template_order_without_notes(charts: Path) -> None:
    objects = render_chart(registration(chart="demo", version="1.0.0", name="rel", values={"replicas": 3}))
    names = [item.manifest["metadata"]["name"] for item in objects]
    assert names == [kind.lower() for _, kind in CLUSTER_KINDS] + ["rel-app", "elsewhere", "release"]  # a-, b-, c-...yaml
    assert by_name(objects)["rel-app"]["spec"]["replicas"] == 3
    assert {(item.source, item.release) for item in objects} == {("chart rel (demo 1.0.0)", "rel")}
    defaults = by_name(render_chart(registration(chart="demo", version="1.0.0")))
    assert defaults["picker-app"]["spec"]["replicas"] == 1


def test_each_object_passes_through_the_transforms_in_order_as_the_engine_calls_them(charts: Path) -> None:
    seen: list[tuple[bool, str, str]] = []

    def first(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        assert isinstance(args.opts, pulumi.ResourceOptions)
        seen.append((args.custom, args.type_, args.name))
        if args.props["kind"] != "Deployment":
            return None
        return pulumi.ResourceTransformResult({**args.props, "spec": {"replicas": 5}}, args.opts)

    def second(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        props: dict[str, Any] = dict(args.props)
        if props["kind"] != "Deployment":
            return None
        return pulumi.ResourceTransformResult({**props, "spec": {"replicas": props["spec"]["replicas"] * 2}}, args.opts)

    chart = registration(chart="demo", version="1.0.0", namespace="serving")
    chart = Registration(**{**chart.__dict__, "transforms": (first, second)})
    objects = by_name(render_chart(chart))
    assert objects["picker-app"]["spec"] == {"replicas": 10}
    assert objects["elsewhere"] == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "elsewhere", "namespace": "other"}}
    assert (True, "kubernetes:apps/v1:Deployment", "picker:serving/picker-app") in seen
    assert (True, "kubernetes:core/v1:ConfigMap", "picker:other/elsewhere") in seen
    assert (True, "kubernetes:storage.k8s.io/v1:StorageClass", "picker:/storageclass") in seen


def test_chart_objects_are_every_chart_resources_objects(charts: Path) -> None:
    other = Registration(**{**registration("cm").__dict__, "type": "kubernetes:core/v1:ConfigMap"})
    stack = Render("dev", [registration("one", chart="demo", version="1.0.0"), other, registration("two", chart="demo", version="1.0.0")])
    releases = [item.release for item in chart_objects(stack)]
    count = len(CLUSTER_KINDS) + 3
    assert releases == ["one"] * count + ["two"] * count


def test_an_object_is_labelled_by_kind_namespace_and_name() -> None:
    assert (
        ChartObject("s", "r", {"kind": "Deployment", "metadata": {"name": "app", "namespace": "serving"}}).label()
        == "Deployment serving/app"
    )
    assert ChartObject("s", "r", {"kind": "ClusterRole", "metadata": {"name": "reader"}}).label() == "ClusterRole reader"
    assert ChartObject("s", "r", {"kind": "ConfigMap"}).label() == "ConfigMap None"


def test_helms_splitter_drops_empty_and_non_object_documents() -> None:
    text = "---\na: 1\n---\n- item\n---\njust text\n---\n{}\n---   \nb: 2"
    assert split_manifests(text) == [{"a": 1}, {"b": 2}]
    first = split_manifests("a: {b: 1}\n")
    first[0]["a"]["b"] = 2
    assert split_manifests("a: {b: 1}\n") == [{"a": {"b": 1}}]
