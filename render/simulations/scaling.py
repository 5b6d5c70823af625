"""What KEDA and the Kubernetes HPA do with the rendered ScaledObject, over time.

A pure, deterministic model written from the controllers' source, so that the
tests (and ``render``) can see behaviour that no manifest shows: how fast the
replicas follow a load, whether they hold through a batch, when they go to zero.

- KEDA v2.20.2 (github.com/kedacore/keda, tag v2.20.2): the scale loop
  (``pkg/scaling/scale_handler.go``), activation and scale to and from zero
  (``pkg/scaling/executor/scale_scaledobjects.go``, defaults in
  ``scale_executor.go``), the HPA it creates (``controllers/keda/hpa.go``,
  ``apis/keda/v1alpha1/scaledobject_types.go`` ``GetHPAMinReplicas``), and
  the metrics the HPA reads (``pkg/scalers/prometheus_scaler.go``,
  ``pkg/scalers/cron_scaler.go``).
- The HPA controller (github.com/kubernetes/kubernetes,
  ``pkg/controller/podautoscaler/horizontal.go`` and ``replica_calculator.go``):
  AverageValue targets with the 10% tolerance, several metrics combined by
  max, ``behavior`` (stabilization windows, policies) and the legacy path taken
  when ``behavior`` is unset.

The serving side is a model too: a new replica is Ready after a cold start, a
removed one stops taking requests at once and aborts what its drain cannot
finish, and a Ready replica runs up to ``requests_per_replica`` requests while
the rest wait in its queue. Load comes from closed-loop traces: clients keep a
number of requests outstanding; with no Ready replica every request fails, so
vLLM's series do not exist and read as 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from croniter import croniter

from facts.naming import REPLICAS
from facts.vllm import REQUESTS_RUNNING, REQUESTS_WAITING
from render.engine import Render, redact
from render.promql import metric_names
from workloads.batch import layout

# kube-controller-manager defaults (cmd/kube-controller-manager/app/options/hpacontroller.go):
# --horizontal-pod-autoscaler-sync-period, -tolerance, -downscale-stabilization.
HPA_SYNC_SECONDS = 15
HPA_TOLERANCE = 0.1
DOWNSCALE_STABILIZATION_SECONDS = 300
# horizontal.go, legacy path (behavior unset): at most max(2 x current, 4) after one sync.
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4.0
# The API server's defaults for a behavior that leaves a rule out
# (pkg/apis/autoscaling/v2/defaults.go): fast up, down after the stabilization window.
DEFAULT_SCALE_UP: dict[str, Any] = {
    "stabilizationWindowSeconds": 0,
    "selectPolicy": "Max",
    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}],
}
DEFAULT_SCALE_DOWN: dict[str, Any] = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}
# KEDA's defaults (scale_executor.go; scaledobject_types.go).
KEDA_POLLING_SECONDS = 30
KEDA_COOLDOWN_SECONDS = 300
KEDA_INITIAL_COOLDOWN_SECONDS = 0
KEDA_MAX_REPLICAS = 100
# Where a trigger's target and activation threshold live, by trigger type (each scaler's metadata).
TARGET_KEYS = {
    "prometheus": ("threshold", "activationThreshold"),
    "gcp-pubsub": ("value", "activationValue"),
    "gcp-storage": ("targetObjectCount", "activationTargetObjectCount"),
}
# The series a Prometheus trigger may sum, and which part of the serving state each one is.
SERIES = {REQUESTS_RUNNING: "running", REQUESTS_WAITING: "waiting", layout.BACKLOG: "backlog"}
# The wake signal of a batch: KEDA's gcp-storage scaler counts the inputs waiting in the bucket.
BATCH_INPUT_TRIGGER = "gcp-storage"


@dataclass(frozen=True)
class Serving:
    """How replicas start, serve and stop."""

    cold_start_seconds: int
    # Requests one Ready replica runs at once; more wait in its queue.
    requests_per_replica: int
    # Time one request takes at that load: the closed loop's pace.
    request_seconds: float
    # Time a removed replica gives its requests in flight before they are aborted.
    drain_seconds: int


@dataclass(frozen=True)
class Trace:
    """A load over time and the state it starts from.

    ``clients(t)`` requests are kept outstanding at second ``t``, until ``requests`` are done
    (None: no end). ``replicas`` exist at the start; ``warm`` says they are Ready and the
    ScaledObject has been active and its HPA has run (else they and the ScaledObject are new).
    ``signals`` feed triggers whose value does not come from the replicas, by trigger type: a
    queue or a bucket that exists at zero replicas (the wake signal). ``clock`` is the wall time
    at second 0, for cron windows. With ``runner`` the ``requests`` are one batch file in the
    bucket, sent by the batch runner: no more at once than the Ready replicas run
    (``requests_per_replica`` each), the rest held in its backlog, and the file waiting under
    input/ (one object) until the last line is answered.
    """

    name: str
    seconds: int
    clients: Callable[[float], int]
    replicas: int
    warm: bool
    requests: int | None = None
    signals: Mapping[str, Callable[[float], float]] = field(default_factory=dict)
    clock: datetime = datetime(2026, 1, 5, 12, 0)  # a Monday
    runner: bool = False


@dataclass(frozen=True)
class Step:
    second: int
    # The Deployment's spec.replicas, as KEDA and the HPA set it.
    desired: int
    ready: int
    # Requests running or waiting on the replicas.
    outstanding: int
    # Requests aborted by replicas removed at this step.
    aborted: int


@dataclass
class _Pod:
    ready_at: float


@dataclass
class _Hpa:
    recommendations: list[tuple[float, int]] = field(default_factory=list)
    scale_up_events: list[tuple[float, int]] = field(default_factory=list)
    scale_down_events: list[tuple[float, int]] = field(default_factory=list)


def _within_window(metadata: Mapping[str, str], at: datetime) -> bool:
    """cron_scaler.go GetMetricsAndActivity: inside when the window's next end comes before its next start."""
    local = at.astimezone(ZoneInfo(metadata.get("timezone", "Etc/UTC")))
    next_start = croniter(metadata["start"], local).get_next(datetime)
    next_end = croniter(metadata["end"], local).get_next(datetime)
    return not next_start < next_end


