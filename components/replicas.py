"""The vLLM replicas: one pod per A4 node, each running data parallel 8.

Pure builders make the engine command line, the pod template and the
manifests; ``Replicas`` only registers them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.credentials import SecretRef
from components.manifests import Manifest, guaranteed
from components.options import AWAIT_MARGIN_MINUTES, child_options
from components.programs import REPOSITORY
from facts.engine_flags import written_flags
from facts.gke import GPUS_PER_NODE
from facts.vllm import CACHE_ROOT_ENV, FIRST_ANSWER_SECONDS, JIT_CACHE_FOLDERS
from plan.stack import CacheMount, Drain, EngineProfile, ReplicasSpec

PORT_NAME = "http"
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"
SHM_SIZE = "64Gi"
# Without a cache the weights land here (Hugging Face's default cache).
DOWNLOAD_DIR = "/root/.cache/huggingface"
# GKE's Cloud Storage FUSE CSI driver; its webhook adds the FUSE sidecar to pods annotated for it.
GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"
GCSFUSE_ANNOTATION = "gke-gcsfuse/volumes"
# /health answers 200 while the engine still has kernels to compile (the first answer took FIRST_ANSWER_SECONDS
# on a real run): a replica is started only when it answers a completion.
# Twice that for the warm-up: one cut short loses nothing (compiled kernels stay compiled) and the next try goes on.
WARM_UP_TIMEOUT_SECONDS = 2 * FIRST_ANSWER_SECONDS
# The startup probe's program (its docstring says what it checks), passed whole to the image's python3.
WARM_UP_SCRIPT = (REPOSITORY / "workloads" / "warm_up.py").read_text(encoding="utf-8")
# The FUSE sidecar on an A4 node (docs/cold-start.md, "The FUSE sidecar on A4"): gcsfuse sizes itself by
# machine type and puts a4-highgpu-8g in its high-performance group, 1,600 streaming-write blocks of
# 32 MiB; the sidecar's default memory is 256Mi. Bounded to 16 blocks (512 MiB: two files being written
# per engine of eight), and the sidecar given room for them, gcsfuse's own and its metadata caches.
GCSFUSE_WRITE_BLOCKS = 16
GCSFUSE_SIDECAR_RESOURCES = {
    "gke-gcsfuse/memory-request": "1536Mi",
    "gke-gcsfuse/memory-limit": "1536Mi",
    "gke-gcsfuse/cpu-request": "1",
    "gke-gcsfuse/cpu-limit": "1",
}


def engine_args(profile: EngineProfile, model: str, served_name: str, drain: Drain | None = None) -> list[str]:
    """The ``vllm serve`` command line: the flags of facts/engine_flags.py's table, then extraArgs.

    Each default flag is a measured choice (docs/reference.md)."""
    values = {field.name: getattr(profile, field.name) for field in dataclasses.fields(profile)}
    values |= {
        "served_name": served_name,
        "host": "0.0.0.0",
        "shutdown_timeout_seconds": drain.shutdown_timeout_seconds if drain is not None else None,
    }
    return ["vllm", "serve", model, *written_flags(values), *profile.extra_args]


def model_source(model_id: str, cache: CacheMount | None) -> str:
    """The cache's read-only path, or the Hugging Face id when there is no cache."""
    return cache.model_path if cache else model_id


def warm_up_command(profile: EngineProfile, served_name: str) -> list[str]:
    """The startup probe's command: one request per data-parallel engine, answered in full.

    A completion with a finish_reason; for an embedding model (vLLM refuses it completions), a vector of its length.
    """
    engines = str(profile.data_parallel_size)
    if profile.embedding is not None:
        url = f"http://127.0.0.1:{profile.port}/v1/embeddings"
        return ["python3", "-c", WARM_UP_SCRIPT, url, served_name, engines, str(profile.embedding.length)]
    url = f"http://127.0.0.1:{profile.port}/v1/completions"
    return ["python3", "-c", WARM_UP_SCRIPT, url, served_name, engines]


