"""What a reviewer decides on, per stack: the consequences of a change first, the details collapsed.

``python -m render review <stack> <before> <after>`` writes one stack's section of
the pull-request comment (offline-diff.yml) from two render folders: what is
created, replaced and deleted (stateful and cluster-level resources flagged),
which pods restart, in how many rounds and for how long, how much serving
capacity is missing meanwhile, whether the compile cache starts cold, and the
cost per hour before and after. An unchanged stack is one line.

Everything comes from the renders: the Deployment's own strategy and progress
deadline (each rollout round is a cold start within it: the plan's update
await is rounds x that deadline), and the ``estimates`` output.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from facts.vllm import CACHE_ROOT_ENV
from render.changes import Change, changes, read_records, summary
from render.files import PLAN_FILE, RECORDS_FILE, changed_files, diff, flatten, short

# What a replacement or a deletion of these loses: data, a commitment, or everything that runs on them.
STATEFUL: dict[str, str] = {
    "gcp:container/cluster:Cluster": "the cluster and every workload on it",
    "gcp:compute/network:Network": "the VPC the cluster sits in",
    "gcp:compute/subnetwork:Subnetwork": "a subnet and the addresses of what sits on it",
    "gcp:compute/futureReservation:FutureReservation": "a capacity commitment",
    "gcp:storage/bucket:Bucket": "a bucket and the objects it holds",
    "kubernetes:core/v1:Namespace": "every object in the namespace",
    "kubernetes:core/v1:PersistentVolumeClaim": "a volume's data",
    "kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot": "the model cache's snapshot",
    "kubernetes:storage.k8s.io/v1:StorageClass": "the class the model cache's volumes are made from",
    "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition": "every object of its kind, cluster-wide",
}
# Beyond this many, creations are counted by kind (a new chart brings dozens of objects).
MAX_NAMED_CREATIONS = 8
# Kubernetes' defaults for a RollingUpdate without numbers, and for a Deployment without a progress deadline.
DEFAULT_SURGE = DEFAULT_UNAVAILABLE = "25%"
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
# The estimates' dollar figures (per hour, or a whole commitment in USD), and how their keys read in the comment.
DOLLAR_KEYS = ("costPerHour", "Usd")
LABELS = {
    "whenIdle": "scaled to zero",
    "committed": "committed capacity",
    "committed.term.totalUsd": "whole committed term",
    "estimatesTotal": "every model",
    "estimatesTotal.whenIdle": "every model scaled to zero",
}
# The output of a stack of several models' total, read beside each model's estimates (kept under its output's name).
TOTAL = "estimatesTotal"
FRACTIONS = {(1, 1): "all", (1, 2): "half", (1, 3): "a third", (2, 3): "two thirds", (1, 4): "a quarter", (3, 4): "three quarters"}


@dataclass(frozen=True, kw_only=True)
class Side:
    """One render folder as the review reads it: records (None from an older renderer) and the estimates."""

    records: list[dict[str, Any]] | None
    estimates: dict[str, Any]


def _estimates(folder: Path) -> dict[str, Any]:
    outputs_file = folder / "outputs.yaml"
    outputs = yaml.safe_load(outputs_file.read_text()) if outputs_file.exists() else None
    estimates: dict[str, Any] = dict((outputs or {}).get("estimates") or {})
    if total := (outputs or {}).get(TOTAL):
        estimates[TOTAL] = total
    return estimates


def read_side(folder: Path) -> Side:
    estimates = _estimates(folder)
    if (folder / RECORDS_FILE).exists():
        return Side(records=read_records(folder), estimates=estimates)
    # A folder without a plan stands for a stack that is absent on that side or did not render.
    plan_file = folder / PLAN_FILE
    rendered = plan_file.exists() and plan_file.read_text().strip() != ""
    return Side(records=None if rendered else [], estimates=estimates)


@dataclass(frozen=True, kw_only=True)
class Rollout:
    """How a Deployment replaces its pods: rounds of ``surge + unavailable``, each a cold start within the progress deadline."""

    replicas: int
    autoscaled: bool
    surge: int
    unavailable: int
    recreate: bool
    round_seconds: int

    @property
    def rounds(self) -> int:
        if self.recreate or self.replicas == 0:
            return 1 if self.replicas else 0
        return math.ceil(self.replicas / max(self.surge + self.unavailable, 1))

    @property
    def down(self) -> int:
        """Replicas not serving at a time during the rollout."""
        return self.replicas if self.recreate else min(self.unavailable, self.replicas)


def _count(value: Any, replicas: int, *, up: bool) -> int:
    """A RollingUpdate number: an int, or a percentage of the replicas (surge rounds up, unavailable down)."""
    if isinstance(value, str) and value.endswith("%"):
        exact = replicas * int(value[:-1]) / 100
        return math.ceil(exact) if up else math.floor(exact)
    return int(value)


def rollout_of(deployment: dict[str, Any], scaled_max: int | None) -> Rollout:
    spec = deployment.get("spec", {})
    replicas = scaled_max if scaled_max is not None else int(spec.get("replicas", 1))
    strategy = spec.get("strategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    return Rollout(
        replicas=replicas,
        autoscaled=scaled_max is not None,
        surge=_count(rolling.get("maxSurge", DEFAULT_SURGE), replicas, up=True),
        unavailable=_count(rolling.get("maxUnavailable", DEFAULT_UNAVAILABLE), replicas, up=False),
        recreate=strategy.get("type") == "Recreate",
        round_seconds=int(spec.get("progressDeadlineSeconds", DEFAULT_PROGRESS_DEADLINE_SECONDS)),
    )


def _fraction(part: int, whole: int) -> str:
    divisor = math.gcd(part, whole)
    return FRACTIONS.get((part // divisor, whole // divisor), f"{100 * part / whole:.0f}%")


def _money(value: Any) -> str:
    return f"${value:,.2f}" if isinstance(value, int | float) else "no price"


def _minutes(seconds: int) -> str:
    return f"{round(seconds / 60)} min"


def _by_key(records: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    return {r["key"]: r for r in records or []}


def _kind(record: dict[str, Any]) -> str:
    inputs = record.get("inputs")
    return str(inputs.get("kind", "")) if isinstance(inputs, dict) else ""


def _scaled_max(records: list[dict[str, Any]], name: str) -> int | None:
    """The autoscaler's ceiling for a Deployment (a KEDA ScaledObject or an HPA), None when nothing scales it."""
    for record in records:
        spec = record["inputs"].get("spec", {}) if _kind(record) in ("ScaledObject", "HorizontalPodAutoscaler") else {}
        if spec.get("scaleTargetRef", {}).get("name") == name:
            return int(spec.get("maxReplicaCount", spec.get("maxReplicas", 1)))
    return None