@cache
def _summed_series(query: str) -> tuple[str, ...]:
    """The model's series a query sums (the queries this program writes are such sums), parsed once:
    a simulation reads each trigger at every step, and parsing was two thirds of its time."""
    names = sorted(metric_names(query))
    unknown = [name for name in names if name not in SERIES]
    if not names or unknown:
        raise ValueError(f"the scaling model reads only sums of {sorted(SERIES)}; query: {query}")
    return tuple(SERIES[name] for name in names)


def _prometheus_value(query: str, state: Mapping[str, float]) -> float:
    return sum(state[series] for series in _summed_series(query))


@dataclass(frozen=True)
class _Reading:
    value: float
    # AverageValue target per replica.
    target: float
    active: bool


def _read(trigger: Mapping[str, Any], state: Mapping[str, float], signals: Mapping[str, float], trace: Trace, second: float) -> _Reading:
    kind, metadata = trigger["type"], trigger.get("metadata", {})
    if kind == "cron":
        # cron_scaler.go: desiredReplicas inside the window, else 0, against an AverageValue of 1.
        inside = _within_window(metadata, trace.clock + timedelta(seconds=second))
        return _Reading(float(metadata["desiredReplicas"]) if inside else 0.0, 1.0, inside)
    if kind not in TARGET_KEYS:
        raise ValueError(f"the scaling model has no {kind} trigger")
    target_key, activation_key = TARGET_KEYS[kind]
    # Any other type is a wake signal: its value comes from the trace (0 when the trace has none).
    value = _prometheus_value(metadata["query"], state) if kind == "prometheus" else signals.get(kind, 0.0)
    # prometheus_scaler.go GetMetricsAndActivity: active while above the activation threshold.
    return _Reading(value, float(metadata[target_key]), value > float(metadata.get(activation_key, 0)))


