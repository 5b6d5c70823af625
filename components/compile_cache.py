"""vLLM's compile cache, shared by every replica and every wake: one bucket, mounted through Cloud Storage FUSE.

The first replica to compile a configuration writes vLLM's torch.compile
artifacts; later replicas and later wakes load them instead of compiling
(docs/cold-start.md: how vLLM keys the entries and why concurrent first
starts cannot corrupt them). The replicas reach the bucket as their own
Google identity through Workload Identity; it may use objects in this bucket
and nothing else.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.manifests import Manifest
from components.options import child_options
from stacks.plan import CompileCacheSpec

# Create, read, overwrite and delete objects (a FUSE rename is a copy and a delete), no bucket admin.
OBJECT_USER = "roles/storage.objectUser"
WORKLOAD_IDENTITY_USER = "roles/iam.workloadIdentityUser"
GCP_SERVICE_ACCOUNT_ANNOTATION = "iam.gke.io/gcp-service-account"


def bucket_args(spec: CompileCacheSpec) -> gcp.storage.BucketArgs:
    return gcp.storage.BucketArgs(
        name=spec.mount.bucket,
        project=spec.project,
        # In the nodes' region: reads stay regional and cost no inter-region transfer.
        location=spec.region.upper(),
        uniform_bucket_level_access=True,
        public_access_prevention="enforced",
        # Only a cache: a destroy may delete what it holds, and overwritten entries need no soft-delete copies.
        force_destroy=True,
        soft_delete_policy=gcp.storage.BucketSoftDeletePolicyArgs(retention_duration_seconds=0),
        labels=spec.labels,
    )


def service_account(spec: CompileCacheSpec, email: pulumi.Input[str]) -> dict[str, Any]:
    """The replicas' Kubernetes identity, acting as the Google account that may use the bucket."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": spec.mount.service_account,
            "namespace": spec.namespace,
            "labels": spec.labels,
            "annotations": {GCP_SERVICE_ACCOUNT_ANNOTATION: email},
        },
    }


class CompileCache(pulumi.ComponentResource):
    """Registers the bucket, the replicas' Google and Kubernetes identities, and the bucket grant."""

    REGISTERS = (gcp.storage.Bucket, gcp.storage.BucketIAMMember, gcp.serviceaccount.Account, gcp.serviceaccount.IAMMember)
    # The FUSE sidecar exchanges the pod's token for the Google account's (Workload Identity).
    USES = ("iamcredentials.googleapis.com",)

    def __init__(
        self,
        name: str,
        spec: CompileCacheSpec,
        *,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:serving:CompileCache", name, None, opts)
        on_gcp = child_options(self, opts)
        bucket = gcp.storage.Bucket("compile-cache", bucket_args(spec), opts=on_gcp)
        identity = gcp.serviceaccount.Account(
            "replicas",
            account_id=spec.account_id,
            display_name="vLLM replicas (compile cache)",
            project=spec.project,
            opts=on_gcp,
        )
        grants = [
            gcp.storage.BucketIAMMember(
                "replicas-use-compile-cache", bucket=bucket.name, role=OBJECT_USER, member=identity.member, opts=on_gcp
            ),
            gcp.serviceaccount.IAMMember(
                "replicas-workload-identity",
                service_account_id=identity.name,
                role=WORKLOAD_IDENTITY_USER,
                member=f"serviceAccount:{spec.project}.svc.id.goog[{spec.namespace}/{spec.mount.service_account}]",
                opts=on_gcp,
            ),
        ]
        self.service_account = Manifest(
            spec.mount.service_account,
            service_account(spec, identity.email),
            pulumi.ResourceOptions.merge(child_options(self, opts, kubernetes), pulumi.ResourceOptions(depends_on=grants)),
        )
        self.register_outputs({"bucket": bucket.name, "serviceAccount": spec.mount.service_account})
