"""The model cache: weights downloaded once onto Hyperdisk ML, then served read-only.

Order (REFERENCE.md section 3): a writable volume, a download Job on a CPU
node, a VolumeSnapshot of the written volume once the Job has succeeded, and
a ReadOnlyMany volume restored from the snapshot that every replica mounts.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.credentials import Credentials, SecretRef
from components.manifests import Manifest
from components.options import child_options
from stacks.settings import CacheSettings, ModelSettings, StackSettings

CSI_DRIVER = "pd.csi.storage.gke.io"
SNAPSHOT_CLASS = "model-cache"
MOUNT_PATH = "/models"
# Pinned downloader tools; installed into the multi-arch download image.
HUGGINGFACE_HUB = "huggingface_hub==2.4.0"
_ARCH = {"c4a": "arm64", "c3": "amd64"}


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


def model_path(model: ModelSettings, cache: CacheSettings) -> str:
    """Where the replicas find the weights when the cache is on."""
    return f"{MOUNT_PATH}/{cache_id(model, cache)}"


@dataclass(frozen=True)
class CacheNames:
    """Names of the per-model objects; all derive from the model id and revision."""

    writer: str
    download: str
    snapshot: str
    reader: str


def names(settings: StackSettings) -> CacheNames:
    key = cache_id(settings.model, settings.cache)
    return CacheNames(
        writer=f"model-cache-{key}-writer", download=f"model-download-{key}", snapshot=f"model-cache-{key}", reader=f"model-cache-{key}"
    )


def storage_class(settings: StackSettings, labels: dict[str, str]) -> dict[str, Any]:
    cache = settings.cache
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": storage_class_name(cache), "labels": labels},
        "provisioner": CSI_DRIVER,
        "parameters": {"type": "hyperdisk-ml", "provisioned-throughput-on-create": f"{cache.throughput_mibps}Mi"},
        # Large read-ahead serves the sequential weight reads at startup.
        "mountOptions": ["read_ahead_kb=4096"],
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.gke.io/zone", "values": [settings.zone]}]}],
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": False,
    }


def storage_class_name(cache: CacheSettings) -> str:
    # Parameters of a StorageClass are immutable: a new throughput is a new class.
    return f"model-cache-{cache.throughput_mibps}mi"


def _claim(name: str, namespace: str, labels: dict[str, str], cache: CacheSettings, access: str, source: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": [access],
        "storageClassName": storage_class_name(cache),
        "resources": {"requests": {"storage": f"{cache.size_gi}Gi"}},
    }
    if source is not None:
        spec["dataSource"] = {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": source}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def download_script(settings: StackSettings) -> str:
    """The shell script of the download Job: idempotent, fails loudly, marks completion."""
    model = settings.model
    target = f"/cache/{cache_id(model, settings.cache)}"
    repo = f"https://huggingface.co/{model.id}"
    quoted = {k: shlex.quote(v) for k, v in {"target": target, "repo": repo, "id": model.id, "rev": model.revision}.items()}
    lines = [
        "set -euo pipefail",
        f'if [ -f {quoted["target"]}/.complete ]; then echo "weights already present"; exit 0; fi',
        f"rm -rf {quoted['target']} && mkdir -p {quoted['target']}",
    ]
    if settings.cache.download_method == "hf":
        lines += [
            f"pip install --no-cache-dir --quiet {HUGGINGFACE_HUB}",
            f"hf download {quoted['id']} --revision {quoted['rev']} --local-dir {quoted['target']}",
        ]
    else:
        # Xet downloads stalled at 16-20 GB on large checkpoints; git-lfs did not (REFERENCE.md).
        lines += [
            "apt-get update -qq && apt-get install -y -qq --no-install-recommends git git-lfs ca-certificates >/dev/null",
            "git lfs install --skip-repo",
            # The token goes to git through its environment, never its command line (ps, /proc).
            'if [ -n "${HF_TOKEN:-}" ]; then',
            '  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.extraHeader GIT_CONFIG_VALUE_0="Authorization: Bearer ${HF_TOKEN}"',
            "fi",
            f"GIT_LFS_SKIP_SMUDGE=1 git clone --no-checkout {quoted['repo']} {quoted['target']}",
            f"GIT_LFS_SKIP_SMUDGE=1 git -C {quoted['target']} checkout {quoted['rev']}",
            f"git -C {quoted['target']} lfs pull",
            f"rm -rf {quoted['target']}/.git",
        ]
    lines += [f"touch {quoted['target']}/.complete", 'echo "downloaded to ' + target + '"', "du -sh " + quoted["target"]]
    return "\n".join(lines)


def download_job(settings: StackSettings, labels: dict[str, str], hf_token: SecretRef | None) -> dict[str, Any]:
    cache, namespace = settings.cache, settings.cluster.namespace
    cache_names = names(settings)
    env: list[dict[str, Any]] = [{"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"}]
    if hf_token is not None:
        env.append(hf_token.env("HF_TOKEN"))
    pod_labels = {**labels, "app.kubernetes.io/component": "model-download"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": cache_names.download, "namespace": namespace, "labels": pod_labels},
        "spec": {
            "backoffLimit": cache.download_retries,
            "activeDeadlineSeconds": cache.download_deadline_minutes * 60,
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "restartPolicy": "Never",
                    # A CPU node in the cache's zone; the image must match its architecture.
                    "nodeSelector": {
                        "cloud.google.com/machine-family": cache.download_machine_family,
                        "kubernetes.io/arch": _ARCH[cache.download_machine_family],
                        "topology.kubernetes.io/zone": settings.zone,
                    },
                    "containers": [
                        {
                            "name": "download",
                            "image": cache.download_image,
                            "command": ["bash", "-c", download_script(settings)],
                            "env": env,
                            "resources": {
                                "requests": {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "10Gi"},
                                "limits": {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "10Gi"},
                            },
                            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                        }
                    ],
                    "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": cache_names.writer}}],
                },
            },
        },
    }


def snapshot_class(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshotClass",
        "metadata": {"name": SNAPSHOT_CLASS, "labels": labels},
        "driver": CSI_DRIVER,
        "deletionPolicy": "Delete",
    }


def snapshot(settings: StackSettings, labels: dict[str, str]) -> dict[str, Any]:
    cache_names = names(settings)
    return {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "metadata": {"name": cache_names.snapshot, "namespace": settings.cluster.namespace, "labels": labels},
        "spec": {"volumeSnapshotClassName": SNAPSHOT_CLASS, "source": {"persistentVolumeClaimName": cache_names.writer}},
    }


def writer_claim(settings: StackSettings, labels: dict[str, str]) -> dict[str, Any]:
    return _claim(names(settings).writer, settings.cluster.namespace, labels, settings.cache, "ReadWriteOnce", None)


def reader_claim(settings: StackSettings, labels: dict[str, str]) -> dict[str, Any]:
    cache_names = names(settings)
    return _claim(cache_names.reader, settings.cluster.namespace, labels, settings.cache, "ReadOnlyMany", cache_names.snapshot)


class ModelCache(pulumi.ComponentResource):
    """Registers the cache in order; ``claim_name`` is the read-only volume replicas mount."""

    def __init__(
        self,
        name: str,
        settings: StackSettings,
        *,
        labels: dict[str, str],
        credentials: Credentials,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:storage:ModelCache", name, None, opts)
        base = child_options(self, opts, kubernetes)
        cache_names = names(settings)
        classes = [
            Manifest("storage-class", storage_class(settings, labels), base),
            Manifest("snapshot-class", snapshot_class(labels), base),
        ]
        # The provider awaits a WaitForFirstConsumer claim only once it can read its class.
        writer = Manifest(
            f"writer-{cache_id(settings.model, settings.cache)}",
            writer_claim(settings, labels),
            pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=classes)),
        )
        timeout = f"{settings.cache.download_deadline_minutes + 10}m"
        download = Manifest(
            f"download-{cache_id(settings.model, settings.cache)}",
            download_job(settings, labels, credentials.hf_token),
            pulumi.ResourceOptions.merge(
                base,
                pulumi.ResourceOptions(
                    depends_on=[writer, *classes, *credentials.resources],
                    custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
                ),
            ),
        )
        # The snapshot is taken only after the download Job has succeeded.
        taken = Manifest(
            f"snapshot-{cache_id(settings.model, settings.cache)}",
            snapshot(settings, labels),
            pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[download])),
        )
        self.reader = Manifest(
            f"reader-{cache_id(settings.model, settings.cache)}",
            reader_claim(settings, labels),
            pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[taken])),
        )
        self.claim_name = cache_names.reader
        self.model_path = model_path(settings.model, settings.cache)
        self.register_outputs({"claimName": self.claim_name, "modelPath": self.model_path})