def _probes(profile: EngineProfile, served_name: str) -> dict[str, Any]:
    check = {"httpGet": {"path": HEALTH_PATH, "port": PORT_NAME}}
    return {
        # Model load and CUDA graph compile take ~10 min, more with a download; then the first answers compile
        # the kernels left. Readiness and liveness stay the cheap /health once started.
        "startupProbe": {
            "exec": {"command": warm_up_command(profile, served_name)},
            "periodSeconds": 10,
            "timeoutSeconds": WARM_UP_TIMEOUT_SECONDS,
            "failureThreshold": profile.cold_start_minutes * 6,
        },
        "readinessProbe": {**check, "periodSeconds": 5, "timeoutSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {**check, "periodSeconds": 15, "timeoutSeconds": 10, "failureThreshold": 4},
    }


def pod_template(spec: ReplicasSpec, *, hf_token: SecretRef | None, api_key: SecretRef | None) -> dict[str, Any]:
    """One replica: 8 B200s on the selected capacity, weights mounted read-only from the cache."""
    profile = spec.profile
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in sorted(profile.env.items())]
    if api_key is not None:
        # vLLM reads the key from its environment; it never appears in the command line.
        env.append(api_key.env("VLLM_API_KEY"))
    volumes: list[dict[str, Any]] = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}]
    mounts: list[dict[str, Any]] = [{"name": "shm", "mountPath": "/dev/shm"}]
    if spec.cache is not None:
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": spec.cache.claim, "readOnly": True}})
        mounts.append({"name": "model-cache", "mountPath": spec.cache.folder, "readOnly": True})
        env.append({"name": "HF_HUB_OFFLINE", "value": "1"})
    else:
        volumes.append({"name": "downloads", "emptyDir": {}})
        mounts.append({"name": "downloads", "mountPath": DOWNLOAD_DIR})
        if hf_token is not None:
            env.append(hf_token.env("HF_TOKEN"))
    annotations: dict[str, str] = {}
    if spec.compile_cache is not None:
        compile_cache = spec.compile_cache
        # vLLM keys each entry below this root by its config, code and torch (vllm/compilation/backends.py).
        env.append({"name": CACHE_ROOT_ENV, "value": compile_cache.folder})
        # Triton's, FlashInfer's and Inductor's JIT caches too, else each new node compiles their kernels again.
        env.extend({"name": name, "value": f"{compile_cache.folder}/{folder}"} for name, folder in sorted(JIT_CACHE_FOLDERS.items()))
        volumes.append(
            {
                "name": "compile-cache",
                "csi": {
                    "driver": GCSFUSE_DRIVER,
                    # Replicas compiling at once write the same entries (vLLM's key covers config, code
                    # and torch): the last close may win instead of failing the engine (docs/cold-start.md).
                    "volumeAttributes": {
                        "bucketName": compile_cache.bucket,
                        "mountOptions": f"implicit-dirs,precondition-errors=false,write:global-max-blocks:{GCSFUSE_WRITE_BLOCKS}",
                    },
                },
            }
        )
        mounts.append({"name": "compile-cache", "mountPath": compile_cache.folder})
        annotations[GCSFUSE_ANNOTATION] = "true"
        annotations.update(GCSFUSE_SIDECAR_RESOURCES)
    container: dict[str, Any] = {
        "name": spec.name,
        "image": spec.image,
        "command": engine_args(profile, model_source(spec.model_id, spec.cache), spec.served_name, spec.drain),
        "ports": [{"name": PORT_NAME, "containerPort": profile.port, "protocol": "TCP"}],
        "env": env,
        "resources": guaranteed(
            {"nvidia.com/gpu": str(GPUS_PER_NODE), "cpu": profile.cpu, "memory": profile.memory, "ephemeral-storage": "100Gi"}
        ),
        "volumeMounts": mounts,
        **_probes(profile, spec.served_name),
    }
    # Endpoints and the endpoint picker drop a terminating pod while it sleeps; only then does SIGTERM start
    # vLLM's drain, which closes the port at once (stacks/drain.py).
    container["lifecycle"] = {"preStop": {"sleep": {"seconds": spec.drain.pre_stop_seconds}}}
    pod: dict[str, Any] = {
        "nodeSelector": spec.scheduling.node_selector,
        "terminationGracePeriodSeconds": spec.drain.grace_seconds,
        # No node affinity on cloud.google.com/scheduled-maintenance-time: Autopilot admits node
        # affinity only on its listed keys (docs/autopilot.md).
        "containers": [container],
        "volumes": volumes,
    }
    if spec.scheduling.tolerations:
        pod["tolerations"] = spec.scheduling.tolerations
    metadata: dict[str, Any] = {"labels": dict(spec.selector)}
    if spec.compile_cache is not None:
        # The identity that may use the compile cache's bucket (Workload Identity).
        pod["serviceAccountName"] = spec.compile_cache.service_account
        metadata["annotations"] = annotations
    # Only the selector labels (and the FUSE sidecar's request): any other change restarts every GPU replica.
    return {"metadata": metadata, "spec": pod}