def _proposal(reading: _Reading, pods: int) -> int:
    """replica_calculator.go GetExternalPerPodMetricReplicas: keep the count within the tolerance, else ceil(total / target)."""
    if pods and abs(1.0 - reading.value / (reading.target * pods)) <= HPA_TOLERANCE:
        return pods
    return math.ceil(reading.value / reading.target)


def _rules(behavior: Mapping[str, Any] | None, direction: str) -> dict[str, Any]:
    defaults = DEFAULT_SCALE_UP if direction == "scaleUp" else DEFAULT_SCALE_DOWN
    rules = {**defaults, **((behavior or {}).get(direction) or {})}
    # horizontal.go maybeInitScaleDownStabilizationWindow: the controller's window when unset.
    rules.setdefault("stabilizationWindowSeconds", DOWNSCALE_STABILIZATION_SECONDS)
    return rules


def _changed_within(events: list[tuple[float, int]], period: float, now: float) -> int:
    """horizontal.go getReplicasChangePerPeriod."""
    return sum(change for at, change in events if at > now - period)


def _scale_up_limit(current: int, events: list[tuple[float, int]], rules: Mapping[str, Any], now: float) -> int:
    """horizontal.go calculateScaleUpLimitWithScalingRules."""
    if rules["selectPolicy"] == "Disabled":
        return current
    proposals = []
    for policy in rules["policies"]:
        start = current - _changed_within(events, policy["periodSeconds"], now)
        if policy["type"] == "Pods":
            proposals.append(start + policy["value"])
        else:
            proposals.append(math.ceil(start * (1 + policy["value"] / 100)))
    select = min if rules["selectPolicy"] == "Min" else max
    return int(select(proposals))


def _scale_down_limit(current: int, events: list[tuple[float, int]], rules: Mapping[str, Any], now: float) -> int:
    """horizontal.go calculateScaleDownLimitWithBehaviors."""
    if rules["selectPolicy"] == "Disabled":
        return current
    proposals = []
    for policy in rules["policies"]:
        start = current + _changed_within(events, policy["periodSeconds"], now)
        if policy["type"] == "Pods":
            proposals.append(start - policy["value"])
        else:
            proposals.append(int(start * (1 - policy["value"] / 100)))
    select = max if rules["selectPolicy"] == "Min" else min
    return int(select(proposals))


def _normalize_with_behavior(hpa: _Hpa, behavior: Mapping[str, Any], current: int, desired: int, low: int, high: int, now: float) -> int:
    """horizontal.go normalizeDesiredReplicasWithBehaviors: stabilize, then limit the rate."""
    up, down = _rules(behavior, "scaleUp"), _rules(behavior, "scaleDown")
    window, better = (up["stabilizationWindowSeconds"], min) if desired >= current else (down["stabilizationWindowSeconds"], max)
    recommendation = desired
    for at, past in hpa.recommendations:
        if at > now - window:
            recommendation = better(past, recommendation)
    longest = max(up["stabilizationWindowSeconds"], down["stabilizationWindowSeconds"])
    hpa.recommendations = [(at, past) for at, past in hpa.recommendations if at >= now - longest] + [(now, desired)]
    if recommendation > current:
        limit = max(_scale_up_limit(current, hpa.scale_up_events, up, now), current)
        return min(recommendation, high, limit)
    if recommendation < current:
        limit = min(_scale_down_limit(current, hpa.scale_down_events, down, now), current)
        return max(recommendation, low, limit)
    return recommendation


