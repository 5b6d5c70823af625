"""The model cache: weights downloaded once onto Hyperdisk ML, then served read-only.

Order (docs/reference.md): a claim Job creates a writable volume, a download
Job on a CPU node fills it, a VolumeSnapshot of the written volume is taken once
the Job has succeeded, and a ReadOnlyMany volume restored from the snapshot is
what every replica mounts. Once the snapshot is ready a release Job deletes the
writable volume, so only the snapshot and the volume the replicas read keep
billing. The writable volume is never a Pulumi resource: `pulumi refresh` would
find it gone after its release and the next `up` would create it again
(render/refresh.py).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.credentials import SecretRef
from components.manifests import Manifest, guaranteed
from components.options import awaits_beyond, child_options
from components.programs import Program, program
from facts import gke
from facts.naming import MODEL_CACHE_PREFIX
from plan.stack import CacheSpec

CSI_DRIVER = "pd.csi.storage.gke.io"
SNAPSHOT_CLASS = "model-cache"
SNAPSHOT_TIMEOUT = "30m"
# Pinned downloader tools; installed into the multi-arch download image.
HUGGINGFACE_HUB = "huggingface_hub==2.4.0"
_ARCH = {"c4a": "arm64", "c3": "amd64"}


def storage_class(spec: CacheSpec) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": storage_class_name(spec), "labels": spec.labels},
        "provisioner": CSI_DRIVER,
        "parameters": {"type": "hyperdisk-ml", "provisioned-throughput-on-create": f"{spec.throughput_mibps}Mi"},
        # Large read-ahead serves the sequential weight reads at startup.
        "mountOptions": ["read_ahead_kb=4096"],
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.gke.io/zone", "values": [spec.zone]}]}],
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": False,
    }


def storage_class_name(cache: CacheSpec) -> str:
    # Parameters of a StorageClass are immutable: a new throughput is a new class.
    return f"{MODEL_CACHE_PREFIX}{cache.throughput_mibps}mi"


def _claim(cache: CacheSpec, name: str, access: str, source: str | None, labels: dict[str, str] | None = None) -> dict[str, Any]:
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
        "metadata": {"name": name, "namespace": cache.namespace, "labels": cache.labels if labels is None else labels},
        "spec": spec,
    }


def download_script(spec: CacheSpec) -> str:
    """The shell script of the download Job: idempotent, fails loudly, marks completion."""
    target = f"/cache/{spec.key}"
    repo = f"https://huggingface.co/{spec.model_id}"
    quoted = {k: shlex.quote(v) for k, v in {"target": target, "repo": repo, "id": spec.model_id, "rev": spec.revision}.items()}
    lines = [
        "set -euo pipefail",
        f'if [ -f {quoted["target"]}/.complete ]; then echo "weights already present"; exit 0; fi',
        f"rm -rf {quoted['target']} && mkdir -p {quoted['target']}",
    ]
    if spec.download_method == "hf":
        lines += [
            f"pip install --no-cache-dir --quiet {HUGGINGFACE_HUB}",
            f"hf download {quoted['id']} --revision {quoted['rev']} --local-dir {quoted['target']}",
        ]
    else:
        # Xet downloads stalled at 16-20 GB on large checkpoints; git-lfs did not (docs/reference.md).
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


def download_job(spec: CacheSpec, hf_token: SecretRef | None) -> dict[str, Any]:
    env: list[dict[str, Any]] = [{"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"}]
    if hf_token is not None:
        env.append(hf_token.env("HF_TOKEN"))
    component = {"app.kubernetes.io/component": "model-download"}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": spec.names.download,
            "namespace": spec.namespace,
            "labels": {**spec.labels, **component},
            # A Job past its deadline or retries stays failed, and the provider would await it
            # again on every later update; the next `pulumi up` replaces it and downloads afresh.
            "annotations": {"pulumi.com/replaceUnready": "true"},
        },
        "spec": {
            "backoffLimit": spec.download_retries,
            "activeDeadlineSeconds": spec.download_deadline_minutes * 60,
            "template": {
                # A Job's template cannot change in place: routine labels stay off it.
                "metadata": {"labels": component},
                "spec": {
                    "restartPolicy": "Never",
                    # A CPU node in the cache's zone; the image must match its architecture.
                    "nodeSelector": {
                        gke.MACHINE_FAMILY_LABEL: spec.download_machine_family,
                        "kubernetes.io/arch": _ARCH[spec.download_machine_family],
                        gke.ZONE_LABEL: spec.zone,
                    },
                    "containers": [
                        {
                            "name": "download",
                            "image": spec.download_image,
                            "command": ["bash", "-c", download_script(spec)],
                            "env": env,
                            "resources": guaranteed({"cpu": "4", "memory": "16Gi", "ephemeral-storage": "10Gi"}),
                            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
                        }
                    ],
                    "volumes": [{"name": "cache", "persistentVolumeClaim": {"claimName": spec.names.writer}}],
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


def snapshot(spec: CacheSpec) -> dict[str, Any]:
    return {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "metadata": {
            "name": spec.names.snapshot,
            "namespace": spec.namespace,
            "labels": spec.labels,
            # The provider has no awaiter for snapshots and they have no Ready condition.
            "annotations": {"pulumi.com/waitFor": "jsonpath={.status.readyToUse}=true"},
        },
        "spec": {"volumeSnapshotClassName": SNAPSHOT_CLASS, "source": {"persistentVolumeClaimName": spec.names.writer}},
    }


WRITER_LABELS = {"app.kubernetes.io/component": "model-cache-writer"}
# Time for a small CPU node and one API call.
RELEASE_DEADLINE_MINUTES = 10
RELEASE_SOURCE = "workloads/cache_release.py"
RELEASE_CODE = "model-cache-release-code"
RELEASE_ROOT = "/opt/cache-release"


def release_code() -> Program:
    """``workloads/cache_release.py``, shipped as every workloads/ program is (components/programs.py)."""
    return program(RELEASE_CODE, (RELEASE_SOURCE,), RELEASE_ROOT)


def release_account(spec: CacheSpec) -> list[dict[str, Any]]:
    """The claim and release Jobs' identity: creates claims, deletes the cache's writable one, reads its snapshot."""
    name = spec.names.release
    meta = {"name": name, "namespace": spec.namespace, "labels": spec.labels}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [
                # A create names no object yet, so RBAC cannot narrow it to one name.
                {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["create"]},
                {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "resourceNames": [spec.names.writer], "verbs": ["delete"]},
                {
                    "apiGroups": ["snapshot.storage.k8s.io"],
                    "resources": ["volumesnapshots"],
                    "resourceNames": [spec.names.snapshot],
                    "verbs": ["get"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": spec.namespace}],
        },
    ]


def _account_job(spec: CacheSpec, name: str, component: str, arguments: list[str]) -> dict[str, Any]:
    """A short Job that runs ``workloads/cache_release.py`` as the cache's account."""
    labels = {"app.kubernetes.io/component": component}
    code = release_code()
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": spec.namespace,
            "labels": {**spec.labels, **labels},
            # Like the download: a failed run is retried by the next `pulumi up`, never awaited forever.
            "annotations": {"pulumi.com/replaceUnready": "true"},
        },
        "spec": {
            "backoffLimit": 3,
            "activeDeadlineSeconds": RELEASE_DEADLINE_MINUTES * 60,
            "template": {
                # New code replaces the Job (its template is immutable), so it runs again, as when the source was its command.
                "metadata": {"labels": labels, "annotations": {"model-cache.llm-serving/code": code.digest()}},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": spec.names.release,
                    "containers": [
                        {
                            "name": component.removeprefix("model-cache-"),
                            "image": spec.download_image,
                            "command": ["python3", code.path_of(RELEASE_SOURCE), *arguments],
                            "resources": guaranteed({"cpu": "250m", "memory": "512Mi", "ephemeral-storage": "1Gi"}),
                            "volumeMounts": [code.mount()],
                        }
                    ],
                    "volumes": [code.volume()],
                },
            },
        },
    }


