"""A stack's fourth view beside create, change and destroy: `pulumi refresh`, then `pulumi up`.

A refresh reads every resource back from the cluster: one that is gone leaves
the state, and a field someone else changed takes its live value (for
pulumi-kubernetes, the inputs too: ``provider/pkg/provider/provider.go``,
Read). The next `up` then creates again what left the state and sets back each
changed field that ``ignoreChanges`` does not cover. What changes a stack's
objects after create, without Pulumi:

- a Job of the stack whose account may delete them (a Role bound to its
  ServiceAccount with ``delete``);
- the TTL controller, which deletes a finished Job after
  ``ttlSecondsAfterFinished`` (kubernetes.io/docs/concepts/workloads/controllers/ttlafterfinished/);
- an autoscaler, which owns the ``spec.replicas`` of its target: a
  HorizontalPodAutoscaler's or a KEDA ScaledObject's ``scaleTargetRef``
  (keda.sh/docs/2.20/reference/scaledobject-spec/).

For a stack to be refreshed safely both lists are empty (``refresh_problems``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from render.changes import Change, changes, records
from render.engine import Registration, Render
from render.files import is_manifest

CONTROLLER_VALUE = "<set by its controller>"
_SCALABLE = {"Deployment", "StatefulSet", "ReplicaSet"}


@dataclass(frozen=True)
class Drift:
    """What a refresh finds: an object gone, or a field that holds another value than the program's."""

    key: str
    label: str
    gone: bool
    because: str
    field: str = ""

    def line(self) -> str:
        what = "gone" if self.gone else f"{self.field} changed"
        return f"{what:<24} {self.label}: {self.because}"


def _key(registration: Registration) -> str:
    return registration.urn.split("::", 1)[-1]


def _label(manifest: dict[str, Any]) -> str:
    metadata = manifest.get("metadata") or {}
    where = f"{metadata['namespace']}/" if metadata.get("namespace") else ""
    return f"{manifest.get('kind')} {where}{metadata.get('name')}"


def _plural(kind: str) -> str:
    lower = kind.lower()
    return lower[:-1] + "ies" if lower.endswith("y") else lower + ("es" if lower.endswith("s") else "s")


def _pod_account(manifest: dict[str, Any]) -> str | None:
    spec = manifest.get("spec") or {}
    template = spec.get("jobTemplate", {}).get("spec", {}).get("template") if manifest.get("kind") == "CronJob" else spec.get("template")
    return (((template or {}).get("spec")) or {}).get("serviceAccountName") or "default"


def _deleted_by_jobs(objects: list[Registration]) -> list[Drift]:
    """Objects a Job of the stack may delete: its account's Roles, through their RoleBindings."""
    roles = {(r.inputs["metadata"].get("namespace"), r.inputs["metadata"]["name"]): r.inputs for r in objects if r.inputs["kind"] == "Role"}
    bindings = [r.inputs for r in objects if r.inputs["kind"] == "RoleBinding"]
    found: list[Drift] = []
    for job in (r.inputs for r in objects if r.inputs["kind"] in ("Job", "CronJob")):
        namespace = job["metadata"].get("namespace")
        account = _pod_account(job)
        for binding in bindings:
            if binding["metadata"].get("namespace") != namespace or binding.get("roleRef", {}).get("kind") != "Role":
                continue
            if not any(s.get("kind") == "ServiceAccount" and s.get("name") == account for s in binding.get("subjects") or []):
                continue
            role = roles.get((namespace, binding["roleRef"]["name"]))
            for rule in (role or {}).get("rules") or []:
                if not {"delete", "*"} & set(rule.get("verbs") or []):
                    continue
                for target in objects:
                    metadata = target.inputs["metadata"]
                    kind = str(target.inputs["kind"])
                    if metadata.get("namespace") != namespace or not {_plural(kind), "*"} & set(rule.get("resources") or []):
                        continue
                    names = rule.get("resourceNames") or []
                    if not names or metadata["name"] in names:
                        found.append(Drift(_key(target), _label(target.inputs), True, f"Job {job['metadata']['name']} deletes it"))
    return found