def _normalize_legacy(hpa: _Hpa, current: int, desired: int, low: int, high: int, now: float) -> int:
    """horizontal.go normalizeDesiredReplicas: the highest recommendation of the last 5 minutes, then the bounds."""
    recent = [past for at, past in hpa.recommendations if at >= now - DOWNSCALE_STABILIZATION_SECONDS]
    hpa.recommendations = [(at, past) for at, past in hpa.recommendations if at >= now - DOWNSCALE_STABILIZATION_SECONDS]
    hpa.recommendations.append((now, desired))
    stabilized = max([desired, *recent])
    ceiling = min(high, int(max(SCALE_UP_LIMIT_FACTOR * current, SCALE_UP_LIMIT_MINIMUM)))
    return max(low, min(stabilized, ceiling))


def simulate(scaled_object: Mapping[str, Any], serving: Serving, trace: Trace) -> list[Step]:
    """The replicas, Step by Step (one HPA sync apart), as KEDA and the HPA would set them under ``trace``."""
    spec = scaled_object["spec"]
    minimum = int(spec.get("minReplicaCount", 0))
    maximum = int(spec.get("maxReplicaCount", KEDA_MAX_REPLICAS))
    # scaledobject_types.go GetHPAMinReplicas: the HPA never goes below 1; KEDA owns 0.
    hpa_min = max(minimum, 1)
    polling = int(spec.get("pollingInterval", KEDA_POLLING_SECONDS))
    cooldown = int(spec.get("cooldownPeriod", KEDA_COOLDOWN_SECONDS))
    initial_cooldown = int(spec.get("initialCooldownPeriod", KEDA_INITIAL_COOLDOWN_SECONDS))
    behavior = ((spec.get("advanced") or {}).get("horizontalPodAutoscalerConfig") or {}).get("behavior")
    triggers = spec["triggers"]

    pods = [_Pod(0.0 if trace.warm else float(serving.cold_start_seconds)) for _ in range(trace.replicas)]
    desired = trace.replicas
    # LastActiveTime: unset on a new ScaledObject.
    last_active: float | None = 0.0 if trace.warm else None
    hpa = _Hpa()
    # horizontal.go recordInitialRecommendation: the count when the HPA is first seen.
    hpa.recommendations.append((0.0, desired))
    remaining = float(trace.requests) if trace.requests is not None else None
    steps: list[Step] = []

    for second in range(0, trace.seconds + 1, HPA_SYNC_SECONDS):
        ready = sum(pod.ready_at <= second for pod in pods)
        signals = {kind: signal(second) for kind, signal in trace.signals.items()}
        backlog = 0.0
        if trace.runner and remaining is not None:
            # The runner holds what the Ready replicas cannot run; its file waits until every line is answered.
            backlog = float(math.ceil(remaining))
            outstanding = min(math.ceil(remaining), ready * serving.requests_per_replica)
            signals[BATCH_INPUT_TRIGGER] = 1.0 if backlog else 0.0
        else:
            # Whole requests: a closed loop that runs out of work ends.
            outstanding = trace.clients(second) if remaining is None else min(trace.clients(second), math.floor(remaining))
        running = min(outstanding, ready * serving.requests_per_replica) if ready else 0.0
        state = {"running": running, "waiting": outstanding - running if ready else 0.0, "backlog": backlog}
        readings = [_read(trigger, state, signals, trace, second) for trigger in triggers]

        target = desired
        if second % polling == 0:
            # scale_scaledobjects.go RequestScale: any active trigger makes the object active.
            if any(reading.active for reading in readings):
                if target == 0:
                    target = minimum or 1
                last_active = second
            elif target > 0 and minimum == 0:
                since = last_active if last_active is not None else 0.0
                wait = cooldown if last_active is not None else initial_cooldown
                # KEDA checks a moment after the object is created: a zero wait has passed at once.
                if since + wait <= second:
                    target = 0
            elif target < minimum:
                target = minimum
        if target > 0 and target == desired:
            # horizontal.go reconcileAutoscaler; at 0 replicas with a minimum of 1 the HPA is disabled.
            if target > maximum:
                target = maximum
            elif target < hpa_min:
                target = hpa_min
            else:
                wanted = max(_proposal(reading, len(pods)) for reading in readings)
                if behavior is None:
                    target = _normalize_legacy(hpa, target, wanted, hpa_min, maximum, second)
                else:
                    target = _normalize_with_behavior(hpa, behavior, target, wanted, hpa_min, maximum, second)
                    if target > desired:
                        hpa.scale_up_events.append((second, target - desired))
                    elif target < desired:
                        hpa.scale_down_events.append((second, desired - target))

        aborted = 0.0
        if target > len(pods):
            pods += [_Pod(second + serving.cold_start_seconds) for _ in range(target - len(pods))]
        elif target < len(pods):
            # The ReplicaSet deletes starting pods first, then the newest (controller_utils.go ActivePods ordering).
            pods.sort(key=lambda pod: (pod.ready_at <= second, -pod.ready_at))
            removed, pods = pods[: len(pods) - target], pods[len(pods) - target :]
            share = running / ready if ready else 0.0
            unfinished = max(0.0, 1 - serving.drain_seconds / serving.request_seconds)
            aborted = sum(share * unfinished for pod in removed if pod.ready_at <= second)
        desired = target
        if remaining is not None:
            # Closed loop: what ran for one step is done; aborted requests are sent again. The runner keeps every
            # Ready replica at its pace to the last line: the last ones sent finish within one request's time.
            pace = ready * serving.requests_per_replica if trace.runner else running
            remaining = max(0.0, remaining - pace * HPA_SYNC_SECONDS / serving.request_seconds)
        steps.append(Step(second, desired, ready, round(outstanding if ready else 0), round(aborted)))
    return steps


