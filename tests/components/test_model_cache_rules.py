"""The model cache's objects on a hand-made spec, its download script run against stand-in tools, and ``ModelCache`` alone."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from dataclasses import replace
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from components.credentials import SecretRef
from components.model_cache import (
    ModelCache,
    claim_job,
    download_job,
    download_script,
    reader_claim,
    release_code,
    release_job,
    storage_class,
)
from facts.naming import cache_names
from plan.stack import CacheSpec
from render.engine import Render
from tests.components.alone import registered

LABELS = {"team": "ml", "stack": "dev"}
SPEC = CacheSpec(
    key="qwen-0a1b2c3d",
    names=cache_names("qwen-0a1b2c3d"),
    namespace="serving",
    zone="us-central1-c",
    labels=LABELS,
    model_id="Qwen/Qwen3-8B",
    revision="r2",
    size_gi=120,
    throughput_mibps=1800,
    download_method="git",
    download_machine_family="c4a",
    download_retries=5,
    download_deadline_minutes=75,
    download_image="python:3.12-slim",
)
HF_TOKEN = SecretRef("hf-token")


def test_the_storage_class_is_hyperdisk_ml_at_the_caches_throughput_in_its_zone() -> None:
    assert storage_class(SPEC) == {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "model-cache-1800mi", "labels": LABELS},
        "provisioner": "pd.csi.storage.gke.io",
        "parameters": {"type": "hyperdisk-ml", "provisioned-throughput-on-create": "1800Mi"},
        "mountOptions": ["read_ahead_kb=4096"],
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.gke.io/zone", "values": ["us-central1-c"]}]}],
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": False,
    }


def test_replicas_read_a_volume_restored_from_the_snapshot() -> None:
    assert reader_claim(SPEC) == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "model-cache-qwen-0a1b2c3d", "namespace": "serving", "labels": LABELS},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "storageClassName": "model-cache-1800mi",
            "resources": {"requests": {"storage": "120Gi"}},
            "dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "model-cache-qwen-0a1b2c3d"},
        },
    }


def test_the_download_runs_on_a_cpu_node_of_the_caches_zone_bounded_in_tries_and_time() -> None:
    job = download_job(SPEC, HF_TOKEN)
    assert job["metadata"] == {
        "name": "model-download-qwen-0a1b2c3d",
        "namespace": "serving",
        "labels": {**LABELS, "app.kubernetes.io/component": "model-download"},
        "annotations": {"pulumi.com/replaceUnready": "true"},
    }
    assert (job["spec"]["backoffLimit"], job["spec"]["activeDeadlineSeconds"]) == (5, 75 * 60)
    template = job["spec"]["template"]
    assert template["metadata"] == {"labels": {"app.kubernetes.io/component": "model-download"}}
    pod = template["spec"]
    assert pod["restartPolicy"] == "Never"
    assert pod["nodeSelector"] == {
        "cloud.google.com/machine-family": "c4a",
        "kubernetes.io/arch": "arm64",
        "topology.kubernetes.io/zone": "us-central1-c",
    }
    assert pod["volumes"] == [{"name": "cache", "persistentVolumeClaim": {"claimName": "model-cache-qwen-0a1b2c3d-writer"}}]
    (container,) = pod["containers"]
    amounts = {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "10Gi"}
    assert container == {
        "name": "download",
        "image": "python:3.12-slim",
        "command": ["bash", "-c", download_script(SPEC)],
        "env": [
            {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": HF_TOKEN.key}}},
        ],
        "resources": {"requests": amounts, "limits": amounts},
        "volumeMounts": [{"name": "cache", "mountPath": "/cache"}],
    }
    x86 = download_job(replace(SPEC, download_machine_family="c3"), None)["spec"]["template"]["spec"]
    assert x86["nodeSelector"]["kubernetes.io/arch"] == "amd64"
    assert x86["containers"][0]["env"] == [{"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"}]


TOOLS = ("git", "apt-get", "pip", "hf", "du")


def run_download(spec: CacheSpec, tmp_path: Path, token: str | None = None, failing: str | None = None) -> tuple[int, str, Path]:
    """The download script under bash, its /cache in ``tmp_path``, each tool a stand-in that logs its call (and its git header)."""
    tools = tmp_path / "bin"
    tools.mkdir(exist_ok=True)
    log = tmp_path / "calls.log"
    for tool in TOOLS:
        stand_in = tools / tool
        exit_code = 3 if tool == failing else 0
        stand_in.write_text(f'#!/bin/sh\necho "{tool} $* | ${{GIT_CONFIG_KEY_0:-}}=${{GIT_CONFIG_VALUE_0:-}}" >> {log}\nexit {exit_code}\n')
        stand_in.chmod(stand_in.stat().st_mode | stat.S_IEXEC)
    cache = tmp_path / "cache"
    script = download_script(spec).replace("/cache/", f"{cache}/")
    env = {"PATH": f"{tools}:{os.environ['PATH']}", **({"HF_TOKEN": token} if token else {})}
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=30, check=False)
    calls = log.read_text() if log.exists() else ""
    return done.returncode, calls + done.stdout, cache / spec.key


def test_a_git_download_fetches_the_revisions_lfs_files_and_marks_the_cache_complete(tmp_path: Path) -> None:
    code, calls, target = run_download(SPEC, tmp_path, token="hf_secret")
    assert code == 0 and (target / ".complete").exists()
    lines = calls.splitlines()
    assert lines[0].startswith("apt-get update -qq |")
    assert lines[1].startswith("apt-get install -y -qq --no-install-recommends git git-lfs ca-certificates |")
    assert lines[2].startswith("git lfs install --skip-repo |")
    # The token reaches git only as an extra header in git's environment.
    header = "| http.extraHeader=Authorization: Bearer hf_secret"
    assert lines[3] == f"git clone --no-checkout https://huggingface.co/Qwen/Qwen3-8B {target} {header}"
    assert lines[4] == f"git -C {target} checkout r2 {header}"
    assert lines[5] == f"git -C {target} lfs pull {header}"
    assert lines[6].startswith(f"du -sh {target} |")
    assert lines[7] == f"downloaded to {target}"
    assert "hf_secret" not in download_script(SPEC)


def test_without_a_token_git_gets_no_header(tmp_path: Path) -> None:
    code, calls, _ = run_download(SPEC, tmp_path)
    assert code == 0 and next(line for line in calls.splitlines() if line.startswith("git clone")).endswith("| =")


def test_an_hf_download_uses_the_pinned_client_at_the_revision(tmp_path: Path) -> None:
    code, calls, target = run_download(replace(SPEC, download_method="hf"), tmp_path)
    assert code == 0 and (target / ".complete").exists()
    assert calls.splitlines()[:2] == [
        "pip install --no-cache-dir --quiet huggingface_hub==2.4.0 | =",
        f"hf download Qwen/Qwen3-8B --revision r2 --local-dir {target} | =",
    ]


def test_a_complete_cache_is_kept_and_a_partial_one_started_again(tmp_path: Path) -> None:
    target = tmp_path / "cache" / SPEC.key
    target.mkdir(parents=True)
    (target / ".complete").touch()
    (target / "weights").write_text("kept")
    code, calls, _ = run_download(SPEC, tmp_path)
    assert code == 0 and calls == "weights already present\n" and (target / "weights").exists()
    (target / ".complete").unlink()
    code, _, _ = run_download(SPEC, tmp_path)
    assert code == 0 and not (target / "weights").exists() and (target / ".complete").exists()


@pytest.mark.parametrize("failing", ["git", "hf"])
def test_a_failing_step_fails_the_job_and_marks_nothing(failing: str, tmp_path: Path) -> None:
    spec = replace(SPEC, download_method="hf" if failing == "hf" else "git")
    code, _, target = run_download(spec, tmp_path, failing=failing)
    assert code != 0 and not (target / ".complete").exists()


def test_the_claim_job_creates_the_writable_claim_without_the_stacks_labels() -> None:
    job = claim_job(SPEC)
    assert job["metadata"] == {
        "name": "model-cache-qwen-0a1b2c3d-claim",
        "namespace": "serving",
        "labels": {**LABELS, "app.kubernetes.io/component": "model-cache-claim"},
        "annotations": {"pulumi.com/replaceUnready": "true"},
    }
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["name"] == "claim"
    python, source, verb, namespace, snapshot, claim = container["command"]
    assert (python, source, verb, namespace, snapshot) == (
        "python3",
        "/opt/cache-release/workloads/cache_release.py",
        "claim",
        "serving",
        "model-cache-qwen-0a1b2c3d",
    )
    assert json.loads(claim) == {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "model-cache-qwen-0a1b2c3d-writer",
            "namespace": "serving",
            "labels": {"app.kubernetes.io/component": "model-cache-writer"},
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "model-cache-1800mi",
            "resources": {"requests": {"storage": "120Gi"}},
        },
    }


def test_the_release_job_runs_the_shipped_program_as_the_caches_account() -> None:
    job = release_job(SPEC)
    code = release_code()
    assert job["metadata"]["name"] == "model-cache-qwen-0a1b2c3d-release"
    assert job["metadata"]["labels"] == {**LABELS, "app.kubernetes.io/component": "model-cache-release"}
    assert (job["spec"]["backoffLimit"], job["spec"]["activeDeadlineSeconds"]) == (3, 600)
    template = job["spec"]["template"]
    assert template["metadata"] == {
        "labels": {"app.kubernetes.io/component": "model-cache-release"},
        "annotations": {"model-cache.llm-serving/code": code.digest()},
    }
    pod = template["spec"]
    assert (pod["restartPolicy"], pod["serviceAccountName"]) == ("Never", "model-cache-qwen-0a1b2c3d-release")
    assert pod["volumes"] == [code.volume()]
    amounts = {"cpu": "250m", "memory": "512Mi", "ephemeral-storage": "1Gi"}
    assert pod["containers"] == [
        {
            "name": "release",
            "image": "python:3.12-slim",
            "command": [
                "python3",
                "/opt/cache-release/workloads/cache_release.py",
                "release",
                "serving",
                "model-cache-qwen-0a1b2c3d-writer",
            ],
            "resources": {"requests": amounts, "limits": amounts},
            "volumeMounts": [{"name": "model-cache-release-code", "mountPath": "/opt/cache-release", "readOnly": True}],
        }
    ]


def cache_alone(spec: CacheSpec = SPEC) -> Render:
    def program() -> None:
        api = gcp.projects.Service("api", service="compute.googleapis.com")
        token = k8s.core.v1.Secret("hf-token")
        ModelCache(
            "model-cache",
            spec,
            hf_token=HF_TOKEN,
            secrets=[token],
            kubernetes=k8s.Provider("cluster"),
            opts=pulumi.ResourceOptions(depends_on=[api]),
        )

    return registered(program)


def test_the_cache_is_registered_in_its_order() -> None:
    render = cache_alone()
    by_name = {r.name: r for r in render.resources}
    classes = [by_name["storage-class"], by_name["snapshot-class"]]
    assert by_name["snapshot-class"].inputs == {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshotClass",
        "metadata": {"name": "model-cache", "labels": LABELS},
        "driver": "pd.csi.storage.gke.io",
        "deletionPolicy": "Delete",
    }
    account = [r for r in render.resources if r.name == "release-qwen-0a1b2c3d" and not r.type.endswith(":Job")]
    assert sorted(r.type for r in account) == [
        "kubernetes:core/v1:ServiceAccount",
        "kubernetes:rbac.authorization.k8s.io/v1:Role",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
    ]
    role = next(r for r in account if r.type.endswith(":Role")).inputs
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["create"]},
        {
            "apiGroups": [""],
            "resources": ["persistentvolumeclaims"],
            "resourceNames": ["model-cache-qwen-0a1b2c3d-writer"],
            "verbs": ["delete"],
        },
        {
            "apiGroups": ["snapshot.storage.k8s.io"],
            "resources": ["volumesnapshots"],
            "resourceNames": ["model-cache-qwen-0a1b2c3d"],
            "verbs": ["get"],
        },
    ]
    binding = next(r for r in account if r.type.endswith(":RoleBinding")).inputs
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "model-cache-qwen-0a1b2c3d-release"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "model-cache-qwen-0a1b2c3d-release", "namespace": "serving"}]
    meta = {"name": "model-cache-qwen-0a1b2c3d-release", "namespace": "serving", "labels": LABELS}
    assert all(r.inputs["metadata"] == meta for r in account)
    code = by_name["model-cache-release-code"]
    assert code.inputs["data"] == release_code().files() and code.inputs["metadata"]["namespace"] == "serving"
    claim = by_name["claim-qwen-0a1b2c3d"]
    assert all(r.urn in claim.dependencies for r in [*classes, *account, code])
    assert claim.custom_timeouts == {"create": "20m", "update": "20m"}
    download = by_name["download-qwen-0a1b2c3d"]
    assert all(r.urn in download.dependencies for r in [claim, *classes, by_name["hf-token"]])
    assert download.custom_timeouts == {"create": "85m", "update": "85m"}
    snapshot = by_name["snapshot-qwen-0a1b2c3d"]
    assert snapshot.inputs == {
        "apiVersion": "snapshot.storage.k8s.io/v1",
        "kind": "VolumeSnapshot",
        "metadata": {
            "name": "model-cache-qwen-0a1b2c3d",
            "namespace": "serving",
            "labels": LABELS,
            "annotations": {"pulumi.com/waitFor": "jsonpath={.status.readyToUse}=true"},
        },
        "spec": {"volumeSnapshotClassName": "model-cache", "source": {"persistentVolumeClaimName": "model-cache-qwen-0a1b2c3d-writer"}},
    }
    assert download.urn in snapshot.dependencies and snapshot.custom_timeouts == {"create": "30m"}
    reader = by_name["reader-qwen-0a1b2c3d"]
    assert reader.inputs["spec"]["accessModes"] == ["ReadOnlyMany"] and snapshot.urn in reader.dependencies
    release = next(r for r in render.resources if r.name == "release-qwen-0a1b2c3d" and r.type.endswith(":Job"))
    assert all(r.urn in release.dependencies for r in [snapshot, *account, code])
    assert release.custom_timeouts == {"create": "20m", "update": "20m"}
    assert not snapshot.protect and not reader.protect


def test_a_protected_cache_protects_its_snapshot_and_the_volume_replicas_read() -> None:
    render = cache_alone(replace(SPEC, protect=True))
    protected = sorted(r.name for r in render.resources if r.protect)
    assert protected == ["reader-qwen-0a1b2c3d", "snapshot-qwen-0a1b2c3d"]


def test_every_child_is_the_components_on_the_clusters_provider_after_what_it_waits_for() -> None:
    render = cache_alone()
    component = render.one("llm:storage:ModelCache", "model-cache").urn
    api = render.one("gcp:projects/service:Service").urn
    cluster = render.one("pulumi:providers:kubernetes").urn
    children = [r for r in render.resources if r.parent == component]
    assert api in render.one("llm:storage:ModelCache").dependencies
    assert len(children) == 11
    assert all(api in r.dependencies and r.provider.startswith(cluster) for r in children)


def test_the_cache_registers_a_download_job_with_the_token_and_its_code_with_the_stacks_labels() -> None:
    by_name = {r.name: r for r in cache_alone().resources}
    download = by_name["download-qwen-0a1b2c3d"]
    assert download.type == "kubernetes:batch/v1:Job"
    assert (download.inputs["apiVersion"], download.inputs["kind"]) == ("batch/v1", "Job")
    env = download.inputs["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[-1] == {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": HF_TOKEN.key}}}
    assert by_name["model-cache-release-code"].inputs["metadata"]["labels"] == LABELS
    # The claim and release Jobs are Jobs of batch/v1 too.
    jobs = [r for r in cache_alone().resources if r.name in ("claim-qwen-0a1b2c3d", "release-qwen-0a1b2c3d") and "Job" in r.type]
    assert [(r.type, r.inputs["apiVersion"], r.inputs["kind"]) for r in jobs] == [("kubernetes:batch/v1:Job", "batch/v1", "Job")] * 2
