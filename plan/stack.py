"""The stack's plan: its settings turned into one narrow spec per component.

Everything two components must agree on is decided here, once: the labels
that pick the replica pods, where GPU pods land, which claim and folder hold
the weights, and whether the stack is scaled to zero. Components receive only
their own spec, so their signatures say what they may touch.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, assert_never

from facts import gke, images
from facts.batch_sizing import runner_workers
from facts.engine_memory import MemoryBudget
from facts.gke import EXCLUSION_SCOPES, GPU_TYPE
from facts.models import ModelFacts
from facts.naming import (
    PYTHON_REPOSITORY,
    REPLICAS,
    UPSTREAMS,
    CacheNames,
    account_id,
    batch_bucket_name,
    cache_names,
    compile_cache_bucket,
    model_short_name,
    repository_id,
    selector_labels,
    stack_labels,
)
from plan.batch_plan import RENDERED_LINES, BatchPace, BatchPlan
from plan.cold_start_estimate import CacheDisk, ColdStart, Wake, compile_cache_enabled, expected
from plan.estimates import (
    Commitment,
    Costing,
    Estimate,
    GatewayPods,
    Total,
    estimate,
    price_per_node_hour,
    served_nodes,
    stack_total,
    throughput,
)
from stacks.cache import CacheSettings
from stacks.capacity import CapacityMode, CapacitySettings
from stacks.cluster import MaintenanceSettings
from stacks.drain import DrainSettings
from stacks.engine import download_deadline_minutes, engine_shape, loaded_bytes
from stacks.model import ModelSettings
from stacks.section import days_between
from stacks.serving import ServingProfile
from stacks.settings import StackSettings
from stacks.workload import WorkloadSettings

# The ComputeClass of fallback mode.
FALLBACK_CLASS = "a4-fallback"
CACHE_FOLDER = "/models"
# Secondary ranges of the node subnet, named by the network and used by the cluster.
POD_RANGE = "pods"
SERVICE_RANGE = "services"


@dataclass(frozen=True)
class NetworkSpec:
    project: str
    region: str
    # The VPC's; its node subnet is `<name>-nodes`.
    name: str
    node_cidr: str
    pod_cidr: str
    service_cidr: str
    # Private nodes reach the internet through a router and Cloud NAT.
    nat: bool
    protect: bool


@dataclass(frozen=True)
class MaintenanceWindow:
    start_time: str
    end_time: str
    recurrence: str


@dataclass(frozen=True)
class MaintenanceExclusion:
    name: str
    start_time: str
    end_time: str
    # GKE's name of the scope (NO_MINOR_OR_NODE_UPGRADES, ...).
    scope: str


@dataclass(frozen=True)
class Maintenance:
    window: MaintenanceWindow | None
    exclusions: tuple[MaintenanceExclusion, ...]


def maintenance(settings: MaintenanceSettings) -> Maintenance:
    window = settings.window
    return Maintenance(
        MaintenanceWindow(window.start_time, window.end_time, window.recurrence) if window else None,
        tuple(MaintenanceExclusion(e.name, e.start_time, e.end_time, EXCLUSION_SCOPES[e.scope]) for e in settings.exclusions),
    )


@dataclass(frozen=True)
class ClusterSpec:
    project: str
    region: str
    name: str
    # The nodes' Google account: `<name>-nodes`, hashed past 30 characters (facts/naming.py).
    node_account: str
    release_channel: str
    version: str
    deletion_protection: bool
    namespace: str
    maintenance: Maintenance
    private_nodes: bool
    authorized_networks: tuple[str, ...]
    labels: dict[str, str]
    open_control_plane: bool
    protect: bool


@dataclass(frozen=True)
class ProxySubnetSpec:
    project: str
    region: str
    # The subnet this stack creates, or the existing one it names instead (a VPC allows one ACTIVE per region).
    name: str
    cidr: str
    create: bool


@dataclass(frozen=True)
class ApisSpec:
    project: str


@dataclass(frozen=True)
class RegistrySpec:
    project: str
    region: str
    labels: dict[str, str]
    # The remote repository of each upstream, by host (repository_ids).
    repositories: dict[str, str]


@dataclass(frozen=True)
class CredentialsSpec:
    namespace: str
    labels: dict[str, str]


def repository_ids(settings: StackSettings) -> dict[str, str]:
    """The stack's remote repository of each upstream registry, by host: its own when it sets a prefix."""
    return {host: repository_id(settings.registry.repository_prefix, repository) for host, repository in UPSTREAMS.items()}


def registry_prefix(settings: StackSettings, host: str = images.DOCKER_HUB) -> str | None:
    """Where the stack's Artifact Registry remote repository serves ``host``'s images, if it has one."""
    if not settings.registry.enabled:
        return None
    return f"{settings.region}-docker.pkg.dev/{settings.project}/{repository_ids(settings)[host]}"


def pulled_from(image: str, settings: StackSettings) -> str:
    """An image as the nodes pull it: through the remote repository of its registry when there is one.

    Hosts listed in UPSTREAMS are mirrored, else the image stays as it is.
    """
    host, path = images.split_host(image)
    prefix = registry_prefix(settings, host) if host in UPSTREAMS else None
    return f"{prefix}/{path}" if prefix else image


@dataclass(frozen=True)
class Scheduling:
    """What a GPU pod carries to land on the selected A4 capacity."""

    mode: str
    node_selector: dict[str, str]
    tolerations: list[dict[str, str]] = field(default_factory=list)
    # Spot caps a pod's termination grace, including a pod a ComputeClass places on Spot.
    may_run_on_spot: bool = False


