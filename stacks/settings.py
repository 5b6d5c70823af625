"""The stack configuration: every knob of the program, typed; the root section and the rules across sections.

Defaults reproduce the measured reference deployment (docs/reference.md):
Qwen 3.5 27B FP8 on A4 nodes, one vLLM pod per node running data parallel 8.
Keys are camelCase, exactly as written in ``Pulumi.<stack>.yaml``. Each section
is its own module beside this one.
"""

from __future__ import annotations

import ipaddress
import math
import re
from typing import Annotated, Literal

from pydantic import BaseModel, Field, PrivateAttr, ValidationError, field_validator, model_validator

# Pure arithmetic the plan also uses to size the runner: one place for how many workers a pod runs.
from facts.batch_sizing import runner_workers
from facts.engine_memory import MemoryBudget
from facts.gcp import a4_zones
from facts.gke import A4_MACHINE_TYPE, GENERAL_PURPOSE_MAX_CPU, GENERAL_PURPOSE_MAX_MEMORY, SPOT_GRACE_SECONDS
from facts.kubernetes import quantity
from facts.naming import KEDA_NAMESPACE, PROGRAM_LABELS, model_short_name
from facts.vllm import SHUTDOWN_TEARDOWN_SECONDS, TTFT_HISTOGRAM
from stacks import memory
from stacks.autoscaling import AutoscalingSettings
from stacks.batch import BatchSettings
from stacks.benchmark import BenchmarkSettings
from stacks.cache import CacheSettings
from stacks.capacity import CapacitySettings
from stacks.cluster import ClusterSettings
from stacks.drain import DrainSettings
from stacks.engine import check_engine
from stacks.gateway import GatewaySettings
from stacks.model import ModelSettings
from stacks.models import PER_MODEL_TOP_LEVEL, ModelEntry, ModelScaling, ModelServing
from stacks.network import NetworkSettings
from stacks.observability import ObservabilitySettings
from stacks.problems import ConfigProblem, show_value
from stacks.registry import RegistrySettings
from stacks.rollout import RolloutSettings
from stacks.section import ConfigBool, Section, project_id
from stacks.serving import ServingProfile
from stacks.workload import WorkloadSettings

# Valid for both GCP and Kubernetes: alphanumeric at both ends.
_LABEL_KEY = re.compile(r"^[a-z]([-_a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([a-z0-9]([-_a-z0-9]{0,61}[a-z0-9])?)?$")

Labels = Annotated[dict[str, str], Field(default_factory=dict)]