def _engine(deployment: dict[str, Any] | None) -> dict[str, Any] | None:
    """The container that mounts the shared compile cache, if the Deployment runs one."""
    containers = ((deployment or {}).get("spec", {}).get("template", {}).get("spec", {}) or {}).get("containers", [])
    return next((c for c in containers if any(e.get("name") == CACHE_ROOT_ENV for e in c.get("env", []))), None)


def _compile_cache(before: dict[str, Any] | None, after: dict[str, Any], estimates: dict[str, Any], starting: bool) -> str | None:
    """Whether the replicas that start find their compile-cache entry: vLLM keys it on image, model and flags."""
    old, new = _engine(before), _engine(after)
    if new is None:
        return None
    minutes = estimates.get("coldStart", {}).get("minutes", {})
    cold, warm = minutes.get("coldCompileCache"), minutes.get("warmCompileCache")
    if old is None:
        return f"**cold**: a new engine configuration compiles on its first start (~{short(cold)} min cold start)" if cold else None
    what = [
        f"image `{old.get('image', '').rsplit('/', 1)[-1]}` -> `{new.get('image', '').rsplit('/', 1)[-1]}`"
        if old.get("image") != new.get("image")
        else "",
        "engine flags" if (old.get("command"), old.get("args")) != (new.get("command"), new.get("args")) else "",
        "environment" if old.get("env") != new.get("env") else "",
    ]
    changed = " and ".join(w for w in what if w)
    if changed:
        timing = f"; the first round compiles (~{short(cold)} min cold start, ~{short(warm)} min once warm)" if cold and warm else ""
        return f"**cold**: a new compile-cache entry for the new {changed}{timing}"
    if starting:
        return f"warm: same image and flags, new replicas load the compiled entries (~{short(warm)} min cold start)" if warm else "warm"
    return None


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _kind_of(change: Change) -> str:
    """A resource's kind as a reader names it: ``Subnetwork``, a chart object's ``ClusterRole``."""
    return change.type.rsplit(":", 1)[-1].strip()


