"""Kubernetes service accounts acting as Google service accounts, with no key (GKE Workload Identity)."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

# The annotation GKE reads to hand a pod of this Kubernetes account the Google account's token.
GCP_SERVICE_ACCOUNT_ANNOTATION = "iam.gke.io/gcp-service-account"
WORKLOAD_IDENTITY_USER = "roles/iam.workloadIdentityUser"


def kubernetes_member(project: str, namespace: str, account: str) -> str:
    """The Kubernetes service account as a Google principal of the cluster's workload pool."""
    return f"serviceAccount:{project}.svc.id.goog[{namespace}/{account}]"


def kubernetes_service_account(name: str, namespace: str, labels: dict[str, str], google_account: pulumi.Input[str]) -> dict[str, Any]:
    """A Kubernetes service account whose pods act as ``google_account``."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {GCP_SERVICE_ACCOUNT_ANNOTATION: google_account},
        },
    }


def let_act_as(
    name: str, identity: gcp.serviceaccount.Account, *, project: str, namespace: str, account: str, opts: pulumi.ResourceOptions
) -> gcp.serviceaccount.IAMMember:
    """Lets the Kubernetes service account ``namespace/account`` act as ``identity``."""
    return gcp.serviceaccount.IAMMember(
        name,
        service_account_id=identity.name,
        role=WORKLOAD_IDENTITY_USER,
        member=kubernetes_member(project, namespace, account),
        opts=opts,
    )