def _reservation_selector(capacity: CapacitySettings) -> dict[str, str]:
    reservation = capacity.reservation
    if reservation is None:
        raise ValueError("capacity.reservation is required for reservation mode")
    # Autopilot consumes only specific reservations.
    selector = {gke.RESERVATION_NAME_LABEL: reservation.name, gke.RESERVATION_AFFINITY_LABEL: "specific"}
    if reservation.project:
        selector[gke.RESERVATION_PROJECT_LABEL] = reservation.project
    return selector


def scheduling(settings: StackSettings) -> Scheduling:
    """The node selectors and tolerations of a GPU pod for the stack's capacity mode."""
    capacity = settings.capacity
    if capacity.mode == "fallback":
        # The ComputeClass names the machine, GPUs and zone for every step;
        # extra hard selectors would fight its fallback.
        return Scheduling(capacity.mode, {gke.COMPUTE_CLASS_LABEL: FALLBACK_CLASS}, may_run_on_spot="spot" in capacity.steps)
    selector = {gke.ACCELERATOR_LABEL: GPU_TYPE, gke.GPU_DRIVER_LABEL: "latest", gke.ZONE_LABEL: settings.zone}
    tolerations: list[dict[str, str]] = []
    if capacity.mode == "spot":
        selector[gke.SPOT_LABEL] = "true"
        tolerations.append({"key": gke.SPOT_LABEL, "operator": "Equal", "value": "true", "effect": "NoSchedule"})
    elif capacity.mode == "flex-start":
        selector[gke.FLEX_START_LABEL] = "true"
        selector[gke.MAX_RUN_DURATION_LABEL] = str(capacity.flex_start.max_run_hours * 3600)
    elif capacity.mode == "reservation":
        selector.update(_reservation_selector(capacity))
    else:
        assert_never(capacity.mode)
    return Scheduling(capacity.mode, selector, tolerations, may_run_on_spot=capacity.mode == "spot")


@dataclass(frozen=True)
class Drain:
    """How a replica stops: a preStop pause, then vLLM's shutdown timeout, within the pod's grace."""

    pre_stop_seconds: int
    shutdown_timeout_seconds: int
    grace_seconds: int


def drain(settings: DrainSettings, placement: Scheduling) -> Drain:
    """The configured drain; on Spot within its grace (the settings refuse a configured one that cannot fit)."""
    if not placement.may_run_on_spot:
        return Drain(settings.pre_stop_seconds, settings.shutdown_timeout_seconds, settings.grace_seconds())
    return Drain(*settings.on_spot(), gke.SPOT_GRACE_SECONDS)


def cache_id(model: ModelSettings, cache: CacheSettings) -> str:
    """A Kubernetes name for one cache: the model revision on a disk of one size and throughput.

    Changing any of them makes a new cache (a disk can neither shrink nor change
    class in place); nothing else does.
    """
    # Short enough that "model-cache-<id>-writer" stays within 63 characters.
    readable = re.sub(r"[^a-z0-9]+", "-", model.id.split("/")[-1].lower())[:32].strip("-")
    key = f"{model.id}@{model.revision}/{cache.size_gi}Gi/{cache.throughput_mibps}Mi"
    digest = hashlib.sha256(key.encode()).hexdigest()[:8]
    return f"{readable}-{digest}"


@dataclass(frozen=True)
class CacheMount:
    """How a replica reads the weights: one claim, mounted read-only at ``folder``."""

    claim: str
    folder: str
    model_path: str


@dataclass(frozen=True)
class CacheSpec:
    key: str
    names: CacheNames
    namespace: str
    zone: str
    labels: dict[str, str]
    model_id: str
    revision: str
    size_gi: int
    throughput_mibps: int
    download_method: str
    download_machine_family: str
    download_retries: int
    download_deadline_minutes: int
    download_image: str
    # A production stack protects the volume replicas read and its snapshot: a destroy stops at them.
    protect: bool = False

    @property
    def mount(self) -> CacheMount:
        return CacheMount(self.names.reader, CACHE_FOLDER, f"{CACHE_FOLDER}/{self.key}")


# Where replicas mount the compile cache; vLLM keys its entries below it (docs/cold-start.md).
COMPILE_CACHE_FOLDER = "/compile-cache"


@dataclass(frozen=True)
class CompileCacheMount:
    """How a replica reaches the shared compile cache: a bucket through Cloud Storage FUSE, as its own identity."""

    bucket: str
    folder: str
    service_account: str


@dataclass(frozen=True)
class CompileCacheSpec:
    project: str
    region: str
    namespace: str
    labels: dict[str, str]
    # The Google account the replicas' Kubernetes service account acts as (Workload Identity).
    account_id: str
    mount: CompileCacheMount


@dataclass(frozen=True)
class Reservation:
    """The specific reservation pods consume; ``project`` when it is shared from another project."""

    name: str
    project: str | None


@dataclass(frozen=True)
class FutureReservation:
    """A calendar-mode future reservation the stack submits."""

    name: str
    start_time: str
    end_time: str
    nodes: int


@dataclass(frozen=True)
class CapacitySpec:
    project: str
    zone: str
    labels: dict[str, str]
    mode: CapacityMode
    # The capacity modes tried, in order.
    steps: tuple[CapacityMode, ...]
    flex_start_max_run_hours: int
    reservation: Reservation | None
    future_reservation: FutureReservation | None
    scheduling: Scheduling