def _resource_lines(found: list[Change]) -> list[str]:
    """What is refused, replaced, deleted (each named, stateful ones flagged), created and updated in place."""
    verbs = {"refused": "refused", "replace": "replaced", "delete": "deleted", "create": "created"}
    counts = [
        f"{sum(c.action == action for c in found)} {verb}" for action, verb in verbs.items() if any(c.action == action for c in found)
    ]
    updated = [f"{_kind_of(c)} `{c.name}`" for c in found if c.action == "update"]
    if updated:
        counts.append(f"{len(updated)} updated in place ({', '.join(updated)})")
    lines = [f"- **Resources**: {'; '.join(counts) or 'no change'}."]
    grave = [c for c in found if c.action in ("refused", "replace", "delete")]
    for change in grave:
        flag = f" **stateful: {STATEFUL[change.type]}**" if change.type in STATEFUL else ""
        why = f" ({', '.join(change.because)})" if change.because else ""
        under = f"; {change.depended_on()}" if change.dependents else ""
        lines.append(f"  - {verbs[change.action]}: {_kind_of(change)} `{change.name}`{flag}{why}{under}")
    created = [c for c in found if c.action == "create"]
    if len(created) <= MAX_NAMED_CREATIONS:
        lines += [f"  - created: {_kind_of(c)} `{c.name}`" for c in created]
    else:
        kinds: dict[str, int] = {}
        for change in created:
            kinds[_kind_of(change)] = kinds.get(_kind_of(change), 0) + 1
        lines.append("  - created: " + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda item: (-item[1], item[0]))))
    return lines


def _workload_lines(found: list[Change], before: Side, after: Side) -> list[str]:
    """Pods that restart or start, the rollout's rounds and duration, the capacity missing, the compile cache."""
    old, new = _by_key(before.records), _by_key(after.records)
    lines: list[str] = []
    for change in found:
        record = new.get(change.key)
        if record is None or _kind(record) != "Deployment":
            continue
        deployment = record["inputs"]
        rollout = rollout_of(deployment, _scaled_max(after.records or [], change.name))
        previous = old[change.key]["inputs"] if change.key in old else None
        count = f"up to {rollout.replicas}, autoscaled" if rollout.autoscaled else f"all {rollout.replicas}"
        starting = False
        if change.action == "replace":
            lines.append(
                f"- **Pods**: Deployment `{change.name}` is replaced: its pods ({count}) stop and start anew, none serving between."
            )
            starting = True
        elif change.restarts_pods and rollout.replicas:
            per_round = "all at once (Recreate)" if rollout.recreate else f"{rollout.surge + rollout.unavailable} at a time"
            total = rollout.rounds * rollout.round_seconds
            lines.append(
                f"- **Rollout**: Deployment `{change.name}` restarts its pods ({count}) "
                f"in {_plural(rollout.rounds, 'round')}, {per_round}: "
                f"up to ~{_minutes(total)} ({rollout.rounds} x {_minutes(rollout.round_seconds)}, each round a cold start "
                "within the Deployment's progress deadline)."
            )
            if rollout.down:
                lines.append(
                    f"- **Capacity during it**: {rollout.down} of {rollout.replicas} replicas ({_fraction(rollout.down, rollout.replicas)} "
                    f"of the capacity) down at a time; {rollout.replicas - rollout.down} keep serving."
                )
            else:
                lines.append(
                    f"- **Capacity during it**: none missing: {_plural(rollout.surge, 'extra replica')} "
                    f"start{'s' if rollout.surge == 1 else ''} before old ones stop, "
                    "which needs a spare node."
                )
            starting = True
        elif previous is not None:
            was = int(previous.get("spec", {}).get("replicas", 1))
            now = int(deployment.get("spec", {}).get("replicas", 1))
            if was != now and not rollout.autoscaled:
                moved = f"{_plural(now - was, 'new pod')} start" if now > was else f"{_plural(was - now, 'pod')} stop"
                lines.append(f"- **Pods**: none restart; Deployment `{change.name}` goes from {was} to {now} replicas: {moved}.")
                starting = now > was
            later = rollout_of(previous, None)
            if (later.surge, later.unavailable) != (rollout.surge, rollout.unavailable) and rollout.replicas > 1:
                lines.append(
                    f"- **Later rollouts**: {_plural(rollout.rounds, 'round')} of up to {rollout.surge + rollout.unavailable}, "
                    f"{rollout.down} of {rollout.replicas} replicas ({_fraction(rollout.down, rollout.replicas)}) down at a time."
                )
        cache = _compile_cache(previous, deployment, after.estimates, starting)
        if cache:
            lines.append(f"- **Compile cache**: {cache}.")
    return lines


