"""The update-or-replace classifier follows the providers' own rules."""

from __future__ import annotations

import copy
from typing import Any

from render.changes import Change, changes, read_records, records, summary, write_records
from tests.conftest import render_with, rendered


def record(type_: str, inputs: dict[str, Any], ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"key": f"k::{type_}", "type": type_, "name": "x", "inputs": inputs, "ignoreChanges": list(ignore), "replaceOnChanges": []}


def classify(type_: str, before: dict[str, Any], after: dict[str, Any], ignore: tuple[str, ...] = ()) -> Change:
    (change,) = changes([record(type_, before)], [record(type_, after, ignore)])
    return change


JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "j"},
    "spec": {"backoffLimit": 1, "template": {"metadata": {"labels": {"a": "1"}}}},
}
CLAIM = {
    "apiVersion": "v1",
    "kind": "PersistentVolumeClaim",
    "metadata": {"name": "c"},
    "spec": {"accessModes": ["ReadOnlyMany"], "resources": {"requests": {"storage": "100Gi"}}, "dataSource": {"name": "s1"}},
}


def changed(base: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    copied = copy.deepcopy(base)
    target = copied
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return copied


def test_a_jobs_template_change_replaces_it_and_other_fields_update_it() -> None:
    assert classify("kubernetes:batch/v1:Job", JOB, changed(JOB, ("spec", "template", "metadata", "labels", "a"), "2")).action == "replace"
    assert classify("kubernetes:batch/v1:Job", JOB, changed(JOB, ("metadata", "labels"), {"b": "1"})).action == "update"


def test_a_claim_grows_in_place_but_cannot_change_its_source_or_access() -> None:
    grown = classify(
        "kubernetes:core/v1:PersistentVolumeClaim", CLAIM, changed(CLAIM, ("spec", "resources", "requests", "storage"), "200Gi")
    )
    assert grown.action == "update"
    assert (
        classify("kubernetes:core/v1:PersistentVolumeClaim", CLAIM, changed(CLAIM, ("spec", "accessModes"), ["ReadWriteOnce"])).action
        == "replace"
    )
    refused = classify("kubernetes:core/v1:PersistentVolumeClaim", CLAIM, changed(CLAIM, ("spec", "dataSource", "name"), "s2"))
    assert (refused.action, refused.because) == ("refused", ("spec.dataSource.name",))


def test_a_crds_immutable_field_is_refused() -> None:
    snapshot = {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "metadata": {"name": "s"},
        "spec": {"source": {"persistentVolumeClaimName": "a"}},
    }
    moved = changed(snapshot, ("spec", "source", "persistentVolumeClaimName"), "b")
    assert classify("kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot", snapshot, moved).action == "refused"


def test_gcp_force_new_fields_replace_and_others_update() -> None:
    cluster = {"name": "c", "location": "europe-west4", "resourceLabels": {"a": "1"}, "minMasterVersion": "1.35"}
    assert classify("gcp:container/cluster:Cluster", cluster, {**cluster, "location": "us-central1"}).action == "replace"
    assert (
        classify("gcp:container/cluster:Cluster", cluster, {**cluster, "resourceLabels": {"a": "2"}, "minMasterVersion": "1.36"}).action
        == "update"
    )


def test_ignored_fields_change_nothing() -> None:
    after = changed(JOB, ("spec", "template", "metadata", "labels", "a"), "2")
    assert changes([record("kubernetes:batch/v1:Job", JOB)], [record("kubernetes:batch/v1:Job", after, ("spec",))]) == []


def test_a_pod_template_change_of_a_deployment_rolls_its_pods_without_replacing_it() -> None:
    found = changes(records(rendered("dev")), records(render_with("dev", serving={"maxNumSeqs": 1024})))
    (deployment,) = [c for c in found if c.type == "kubernetes:apps/v1:Deployment"]
    assert (deployment.action, deployment.restarts_pods) == ("update", True)


def test_render_folders_compare_as_renders_do(tmp_path: Any) -> None:
    write_records(rendered("dev"), tmp_path)
    after = tmp_path / "after"
    after.mkdir()
    write_records(render_with("dev", labels={"team": "ml"}), after)
    found = changes(read_records(tmp_path), read_records(after))
    assert found and all(c.action == "update" for c in found)
    assert summary(found)[0].startswith(f"resource changes: {len(found)} update")


# --- replacements google-beta decides on the values (render/customize_diff.py) ------------------------------


def node_range_change(cidr: str) -> Change:
    found = changes(records(rendered("dev")), records(render_with("dev", network={"nodeCidr": cidr})))
    (subnet,) = [c for c in found if c.type == "gcp:compute/subnetwork:Subnetwork"]
    return subnet


def test_a_node_range_that_does_not_hold_the_old_one_replaces_the_subnet_the_cluster_sits_on() -> None:
    subnet = node_range_change("10.16.0.0/20")
    assert subnet.action == "replace"
    (because,) = subnet.because
    assert because.startswith("ipCidrRange") and "IsShrinkageIpCidr" in because
    assert "Cluster gke" in subnet.dependents
    line = subnet.line()
    assert line.startswith("replace  gcp:compute/subnetwork:Subnetwork nodes") and "Cluster gke" in line


def test_a_node_range_that_holds_the_old_one_updates_the_subnet_in_place() -> None:
    subnet = node_range_change("10.0.0.0/19")
    assert (subnet.action, subnet.fields, subnet.because) == ("update", ("ipCidrRange",), ())