def capacity_spec(settings: StackSettings, labels: dict[str, str], placement: Scheduling) -> CapacitySpec:
    capacity = settings.capacity
    reservation = capacity.reservation
    created = reservation.create if reservation else None
    return CapacitySpec(
        settings.project,
        settings.zone,
        labels,
        capacity.mode,
        capacity.steps,
        capacity.flex_start.max_run_hours,
        Reservation(reservation.name, reservation.project) if reservation else None,
        FutureReservation(created.name, created.start_time, created.end_time, created.nodes) if created else None,
        placement,
    )


@dataclass(frozen=True)
class Rollout:
    """How an update replaces the replicas, and how many full cold starts it may take."""

    max_surge: int
    max_unavailable: int
    rounds: int


def rollout(settings: StackSettings) -> Rollout:
    """Rounds of ``rollout.parallelism`` replicas, keeping one serving unless the stack says otherwise.

    The fewest replicas a rollout may meet decide how many may go at once: the node
    count, or with autoscaling the fewest replicas that serve at all.
    """
    parallelism = settings.rollout.parallelism
    if not settings.rollout.keep_serving:
        surge, unavailable = 0, parallelism
    elif settings.surge_replicas:
        # One replica: a new one starts on a second node before the old stops (one extra node for a cold start).
        surge, unavailable = settings.surge_replicas, 0
    else:
        surge, unavailable = 0, min(parallelism, settings.fewest_replicas - 1)
    return Rollout(surge, unavailable, math.ceil(max(settings.max_replicas, 1) / (surge + unavailable)))


@dataclass(frozen=True)
class Embedding:
    """An embedding model's engine: vLLM's pooling runner, answering each input with one vector of ``length`` numbers."""

    length: int


@dataclass(frozen=True)
class EngineProfile:
    """What the replicas read of the serving section: the engine's flags, environment and resources."""

    port: int
    tensor_parallel_size: int
    data_parallel_size: int
    expert_parallel: bool
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    kv_cache_dtype: str
    gpu_memory_utilization: float
    enable_prefix_caching: bool
    enable_chunked_prefill: bool
    attention_backend: str | None
    optimization_level: int
    mtp_tokens: int
    # None where the image's release ignores --mamba-cache-mode (0.33.0: caching follows prefix caching; docs/vllm.md).
    mamba_cache_mode: str | None
    mamba_block_size: int | None
    extra_args: tuple[str, ...]
    env: dict[str, str]
    cold_start_minutes: int
    cpu: str
    memory: str
    # An embedding model (model.task embed); None for a model that generates.
    embedding: Embedding | None = None


def engine_profile(serving: ServingProfile, model: ModelFacts, max_num_seqs: int, embedding: Embedding | None = None) -> EngineProfile:
    """The engine's flags for ``model``: its parallel shape, only the flags its architecture takes (stacks/engine.py),
    and ``max_num_seqs``, the stack's, from the memory budget when serving leaves it unset; an embedding model takes
    none of the generation flags (stacks/settings.py refuses them set)."""
    shape = engine_shape(model, serving)
    generates = embedding is None
    return EngineProfile(
        port=serving.port,
        tensor_parallel_size=shape.tensor_parallel_size,
        data_parallel_size=shape.data_parallel_size,
        expert_parallel=shape.expert_parallel,
        max_model_len=serving.max_model_len,
        max_num_batched_tokens=serving.max_num_batched_tokens,
        max_num_seqs=max_num_seqs,
        kv_cache_dtype=serving.kv_cache_dtype,
        gpu_memory_utilization=serving.gpu_memory_utilization,
        enable_prefix_caching=serving.enable_prefix_caching,
        enable_chunked_prefill=serving.enable_chunked_prefill,
        attention_backend=serving.attention_backend,
        optimization_level=serving.optimization_level,
        mtp_tokens=shape.mtp_tokens if generates else 0,
        mamba_cache_mode=shape.mamba_cache_mode if generates and serving.facts.takes("--mamba-cache-mode") else None,
        mamba_block_size=shape.mamba_block_size if generates else None,
        extra_args=serving.extra_args,
        env=dict(serving.env),
        cold_start_minutes=serving.cold_start_minutes,
        cpu=serving.cpu,
        memory=serving.memory,
        embedding=embedding,
    )


@dataclass(frozen=True)
class ReplicasSpec:
    name: str
    namespace: str
    labels: dict[str, str]
    selector: dict[str, str]
    replicas: int
    image: str
    # The autoscaler owns the replica count; `replicas` is only the count at creation.
    autoscaled: bool
    rollout: Rollout
    profile: EngineProfile
    # The Hugging Face id (downloaded at start without a cache) and the name clients send.
    model_id: str
    served_name: str
    scheduling: Scheduling
    drain: Drain
    cache: CacheMount | None
    compile_cache: CompileCacheMount | None = None

    @property
    def url(self) -> str:
        return f"http://{self.name}.{self.namespace}.svc.cluster.local:{self.profile.port}/v1"


@dataclass(frozen=True)
class BatchWindow:
    """A cron window in which the replicas are kept up whatever the queue."""

    start: str
    end: str
    timezone: str
    replicas: int


@dataclass(frozen=True)
class AutoscalingSpec:
    project: str
    # KEDA's Google account: `<cluster>-keda`, hashed past 30 characters (facts/naming.py); ids are unique per project,
    # so a fixed one failed the second stack of a project.
    account_id: str
    namespace: str
    labels: dict[str, str]
    deployment: str
    requests_per_replica: int
    idle_minutes: int
    poll_seconds: int
    batch_windows: tuple[BatchWindow, ...]
    keda_version: str
    min_replicas: int
    max_replicas: int
    # KEDA's registry (ghcr.io) as the nodes reach it.
    image_registry: str
    # Time a new replica may take to become Ready (serving.coldStartMinutes).
    cold_start_seconds: int
    # The batch bucket whose waiting inputs wake the replicas, when the stack runs batches.
    batch_bucket: str | None = None
    # With several models: the served name whose requests this scaler counts; None counts the namespace's.
    model_name: str | None = None


