"""The refresh view on hand-made objects: who deletes what, which fields a controller owns, what the next up does."""

from __future__ import annotations

from typing import Any

import pytest

from render.engine import Registration, Render
from render.refresh import CONTROLLER_VALUE, RefreshError, check_refresh, drift, refresh_text, refresh_then_up
from tests.render.registrations import registration

NS = "llm"


def obj(kind: str, name: str, namespace: str | None = NS, api: str = "v1", ignore: tuple[str, ...] = (), **rest: Any) -> Registration:
    metadata: dict[str, Any] = {"name": name, **({"namespace": namespace} if namespace else {})}
    inputs = {"apiVersion": api, "kind": kind, "metadata": metadata, **rest}
    return registration(f"kubernetes:{api}:{kind}", name, inputs, stack="t::p", ignore_changes=ignore)


def job(name: str, account: str = "worker", namespace: str = NS, **spec: Any) -> Registration:
    template = {"spec": {"serviceAccountName": account, "containers": [{"name": "c", "image": "i"}]}}
    return obj("Job", name, namespace, "batch/v1", spec={"template": template, **spec})


def role(name: str, *rules: dict[str, Any], namespace: str = NS) -> Registration:
    return obj("Role", name, namespace, "rbac.authorization.k8s.io/v1", rules=list(rules))