def claim_job(spec: CacheSpec) -> dict[str, Any]:
    """Creates the writable claim the download fills, unless its snapshot is already ready."""
    # Without the stack's labels: they are in the Job's command, which a label change must not replace.
    writer = _claim(spec, spec.names.writer, "ReadWriteOnce", None, WRITER_LABELS)
    arguments = ["claim", spec.namespace, spec.names.snapshot, json.dumps(writer, sort_keys=True)]
    return _account_job(spec, spec.names.claim, "model-cache-claim", arguments)


def release_job(spec: CacheSpec) -> dict[str, Any]:
    """Deletes the writable claim once the snapshot is ready, so its disk stops billing (reclaimPolicy Delete)."""
    return _account_job(spec, spec.names.release, "model-cache-release", ["release", spec.namespace, spec.names.writer])


def reader_claim(spec: CacheSpec) -> dict[str, Any]:
    return _claim(spec, spec.names.reader, "ReadOnlyMany", spec.names.snapshot)


class ModelCache(pulumi.ComponentResource):
    """Registers the cache in order; replicas mount ``spec.mount``.

    ``secrets`` are the Secrets the download Job must not precede.
    """

    # The CSI driver creates the Hyperdisk ML disks and their snapshot through Compute Engine.
    USES = ("compute.googleapis.com",)

    def __init__(
        self,
        name: str,
        spec: CacheSpec,
        *,
        hf_token: SecretRef | None,
        secrets: Sequence[pulumi.Resource],
        kubernetes: k8s.Provider,
        shared: ModelCache | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:storage:ModelCache", name, None, opts)
        base = child_options(self, opts, kubernetes)
        # The classes and the release program are the cluster's: with several models the first cache registers
        # them and the others use its (the classes depend only on the shared cache settings).
        if shared is None:
            self.classes = [
                Manifest("storage-class", storage_class(spec), base),
                Manifest("snapshot-class", snapshot_class(spec.labels), base),
            ]
            # The claim and release Jobs mount their program: it must be there before either pod starts.
            self.code = Manifest(RELEASE_CODE, release_code().config_map(spec.namespace, spec.labels), base)
        else:
            self.classes, self.code = shared.classes, shared.code
        classes, code = self.classes, self.code
        account = [Manifest(f"release-{spec.key}", manifest, base) for manifest in release_account(spec)]
        # The claim's class must exist before the claim; the download's Secrets before its pod.
        claimed = Manifest(
            f"claim-{spec.key}",
            claim_job(spec),
            pulumi.ResourceOptions.merge(
                base, pulumi.ResourceOptions(depends_on=[*classes, *account, code], custom_timeouts=awaits_beyond(RELEASE_DEADLINE_MINUTES))
            ),
        )
        download = Manifest(
            f"download-{spec.key}",
            download_job(spec, hf_token),
            pulumi.ResourceOptions.merge(
                base,
                pulumi.ResourceOptions(
                    depends_on=[claimed, *classes, *secrets], custom_timeouts=awaits_beyond(spec.download_deadline_minutes)
                ),
            ),
        )
        # The snapshot is taken only after the download Job has succeeded.
        taken = Manifest(
            f"snapshot-{spec.key}",
            snapshot(spec),
            pulumi.ResourceOptions.merge(
                base,
                pulumi.ResourceOptions(
                    depends_on=[download],
                    # Snapshotting a large disk can outlast the provider's 10-minute default.
                    custom_timeouts=pulumi.CustomTimeouts(create=SNAPSHOT_TIMEOUT),
                    protect=spec.protect,
                ),
            ),
        )
        self.reader = Manifest(
            f"reader-{spec.key}",
            reader_claim(spec),
            pulumi.ResourceOptions.merge(base, pulumi.ResourceOptions(depends_on=[taken], protect=spec.protect)),
        )
        # Once the snapshot is ready the written disk is spent: release it (a second disk would bill forever).
        Manifest(
            f"release-{spec.key}",
            release_job(spec),
            pulumi.ResourceOptions.merge(
                base, pulumi.ResourceOptions(depends_on=[taken, *account, code], custom_timeouts=awaits_beyond(RELEASE_DEADLINE_MINUTES))
            ),
        )
        self.register_outputs({"claimName": spec.mount.claim, "modelPath": spec.mount.model_path})