@dataclass(frozen=True)
class InferencePoolSpec:
    """One model's InferencePool and endpoint picker: a chart release named as the model's replica set."""

    name: str
    # What a request's body names as its `model`; the route matches it with several models.
    served_name: str
    # The labels of the model's pods.
    selector: dict[str, str]


@dataclass(frozen=True)
class GatewaySpec:
    namespace: str
    labels: dict[str, str]
    exposure: str
    install_crds: str
    chart_version: str
    backend_timeout_seconds: int
    endpoint_picker_cpu: str
    endpoint_picker_memory: str
    endpoint_picker_replicas: int
    programmed_timeout_minutes: int
    # A pool per model that may serve. None (scaled to zero): no endpoint picker and no route, but the Gateway
    # and its address stay.
    pools: tuple[InferencePoolSpec, ...]
    port: int
    cluster_minor: int
    # The endpoint picker's registry (registry.k8s.io) as the nodes reach it.
    image_registry: str = "registry.k8s.io"
    # With several models: the route picks a pool by the model a request's body names.
    by_model: bool = False


@dataclass(frozen=True)
class BenchmarkSpec:
    namespace: str
    labels: dict[str, str]
    run: int
    clients_per_node: int
    concurrency_per_client: int
    prompts_per_client: int
    machine_type: str
    # The request shape, as the workload section gives it.
    input_tokens: int
    output_tokens: int
    range_ratio: float
    # The name the server answers to, and the model whose tokenizer builds the prompts.
    served_name: str
    model_id: str
    nodes: int
    image: str
    # The replicas' zone: clients elsewhere would cross zones, skew latency and bill egress.
    zone: str


def benchmark_spec(settings: StackSettings, labels: dict[str, str], image: str) -> BenchmarkSpec:
    bench, workload = settings.benchmark, settings.workload
    return BenchmarkSpec(
        settings.cluster.namespace,
        labels,
        bench.run,
        bench.clients_per_node,
        bench.concurrency_per_client,
        bench.prompts_per_client,
        bench.machine_type,
        workload.input_tokens,
        workload.output_tokens,
        workload.range_ratio,
        settings.model.public_name,
        settings.model.id,
        settings.nodes,
        image,
        settings.zone,
    )


@dataclass(frozen=True)
class BatchSpec:
    project: str
    # The runner's Google account: `<cluster>-batch`, hashed past 30 characters (facts/naming.py).
    account_id: str
    region: str
    namespace: str
    labels: dict[str, str]
    bucket: str
    # The remote repository of PyPI the runner installs its packages from.
    python_repository: str
    # Days a finished input stays before the bucket's lifecycle rule deletes it.
    finished_retention_days: int
    # One worker's CPU and memory; a pod runs `workers` of them.
    runner_cpu: str
    runner_memory: str
    # The runner's image (the cache's download image) as the nodes pull it.
    image: str
    # The replicas the runner sends to, reads the status of, and sizes its concurrency to.
    deployment: str
    serving_url: str
    served_model: str
    # The model's task: which urls a batch line may name.
    model_task: str
    concurrency_per_replica: int
    max_replicas: int
    workers: int
    poll_seconds: int
    # KEDA's cooldown plus a poll: how long the replicas stay up after the last batch (the report's idle tail).
    idle_tail_seconds: int
    # For the batch's report: what a replica-hour costs and what the stack estimates per million tokens.
    price_per_replica_hour: float | None
    estimated_usd_per_million_tokens: float | None
    # The reservation under the replicas: its bill per hour (None off one, or of unknown size) and whether it holds every
    # replica (mode reservation), so that their hours add nothing to a batch's cost.
    committed_usd_per_hour: float | None
    reservation_holds_every_replica: bool
    # The stack's expected cold start, phase by phase: a batch that wakes the stack reports against it.
    expected_cold_start: ColdStart | None
    # A production stack protects the bucket: a destroy stops at it.
    protect: bool = False
    # A stack of several models: every model whose batch is on, each line sent to the one its body.model names.
    # Empty in a one-model stack, whose runner reads the one model's fields above.
    models: tuple[BatchModel, ...] = ()

    @property
    def deployments(self) -> tuple[str, ...]:
        """The replica sets the runner reads: each model's, or the one model's."""
        return tuple(model.deployment for model in self.models) or (self.deployment,)


@dataclass(frozen=True, kw_only=True)
class BatchModel:
    """One model's entry in the runner's table (workloads/batch/layout.py, ENV_MODELS)."""

    served_name: str
    url: str
    task: str
    deployment: str
    requests_per_replica: int
    expected_cold_start: ColdStart | None

    def as_env(self) -> dict[str, Any]:
        phases = None if self.expected_cold_start is None else {"phases": self.expected_cold_start.as_output()["phases"]}
        return {
            "name": self.served_name,
            "url": self.url,
            "task": self.task,
            "deployment": self.deployment,
            "requestsPerReplica": self.requests_per_replica,
            "expectedColdStart": phases,
        }


