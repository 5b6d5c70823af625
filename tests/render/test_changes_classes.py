"""Each class of change, from records made by hand: what differs, what Pulumi does with it, in what order.

The expected classes are the providers' documented behaviour (render/vendor/replacements/), written per case.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from render.changes import Change, changed_paths, changes, read_records, records, render_changes, summary, write_records
from render.chart import ChartObject
from render.engine import Registration, Render, Secret
from tests.render.registrations import registration as plain_registration

POD = "kubernetes:core/v1:Pod"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CLUSTER = "gcp:container/cluster:Cluster"


def record(type_: str, inputs: dict[str, Any], name: str = "x", **options: Any) -> dict[str, Any]:
    return {
        "key": f"{type_}::{name}",
        "type": type_,
        "name": name,
        "inputs": inputs,
        "ignoreChanges": list(options.get("ignore", ())),
        "replaceOnChanges": list(options.get("replace", ())),
        "protect": options.get("protect", False),
    }


def one(before: dict[str, Any], after: dict[str, Any]) -> Change:
    (change,) = changes([before], [after])
    return change


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "a"}], **spec}}


def deployment(image: str, replicas: int = 1) -> dict[str, Any]:
    template = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": image}]}}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": replicas, "template": template}}


# --- what differs -------------------------------------------------------------------------


def test_changed_paths_name_each_differing_leaf_added_or_removed_key() -> None:
    before = {"a": {"b": 1, "c": 2}, "d": 1, "gone": 1}
    after = {"a": {"b": 1, "c": 3}, "d": 1, "new": 1}
    assert changed_paths(before, after) == ["a.c", "gone", "new"]
    assert changed_paths(before, before) == []


def test_lists_of_one_length_compare_item_by_item_and_others_whole() -> None:
    assert changed_paths({"l": [{"x": 1}, {"x": 2}]}, {"l": [{"x": 1}, {"x": 3}]}) == ["l[1].x"]
    assert changed_paths({"l": [1, 2]}, {"l": [1, 2, 3]}) == ["l"]
    assert changed_paths([1], [2]) == ["[0]"]
    assert changed_paths(1, "1") == [""]
    # A map that became something else differs as a whole.
    assert changed_paths({"a": {"b": 1}}, {"a": "b"}) == ["a"]
    assert changed_paths({"a": "b"}, {"a": {"b": 1}}) == ["a"]


# --- update, replace, refused -------------------------------------------------------------


def test_a_change_below_a_list_item_rule_replaces_a_pod() -> None:
    image = one(record(POD, pod()), record(POD, pod(containers=[{"name": "c", "image": "b"}])))
    assert (image.action, image.because) == ("replace", ("spec.containers[0].image",))
    added = one(record(POD, pod()), record(POD, pod(initContainers=[{"name": "i"}])))
    assert added.action == "replace"
    # A field beside the rule's, with a shared prefix, is not under it.
    label = one(record(POD, pod()), record(POD, {**pod(), "metadata": {"name": "p", "labels": {"a": "1"}}}))
    assert (label.action, label.fields) == ("update", ("metadata.labels",))


def test_a_rule_covers_the_field_and_what_lies_below_it_not_a_longer_name() -> None:
    node = one(record(POD, pod(nodeSelector={"a": "1"})), record(POD, pod(nodeSelector={"a": "2"})))
    assert (node.action, node.because) == ("replace", ("spec.nodeSelector.a",))
    # spec.volumes is a rule; spec.volumesExtra is another field.
    other = one(record(POD, pod(volumesExtra=1)), record(POD, pod(volumesExtra=2)))
    assert other.action == "update"
    volume = one(record(POD, pod(volumes=[{"name": "v", "x": 1}])), record(POD, pod(volumes=[{"name": "v", "x": 2}])))
    assert (volume.action, volume.because) == ("replace", ("spec.volumes[0].x",))


def test_every_kind_replaces_on_a_new_name_and_replace_on_changes_adds_fields() -> None:
    renamed = deployment("a")
    renamed["metadata"] = {"name": "e"}
    assert one(record(DEPLOYMENT, deployment("a")), record(DEPLOYMENT, renamed)).action == "replace"
    scaled = one(record(DEPLOYMENT, deployment("a")), record(DEPLOYMENT, deployment("a", 3), replace=("spec.replicas",)))
    assert (scaled.action, scaled.because) == ("replace", ("spec.replicas",))
    labels = {"name": "c", "location": "europe-west4", "resourceLabels": {"a": "1"}}
    relabelled = one(record(CLUSTER, labels), record(CLUSTER, {**labels, "resourceLabels": {"a": "2"}}, replace=("resourceLabels",)))
    assert relabelled.action == "replace"


def test_a_deployments_template_change_rolls_its_pods_and_a_scale_does_not() -> None:
    rolled = one(record(DEPLOYMENT, deployment("a")), record(DEPLOYMENT, deployment("b")))
    assert (rolled.action, rolled.restarts_pods, rolled.because) == ("update", True, ())
    scaled = one(record(DEPLOYMENT, deployment("a")), record(DEPLOYMENT, deployment("a", 3)))
    assert (scaled.action, scaled.restarts_pods) == ("update", False)
    # A Pod is not a workload with a template: its changes roll nothing.
    assert not one(record(POD, pod()), record(POD, {**pod(), "metadata": {"name": "p", "labels": {}}})).restarts_pods


def test_ignore_changes_hides_a_field_and_star_hides_all() -> None:
    assert changes([record(DEPLOYMENT, deployment("a"))], [record(DEPLOYMENT, deployment("b"), ignore=("spec.template",))]) == []
    assert changes([record(DEPLOYMENT, deployment("a"))], [record(DEPLOYMENT, deployment("b", 2), ignore=("*",))]) == []
    partly = one(record(DEPLOYMENT, deployment("a")), record(DEPLOYMENT, deployment("b", 2), ignore=("spec.replicas",)))
    assert partly.fields == ("spec.template.spec.containers[0].image",)


def test_an_unknown_kind_or_resource_type_updates() -> None:
    custom = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    assert one(
        record("kubernetes:example.com/v1:Widget", custom), record("kubernetes:example.com/v1:Widget", {**custom, "spec": {}})
    ).action == ("update")
    assert one(record("gcp:example/thing:Thing", {"a": 1}), record("gcp:example/thing:Thing", {"a": 2})).action == "update"
    # Without apiVersion the inputs are not a Kubernetes object, whatever their "kind" says.
    gcp_kind = {"kind": "Pod", "metadata": {"name": "a"}}
    renamed = {"kind": "Pod", "metadata": {"name": "b"}}
    assert one(record("gcp:example/thing:Thing", gcp_kind), record("gcp:example/thing:Thing", renamed)).action == "update"


# --- protection -----------------------------------------------------------------------------


def test_pulumi_refuses_to_delete_or_replace_what_stays_protected() -> None:
    labels = {"name": "c", "location": "europe-west4"}
    deleted = changes([record(CLUSTER, labels, protect=True)], [])
    assert [(c.action, c.because) for c in deleted] == [("refused", ("protected: `pulumi state unprotect` it first",))]
    moved = one(record(CLUSTER, labels, protect=True), record(CLUSTER, {**labels, "location": "us-central1"}, protect=True))
    assert (moved.action, moved.because) == ("refused", ("location", "protected: `pulumi state unprotect` it first"))
    # Unprotected in the same change: the replace goes ahead.
    freed = one(record(CLUSTER, labels, protect=True), record(CLUSTER, {**labels, "location": "us-central1"}, protect=False))
    assert freed.action == "replace"
    # An update of a protected resource is allowed; so is deleting an unprotected one.
    assert one(record(CLUSTER, labels, protect=True), record(CLUSTER, {**labels, "x": 1}, protect=True)).action == "update"
    assert [c.action for c in changes([record(CLUSTER, labels)], [])] == ["delete"]


# --- order, lines and summary -------------------------------------------------------------


def test_changes_come_refused_first_then_replace_delete_create_update_each_by_type_and_name() -> None:
    labels = {"name": "c", "location": "europe-west4"}
    before = [
        record(CLUSTER, labels, name="z-kept", protect=True),
        record(CLUSTER, labels, name="moved"),
        record(CLUSTER, labels, name="z-gone"),
        record(CLUSTER, labels, name="b-updated"),
        record(CLUSTER, labels, name="a-updated"),
    ]
    after = [
        record(CLUSTER, {**labels, "location": "x"}, name="z-kept", protect=True),
        record(CLUSTER, {**labels, "location": "x"}, name="moved"),
        record(CLUSTER, {**labels, "x": 1}, name="b-updated"),
        record(CLUSTER, {**labels, "x": 1}, name="a-updated"),
        record(CLUSTER, labels, name="new"),
        record(POD, pod(), name="new"),
    ]
    found = changes(before, after)
    # Names chosen so that sorting by name alone would put every group in another order.
    assert [(c.action, c.type, c.name) for c in found] == [
        ("refused", CLUSTER, "z-kept"),
        ("replace", CLUSTER, "moved"),
        ("delete", CLUSTER, "z-gone"),
        ("create", CLUSTER, "new"),
        ("create", POD, "new"),
        ("update", CLUSTER, "a-updated"),
        ("update", CLUSTER, "b-updated"),
    ]
    assert [c.key for c in found][:3] == [f"{CLUSTER}::z-kept", f"{CLUSTER}::moved", f"{CLUSTER}::z-gone"]
    assert {c.key for c in found[3:]} == {f"{CLUSTER}::new", f"{POD}::new", f"{CLUSTER}::a-updated", f"{CLUSTER}::b-updated"}
    assert summary(found)[0] == "resource changes: 1 refused, 1 replace, 1 delete, 2 create, 2 update\n"
    assert summary(found)[1:-1] == [f"  {c.line()}\n" for c in found] and summary(found)[-1] == "\n"
    assert summary([]) == ["no resource changes\n"]


def test_a_change_line_shows_the_action_the_resource_the_pod_roll_and_why() -> None:
    rolled = Change("k", DEPLOYMENT, "vllm", "update", ("spec.template.a", "spec.template.b"), (), True)
    assert rolled.line() == f"update   {DEPLOYMENT} vllm (rolls its pods): spec.template.a, spec.template.b"
    replaced = Change("k", CLUSTER, "c", "replace", ("location", "x"), ("location",))
    assert replaced.line() == f"replace  {CLUSTER} c: location"
    assert Change("k", CLUSTER, "c", "create").line() == f"create   {CLUSTER} c"


# --- records --------------------------------------------------------------------------------


def registration(type_: str, name: str, inputs: dict[str, Any], *, custom: bool = True, remote: bool = False) -> Registration:
    return plain_registration(
        type_,
        name,
        inputs,
        custom=custom,
        remote=remote,
        protect=name == "protected",
        ignore_changes=("spec.replicas",),
        replace_on_changes=("spec.selector",),
    )


def test_records_keep_resources_and_remote_components_without_the_stack_name_and_secrets() -> None:
    render = Render(
        stack="dev",
        resources=[
            registration("kubernetes:core/v1:Secret", "protected", {"stringData": Secret({"token": "hf_abc"})}),
            registration("llm:serving:Replicas", "component", {}, custom=False),
            registration("kubernetes:yaml/v2:ConfigFile", "crds", {"file": "x.yaml"}, custom=False, remote=True),
        ],
    )
    found = records(render)
    assert [r["key"] for r in found] == [
        "llm-serving::kubernetes:core/v1:Secret::protected",
        "llm-serving::kubernetes:yaml/v2:ConfigFile::crds",
    ]
    secret = found[0]
    assert secret["inputs"] == {"stringData": {"token": "[secret]"}}
    assert (secret["type"], secret["name"], secret["protect"]) == ("kubernetes:core/v1:Secret", "protected", True)
    assert (secret["ignoreChanges"], secret["replaceOnChanges"]) == (["spec.replicas"], ["spec.selector"])
    assert found[1]["protect"] is False


def test_each_charts_object_is_a_record_of_its_own_keyed_by_chart_kind_namespace_and_name(monkeypatch: pytest.MonkeyPatch) -> None:
    objects = [
        ChartObject("keda", "keda", {"kind": "Deployment", "metadata": {"name": "keda-operator", "namespace": "keda"}, "spec": {}}),
        ChartObject("keda", "keda", {"kind": "ClusterRole", "metadata": {"name": "keda-operator"}, "rules": []}),
        ChartObject(
            "keda", "keda", {"kind": "Secret", "metadata": {"name": "t", "namespace": "keda"}, "stringData": {"token": Secret("abc")}}
        ),
    ]
    monkeypatch.setattr("render.changes.chart_objects", lambda render: objects if render.stack == "dev" else [])
    found = records(Render(stack="dev", resources=[registration("kubernetes:core/v1:Secret", "token", {})]))
    assert found[1:] == [
        {
            "key": "keda/Deployment/keda/keda-operator",
            "type": "keda: Deployment",
            "name": "keda-operator",
            "inputs": objects[0].manifest,
            "ignoreChanges": [],
            "replaceOnChanges": [],
        },
        {
            "key": "keda/ClusterRole//keda-operator",
            "type": "keda: ClusterRole",
            "name": "keda-operator",
            "inputs": objects[1].manifest,
            "ignoreChanges": [],
            "replaceOnChanges": [],
        },
        {
            "key": "keda/Secret/keda/t",
            "type": "keda: Secret",
            "name": "t",
            "inputs": {"kind": "Secret", "metadata": {"name": "t", "namespace": "keda"}, "stringData": {"token": "[secret]"}},
            "ignoreChanges": [],
            "replaceOnChanges": [],
        },
    ]


def test_replace_on_changes_reaches_fields_inside_lists_of_lists() -> None:
    def ported(port: int) -> dict[str, Any]:
        container = {"name": "c", "ports": [{"name": "http", "containerPort": port}]}
        return {**deployment("a"), "spec": {"template": {"spec": {"containers": [container]}}}}

    rule = ("spec.template.spec.containers.ports.containerPort",)
    moved = one(record(DEPLOYMENT, ported(8000)), record(DEPLOYMENT, ported(9000), replace=rule))
    assert (moved.action, moved.because) == ("replace", ("spec.template.spec.containers[0].ports[0].containerPort",))
    # A sibling under the same lists is not the rule's field.
    renamed = ported(8000)
    renamed["spec"]["template"]["spec"]["containers"][0]["ports"][0]["name"] = "web"
    assert one(record(DEPLOYMENT, ported(8000)), record(DEPLOYMENT, renamed, replace=rule)).action == "update"


def test_an_immutable_field_of_a_claim_is_refused_naming_the_field() -> None:
    claim: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "c"},
        "spec": {"dataSource": {"name": "s1"}, "resources": {"requests": {"storage": "1Gi"}}},
    }
    moved = {**claim, "spec": {**claim["spec"], "dataSource": {"name": "s2"}, "resources": {"requests": {"storage": "2Gi"}}}}
    refused = one(record("kubernetes:core/v1:PersistentVolumeClaim", claim), record("kubernetes:core/v1:PersistentVolumeClaim", moved))
    assert (refused.action, refused.because) == ("refused", ("spec.dataSource.name",))
    assert refused.fields == ("spec.dataSource.name", "spec.resources.requests.storage")
    assert (refused.key, refused.type, refused.name) == (
        "kubernetes:core/v1:PersistentVolumeClaim::x",
        "kubernetes:core/v1:PersistentVolumeClaim",
        "x",
    )


def test_two_renders_compare_resource_by_resource(tmp_path: Path) -> None:
    before = Render(stack="dev", resources=[registration(CLUSTER, "gke", {"location": "europe-west4", "name": "c"})])
    after = Render(stack="prod", resources=[registration(CLUSTER, "gke", {"location": "us-central1", "name": "c"})])
    (moved,) = render_changes(before, after)
    assert (moved.action, moved.name, moved.because) == ("replace", "gke", ("location",))
    assert render_changes(before, before) == []


def test_a_render_folder_keeps_the_records_to_compare_later(tmp_path: Path) -> None:
    render = Render(stack="dev", resources=[registration(CLUSTER, "gke", {"name": "c", "zone": tmp_path, "b": 1, "a": 2})])
    path = write_records(render, tmp_path)
    assert path.parent == tmp_path
    # Any value is written (as text), and the file is diff-friendly: one key per line, sorted, ending in a newline.
    assert read_records(tmp_path) == [{**records(render)[0], "inputs": {"name": "c", "zone": str(tmp_path), "b": 1, "a": 2}}]
    text = path.read_text()
    assert text.endswith("]\n") and text.index('"a": 2') < text.index('"b": 1') and '\n   "a": 2,\n' in text
    reordered = Render(stack="dev", resources=[registration(CLUSTER, "gke", {"a": 2, "b": 1, "zone": tmp_path, "name": "c"})])
    other = tmp_path / "other"
    other.mkdir()
    assert write_records(reordered, other).read_text() == text


def test_a_folder_without_records_says_to_render_it_again(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="render it again with this version of the renderer") as error:
        read_records(tmp_path)
    assert str(tmp_path) in str(error.value)


@pytest.mark.parametrize(("kind", "api"), [("VolumeSnapshot", "snapshot.storage.k8s.io/v1"), ("ComputeClass", "cloud.google.com/v1")])
def test_a_field_its_crd_declares_immutable_is_refused_not_updated(kind: str, api: str) -> None:
    # The vendored CRD's `self == oldSelf` rule: the API server refuses the update, which fails `pulumi up`.
    field = {"VolumeSnapshot": ("source", "persistentVolumeClaimName"), "ComputeClass": ("autopilot", "enabled")}[kind]

    def snapshot_of(value: Any) -> dict[str, Any]:
        return {"apiVersion": api, "kind": kind, "metadata": {"name": "s"}, "spec": {field[0]: {field[1]: value}}}

    old, new = ("a", "b") if kind == "VolumeSnapshot" else (True, False)
    change = one(record(f"kubernetes:{api}:{kind}", snapshot_of(old)), record(f"kubernetes:{api}:{kind}", snapshot_of(new)))
    assert (change.action, change.because) == ("refused", (f"spec.{field[0]}.{field[1]}",))
