"""The compile cache: vLLM's torch.compile artifacts shared by every replica and every wake, through Cloud Storage FUSE."""

from __future__ import annotations

from typing import Any

import pytest

from facts.naming import compile_cache_bucket
from plan.cold_start_estimate import compile_cache_enabled
from tests.conftest import render_with, rendered

GCSFUSE_DRIVER = "gcsfuse.csi.storage.gke.io"


def pod(stack: str) -> dict[str, Any]:
    template: dict[str, Any] = rendered(stack).one("kubernetes:apps/v1:Deployment", "vllm").inputs["spec"]["template"]
    return template


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_replicas_read_and_write_vllms_compile_cache_in_one_bucket_with_their_own_identity(stack: str) -> None:
    render, template = rendered(stack), pod(stack)
    spec = template["spec"]
    # GKE injects the Cloud Storage FUSE sidecar only into pods that ask for it.
    assert template["metadata"]["annotations"]["gke-gcsfuse/volumes"] == "true"
    volume = next(v for v in spec["volumes"] if v.get("csi", {}).get("driver") == GCSFUSE_DRIVER)
    bucket = render.one("gcp:storage/bucket:Bucket")
    assert volume["csi"]["volumeAttributes"]["bucketName"] == bucket.inputs["name"]
    assert bucket.inputs["location"] == render.one("pulumi:providers:gcp").inputs["region"].upper()
    assert bucket.inputs["uniformBucketLevelAccess"] is True
    container = spec["containers"][0]
    mount = next(m for m in container["volumeMounts"] if m["name"] == volume["name"])
    # vLLM keys the cache directory itself under VLLM_CACHE_ROOT (vllm/compilation/backends.py).
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["VLLM_CACHE_ROOT"] == mount["mountPath"] and not mount.get("readOnly")
    # The engine's other JIT caches, which a new node compiled again (tests/real_runs/2026-11-26-h100-dev), live in the same bucket.
    for variable in ("TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE", "TORCHINDUCTOR_CACHE_DIR"):
        assert str(env[variable]).startswith(mount["mountPath"] + "/"), variable
    assert len({env[v] for v in ("VLLM_CACHE_ROOT", "TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE", "TORCHINDUCTOR_CACHE_DIR")}) == 4
    # The pod's Kubernetes identity is a Google account that may write objects in that bucket and no other.
    account = render.one("kubernetes:core/v1:ServiceAccount", spec["serviceAccountName"]).inputs
    email = account["metadata"]["annotations"]["iam.gke.io/gcp-service-account"]
    grant = render.one("gcp:storage/bucketIAMMember:BucketIAMMember").inputs
    assert (grant["bucket"], grant["role"], grant["member"]) == (
        bucket.inputs["name"],
        "roles/storage.objectUser",
        f"serviceAccount:{email}",
    )
    namespace = account["metadata"]["namespace"]
    binding = next(
        r.inputs
        for r in render.by_type("gcp:serviceaccount/iAMMember:IAMMember")
        if r.inputs["role"] == "roles/iam.workloadIdentityUser" and f"[{namespace}/{spec['serviceAccountName']}]" in r.inputs["member"]
    )
    assert binding["serviceAccountId"].endswith(email)


def test_the_replicas_start_only_once_their_identity_may_use_the_bucket() -> None:
    render = rendered("dev")
    deployment = render.one("kubernetes:apps/v1:Deployment", "vllm")
    for kind in ("kubernetes:core/v1:ServiceAccount", "gcp:storage/bucketIAMMember:BucketIAMMember"):
        earlier = next(r for r in render.by_type(kind) if "llm:serving:CompileCache$" in r.urn)
        assert render.depends_on(deployment, earlier), kind


def test_vllms_own_switch_turns_the_shared_cache_off() -> None:
    render = render_with("dev", serving={"env": {"VLLM_DISABLE_COMPILE_CACHE": "1"}})
    assert not render.by_type("gcp:storage/bucket:Bucket")
    spec = render.one("kubernetes:apps/v1:Deployment", "vllm").inputs["spec"]["template"]["spec"]
    assert "serviceAccountName" not in spec
    assert not any("csi" in volume for volume in spec["volumes"])
    # "0" is vLLM's default, not a switch.
    assert compile_cache_enabled({"VLLM_DISABLE_COMPILE_CACHE": "0"})


@pytest.mark.parametrize(
    ("project", "cluster"), [("llm-serving-dev", "llm-serving"), ("a-thirty-character-project-id0", "a-long-cluster-name-for-tests")]
)
def test_the_bucket_name_is_the_project_and_cluster_and_fits_gcs_limits(project: str, cluster: str) -> None:
    name = compile_cache_bucket(project, cluster)
    assert 3 <= len(name) <= 63 and name.startswith(project)
    assert compile_cache_bucket(project, cluster + "-2") != name


def test_replicas_that_compile_at_once_both_keep_their_write_of_the_same_entry() -> None:
    volume = next(v for v in pod("dev")["spec"]["volumes"] if v.get("csi", {}).get("driver") == GCSFUSE_DRIVER)
    options = volume["csi"]["volumeAttributes"]["mountOptions"].split(",")
    # gcsfuse refuses a close whose object another mount changed since (docs/semantics.md, Concurrency);
    # vLLM writes vllm_compile_cache.py without catching that (vllm/compilation/backends.py save_to_file).
    # Both writers hold the same entry (vLLM's key covers config, code and torch), so the last may win.
    assert "precondition-errors=false" in options


def test_the_fuse_sidecar_is_sized_for_eight_engines_writing_the_cache_at_once() -> None:
    """gcsfuse puts a4-highgpu-8g in its high-performance group (1,600 write blocks of 32 MiB); the sidecar's
    default is 256Mi. Its write buffers are bounded and its memory set to hold them (docs/cold-start.md)."""
    template = pod("prod")
    annotations = template["metadata"]["annotations"]
    assert {"gke-gcsfuse/memory-limit", "gke-gcsfuse/memory-request", "gke-gcsfuse/cpu-request"} <= set(annotations)
    volume = next(v for v in template["spec"]["volumes"] if v.get("csi", {}).get("driver") == GCSFUSE_DRIVER)
    options = dict(
        option.rsplit(":", 1) for option in volume["csi"]["volumeAttributes"]["mountOptions"].split(",") if option.count(":") == 2
    )
    blocks, block_mib = int(options["write:global-max-blocks"]), 32
    memory_mib = int(annotations["gke-gcsfuse/memory-limit"].removesuffix("Mi"))
    assert annotations["gke-gcsfuse/memory-request"] == annotations["gke-gcsfuse/memory-limit"]
    assert 0 < blocks * block_mib <= memory_mib / 2  # the buffers, with room for gcsfuse's own and its caches