class StackSettings(Section):
    """Everything one stack chooses. Only ``project`` has no default."""

    project: str
    """GCP project id."""
    region: str = "europe-west4"
    """Region of the cluster and network."""
    zone: str = "europe-west4-b"
    """Zone of the A4 nodes and the model cache; a zone not known to offer A4 gets a warning (docs/reference.md)."""
    nodes: int = 1
    """A4 nodes, one vLLM replica each; 0 scales to zero and keeps cluster and cache."""
    routing: Literal["clusterip", "gateway"] = "clusterip"
    """`clusterip` (round-robin Service; fastest) or `gateway` (Inference Gateway; 31-37% overhead measured)."""
    production: ConfigBool = False
    """Marks a production stack: deletion protection required."""
    allow_public_exposure: ConfigBool = False
    """Opt in to an internet-facing gateway or load balancer."""
    allow_public_nodes: ConfigBool = False
    """Opt in to nodes with public IPs (cluster.privateNodes false)."""
    allow_open_control_plane: ConfigBool = False
    """Opt in to a control-plane IP endpoint reachable from any address (no authorizedNetworks)."""
    labels: Labels
    """Extra labels on every labelled resource (app, managed-by and stack are always set)."""
    network: NetworkSettings = NetworkSettings()
    """The VPC."""
    cluster: ClusterSettings = ClusterSettings()
    """The GKE cluster."""
    capacity: CapacitySettings = CapacitySettings()
    """Where A4 nodes come from."""
    model: ModelSettings = ModelSettings()
    """The model served."""
    models: list[ModelEntry] | None = None
    """Several models on one cluster, each with its own replicas, in place of model and nodes (docs/architecture.md)."""
    workload: WorkloadSettings = WorkloadSettings()
    """The request shape the serving profile and estimates are for."""
    serving: ServingProfile = ServingProfile()
    """The vLLM engine profile."""
    cache: CacheSettings = CacheSettings()
    """The Hyperdisk ML model cache."""
    gateway: GatewaySettings = GatewaySettings()
    """The Inference Gateway (routing: gateway)."""
    benchmark: BenchmarkSettings = BenchmarkSettings()
    """The in-cluster benchmark Job."""
    rollout: RolloutSettings = RolloutSettings()
    """How changes roll out to the replicas."""
    autoscaling: AutoscalingSettings = AutoscalingSettings()
    """Scaling on queue depth and to zero when idle (opt-in)."""
    registry: RegistrySettings = RegistrySettings()
    """Images through Artifact Registry."""
    observability: ObservabilitySettings = ObservabilitySettings()
    """Dashboard and alerts."""
    drain: DrainSettings = DrainSettings()
    """How a replica stops (scale-down, rollout, preemption). On Spot both are cut to fit its 25 s."""
    batch: BatchSettings = BatchSettings()
    """Batches from a Cloud Storage bucket that wake the stack from zero (opt-in)."""

    # Each model of `models` as the one-model stack it is, checked as one; empty in the one-model form.
    _each: tuple[StackSettings, ...] = PrivateAttr(default=())

    @field_validator("project")
    @classmethod
    def _project(cls, value: str) -> str:
        return project_id(value)

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not re.match(r"^[a-z]+-[a-z]+\d+$", value):
            raise ConfigProblem((), value, "is not a GCP region such as europe-west4")
        return value

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, value: int) -> int:
        if not 0 <= value <= 1000:
            raise ConfigProblem((), value, "is out of range; use 0 (scaled to zero) up to 1000 A4 nodes")
        return value

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            if key in PROGRAM_LABELS:
                raise ConfigProblem((key,), text, f"replaces a label the program sets ({', '.join(PROGRAM_LABELS)}); use another key")
            if not _LABEL_KEY.match(key):
                raise ConfigProblem((key,), key, "is not a label key: a-z first, then up to 62 of a-z, 0-9, '-', '_', ending alphanumeric")
            if not _LABEL_VALUE.match(text):
                raise ConfigProblem((key,), text, "is not a label value: up to 63 of a-z, 0-9, '-', '_', alphanumeric at both ends")
        return value

    @property
    def fewest_replicas(self) -> int:
        """The fewest replicas a rollout may meet: the node count, or with autoscaling the fewest that serve at all."""
        return max(self.autoscaling.min_replicas, 1) if self.autoscaling.enabled else self.nodes

    @property
    def surge_replicas(self) -> int:
        """Replicas a rollout runs beyond the most: one when a lone replica must keep serving (a new one starts first)."""
        return 1 if self.rollout.keep_serving and self.fewest_replicas < 2 else 0

    @property
    def max_replicas(self) -> int:
        """The most replicas the stack may run: the autoscaler's maximum, else `nodes`."""
        if self.autoscaling.enabled:
            return self.autoscaling.max_replicas or max(self.nodes, 1)
        return self.nodes

    @property
    def max_num_seqs(self) -> int:
        """The engines' maxNumSeqs: serving.maxNumSeqs, else from the memory budget and the workload (stacks/memory.py)."""
        return memory.max_num_seqs(self.serving, self.workload, self.model.facts)

    @property
    def memory_budget(self) -> MemoryBudget:
        """One GPU's memory under one engine, at the stack's maxNumSeqs."""
        return memory.budget(self.serving, self.workload, self.model.facts)

    def warnings(self, namespace: str) -> list[str]:
        """What deserves a word before `pulumi up` but may be right: refused only by the cloud, if at all."""
        if self._each:
            # Each model's own; the shared ones (the zone, the reservation) once.
            return list(dict.fromkeys(warning for one in self._each for warning in one.warnings(namespace)))
        found: list[str] = memory.warnings(namespace, self.serving, self.workload, self.autoscaling, self.model.facts)
        reservation = self.capacity.reservation
        if reservation is not None and "reservation" in self.capacity.steps and reservation.size is None:
            found.append(
                f"{namespace}:capacity.reservation.nodes is not set: the render cannot see the size of reservation "
                f"{reservation.name}, billed whether or not replicas run; "
                + (
                    f"the estimates assume it holds the stack's {self.max_replicas} replicas"
                    if self.capacity.mode == "reservation"
                    else "the estimates leave it out"
                )
            )
        known = a4_zones()
        if self.zone in known.zones:
            return found
        nearby = [zone for zone in known.zones if zone.startswith(self.region + "-")]
        where = f"in {self.region}: {', '.join(nearby)}" if nearby else f"anywhere: {', '.join(known.zones)}"
        return [
            *found,
            f"{namespace}:zone: {show_value(self.zone)} is not among the zones known to offer {A4_MACHINE_TYPE} "
            f"(list of {known.as_of}; {where}); A4 nodes may never come. "
            "Check https://cloud.google.com/compute/docs/gpus/gpu-regions-zones",
        ]

    def each_model(self) -> tuple[StackSettings, ...]:
        """Every model as the one-model stack it is: the stack itself, or one per entry of ``models``."""
        return self._each or (self,)

    @model_validator(mode="after")
    def _cross_field(self) -> StackSettings:
        if self.models is not None:
            # Each model is checked as a one-model stack (every rule below), then with the others.
            self._each = self._models_alone()
            self._models_together()
            return self
        if not self.zone.startswith(self.region + "-"):
            raise ConfigProblem(("zone",), self.zone, f"is not in region {self.region}; use a zone such as {self.region}-b")
        longest = self.workload.longest_request
        if self.serving.max_model_len < longest:
            raise ConfigProblem(
                ("serving", "maxModelLen"),
                self.serving.max_model_len,
                f"is below the workload's longest request ({longest} tokens: input {self.workload.input_tokens} and "
                f"output {self.workload.output_tokens}, each up to +{self.workload.range_ratio:.0%}); raise it to at least {longest}",
            )
        largest = self.serving.ttft_largest_bucket
        if self.observability.ttft_p99_seconds >= largest:
            # histogram_quantile never exceeds the largest finite bucket: the alert could never fire.
            raise ConfigProblem(
                ("observability", "ttftP99Seconds"),
                self.observability.ttft_p99_seconds,
                f"is not below the largest bucket of {TTFT_HISTOGRAM} in vLLM {self.serving.release} ({largest:g} s), so the alert "
                "could never fire; the objective is in seconds (e.g. 30, not 30000 ms)",
            )
        if self.gateway.exposure == "external" and not self.allow_public_exposure:
            raise ConfigProblem(
                ("gateway", "exposure"),
                "external",
                "exposes the model to the internet; set allowPublicExposure: true to opt in, or use internal",
            )
        if self.routing == "gateway" and self.model.serves == "embed" and self.gateway.chart_version == "v1.4.0":
            raise ConfigProblem(
                ("gateway", "chartVersion"),
                "v1.4.0",
                f"runs an endpoint picker that parses /v1/embeddings as a completions request and refuses it without a "
                f"prompt, so {self.model.id} (an embedding model) could not be reached through the Gateway; use v1.5.0, "
                "which parses embeddings requests",
            )
        if self.routing == "gateway" and self.gateway.existing_proxy_subnet is None:
            proxy = ipaddress.IPv4Network(self.gateway.proxy_subnet_cidr)
            for key, cidr in (
                ("nodeCidr", self.network.node_cidr),
                ("podCidr", self.network.pod_cidr),
                ("serviceCidr", self.network.service_cidr),
            ):
                if proxy.overlaps(ipaddress.IPv4Network(cidr)):
                    raise ConfigProblem(
                        ("gateway", "proxySubnetCidr"), str(proxy), f"overlaps network.{key} ({cidr}); choose a disjoint range"
                    )
        scaling = self.autoscaling
        if scaling.enabled and scaling.min_replicas > self.max_replicas:
            raise ConfigProblem(
                ("autoscaling", "minReplicas"),
                scaling.min_replicas,
                f"is above the maximum ({self.max_replicas}); lower it or raise maxReplicas",
            )
        for index, window in enumerate(scaling.batch_windows):
            if scaling.enabled and window.replicas > self.max_replicas:
                raise ConfigProblem(
                    ("autoscaling", "batchWindows", index, "replicas"), window.replicas, f"is above the maximum ({self.max_replicas})"
                )
        if not self.cluster.private_nodes and not self.allow_public_nodes:
            raise ConfigProblem(("cluster", "privateNodes"), False, "gives every node a public IP; set allowPublicNodes: true to opt in")
        if self.production and not self.cluster.deletion_protection:
            raise ConfigProblem(("cluster", "deletionProtection"), False, "must be true on a production stack (production: true)")
        if self.production and self.cluster.maintenance.window is None:
            # Without one GKE may upgrade a serving production cluster at any hour.
            raise ConfigProblem(
                ("cluster", "maintenance", "window"),
                None,
                "is required on a production stack (production: true): say when GKE may upgrade it, e.g. startTime "
                "2026-01-03T00:00:00Z, endTime 2026-01-03T06:00:00Z, recurrence FREQ=WEEKLY;BYDAY=SA,SU",
            )
        if self.batch.enabled and not self.autoscaling.enabled:
            # The wake trigger and the runner's scaling are KEDA scalers: without KEDA nothing wakes the stack.
            raise ConfigProblem(
                ("batch", "enabled"), True, "needs autoscaling.enabled: true (KEDA wakes the replicas and the runner); turn both on"
            )
        # Before the engine's checks: for an embedding model the reason a generation setting is refused is the task.
        self._embedding_generates_nothing()
        # The shape and the weights before the memory they leave.
        check_engine(self.model.facts, self.serving, self.cache)
        memory.check(self.serving, self.model.facts)
        self._capacity_holds_the_replicas()
        self._drain_fits_spot()
        self._runner_fits_general_purpose()
        self._benchmark_prompts()
        if self.autoscaling.enabled and self.cluster.namespace == KEDA_NAMESPACE:
            raise ConfigProblem(
                ("cluster", "namespace"), self.cluster.namespace, "is where the stack installs KEDA when autoscaling is on; choose another"
            )
        return self

    def _models_alone(self) -> tuple[StackSettings, ...]:
        models = self.models or []
        if not models:
            raise ConfigProblem(("models",), [], "lists no model; list at least one, or use model for a one-model stack")
        for key in PER_MODEL_TOP_LEVEL:
            if key in self.model_fields_set:
                raise ConfigProblem((key,), None, "is set beside models, where each model sets its own; move it into each entry of models")
        return tuple(self._one_model(index, entry) for index, entry in enumerate(models))

    def _one_model(self, index: int, entry: ModelEntry) -> StackSettings:
        """``entry`` as a one-model stack: the shared top-level sections, the entry's model, nodes and overrides."""
        shared = self.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude={"models"})
        own = ("nodes", "serving", "autoscaling", "batch")
        serving = shared.get("serving", {})
        if "tensor_parallel_size" in entry.serving.model_fields_set:
            # The model's shape is its own: its data parallelism fills the node unless it sets that too.
            serving = {key: value for key, value in serving.items() if key != "dataParallelSize"}
        values = {
            **shared,
            "model": entry.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude=set(own)),
            "nodes": entry.nodes,
            "serving": {**serving, **entry.serving.model_dump(mode="json", by_alias=True, exclude_none=True)},
            "autoscaling": {
                **shared.get("autoscaling", {}),
                **entry.autoscaling.model_dump(mode="json", by_alias=True, exclude_none=True),
            },
        }
        if not entry.batch:
            values["batch"] = {**shared.get("batch", {}), "enabled": False}
        try:
            return StackSettings.model_validate(values)
        except ValidationError as error:
            first = error.errors(include_url=False)[0]
            cause = (first.get("ctx") or {}).get("error")
            loc = tuple(first["loc"])
            if isinstance(cause, ConfigProblem):
                path, value, reason = loc + cause.path, cause.value, cause.reason
            else:
                path, value, reason = loc, first["input"], first["msg"].removeprefix("Value error, ")
            own_path = _in_entry(index, entry, path)
            if own_path is None:
                raise ConfigProblem(path, value, f"{reason} (for models[{index}], {entry.id})") from None
            if own_path[-1] != path[-1]:
                # Named by the size the model set, shown with that size.
                value = entry.serving.model_dump(by_alias=True)[str(own_path[-1])]
            raise ConfigProblem(own_path, value, reason) from None

    def _models_together(self) -> None:
        models, each = self.models or [], self._each
        if self.benchmark.enabled:
            raise ConfigProblem(
                ("benchmark", "enabled"),
                True,
                f"is not yet done for several models ({len(models)} listed in models); the benchmark Job measures one model; "
                "turn it off, or benchmark each model in a one-model stack (docs/architecture.md)",
            )
        if self.batch.enabled and not any(entry.batch for entry in models):
            raise ConfigProblem(
                ("batch", "enabled"),
                True,
                "has no model to send to: every entry of models sets batch false; set one true, or turn batch off",
            )
        seen: dict[str, int] = {}
        served: dict[str, int] = {}
        for index, (entry, one) in enumerate(zip(models, each, strict=True)):
            name = model_short_name(entry.id)
            if name in seen:
                raise ConfigProblem(
                    ("models", index, "id"),
                    entry.id,
                    f"gives the replica set name {name!r}, as models[{seen[name]}] ({models[seen[name]].id}) does; serve each model once",
                )
            seen[name] = index
            public = one.model.public_name
            if public in served:
                raise ConfigProblem(
                    ("models", index, "servedName"),
                    public,
                    f"is the name models[{served[public]}] is served as; clients pick a model by it: give each model its own",
                )
            served[public] = index
        self._capacity_holds_every_model(each)

    def _capacity_holds_every_model(self, each: tuple[StackSettings, ...]) -> None:
        """A reservation of known size is the only capacity of mode reservation: it must hold every model's replicas at once
        (each model alone was checked against it as a one-model stack)."""
        reservation = self.capacity.reservation
        if self.capacity.mode != "reservation" or reservation is None or reservation.size is None:
            return
        needs = [one.max_replicas + (one.surge_replicas if one.max_replicas else 0) for one in each]
        if reservation.size < sum(needs):
            shown = ", ".join(f"models[{index}] {need}" for index, need in enumerate(needs))
            raise ConfigProblem(
                ("capacity", "reservation", *(("create", "nodes") if reservation.create is not None else ("nodes",))),
                reservation.size,
                f"cannot hold every model's replicas at once ({shown}: nodes, or autoscaling.maxReplicas, and a rollout's "
                f"surge replica); reserve at least {sum(needs)} nodes",
            )

    def _drain_fits_spot(self) -> None:
        """A pod that may run on Spot gets 25 s: the pause, vLLM's drain and its teardown must fit."""
        if "spot" not in self.capacity.steps:
            return
        pre_stop, timeout = self.drain.on_spot()
        if timeout >= 0 and pre_stop + timeout + SHUTDOWN_TEARDOWN_SECONDS <= SPOT_GRACE_SECONDS:
            return
        most = SPOT_GRACE_SECONDS - SHUTDOWN_TEARDOWN_SECONDS
        key, value, allowed = (
            ("shutdownTimeoutSeconds", timeout, f"at most {most - pre_stop}")
            if "shutdown_timeout_seconds" in self.drain.model_fields_set
            else ("preStopSeconds", pre_stop, f"at most {most}")
        )
        raise ConfigProblem(
            ("drain", key),
            value,
            f"does not fit Spot's {SPOT_GRACE_SECONDS} s grace (capacity may place the replicas on Spot): preStopSeconds "
            f"{pre_stop} + shutdownTimeoutSeconds {timeout} + vLLM's {SHUTDOWN_TEARDOWN_SECONDS} s teardown; allowed: {allowed}",
        )

    def _capacity_holds_the_replicas(self) -> None:
        """Mode reservation runs only on its reservation: replicas beyond it never schedule, and a rollout's surge replica
        without a spare node hangs the rollout (maxUnavailable 0 waits for it). The render cannot read a named reservation's
        size, so a stack that would surge on one must state it, or say how to roll out."""
        reservation = self.capacity.reservation
        if self.capacity.mode != "reservation" or reservation is None:
            return
        surge = self.surge_replicas if self.max_replicas else 0
        if reservation.size is None:
            if surge and "keep_serving" not in self.rollout.model_fields_set:
                raise ConfigProblem(
                    ("capacity", "reservation", "nodes"),
                    None,
                    f"is not set, and the render cannot see the size of reservation {reservation.name}: a rollout of this stack's "
                    f"lone replica (nodes, or autoscaling.minReplicas) starts a surge replica first, which never schedules unless "
                    f"the reservation has a node beyond the {self.max_replicas} the stack may run; state nodes (at least "
                    f"{self.max_replicas + surge} for the surge), or set rollout.keepServing (false: the lone replica stops before "
                    "its replacement starts; true: you know a node is spare)",
                )
            return
        needed = self.max_replicas + surge
        if reservation.size < needed:
            created = reservation.create is not None
            surged = " plus the surge replica a rollout starts before stopping the lone one" if surge else ""
            raise ConfigProblem(
                ("capacity", "reservation", *(("create", "nodes") if created else ("nodes",))),
                reservation.size,
                f"cannot hold the replicas: the stack may run {self.max_replicas} (nodes, or autoscaling.maxReplicas){surged}, "
                f"so reserve at least {needed} nodes",
            )

    def _runner_fits_general_purpose(self) -> None:
        """The batch runner is a general-purpose pod of runnerCpu and runnerMemory times its workers (facts/batch_sizing.py)."""
        if not self.batch.enabled or not self.autoscaling.enabled:
            return
        workers = runner_workers(max(self.max_replicas, 1))
        for key, each, most, unit in (
            ("runnerCpu", self.batch.runner_cpu, GENERAL_PURPOSE_MAX_CPU, 1),
            ("runnerMemory", self.batch.runner_memory, GENERAL_PURPOSE_MAX_MEMORY, 2**30),
        ):
            if quantity(each) * workers > most:
                shown = f"{most / unit:g}" + ("Gi" if unit > 1 else " vCPU")
                raise ConfigProblem(
                    ("batch", key),
                    each,
                    f"times the runner's {workers} workers (for up to {self.max_replicas} replicas) is above the {shown} Autopilot "
                    f"gives a general-purpose pod; lower it to {most / unit / workers:.3g}" + ("Gi" if unit > 1 else "") + " or less",
                )

    def _benchmark_prompts(self) -> None:
        """vLLM's random dataset needs one input token at the shortest: floor(inputLen x (1 - rangeRatio)) >= 1
        with no prefix and, at least, no special tokens (vllm/benchmarks/datasets.py, RandomDataset.sample)."""
        if not self.benchmark.enabled:
            return
        workload = self.workload
        if math.floor(workload.input_tokens * (1 - workload.range_ratio)) < 1:
            raise ConfigProblem(
                ("workload", "inputTokens"),
                workload.input_tokens,
                f"is too short for vLLM's random dataset at rangeRatio {workload.range_ratio:g}: its shortest prompt would have no "
                f"token; use at least {math.ceil(1 / (1 - workload.range_ratio))}",
            )

    def _embedding_generates_nothing(self) -> None:
        """An embedding model runs on vLLM's pooling runner, which generates no token: what only shapes generation is refused."""
        if self.model.serves != "embed":
            return
        serving, why = self.serving, "model.task is embed: vLLM's pooling runner generates no token"
        generation_only = (
            ("mtpTokens", "mtp_tokens", serving.mtp_tokens, "speculative decoding drafts tokens to generate"),
            # vLLM runs no hybrid model as a pooling model (vllm/config/model.py, is_prefix_caching_supported).
            ("mambaCacheMode", "mamba_cache_mode", serving.mamba_cache_mode, "it caches the recurrent state of hybrid generation"),
            ("mambaBlockSize", "mamba_block_size", serving.mamba_block_size, "it goes with mambaCacheMode"),
        )
        for key, field, value, what in generation_only:
            if field in serving.model_fields_set and value:
                raise ConfigProblem(("serving", key), value, f"is a generation setting ({what}); {why}: remove it")
        if self.benchmark.enabled:
            raise ConfigProblem(
                ("benchmark", "enabled"),
                True,
                f"runs vllm bench serve for generated tokens/s, TTFT and TPOT; {why}: turn it off and measure /v1/embeddings otherwise",
            )