# The reference deployment (docs/reference.md): ~2,000 concurrent requests and ~83 completed
# requests/s per node; a node takes 5-6 min to provision, the model ~10 min to load.
REFERENCE_COLD_START_SECONDS = 16 * 60
REFERENCE_REQUESTS_PER_NODE = 2000
REFERENCE_COMPLETIONS_PER_SECOND = 83
# The standard batch: the reference's 12 nodes at ~2,000 concurrent requests each, for 3 hours.
BATCH_CLIENTS = 24_000
BATCH_SECONDS = 3 * 3600


def reference_serving(drain_seconds: int) -> Serving:
    """Replicas as the reference measured them; requests take what Little's law gives at that load."""
    return Serving(
        cold_start_seconds=REFERENCE_COLD_START_SECONDS,
        requests_per_replica=REFERENCE_REQUESTS_PER_NODE,
        request_seconds=REFERENCE_REQUESTS_PER_NODE / REFERENCE_COMPLETIONS_PER_SECOND,
        drain_seconds=drain_seconds,
    )


def _constant(clients: int) -> Callable[[float], int]:
    return lambda second: clients


def _until(clients: int, end: float) -> Callable[[float], int]:
    return lambda second: clients if second < end else 0


def deploy_with_no_traffic(replicas: int, seconds: int = 2 * 3600) -> Trace:
    """`pulumi up` creates the replicas and the ScaledObject together; no client comes."""
    return Trace("deploy with no traffic", seconds, _constant(0), replicas, warm=False)


def ramp_from_one_replica(seconds: int = 3600) -> Trace:
    """The standard batch arrives at a stack serving on one replica."""
    return Trace("ramp from one replica", seconds, _constant(BATCH_CLIENTS), 1, warm=True)


def steady_batch(replicas: int) -> Trace:
    """The standard batch on replicas already serving it."""
    return Trace("steady 3-hour batch", BATCH_SECONDS, _constant(BATCH_CLIENTS), replicas, warm=True)


def batch_tail(replicas: int, minutes_of_work: int = 10, seconds: int = 2 * 3600) -> Trace:
    """The last requests of a batch: clients run out of work, so fewer stay outstanding until none do."""
    requests = minutes_of_work * 60 * replicas * REFERENCE_COMPLETIONS_PER_SECOND
    return Trace("tail of a batch", seconds, _constant(BATCH_CLIENTS), replicas, warm=True, requests=requests)