def _finished_jobs(objects: list[Registration]) -> list[Drift]:
    return [
        Drift(_key(r), _label(r.inputs), True, f"finished, the TTL controller deletes it after {ttl} s")
        for r in objects
        if r.inputs["kind"] == "Job" and (ttl := (r.inputs.get("spec") or {}).get("ttlSecondsAfterFinished")) is not None
    ]


def _scale_targets(render: Render) -> list[tuple[str | None, str, str | None, str]]:
    """(namespace, kind, name, by) of every object an autoscaler scales."""
    targets = []
    for r in render.resources:
        if not is_manifest(r) or r.inputs.get("kind") not in ("HorizontalPodAutoscaler", "ScaledObject"):
            continue
        ref = (r.inputs.get("spec") or {}).get("scaleTargetRef") or {}
        by = f"{r.inputs['kind']} {r.inputs['metadata']['name']}"
        targets.append((r.inputs["metadata"].get("namespace"), ref.get("kind", "Deployment"), ref.get("name"), by))
    return targets


def _owned_by_controllers(render: Render, objects: list[Registration]) -> list[Drift]:
    found = []
    for namespace, kind, name, by in _scale_targets(render):
        for r in objects:
            metadata = r.inputs["metadata"]
            if r.inputs["kind"] == kind in _SCALABLE and metadata["name"] == name and metadata.get("namespace") == namespace:
                found.append(Drift(_key(r), _label(r.inputs), False, f"{by} sets it", "spec.replicas"))
    return found


def drift(render: Render) -> list[Drift]:
    """What a refresh after the stack has run finds gone or changed."""
    objects = [r for r in render.resources if is_manifest(r)]
    found = [*_deleted_by_jobs(objects), *_finished_jobs(objects), *_owned_by_controllers(render, objects)]
    # Once per object and field: two Jobs of one account may delete the same object.
    return list({(d.key, d.field): d for d in reversed(found)}.values())[::-1]


def _set(inputs: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for part in parents:
        inputs = inputs.setdefault(part, {})
    inputs[last] = value


def refresh_then_up(render: Render, found: list[Drift] | None = None) -> list[Change]:
    """What the next `up` does after a refresh that found ``found`` (default: ``drift(render)``)."""
    found = drift(render) if found is None else found
    desired = records(render)
    gone = {d.key for d in found if d.gone}
    refreshed = [copy.deepcopy(r) for r in desired if r["key"] not in gone]
    by_key = {r["key"]: r for r in refreshed}
    for d in found:
        if not d.gone and d.key in by_key:
            _set(by_key[d.key]["inputs"], d.field, CONTROLLER_VALUE)
    return changes(refreshed, desired)


def refresh_text(render: Render) -> str:
    found = drift(render)
    then = refresh_then_up(render, found)
    if not found:
        return "refresh, then up: a refresh finds nothing changed or gone; the next up changes nothing\n"
    lines = [f"refresh, then up: a refresh finds {len(found)} object(s) changed or gone"]
    lines.extend(f"  {d.line()}" for d in found)
    if then:
        lines.append(f"  the next up then: {len(then)} change(s)")
        lines.extend(f"    {c.line()}" for c in then)
    else:
        lines.append("  the next up then changes nothing (each changed field is under ignoreChanges)")
    return "\n".join(lines) + "\n"


class RefreshError(ValueError):
    pass


def check_refresh(render: Render) -> None:
    """Raises ``RefreshError`` when an `up` after a refresh would create, replace or update anything."""
    then = refresh_then_up(render)
    if then:
        raise RefreshError(f"{len(then)} change(s) an up after `pulumi refresh` would make:\n" + "\n".join(f"  - {c.line()}" for c in then))