def _in_entry(index: int, entry: ModelEntry, path: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    """Where in ``models[index]`` a problem of the one-model stack it became was set, or None for a shared key."""
    head, rest = (path[0], path[1:]) if path else (None, ())
    if head == "model":
        return ("models", index, *rest)
    if head == "nodes":
        return ("models", index, "nodes")
    sections: dict[str, ModelServing | ModelScaling] = {"serving": entry.serving, "autoscaling": entry.autoscaling}
    if isinstance(head, str) and head in sections and rest:
        section = sections[head]
        aliases = {str(field.alias): name for name, field in type(section).model_fields.items()}
        # The parallel shape is one choice: a problem with either size is the model's when it sets one.
        shape = {"tensor_parallel_size", "data_parallel_size"}
        key = aliases.get(str(rest[0]))
        if key in section.model_fields_set:
            return ("models", index, head, *rest)
        if key in shape and (chosen := sorted(shape & section.model_fields_set)):
            return ("models", index, head, str(type(section).model_fields[chosen[-1]].alias))
    return None


def known_keys() -> dict[tuple[str | int, ...], list[str]]:
    """The keys each section accepts, by the section's path, for spelling hints."""
    table: dict[tuple[str | int, ...], list[str]] = {}

    def walk(model: type[BaseModel], path: tuple[str, ...]) -> None:
        table[path] = [str(f.alias) for f in model.model_fields.values()]
        for field in model.model_fields.values():
            for candidate in sections_in(field.annotation):
                walk(candidate, (*path, str(field.alias)))

    walk(StackSettings, ())
    return table


def sections_in(annotation: object) -> list[type[BaseModel]]:
    """The sections an annotation holds: itself, or those within an optional or a list of them."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [found for inner in getattr(annotation, "__args__", ()) for found in sections_in(inner)]