def idle_to_zero(replicas: int, seconds: int = 2 * 3600) -> Trace:
    """The last request has just finished on a serving stack."""
    return Trace("idle to zero", seconds, _constant(0), replicas, warm=True)


def window_ending_mid_batch(replicas: int, window_start: datetime) -> Trace:
    """A batch window opens with the batch and closes while the batch still runs."""
    return Trace("window ending mid-batch", BATCH_SECONDS, _constant(BATCH_CLIENTS), replicas, warm=True, clock=window_start)


def batch_from_zero(requests: int, seconds: int = 4 * 3600) -> Trace:
    """A batch file of ``requests`` lines copied into the bucket of a stack at zero replicas; the runner sends it."""
    return Trace("batch from zero", seconds, _constant(0), 0, warm=True, requests=requests, runner=True)


def standard_batch(idle_seconds: int) -> Trace:
    """One replica, the standard batch for 3 hours, then idle: what `render` prints."""
    seconds = BATCH_SECONDS + idle_seconds + 15 * 60
    return Trace("standard batch", seconds, _until(BATCH_CLIENTS, BATCH_SECONDS), 1, warm=True)


SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
SHUTDOWN_TIMEOUT = re.compile(r"--shutdown-timeout=(\d+)")


def _drain_seconds(render: Render) -> int:
    """vLLM's --shutdown-timeout on the replicas: how long a removed replica lets requests finish."""
    for deployment in render.by_type("kubernetes:apps/v1:Deployment"):
        for container in deployment.inputs["spec"]["template"]["spec"]["containers"]:
            for arg in container.get("args", []):
                if found := SHUTDOWN_TIMEOUT.fullmatch(str(arg)):
                    return int(found.group(1))
    return 0


def replica_sets(render: Render) -> tuple[str, ...]:
    """The replica sets' names: ``vllm`` for a one-model stack; with several, each model's short name
    (facts/naming.py, model_short_name), the keys of the serving output's models."""
    models = (redact(render.outputs).get("serving") or {}).get("models")
    return tuple(models) if isinstance(models, dict) else (REPLICAS,)


def replicas_scaled_object(render: Render, replicas: str = REPLICAS) -> dict[str, Any] | None:
    """The ScaledObject of the replica set ``replicas`` (the batch runner has its own), if the stack autoscales."""
    for found in render.by_type(SCALED_OBJECT):
        if found.inputs["spec"]["scaleTargetRef"]["name"] == replicas:
            scaled_object: dict[str, Any] = found.inputs
            return scaled_object
    return None


# The wake trace's batch: 100,000 lines, the size the runner is tested to stream.
WAKE_BATCH_REQUESTS = 100_000


