"""The vLLM replica set: one pod per A4 node, each running data parallel 8.

Pure builders make the engine command line, the pod template and the
manifests; ``ReplicaSet`` only registers them.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.capacity import Scheduling
from components.credentials import SecretRef
from components.manifests import Manifest
from components.options import child_options
from stacks.settings import GPUS_PER_NODE, ModelSettings, ServingProfile, StackSettings

NAME = "vllm"
PORT_NAME = "http"
HEALTH_PATH = "/health"
METRICS_PATH = "/metrics"
SHM_SIZE = "64Gi"
# Without a cache the weights land here (Hugging Face's default cache).
DOWNLOAD_DIR = "/root/.cache/huggingface"


def selector_labels(stack: str) -> dict[str, str]:
    """The labels that pick the replica pods: the Deployment, Service, PodMonitoring and InferencePool all use these."""
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/instance": stack}


def engine_args(profile: ServingProfile, model: str, served_name: str) -> list[str]:
    """The ``vllm serve`` command line. Each default flag is a measured choice (REFERENCE.md section 1)."""
    args = [
        "vllm",
        "serve",
        model,
        f"--served-model-name={served_name}",
        "--host=0.0.0.0",
        f"--port={profile.port}",
        f"--data-parallel-size={profile.data_parallel_size}",
        f"--max-model-len={profile.max_model_len}",
        f"--max-num-batched-tokens={profile.max_num_batched_tokens}",
        f"--max-num-seqs={profile.max_num_seqs}",
        f"--kv-cache-dtype={profile.kv_cache_dtype}",
        f"--gpu-memory-utilization={profile.gpu_memory_utilization}",
    ]
    if profile.enable_prefix_caching:
        args.append("--enable-prefix-caching")
    if profile.enable_chunked_prefill:
        args.append("--enable-chunked-prefill")
    if profile.attention_backend:
        args.append(f"--attention-backend={profile.attention_backend}")
    args.append(f"-O{profile.optimization_level}")
    if profile.mtp_tokens:
        speculative = json.dumps({"method": "mtp", "num_speculative_tokens": profile.mtp_tokens}, separators=(",", ":"))
        args.append(f"--speculative-config={speculative}")
    if profile.mamba_cache_mode:
        args.append(f"--mamba-cache-mode={profile.mamba_cache_mode}")
    if profile.mamba_block_size:
        args.append(f"--mamba-block-size={profile.mamba_block_size}")
    return args + list(profile.extra_args)


def model_source(model: ModelSettings, cache_path: str | None) -> str:
    """The cache's read-only path, or the Hugging Face id when there is no cache."""
    return cache_path or model.id


def _probes(profile: ServingProfile) -> dict[str, Any]:
    check = {"httpGet": {"path": HEALTH_PATH, "port": PORT_NAME}}
    return {
        # Model load and CUDA graph compile take ~10 min, more with a download.
        "startupProbe": {**check, "periodSeconds": 10, "timeoutSeconds": 5, "failureThreshold": profile.cold_start_minutes * 6},
        "readinessProbe": {**check, "periodSeconds": 5, "timeoutSeconds": 5, "failureThreshold": 3},
        "livenessProbe": {**check, "periodSeconds": 15, "timeoutSeconds": 10, "failureThreshold": 4},
    }


def termination_grace_seconds(scheduling: Scheduling) -> int:
    # GKE gives Spot nodes ~30 s notice; Autopilot lets Spot pods use up to 25 s.
    return 25 if scheduling.mode == "spot" else 60


