"""The model cache: downloaded once, snapshotted after the download, mounted read-only."""

from __future__ import annotations

import json
from typing import Any

from components.model_cache import RELEASE_CODE, download_script
from components.programs import REPOSITORY
from plan.stack import CacheSpec, cache_id, plan_stack
from render.engine import Registration, Render
from stacks.cache import CacheSettings
from stacks.model import ModelSettings
from stacks.settings import StackSettings
from tests.conftest import render_with, rendered

# A config.json for model ids the catalogue lacks (llm:model.config): the 27B's.
OWN_CONFIG = "facts/data/models/Qwen--Qwen3.5-27B-FP8/config.json"

CACHE_TYPES = (
    "kubernetes:storage.k8s.io/v1:StorageClass",
    "kubernetes:core/v1:PersistentVolumeClaim",
    "kubernetes:batch/v1:Job",
    "kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot",
    "kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshotClass",
)


def download_job(render: Render) -> Registration:
    (job,) = (r for r in render.by_type("kubernetes:batch/v1:Job") if r.name.startswith("download-"))
    return job


def cache_spec(settings: StackSettings) -> CacheSpec:
    spec = plan_stack(settings, "dev").cache
    assert spec is not None
    return spec


def cache_resources(render: Render) -> dict[str, Registration]:
    component = render.one("llm:storage:ModelCache")
    return {f"{r.type}::{r.name}": r for r in render.resources if r.parent == component.urn}


def claim(render: Render, access: str) -> Registration:
    return next(r for r in render.by_type("kubernetes:core/v1:PersistentVolumeClaim") if r.inputs["spec"]["accessModes"] == [access])


def test_the_storage_class_is_hyperdisk_ml_with_throughput_and_read_ahead() -> None:
    storage = rendered("dev").one("kubernetes:storage.k8s.io/v1:StorageClass").inputs
    assert storage["parameters"] == {"type": "hyperdisk-ml", "provisioned-throughput-on-create": "2400Mi"}
    assert storage["mountOptions"] == ["read_ahead_kb=4096"]


def test_the_download_finishes_before_the_snapshot_and_the_read_only_volume() -> None:
    render = rendered("dev")
    job = download_job(render)
    snapshot = render.one("kubernetes:snapshot.storage.k8s.io/v1:VolumeSnapshot")
    reader = claim(render, "ReadOnlyMany")
    # The writable claim is made by the claim Job, after its class exists and before the download.
    claim_job = next(r for r in render.by_type("kubernetes:batch/v1:Job") if r.name.startswith("claim-"))
    assert render.depends_on(claim_job, render.one("kubernetes:storage.k8s.io/v1:StorageClass"))
    assert render.depends_on(job, claim_job)
    writer = json.loads(claim_job.inputs["spec"]["template"]["spec"]["containers"][0]["command"][-1])
    assert writer["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert writer["spec"]["storageClassName"] == render.one("kubernetes:storage.k8s.io/v1:StorageClass").inputs["metadata"]["name"]
    assert render.depends_on(snapshot, job)
    assert render.depends_on(reader, snapshot)
    assert reader.inputs["spec"]["dataSource"] == {
        "apiGroup": "snapshot.storage.k8s.io",
        "kind": "VolumeSnapshot",
        "name": snapshot.inputs["metadata"]["name"],
    }
    assert snapshot.inputs["spec"]["source"]["persistentVolumeClaimName"] == writer["metadata"]["name"]


def test_the_download_job_has_bounded_retries_a_deadline_and_a_timeout_beyond_it() -> None:
    job = download_job(rendered("dev"))
    spec = job.inputs["spec"]
    assert spec["backoffLimit"] == 3
    # The 27B's checkpoint (28.8 GiB with its MTP layers) at 8 MiB/s: 62 minutes.
    assert spec["activeDeadlineSeconds"] == 62 * 60
    assert job.custom_timeouts["create"] == "72m"


def test_the_download_deadline_follows_the_models_weights_unless_set() -> None:
    # The 397B in FP8 (378.3 GiB) at 8 MiB/s: 807 minutes; a small model keeps the hour.
    big = download_job(
        render_with("dev", model={"id": "Qwen/Qwen3.5-397B-A17B-FP8"}, serving={"tensorParallelSize": 8}, cache={"sizeGi": 400})
    )
    assert big.inputs["spec"]["activeDeadlineSeconds"] == 807 * 60
    small = download_job(render_with("dev", model={"id": "Qwen/Qwen3-Embedding-8B"}))
    assert small.inputs["spec"]["activeDeadlineSeconds"] == 60 * 60
    assert download_job(render_with("dev", cache={"downloadDeadlineMinutes": 30})).inputs["spec"]["activeDeadlineSeconds"] == 30 * 60


def test_the_download_job_runs_on_an_arm_cpu_node_in_the_cache_zone() -> None:
    pod = download_job(rendered("dev")).inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "cloud.google.com/machine-family": "c4a",
        "kubernetes.io/arch": "arm64",
        "topology.kubernetes.io/zone": "europe-west4-b",
    }
    assert "nvidia.com/gpu" not in pod["containers"][0]["resources"]["requests"]