def _table(steps: list[Step]) -> list[str]:
    lines = [f"  {'time':>6} {'desired':>8} {'ready':>6} {'requests':>9} {'aborted':>8}"]
    shown: tuple[int, int, bool] | None = None
    for step in steps:
        key = (step.desired, step.ready, step.outstanding > 0)
        if key != shown or step.aborted:
            hours, minutes = divmod(step.second // 60, 60)
            lines.append(f"  {hours:>3}:{minutes:02d} {step.desired:>8} {step.ready:>6} {step.outstanding:>9,} {step.aborted:>8,}")
            shown = key
    return lines


def _estimates(render: Render, model: str | None) -> dict[str, Any]:
    """The stack's estimates, or with ``model`` that model's of a stack of several."""
    estimates: dict[str, Any] = redact(render.outputs).get("estimates") or {}
    return estimates.get(model) or {} if model is not None else estimates


def estimated_serving(render: Render, model: str | None = None) -> tuple[Serving, str]:
    """Replicas at the stack's own estimates (estimates.batchPlan; with ``model``, that model's): the pace of one
    Ready replica and the wake.

    The figures the render prints beside the trace, so the two cannot disagree; the reference's where the
    stack has no batch plan, or its wake no figure (flex-start's queue).
    """
    plan: dict[str, Any] = _estimates(render, model).get("batchPlan") or {}
    drain = _drain_seconds(render)
    wake_minutes = (plan.get("minutes") or {}).get("wake")
    cold_start = round(wake_minutes * 60) if wake_minutes is not None else REFERENCE_COLD_START_SECONDS
    completions = plan["tokensPerSecondPerReplica"] / plan["tokensPerRequest"] if plan else REFERENCE_COMPLETIONS_PER_SECOND
    if not plan:
        figures = f"the reference's {cold_start // 60}-minute cold start and {completions:g} completions/s per Ready replica"
    elif wake_minutes is None:
        figures = (
            f"the stack's estimates: {completions:,.1f} completions/s per Ready replica, "
            f"no figure for the wake so the reference's {cold_start // 60} minutes"
        )
    else:
        figures = f"the stack's estimates: {wake_minutes:g}-minute wake, {completions:,.1f} completions/s per Ready replica"
    serving = Serving(
        cold_start_seconds=cold_start,
        requests_per_replica=REFERENCE_REQUESTS_PER_NODE,
        request_seconds=REFERENCE_REQUESTS_PER_NODE / completions,
        drain_seconds=drain,
    )
    return serving, figures


def scaling_timeline(render: Render) -> str:
    """The replicas over the standard batch, when the stack autoscales: what the settings will do, before paying for it.

    With several models, one trace per model's ScaledObject, or the reason it has none."""
    names = replica_sets(render)
    if names == (REPLICAS,):
        scaled_object = replicas_scaled_object(render)
        return "" if scaled_object is None else "\n".join(_traces(render, scaled_object, "scaling", None)) + "\n"
    lines: list[str] = []
    for name in names:
        scaled_object = replicas_scaled_object(render, name)
        estimates = _estimates(render, name)
        if scaled_object is None:
            lines.append(f"scaling of {name}: no trace: it has no ScaledObject (autoscaling.enabled is off)")
        elif "batchPlan" not in estimates:
            lines.append(f"scaling of {name}: no trace: its estimates have no batch plan to pace one ({estimates.get('basis')})")
        else:
            lines += _traces(render, scaled_object, f"scaling of {name}", name)
            if not _woken_by_batch(scaled_object):
                lines.append(f"  batch wake: none: ScaledObject {name} has no {BATCH_INPUT_TRIGGER} trigger (no batch to wake it)")
    return "\n".join(lines) + "\n" if lines else ""


def _woken_by_batch(scaled_object: dict[str, Any]) -> bool:
    return any(trigger["type"] == BATCH_INPUT_TRIGGER for trigger in scaled_object["spec"]["triggers"])


def _traces(render: Render, scaled_object: dict[str, Any], title: str, model: str | None) -> list[str]:
    """The standard batch on one replica set's ScaledObject, and the batch wake when a bucket wakes it."""
    serving, figures = estimated_serving(render, model)
    trace = standard_batch(int(scaled_object["spec"].get("cooldownPeriod", KEDA_COOLDOWN_SECONDS)))
    lines = [
        f"{title}: {BATCH_CLIENTS:,} concurrent requests for {BATCH_SECONDS // 3600} h from one Ready replica, then none",
        f"  (a model of KEDA v2.20.2 and the HPA; {figures}, {REFERENCE_REQUESTS_PER_NODE:,} requests running per Ready replica)",
        *_table(simulate(scaled_object, serving, trace)),
    ]
    if _woken_by_batch(scaled_object):
        lines += [
            f"batch wake: a {WAKE_BATCH_REQUESTS:,}-line file copied to input/ at zero replicas; the runner sends"
            f" {REFERENCE_REQUESTS_PER_NODE:,} per Ready replica and holds the rest",
            *_table(simulate(scaled_object, serving, batch_from_zero(WAKE_BATCH_REQUESTS))),
        ]
    return lines