def binding(role_name: str, account: str = "worker", kind: str = "Role", namespace: str = NS) -> Registration:
    return obj(
        "RoleBinding",
        f"{role_name}-binding",
        namespace,
        "rbac.authorization.k8s.io/v1",
        roleRef={"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name},
        subjects=[{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    )


def deletes(resource: str, *names: str, verbs: tuple[str, ...] = ("delete",)) -> dict[str, Any]:
    return {"apiGroups": [""], "resources": [resource], "verbs": list(verbs), **({"resourceNames": list(names)} if names else {})}


def render(*resources: Registration) -> Render:
    return Render(stack="t", resources=list(resources))


def gone(found: Render) -> list[str]:
    return sorted(d.label for d in drift(found) if d.gone)


def test_a_job_deletes_the_named_objects_its_role_lets_it() -> None:
    found = render(
        job("release"),
        role("r", deletes("persistentvolumeclaims", "writer")),
        binding("r"),
        obj("PersistentVolumeClaim", "writer"),
        obj("PersistentVolumeClaim", "reader"),
    )
    assert gone(found) == [f"PersistentVolumeClaim {NS}/writer"]
    (only,) = drift(found)
    assert only.because == "Job release deletes it" and only.line().startswith("gone ")
    assert [(c.action, c.name) for c in refresh_then_up(found)] == [("create", "writer")]
    with pytest.raises(RefreshError, match="1 change"):
        check_refresh(found)
    assert "a refresh finds 1 object(s) changed or gone" in refresh_text(found)


def test_a_role_without_names_lets_a_job_delete_every_object_of_the_kind_in_its_namespace() -> None:
    found = render(
        job("cleaner"),
        role("r", deletes("secrets")),
        binding("r"),
        obj("Secret", "a"),
        obj("Secret", "b"),
        obj("Secret", "c", namespace="other"),
        obj("ConfigMap", "d"),
    )
    assert gone(found) == [f"Secret {NS}/a", f"Secret {NS}/b"]


@pytest.mark.parametrize(
    ("rule", "deleted"),
    [
        (deletes("persistentvolumeclaims", "writer", verbs=("get", "create")), False),
        (deletes("persistentvolumeclaims", "writer", verbs=("*",)), True),
        ({"apiGroups": [""], "resources": ["*"], "verbs": ["delete"]}, True),
        (deletes("configmaps", "writer"), False),
        (deletes("persistentvolumeclaims", "reader"), False),
    ],
)
def test_only_a_delete_of_the_objects_kind_and_name_counts(rule: dict[str, Any], deleted: bool) -> None:
    found = render(job("release"), role("r", rule), binding("r"), obj("PersistentVolumeClaim", "writer"))
    assert bool(gone(found)) is deleted


def test_the_role_must_be_bound_to_the_jobs_own_account_in_its_namespace() -> None:
    claim = obj("PersistentVolumeClaim", "writer")
    rule = deletes("persistentvolumeclaims", "writer")
    assert gone(render(job("release", account="other"), role("r", rule), binding("r"), claim)) == []
    assert gone(render(job("release"), role("r", rule), binding("r", kind="ClusterRole"), claim)) == []
    assert gone(render(job("release"), role("r", rule), claim)) == []
    assert gone(render(job("release"), role("r", rule, namespace="other"), binding("r", namespace="other"), claim)) == []
    # A Job without an account runs as default.
    assert gone(render(job("release", account="default"), role("r", rule), binding("r", account="default"), claim)) != []


def test_a_cron_jobs_pods_delete_as_its_template_account() -> None:
    template = {"spec": {"serviceAccountName": "worker", "containers": [{"name": "c", "image": "i"}]}}
    cron = obj("CronJob", "nightly", NS, "batch/v1", spec={"jobTemplate": {"spec": {"template": template}}})
    found = render(cron, role("r", deletes("persistentvolumeclaims", "writer")), binding("r"), obj("PersistentVolumeClaim", "writer"))
    assert gone(found) == [f"PersistentVolumeClaim {NS}/writer"]


def test_a_finished_job_with_a_ttl_is_gone_and_run_again() -> None:
    found = render(job("once", ttlSecondsAfterFinished=0), job("kept"))
    assert gone(found) == [f"Job {NS}/once"]
    assert "after 0 s" in drift(found)[0].because
    assert [(c.action, c.name) for c in refresh_then_up(found)] == [("create", "once")]


def hpa(kind: str) -> Registration:
    return obj("HorizontalPodAutoscaler", "h", api="autoscaling/v2", spec={"scaleTargetRef": {"kind": kind, "name": "web"}})


@pytest.mark.parametrize(
    ("scaler", "target_kind"),
    [
        (
            obj("HorizontalPodAutoscaler", "h", api="autoscaling/v2", spec={"scaleTargetRef": {"kind": "Deployment", "name": "web"}}),
            "Deployment",
        ),
        (obj("ScaledObject", "s", api="keda.sh/v1alpha1", spec={"scaleTargetRef": {"name": "web"}}), "Deployment"),
        (
            obj("HorizontalPodAutoscaler", "h", api="autoscaling/v2", spec={"scaleTargetRef": {"kind": "StatefulSet", "name": "web"}}),
            "StatefulSet",
        ),
    ],
)
def test_an_autoscalers_target_replicas_are_set_back_unless_ignored(scaler: Registration, target_kind: str) -> None:
    target = obj(target_kind, "web", api="apps/v1", spec={"replicas": 1})
    (found,) = drift(render(scaler, target))
    assert (found.gone, found.field) == (False, "spec.replicas") and found.line().startswith("spec.replicas changed")
    (change,) = refresh_then_up(render(scaler, target))
    assert (change.action, change.fields) == ("update", ("spec.replicas",))
    ignored = obj(target_kind, "web", api="apps/v1", spec={"replicas": 1}, ignore=("spec.replicas",))
    assert refresh_then_up(render(scaler, ignored)) == []
    assert "changes nothing (each changed field is under ignoreChanges)" in refresh_text(render(scaler, ignored))


def test_an_autoscaler_owns_only_its_own_targets_replicas() -> None:
    scaler = obj("ScaledObject", "s", api="keda.sh/v1alpha1", spec={"scaleTargetRef": {"name": "web"}})
    other_name = obj("Deployment", "api", api="apps/v1", spec={"replicas": 1})
    other_namespace = obj("Deployment", "web", namespace="other", api="apps/v1", spec={"replicas": 1})
    other_kind = obj("StatefulSet", "web", api="apps/v1", spec={"replicas": 1})
    not_scalable = obj("DaemonSet", "web", api="apps/v1", spec={})
    assert drift(render(scaler, other_name, other_namespace, other_kind, not_scalable)) == []


def test_the_value_a_refresh_reads_back_is_the_controllers() -> None:
    from render.changes import records
    from render.refresh import _set

    inputs: dict[str, Any] = {"spec": {}}
    _set(inputs, "spec.replicas", CONTROLLER_VALUE)
    assert inputs == {"spec": {"replicas": CONTROLLER_VALUE}}
    assert records(render()) == []


def test_nothing_changed_reads_as_nothing() -> None:
    quiet = render(job("kept"), obj("ConfigMap", "c"))
    assert drift(quiet) == [] and refresh_then_up(quiet) == []
    check_refresh(quiet)
    assert refresh_text(quiet).startswith("refresh, then up: a refresh finds nothing changed or gone; the next up changes nothing")
