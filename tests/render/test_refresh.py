"""`pulumi refresh`, then `pulumi up`: what a refresh finds changed or gone, and what the next up does about it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from render.cli import check_render
from render.engine import Registration, Render
from render.refresh import RefreshError, check_refresh, drift, refresh_then_up
from tests.conftest import STACKS, render_once, rendered

ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
JOB = "kubernetes:batch/v1:Job"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


def _replaced(render: Render, old: Registration, **changes: Any) -> Render:
    render.resources[render.resources.index(old)] = dataclasses.replace(old, **changes)
    return render


@pytest.mark.parametrize("stack", STACKS)
def test_an_up_after_a_refresh_changes_nothing_on_every_stack(stack: str) -> None:
    render = rendered(stack)
    assert refresh_then_up(render) == []
    check_refresh(render)
    assert any(line.startswith("refresh, then up:") for line in "".join(check_render(render)).splitlines())


def test_a_claim_a_job_deletes_out_of_band_is_created_again_by_the_next_up() -> None:
    # As the cache was before: the release Job may delete a claim that Pulumi keeps.
    render = render_once("dev")
    reader = next(r for r in render.by_type(PVC) if r.name.startswith("reader-"))
    role = render.one(ROLE)
    rules = [
        *role.inputs["rules"],
        {
            "apiGroups": [""],
            "resources": ["persistentvolumeclaims"],
            "resourceNames": [reader.inputs["metadata"]["name"]],
            "verbs": ["delete"],
        },
    ]
    render = _replaced(render, role, inputs={**role.inputs, "rules": rules})
    assert [(d.key, d.gone) for d in drift(render)] == [(reader.urn.split("::", 1)[-1], True)]
    assert [(c.action, c.type, c.name) for c in refresh_then_up(render)] == [("create", PVC, reader.name)]
    with pytest.raises(RefreshError, match=f"create +{PVC} {reader.name}"):
        check_refresh(render)


def test_a_job_the_ttl_controller_deletes_is_run_again_by_the_next_up() -> None:
    render = render_once("dev")
    job = next(r for r in render.by_type(JOB) if r.name.startswith("download-"))
    render = _replaced(render, job, inputs={**job.inputs, "spec": {**job.inputs["spec"], "ttlSecondsAfterFinished": 600}})
    assert [(c.action, c.name) for c in refresh_then_up(render)] == [("create", job.name)]


def test_replicas_an_autoscaler_owns_are_set_back_unless_ignored() -> None:
    render = render_once("batch")
    vllm = next(r for r in render.by_type(DEPLOYMENT) if r.inputs["metadata"]["name"] == "vllm")
    assert "spec.replicas" in vllm.ignore_changes and refresh_then_up(render) == []
    assert [d.field for d in drift(render) if d.key == vllm.urn.split("::", 1)[-1]] == ["spec.replicas"]
    render = _replaced(render, vllm, ignore_changes=())
    assert [(c.action, c.name, c.fields) for c in refresh_then_up(render)] == [("update", vllm.name, ("spec.replicas",))]