def several_models_batch(batches: list[BatchSpec]) -> BatchSpec | None:
    """The one runner of a stack of several models: the shared bucket and runner of the first model whose batch is
    on, a table of every such model, and workers for all their replicas; None when no model's batch is on.
    The estimate per million tokens is one model's, so a mixed batch's report leaves it out."""
    if not batches:
        return None
    models = tuple(
        BatchModel(
            served_name=batch.served_model,
            url=batch.serving_url,
            task=batch.model_task,
            deployment=batch.deployment,
            requests_per_replica=batch.concurrency_per_replica,
            expected_cold_start=batch.expected_cold_start,
        )
        for batch in batches
    )
    replicas = sum(batch.max_replicas for batch in batches)
    return replace(
        batches[0],
        models=models,
        max_replicas=replicas,
        workers=runner_workers(replicas),
        estimated_usd_per_million_tokens=None,
        expected_cold_start=None,
    )


@dataclass(frozen=True)
class WatchedModel:
    """One model of a stack of several, as its charts and alerts filter it: its Deployment and its served name
    (vLLM labels each of its metrics model_name with it: vllm/v1/metrics/loggers.py, PrometheusStatLogger)."""

    deployment: str
    served_name: str
    expected_tokens_per_replica: int | None
    cold_start_minutes: int
    alerting: bool


@dataclass(frozen=True)
class ObservabilitySpec:
    project: str
    stack: str
    namespace: str
    labels: dict[str, str]
    deployment: str
    # How long a condition holds before an alert opens, and who hears of it.
    alert_minutes: int
    notification_channels: tuple[str, ...]
    # Where the alerts open.
    waiting_requests: int
    kv_cache_usage: float
    ttft_p99_seconds: float
    throughput_fraction: float
    gateway: bool
    # What one Ready replica makes at the reference load, from the stack's own estimate, when a reference figure applies.
    expected_tokens_per_replica: int | None
    # Time a replica may take to become Ready (serving.coldStartMinutes).
    cold_start_minutes: int
    # Alerts are registered only while the stack may serve: none fire for a stack scaled to zero.
    alerting: bool
    # The batch runner's progress gets its own charts.
    batch: bool = False
    # With several models: each one's charts and alerts, filtered by model; empty for a one-model stack.
    models: tuple[WatchedModel, ...] = ()


def watched_model(spec: ObservabilitySpec, replicas: ReplicasSpec) -> WatchedModel:
    return WatchedModel(spec.deployment, replicas.served_name, spec.expected_tokens_per_replica, spec.cold_start_minutes, spec.alerting)


@dataclass(frozen=True)
class ProviderSpec:
    """The Google provider's defaults: where the stack's Google resources go."""

    project: str
    region: str
    zone: str


@dataclass(frozen=True)
class OutputsSpec:
    """The stack outputs that restate its configuration for operators and scripts."""

    region: str
    # The vLLM release the replicas run, whose facts the flags and metric names were checked against.
    vllm_version: str
    serving: dict[str, str | int]


@dataclass(frozen=True)
class ServedModel:
    """One model's replica set and what it alone has: its cache, its estimates and its engine's memory."""

    name: str
    model: str
    replicas: ReplicasSpec
    cache: CacheSpec | None
    estimate: Estimate
    engine_memory: MemoryBudget
    nodes: int
    gpus: int
    # Its ScaledObject, when the stack autoscales.
    autoscaling: AutoscalingSpec | None = None

    def output(self) -> dict[str, Any]:
        """What the stack's serving output says of the model: what it serves, as what, where and on how much."""
        return {
            "model": self.model,
            "servedName": self.replicas.served_name,
            "serviceUrl": self.replicas.url,
            "nodes": self.nodes,
            "gpus": self.gpus,
        }


@dataclass(frozen=True)
class StackPlan:
    labels: dict[str, str]
    provider: ProviderSpec
    outputs: OutputsSpec
    scaled_to_zero: bool
    # Production stacks protect what holds state (cluster, network, cache): `pulumi destroy` stops before deleting anything.
    protect_state: bool
    # Throughput and cost, on this plan's decision of whether the stack serves, and what they were computed from.
    estimate: Estimate
    # One GPU's memory under one engine as vLLM will size it (facts/engine_memory.py).
    engine_memory: MemoryBudget
    costing: Costing
    apis: ApisSpec
    network: NetworkSpec
    cluster: ClusterSpec
    # Remote repositories of the upstream registries, when the stack pulls through them.
    registry: RegistrySpec | None
    credentials: CredentialsSpec
    # Gateway routing's proxy-only subnet.
    proxy_subnet: ProxySubnetSpec | None
    capacity: CapacitySpec
    replicas: ReplicasSpec
    cache: CacheSpec | None
    compile_cache: CompileCacheSpec | None
    gateway: GatewaySpec | None
    benchmark: BenchmarkSpec | None
    autoscaling: AutoscalingSpec | None
    observability: ObservabilitySpec | None
    # Every model's replica set: the one of a one-model stack, or one per entry of llm:models.
    served: tuple[ServedModel, ...] = ()
    batch: BatchSpec | None = None
    # With several models: their figures in all, what they share counted once. None for a one-model stack.
    total: Total | None = None


def embedding(model: ModelSettings) -> Embedding | None:
    """An embedding model's engine, its vector as long as the model's hidden size (its pooler returns a hidden state)."""
    return Embedding(length=model.facts.hidden_size) if model.serves == "embed" else None


def unmeasured_reason(settings: StackSettings) -> str | None:
    """Why no reference figure applies to the stack, or None when one does."""
    if settings.model.serves == "embed":
        return f"model {settings.model.id} is an embedding model (model.task embed): it generates no tokens, and no vectors/s were measured"
    if settings.model.id != ModelSettings().id:
        return f"model {settings.model.id} was not measured"
    if settings.workload != WorkloadSettings():
        return "workload differs from the reference (input 1024, output 512, range 0.5)"
    engine = settings.serving.model_dump(exclude={"image", "cpu", "memory", "cold_start_minutes", "port"})
    if engine != ServingProfile().model_dump(exclude={"image", "cpu", "memory", "cold_start_minutes", "port"}):
        return "serving profile differs from the reference flags"
    return None