def _cost_lines(before: Side, after: Side) -> list[str]:
    """Cost per hour before and after, then every other dollar figure of the estimates: idle, committed capacity."""
    old, new = flatten(before.estimates), flatten(after.estimates)
    keys = [k for k in sorted(set(old) | set(new)) if k.endswith(DOLLAR_KEYS)]
    keys.sort(key=lambda k: k not in ("costPerHour", f"{TOTAL}.costPerHour"))
    parts = []
    for key in keys:
        name = key.removesuffix(".costPerHour")
        label = "" if key == "costPerHour" else f"{LABELS.get(name, name)}: "
        was, now = (_money(side[key]) if key in side else "none" for side in (old, new))
        shown = now if was == now else f"{was} -> {now}"
        parts.append(f"{label}{shown}")
    return [f"- **Cost per hour**: {'; '.join(parts)}."] if parts else []


def estimate_changes(before: Path, after: Path) -> list[str]:
    """Each estimate that changes, from one render folder to the other."""
    old, new = flatten(_estimates(before)), flatten(_estimates(after))
    changed = [
        f"  {key}: {short(old[key]) if key in old else '-'} -> {short(new[key]) if key in new else '-'}\n"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]
    return ["estimates:\n", *changed, "\n"] if changed else ["estimates: unchanged\n\n"]


def review(stack: str, before: Path, after: Path, *, note: str = "", max_lines: int = 300) -> str:
    """One stack's section of the review comment, as Markdown."""
    old, new = read_side(before), read_side(after)
    files = diff(before, after, labels=(f"base/{stack}", f"head/{stack}"))
    found = changes(old.records, new.records or []) if old.records is not None and new.records is not None else None
    if not files and not found and not note:
        return f"- `{stack}`: no change.\n"
    lines = [f"### `{stack}`", ""]
    if note:
        lines += [note, ""]
    if found is None:
        lines.append("- **Resources**: not classified: the base was rendered by a renderer that kept no records.")
    else:
        lines += _resource_lines(found)
        lines += _workload_lines(found, old, new)
    lines += _cost_lines(old, new)
    details = [*estimate_changes(before, after), *(summary(found) if found is not None else [])]
    shown = files[:max_lines]
    cut = [f"\nCut at {max_lines} of {len(files)} lines: `python -m render diff` prints them all.\n"] if len(files) > max_lines else []
    lines += [
        "",
        f"<details><summary>Details: estimates, every resource change, {_plural(changed_files(files), 'rendered file')} "
        f"({len(files)} diff lines)</summary>",
        "",
        "`````",
        "".join(details).rstrip("\n"),
        "`````",
        "",
        "`````diff",
        "".join(shown).rstrip("\n"),
        "`````",
        *cut,
        "",
        "</details>",
    ]
    return "\n".join(lines) + "\n"
