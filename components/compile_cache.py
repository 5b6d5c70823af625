"""vLLM's compile cache, shared by every replica and every wake: one bucket, mounted through Cloud Storage FUSE.

The first replica to compile a configuration writes vLLM's torch.compile
artifacts; later replicas and later wakes load them instead of compiling
(docs/cold-start.md: how vLLM keys the entries and why concurrent first
starts cannot corrupt them). The replicas reach the bucket as their own
Google identity through Workload Identity; it may use objects in this bucket
and nothing else.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.manifests import Manifest
from components.options import child_options
from components.workload_identity import kubernetes_service_account, let_act_as
from plan.stack import CompileCacheSpec

# Create, read, overwrite and delete objects (a FUSE rename is a copy and a delete), no bucket admin.
OBJECT_USER = "roles/storage.objectUser"


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
            let_act_as(
                "replicas-workload-identity",
                identity,
                project=spec.project,
                namespace=spec.namespace,
                account=spec.mount.service_account,
                opts=on_gcp,
            ),
        ]
        self.service_account = Manifest(
            spec.mount.service_account,
            # The replicas' Kubernetes identity, acting as the Google account that may use the bucket.
            kubernetes_service_account(spec.mount.service_account, spec.namespace, spec.labels, identity.email),
            pulumi.ResourceOptions.merge(child_options(self, opts, kubernetes), pulumi.ResourceOptions(depends_on=grants)),
        )
        self.register_outputs({"bucket": bucket.name, "serviceAccount": spec.mount.service_account})