def commitment(settings: StackSettings) -> Commitment | None:
    """The reservation the replicas may run on, billed whether or not they do; None when no capacity step is one,
    or when a fallback names one of unstated size (nothing to assume its size from)."""
    capacity = settings.capacity
    reservation = capacity.reservation
    if reservation is None or "reservation" not in capacity.steps:
        return None
    price = price_per_node_hour(capacity.price_per_node_hour, "reservation")
    assert price is not None, "the reservation has a list price"
    first = capacity.steps[0] == "reservation"
    created = reservation.create
    if created is not None:
        return Commitment(
            reservation=reservation.name,
            nodes=created.nodes,
            price_per_node_hour=price,
            source="created calendar-mode reservation (capacity.reservation.create): billed from startTime to endTime, "
            "and once submitted it cannot be cancelled",
            first=first,
            start_time=created.start_time,
            end_time=created.end_time,
            hours=days_between(created.start_time, created.end_time) * 24,
        )
    if reservation.nodes is not None:
        return Commitment(reservation.name, reservation.nodes, price, "capacity.reservation.nodes, as the stack states it", first)
    if capacity.mode != "reservation":
        return None
    assumed = settings.max_replicas or None
    source = (
        f"assumed to hold the stack's {assumed} replicas: the render cannot see the reservation's size; set capacity.reservation.nodes"
        if assumed
        else "unknown: the render cannot see the reservation's size and the stack runs no replica; set capacity.reservation.nodes"
    )
    return Commitment(reservation.name, assumed, price, source)


def costing(settings: StackSettings) -> Costing:
    """What the estimates read of the stack: its replica counts, prices and whether the reference applies."""
    cache, gateway, scaling = settings.cache, settings.gateway, settings.autoscaling
    return Costing(
        nodes=settings.nodes,
        max_replicas=settings.max_replicas,
        min_replicas=scaling.min_replicas if scaling.enabled else None,
        price_per_node_hour=price_per_node_hour(settings.capacity.price_per_node_hour, settings.capacity.steps[0]),
        cache=CacheDisk(
            cache.size_gi,
            cache.throughput_mibps,
            cache.price_per_gib_month,
            cache.price_per_mibps_month,
            cache.snapshot_price_per_gib_month,
            loaded_bytes(settings.model.facts, settings.serving),
        )
        if cache.enabled
        else None,
        gateway=GatewayPods(
            gateway.endpoint_picker_cpu,
            gateway.endpoint_picker_memory,
            gateway.endpoint_picker_replicas,
            gateway.price_per_vcpu_hour,
            gateway.price_per_gib_hour,
            gateway.exposure,
            gateway.load_balancer_price_per_hour,
        )
        if settings.routing == "gateway"
        else None,
        unmeasured=unmeasured_reason(settings),
        tokens_per_request=settings.workload.input_tokens + settings.workload.output_tokens,
        commitment=commitment(settings),
        generates=settings.model.serves != "embed",
    )


def idle_tail_seconds(settings: StackSettings) -> int:
    """KEDA's cooldown plus a poll: how long the replicas stay up after the last request of a batch."""
    return settings.autoscaling.idle_minutes * 60 + settings.autoscaling.poll_seconds


def batch_pace(settings: StackSettings, costs: Costing, cold_start: ColdStart | None) -> BatchPace | None:
    """What a batch plan reads: every replica the stack may run, at the stack's own estimate; None unless it autoscales."""
    replicas = settings.max_replicas
    if not settings.autoscaling.enabled or replicas == 0 or not costs.generates:
        return None
    tokens, basis = throughput(costs, replicas)
    wake = cold_start.seconds(warm=False) if cold_start is not None else None
    commitment = costs.commitment
    return BatchPace(
        replicas=replicas,
        tokens_per_second=tokens / replicas,
        tokens_per_request=costs.tokens_per_request,
        basis=basis,
        wake_seconds=wake,
        wake_basis="estimates.coldStart to every replica Ready, compile cache cold (once the bucket holds it: minutes.warmCompileCache)"
        if wake is not None
        else "no figure: a phase of estimates.coldStart has none",
        idle_tail_seconds=idle_tail_seconds(settings),
        price_per_node_hour=costs.price_per_node_hour,
        committed_replicas=min(replicas, costs.committed_nodes),
        committed_per_hour=commitment.cost_per_hour if commitment is not None else None,
    )


def plan_stack(settings: StackSettings, stack: str) -> StackPlan:
    """The specs of every component the stack registers; None for those it does not.

    With several models each is planned as the one-model stack it is (stacks/settings.py, each_model), its replica
    set named by its short name; the shared components are the same in each plan, and are taken from the first, but
    the gateway routes to every model's pool."""
    if settings.models is None:
        return _plan(settings, stack, REPLICAS)
    plans = [_plan(one, stack, model_short_name(one.model.id)) for one in settings.each_model()]
    served = tuple(
        replace(model, autoscaling=replace(model.autoscaling, model_name=model.replicas.served_name) if model.autoscaling else None)
        for plan in plans
        for model in plan.served
    )
    first = plans[0]
    watched = tuple(watched_model(plan.observability, plan.replicas) for plan in plans if plan.observability)
    batch = several_models_batch([plan.batch for plan in plans if plan.batch is not None])
    return replace(
        first,
        batch=batch,
        served=served,
        outputs=replace(first.outputs, serving=models_output(settings, served)),
        scaled_to_zero=all(plan.scaled_to_zero for plan in plans),
        total=stack_total(
            [(model.name, plan.costing, served_nodes(plan.costing, plan.scaled_to_zero)) for plan, model in zip(plans, served, strict=True)]
        ),
        observability=replace(
            first.observability, models=watched, alerting=any(watch.alerting for watch in watched), batch=batch is not None
        )
        if first.observability
        else None,
        gateway=replace(first.gateway, pools=tuple(pool for plan in plans if plan.gateway for pool in plan.gateway.pools), by_model=True)
        if first.gateway
        else None,
    )