def rollout_seconds(profile: EngineProfile) -> int:
    """How long one replica's rollout may take: a cold start plus a node to provision."""
    return (profile.cold_start_minutes + AWAIT_MARGIN_MINUTES) * 60


def deployment(spec: ReplicasSpec, template: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": spec.labels},
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": spec.selector},
            # Rounds of replicas on their own nodes, one kept serving (plan/stack.py rollout).
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": spec.rollout.max_surge, "maxUnavailable": spec.rollout.max_unavailable},
            },
            "progressDeadlineSeconds": rollout_seconds(spec.profile),
            "template": template,
        },
    }


def service(spec: ReplicasSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            "labels": spec.labels,
            # The provider would wait while any endpoint is not ready, at most 10 minutes: an
            # update during a cold start (~16 min) would time out. The Deployment awaits readiness.
            "annotations": {"pulumi.com/skipAwait": "true"},
        },
        "spec": {
            "type": "ClusterIP",
            "selector": spec.selector,
            "ports": [{"name": PORT_NAME, "port": spec.profile.port, "targetPort": PORT_NAME, "protocol": "TCP"}],
        },
    }


def pod_monitoring(spec: ReplicasSpec) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        # Not the bare name: the endpoint picker's chart names its own PodMonitoring after its release.
        "metadata": {"name": f"{spec.name}-replicas", "namespace": spec.namespace, "labels": spec.labels},
        "spec": {
            "selector": {"matchLabels": spec.selector},
            "endpoints": [{"port": PORT_NAME, "path": METRICS_PATH, "interval": "30s"}],
        },
    }


def disruption_budget(spec: ReplicasSpec) -> dict[str, Any]:
    """Voluntary disruptions (node upgrades, drains) take one replica at a time."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": spec.name, "namespace": spec.namespace, "labels": spec.labels},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": spec.selector}},
    }


class Replicas(pulumi.ComponentResource):
    """Registers the Deployment, its ClusterIP Service, PodMonitoring and PodDisruptionBudget."""

    def __init__(
        self,
        name: str,
        spec: ReplicasSpec,
        *,
        hf_token: SecretRef | None,
        api_key: SecretRef | None,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # The type token is part of every child's URN: renaming it would replace the running replicas.
        super().__init__("llm:serving:ReplicaSet", name, None, opts)
        base = child_options(self, opts, kubernetes)
        template = pod_template(spec, hf_token=hf_token, api_key=api_key)
        # Each round of a rollout is a full cold start.
        create = f"{rollout_seconds(spec.profile) // 60}m"
        update = f"{spec.rollout.rounds * rollout_seconds(spec.profile) // 60}m"
        self.deployment = Manifest(
            spec.name,
            deployment(spec, template),
            pulumi.ResourceOptions.merge(
                base,
                pulumi.ResourceOptions(
                    # pulumi-kubernetes waits 10 minutes by default; a cold start takes longer.
                    custom_timeouts=pulumi.CustomTimeouts(create=create, update=update),
                    # With autoscaling the autoscaler sets the count; `pulumi up` must not undo it.
                    ignore_changes=["spec.replicas"] if spec.autoscaled else None,
                ),
            ),
        )
        self.service = Manifest(spec.name, service(spec), base)
        Manifest(spec.name, pod_monitoring(spec), base)
        Manifest(spec.name, disruption_budget(spec), base)
        self.url = spec.url
        self.register_outputs({"url": self.url, "replicas": spec.replicas})
