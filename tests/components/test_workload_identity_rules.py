"""Workload Identity on hand-made names: the Kubernetes account's principal, its manifest and the grant to act as a Google account."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.workload_identity import kubernetes_member, kubernetes_service_account, let_act_as
from tests.components.alone import registered


def test_a_kubernetes_account_is_a_principal_of_the_projects_workload_pool() -> None:
    assert kubernetes_member("example-project", "serving", "vllm-replicas") == (
        "serviceAccount:example-project.svc.id.goog[serving/vllm-replicas]"
    )


def test_the_kubernetes_account_names_the_google_account_its_pods_act_as() -> None:
    labels = {"team": "ml"}
    assert kubernetes_service_account("batch-runner", "serving", labels, "runner@example-project.iam.gserviceaccount.com") == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "batch-runner",
            "namespace": "serving",
            "labels": labels,
            "annotations": {"iam.gke.io/gcp-service-account": "runner@example-project.iam.gserviceaccount.com"},
        },
    }


def test_the_grant_lets_that_kubernetes_account_act_as_the_google_account_with_the_options_given() -> None:
    def program() -> None:
        api = gcp.projects.Service("api", service="iam.googleapis.com")
        identity = gcp.serviceaccount.Account("runner", account_id="llm-runner", project="example-project")
        let_act_as(
            "runner-workload-identity",
            identity,
            project="example-project",
            namespace="serving",
            account="batch-runner",
            opts=pulumi.ResourceOptions(depends_on=[api]),
        )

    render = registered(program)
    grant = render.one("gcp:serviceaccount/iAMMember:IAMMember", "runner-workload-identity")
    assert grant.inputs == {
        "serviceAccountId": "projects/example-project/serviceAccounts/llm-runner@example-project.iam.gserviceaccount.com",
        "role": "roles/iam.workloadIdentityUser",
        "member": "serviceAccount:example-project.svc.id.goog[serving/batch-runner]",
    }
    assert render.one("gcp:projects/service:Service", "api").urn in grant.dependencies