def models_output(settings: StackSettings, served: tuple[ServedModel, ...]) -> dict[str, Any]:
    """The serving output of a stack of several models: what is shared once, then each model by its short name."""
    return {
        "capacity": settings.capacity.mode,
        "routing": settings.routing,
        "image": settings.serving.image,
        "models": {model.name: model.output() for model in served},
    }


def _plan(settings: StackSettings, stack: str, name: str) -> StackPlan:
    """The plan of a one-model stack whose replica set is ``name``."""
    labels = stack_labels(stack, settings.labels)
    namespace = settings.cluster.namespace
    # By config: an autoscaled stack may sit at zero replicas, but keeps what serving needs.
    scaled_to_zero = settings.max_replicas == 0
    image = pulled_from(settings.serving.image, settings)
    costs = costing(settings)
    # The budget decides maxNumSeqs when serving leaves it unset: computed once, read by the engine's flags and the plan.
    budget = settings.memory_budget
    wake = Wake(
        replicas=settings.max_replicas,
        first_step=settings.capacity.steps[0],
        image_ref=image,
        region=settings.region,
        cache=costs.cache,
        compile_cache=compile_cache_enabled(settings.serving.env),
        price_per_node_hour=costs.price_per_node_hour,
        committed_replicas=min(settings.max_replicas, costs.committed_nodes),
    )
    cold_start = expected(wake)
    pace = batch_pace(settings, costs, cold_start)
    figures = replace(
        estimate(costs, scaled_to_zero=scaled_to_zero, cold_start=cold_start),
        batch=BatchPlan(RENDERED_LINES, pace) if pace is not None else None,
    )
    serving_nodes = settings.nodes or settings.max_replicas
    gpus = settings.nodes * settings.serving.data_parallel_size * settings.serving.tensor_parallel_size
    placement = scheduling(settings)
    bucket = batch_bucket_name(settings.project, labels["stack"]) if settings.batch.enabled else None
    cache: CacheSpec | None = None
    if settings.cache.enabled:
        key = cache_id(settings.model, settings.cache)
        disk = settings.cache
        cache = CacheSpec(
            key,
            cache_names(key),
            namespace,
            settings.zone,
            labels,
            settings.model.id,
            settings.model.revision,
            disk.size_gi,
            disk.throughput_mibps,
            disk.download_method,
            disk.download_machine_family,
            disk.download_retries,
            download_deadline_minutes(settings.model.facts, disk),
            pulled_from(disk.download_image, settings),
            protect=settings.production,
        )
    compile_cache = (
        CompileCacheSpec(
            project=settings.project,
            region=settings.region,
            namespace=namespace,
            labels=labels,
            account_id=account_id(f"{settings.cluster.name}-compile"),
            mount=CompileCacheMount(compile_cache_bucket(settings.project, settings.cluster.name), COMPILE_CACHE_FOLDER, REPLICAS),
        )
        if wake.compile_cache
        else None
    )
    autoscaling = (
        AutoscalingSpec(
            project=settings.project,
            account_id=account_id(f"{settings.cluster.name}-keda"),
            namespace=namespace,
            labels=labels,
            deployment=name,
            requests_per_replica=settings.autoscaling.requests_per_replica,
            idle_minutes=settings.autoscaling.idle_minutes,
            poll_seconds=settings.autoscaling.poll_seconds,
            batch_windows=tuple(BatchWindow(w.start, w.end, w.timezone, w.replicas) for w in settings.autoscaling.batch_windows),
            keda_version=settings.autoscaling.keda_version,
            min_replicas=settings.autoscaling.min_replicas,
            max_replicas=settings.max_replicas,
            image_registry=registry_prefix(settings, "ghcr.io") or "ghcr.io",
            cold_start_seconds=settings.serving.cold_start_minutes * 60,
            batch_bucket=bucket,
        )
        if settings.autoscaling.enabled
        else None
    )
    replicas = ReplicasSpec(
        name=name,
        namespace=namespace,
        labels=labels,
        selector=selector_labels(stack, name),
        replicas=settings.nodes,
        image=image,
        autoscaled=autoscaling is not None,
        rollout=rollout(settings),
        profile=engine_profile(settings.serving, settings.model.facts, budget.max_num_seqs, embedding(settings.model)),
        model_id=settings.model.id,
        served_name=settings.model.public_name,
        scheduling=placement,
        drain=drain(settings.drain, placement),
        cache=cache.mount if cache else None,
        compile_cache=compile_cache.mount if compile_cache else None,
    )
    gateway_settings = settings.gateway
    gateway = (
        GatewaySpec(
            namespace,
            labels,
            gateway_settings.exposure,
            gateway_settings.install_crds,
            gateway_settings.chart_version,
            gateway_settings.backend_timeout_seconds,
            gateway_settings.endpoint_picker_cpu,
            gateway_settings.endpoint_picker_memory,
            gateway_settings.endpoint_picker_replicas,
            gateway_settings.programmed_timeout_minutes,
            () if scaled_to_zero else (InferencePoolSpec(name, replicas.served_name, replicas.selector),),
            settings.serving.port,
            settings.cluster.minor,
            registry_prefix(settings, "registry.k8s.io") or "registry.k8s.io",
        )
        if settings.routing == "gateway"
        else None
    )
    benchmark = (
        benchmark_spec(settings, labels, pulled_from(settings.benchmark.image, settings))
        if settings.benchmark.enabled and settings.nodes > 0
        else None
    )
    batch = (
        BatchSpec(
            project=settings.project,
            account_id=account_id(f"{settings.cluster.name}-batch"),
            region=settings.region,
            namespace=namespace,
            labels=labels,
            bucket=bucket,
            python_repository=repository_id(settings.registry.repository_prefix, PYTHON_REPOSITORY),
            finished_retention_days=settings.batch.finished_retention_days,
            runner_cpu=settings.batch.runner_cpu,
            runner_memory=settings.batch.runner_memory,
            image=pulled_from(settings.cache.download_image, settings),
            deployment=name,
            serving_url=replicas.url,
            served_model=settings.model.public_name,
            model_task=settings.model.serves,
            # Requests the autoscaler counts on per replica: sending that many per Ready replica
            # keeps each busy without piling a queue on the first one Ready.
            concurrency_per_replica=settings.autoscaling.requests_per_replica,
            max_replicas=settings.max_replicas,
            workers=runner_workers(settings.max_replicas),
            poll_seconds=settings.autoscaling.poll_seconds,
            idle_tail_seconds=idle_tail_seconds(settings),
            price_per_replica_hour=costs.price_per_node_hour,
            estimated_usd_per_million_tokens=figures.dollars_per_million_tokens,
            committed_usd_per_hour=costs.commitment.cost_per_hour if costs.commitment is not None else None,
            reservation_holds_every_replica=settings.capacity.mode == "reservation",
            expected_cold_start=figures.cold_start,
            protect=settings.production,
        )
        if bucket is not None
        else None
    )
    return StackPlan(
        labels=labels,
        provider=ProviderSpec(settings.project, settings.region, settings.zone),
        outputs=OutputsSpec(
            region=settings.region,
            vllm_version=settings.serving.release,
            serving={
                "nodes": settings.nodes,
                "gpus": gpus,
                "capacity": settings.capacity.mode,
                "routing": settings.routing,
                "model": f"{settings.model.id}@{settings.model.revision}",
                "image": settings.serving.image,
            },
        ),
        scaled_to_zero=scaled_to_zero,
        protect_state=settings.production,
        estimate=figures,
        engine_memory=budget,
        costing=costs,
        apis=ApisSpec(settings.project),
        registry=RegistrySpec(settings.project, settings.region, labels, repository_ids(settings)) if settings.registry.enabled else None,
        credentials=CredentialsSpec(namespace, labels),
        network=NetworkSpec(
            settings.project,
            settings.region,
            settings.network.name,
            settings.network.node_cidr,
            settings.network.pod_cidr,
            settings.network.service_cidr,
            nat=settings.cluster.private_nodes,
            protect=settings.production,
        ),
        cluster=ClusterSpec(
            project=settings.project,
            region=settings.region,
            name=settings.cluster.name,
            node_account=account_id(f"{settings.cluster.name}-nodes"),
            release_channel=settings.cluster.release_channel,
            version=settings.cluster.version,
            deletion_protection=settings.cluster.deletion_protection,
            namespace=namespace,
            maintenance=maintenance(settings.cluster.maintenance),
            private_nodes=settings.cluster.private_nodes,
            authorized_networks=settings.cluster.authorized_networks,
            labels=labels,
            open_control_plane=settings.allow_open_control_plane,
            protect=settings.production,
        ),
        proxy_subnet=ProxySubnetSpec(
            settings.project,
            settings.region,
            gateway_settings.existing_proxy_subnet or f"{settings.network.name}-proxy-only",
            gateway_settings.proxy_subnet_cidr,
            create=gateway_settings.existing_proxy_subnet is None,
        )
        if gateway is not None
        else None,
        capacity=capacity_spec(settings, labels, placement),
        replicas=replicas,
        cache=cache,
        compile_cache=compile_cache,
        gateway=gateway,
        benchmark=benchmark,
        autoscaling=autoscaling,
        observability=ObservabilitySpec(
            project=settings.project,
            stack=stack,
            namespace=namespace,
            labels=labels,
            deployment=name,
            alert_minutes=settings.observability.minutes,
            notification_channels=settings.observability.notification_channels,
            waiting_requests=settings.observability.waiting_requests,
            kv_cache_usage=settings.observability.kv_cache_usage,
            ttft_p99_seconds=settings.observability.ttft_p99_seconds,
            throughput_fraction=settings.observability.throughput_fraction,
            gateway=gateway is not None,
            # Measured figures only: an estimate outside the reference is too rough to alert on.
            expected_tokens_per_replica=round(figures.tokens_per_second / serving_nodes)
            if figures.tokens_per_second and costs.unmeasured is None
            else None,
            cold_start_minutes=settings.serving.cold_start_minutes,
            alerting=not scaled_to_zero,
            batch=batch is not None,
        )
        if settings.observability.enabled
        else None,
        batch=batch,
        served=(
            ServedModel(
                name=name,
                model=f"{settings.model.id}@{settings.model.revision}",
                replicas=replicas,
                cache=cache,
                estimate=figures,
                engine_memory=settings.memory_budget,
                nodes=settings.nodes,
                gpus=gpus,
                autoscaling=autoscaling,
            ),
        ),
    )