def pod_template(
    settings: StackSettings,
    scheduling: Scheduling,
    *,
    stack: str,
    labels: dict[str, str],
    cache_claim: str | None,
    cache_path: str | None,
    hf_token: SecretRef | None,
    api_key: SecretRef | None,
) -> dict[str, Any]:
    """One replica: 8 B200s on the selected capacity, weights mounted read-only from the cache."""
    profile = settings.serving
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in sorted(profile.env.items())]
    if api_key is not None:
        # vLLM reads the key from its environment; it never appears in the command line.
        env.append(api_key.env("VLLM_API_KEY"))
    volumes: list[dict[str, Any]] = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}]
    mounts: list[dict[str, Any]] = [{"name": "shm", "mountPath": "/dev/shm"}]
    if cache_claim is not None and cache_path is not None:
        volumes.append({"name": "model-cache", "persistentVolumeClaim": {"claimName": cache_claim, "readOnly": True}})
        mounts.append({"name": "model-cache", "mountPath": cache_path.rsplit("/", 1)[0], "readOnly": True})
        env.append({"name": "HF_HUB_OFFLINE", "value": "1"})
    else:
        volumes.append({"name": "downloads", "emptyDir": {}})
        mounts.append({"name": "downloads", "mountPath": DOWNLOAD_DIR})
        if hf_token is not None:
            env.append(hf_token.env("HF_TOKEN"))
    gpus = str(GPUS_PER_NODE)
    resources = {
        "requests": {"nvidia.com/gpu": gpus, "cpu": profile.cpu, "memory": profile.memory, "ephemeral-storage": "100Gi"},
        "limits": {"nvidia.com/gpu": gpus, "cpu": profile.cpu, "memory": profile.memory, "ephemeral-storage": "100Gi"},
    }
    container = {
        "name": NAME,
        "image": profile.image,
        "command": engine_args(profile, model_source(settings.model, cache_path), settings.model.public_name),
        "ports": [{"name": PORT_NAME, "containerPort": profile.port, "protocol": "TCP"}],
        "env": env,
        "resources": resources,
        "volumeMounts": mounts,
        **_probes(profile),
    }
    spec: dict[str, Any] = {
        "nodeSelector": scheduling.node_selector,
        "terminationGracePeriodSeconds": termination_grace_seconds(scheduling),
        "containers": [container],
        "volumes": volumes,
    }
    if scheduling.tolerations:
        spec["tolerations"] = scheduling.tolerations
    return {"metadata": {"labels": {**labels, **selector_labels(stack)}}, "spec": spec}


def rollout_seconds(profile: ServingProfile) -> int:
    """How long a rollout may take: a cold start plus node provisioning (5-6 min on Autopilot)."""
    return (profile.cold_start_minutes + 10) * 60


def deployment(settings: StackSettings, template: dict[str, Any], *, stack: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": settings.cluster.namespace, "labels": labels},
        "spec": {
            "replicas": settings.nodes,
            "selector": {"matchLabels": selector_labels(stack)},
            # Replace one pod at a time on its own node: no surge, so no extra A4 node.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "progressDeadlineSeconds": rollout_seconds(settings.serving),
            "template": template,
        },
    }


def service(settings: StackSettings, *, stack: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NAME, "namespace": settings.cluster.namespace, "labels": labels},
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(stack),
            "ports": [{"name": PORT_NAME, "port": settings.serving.port, "targetPort": PORT_NAME, "protocol": "TCP"}],
        },
    }


def pod_monitoring(settings: StackSettings, *, stack: str, labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": NAME, "namespace": settings.cluster.namespace, "labels": labels},
        "spec": {
            "selector": {"matchLabels": selector_labels(stack)},
            "endpoints": [{"port": PORT_NAME, "path": METRICS_PATH, "interval": "30s"}],
        },
    }


class ReplicaSet(pulumi.ComponentResource):
    """Registers the Deployment, its ClusterIP Service and its PodMonitoring."""

    def __init__(
        self,
        name: str,
        settings: StackSettings,
        *,
        stack: str,
        labels: dict[str, str],
        scheduling: Scheduling,
        cache_claim: str | None,
        cache_path: str | None,
        hf_token: SecretRef | None,
        api_key: SecretRef | None,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:serving:ReplicaSet", name, None, opts)
        base = child_options(self, opts, kubernetes)
        template = pod_template(
            settings,
            scheduling,
            stack=stack,
            labels=labels,
            cache_claim=cache_claim,
            cache_path=cache_path,
            hf_token=hf_token,
            api_key=api_key,
        )
        # A rollout replaces one replica at a time, each with a full cold start.
        create = f"{rollout_seconds(settings.serving) // 60}m"
        update = f"{max(settings.nodes, 1) * rollout_seconds(settings.serving) // 60}m"
        self.deployment = Manifest(
            NAME,
            deployment(settings, template, stack=stack, labels=labels),
            # pulumi-kubernetes waits 10 minutes by default; a cold start takes longer.
            pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create=create, update=update))),
        )
        self.service = Manifest(NAME, service(settings, stack=stack, labels=labels), base)
        Manifest(NAME, pod_monitoring(settings, stack=stack, labels=labels), base)
        self.url = f"http://{NAME}.{settings.cluster.namespace}.svc.cluster.local:{settings.serving.port}/v1"
        self.register_outputs({"url": self.url, "replicas": settings.nodes})