def test_an_x86_download_node_gets_the_x86_architecture() -> None:
    pod = download_job(render_with("dev", cache={"downloadMachineFamily": "c3"})).inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["kubernetes.io/arch"] == "amd64"


def test_download_methods() -> None:
    base: dict[str, Any] = {"project": "example-project"}
    lfs = download_script(cache_spec(StackSettings.model_validate(base)))
    assert "git-lfs" in lfs and "lfs pull" in lfs and "hf download" not in lfs
    hub = download_script(cache_spec(StackSettings.model_validate({**base, "cache": {"downloadMethod": "hf"}})))
    assert "hf download Qwen/Qwen3.5-27B-FP8 --revision main" in hub and "git" not in hub
    for script in (lfs, hub):
        assert script.startswith("set -euo pipefail")
        assert ".complete" in script
        # Tracing would print the token's expansion into the Job's log.
        assert "set -x" not in script and "xtrace" not in script


def test_replicas_mount_the_cache_read_only() -> None:
    render = rendered("dev")
    pod = render.one("kubernetes:apps/v1:Deployment", "vllm").inputs["spec"]["template"]["spec"]
    reader = claim(render, "ReadOnlyMany")
    volume = next(v for v in pod["volumes"] if "persistentVolumeClaim" in v)
    assert volume["persistentVolumeClaim"] == {"claimName": reader.inputs["metadata"]["name"], "readOnly": True}
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == volume["name"])
    assert mount["readOnly"] is True
    assert pod["containers"][0]["command"][2].startswith(mount["mountPath"] + "/")


def test_cache_names_follow_the_model_revision_and_the_disk() -> None:
    base, disk = ModelSettings(), CacheSettings()
    assert cache_id(base, disk) == cache_id(ModelSettings(), CacheSettings())
    assert cache_id(base, disk) != cache_id(ModelSettings(revision="0123abc"), disk)
    assert cache_id(base, disk) != cache_id(ModelSettings(id="Qwen/Qwen3.5-27B", config=OWN_CONFIG), disk)
    assert cache_id(base, disk) != cache_id(base, CacheSettings(size_gi=200))
    assert cache_id(base, disk) != cache_id(base, CacheSettings(throughput_mibps=4800))
    assert cache_id(base, disk) == cache_id(base, CacheSettings(download_retries=5))
    assert len(f"model-cache-{cache_id(ModelSettings(id='org/' + 'x' * 90, config=OWN_CONFIG), disk)}-writer") <= 63


def test_changing_the_model_rebuilds_the_cache() -> None:
    before = cache_resources(rendered("dev"))
    after = cache_resources(render_with("dev", model={"id": "Qwen/Qwen3.5-27B-FP8", "revision": "0123abc"}))
    # The classes and the release program's code serve every model.
    shared = {k for k in before if "Class" in k.split("::")[0] or k.endswith(f"::{RELEASE_CODE}")}
    per_model = set(before) - shared
    assert len(shared) == 3
    assert per_model and not per_model & set(after)


def test_without_a_cache_replicas_download_at_start() -> None:
    render = render_with("dev", cache={"enabled": False})
    assert render.by_type("llm:storage:ModelCache") == []
    assert not any(render.by_type(t) for t in CACHE_TYPES)
    container = render.one("kubernetes:apps/v1:Deployment", "vllm").inputs["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][2] == "Qwen/Qwen3.5-27B-FP8"
    assert not any(v.get("name") == "HF_HUB_OFFLINE" for v in container["env"])


def test_the_claim_and_release_jobs_run_their_program_from_a_config_map_created_first() -> None:
    render = rendered("dev")
    maps = {r.inputs["metadata"]["name"]: r for r in render.by_type("kubernetes:core/v1:ConfigMap")}
    jobs = [r for r in render.by_type("kubernetes:batch/v1:Job") if r.name.startswith(("claim-", "release-"))]
    assert len(jobs) == 2
    for job in jobs:
        pod = job.inputs["spec"]["template"]["spec"]
        (volume,) = pod["volumes"]
        (mount,) = pod["containers"][0]["volumeMounts"]
        code = maps[volume["configMap"]["name"]]
        # The pod may start only once the files it runs exist.
        assert render.depends_on(job, code)
        script = pod["containers"][0]["command"][1]
        (item,) = (i for i in volume["configMap"]["items"] if f"{mount['mountPath']}/{i['path']}" == script)
        assert code.inputs["data"][item["key"]] == (REPOSITORY / item["path"]).read_text(encoding="utf-8")
