"""The compile cache on a hand-made spec: what ``CompileCache`` registers alone, with which options."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.compile_cache import CompileCache
from plan.stack import CompileCacheMount, CompileCacheSpec
from render.engine import Render
from tests.components.alone import component_outputs, registered

LABELS = {"team": "ml", "stack": "dev"}
SPEC = CompileCacheSpec(
    project="example-project",
    region="europe-west4",
    namespace="serving",
    labels=LABELS,
    account_id="llm-dev-replicas",
    mount=CompileCacheMount(bucket="example-project-llm-compile", folder="/compile-cache", service_account="vllm-replicas"),
)
EMAIL = "llm-dev-replicas@example-project.iam.gserviceaccount.com"


def program() -> None:
    # As the stack passes them: its Google provider, and the APIs to wait for.
    google = gcp.Provider("gcp", project="example-project")
    api = gcp.projects.Service("api", service="storage.googleapis.com")
    opts = pulumi.ResourceOptions(providers=[google], depends_on=[api])
    CompileCache("compile-cache", SPEC, kubernetes=k8s.Provider("cluster"), opts=opts)


def test_the_bucket_is_private_regional_and_holds_nothing_worth_keeping() -> None:
    render = registered(program)
    assert render.one("gcp:storage/bucket:Bucket", "compile-cache").inputs == {
        "name": "example-project-llm-compile",
        "project": "example-project",
        "location": "EUROPE-WEST4",
        "uniformBucketLevelAccess": True,
        "publicAccessPrevention": "enforced",
        "forceDestroy": True,
        "softDeletePolicy": {"retentionDurationSeconds": 0},
        "labels": LABELS,
    }


def test_the_replicas_google_identity_may_use_objects_of_that_bucket_only() -> None:
    render = registered(program)
    assert render.one("gcp:serviceaccount/account:Account", "replicas").inputs == {
        "accountId": "llm-dev-replicas",
        "displayName": "vLLM replicas (compile cache)",
        "project": "example-project",
    }
    assert render.one("gcp:storage/bucketIAMMember:BucketIAMMember", "replicas-use-compile-cache").inputs == {
        "bucket": "example-project-llm-compile",
        "role": "roles/storage.objectUser",
        "member": f"serviceAccount:{EMAIL}",
    }
    assert render.one("gcp:serviceaccount/iAMMember:IAMMember", "replicas-workload-identity").inputs == {
        "serviceAccountId": f"projects/example-project/serviceAccounts/{EMAIL}",
        "role": "roles/iam.workloadIdentityUser",
        "member": "serviceAccount:example-project.svc.id.goog[serving/vllm-replicas]",
    }


def test_the_replicas_kubernetes_account_acts_as_it_once_both_grants_are_made() -> None:
    render = registered(program)
    account = render.one("kubernetes:core/v1:ServiceAccount", "vllm-replicas")
    assert account.inputs == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {
            "name": "vllm-replicas",
            "namespace": "serving",
            "labels": LABELS,
            "annotations": {"iam.gke.io/gcp-service-account": EMAIL},
        },
    }
    assert account.provider.startswith(render.one("pulumi:providers:kubernetes", "cluster").urn)
    for grant in (
        render.one("gcp:storage/bucketIAMMember:BucketIAMMember"),
        render.one("gcp:serviceaccount/iAMMember:IAMMember"),
    ):
        assert grant.urn in account.dependencies


def test_every_child_belongs_to_the_component_and_waits_for_what_it_waits_for() -> None:
    render: Render = registered(program)
    component = render.one("llm:serving:CompileCache", "compile-cache")
    api = render.one("gcp:projects/service:Service", "api").urn
    assert api in component.dependencies
    google, cluster = render.one("pulumi:providers:gcp").urn, render.one("pulumi:providers:kubernetes").urn
    children = [r for r in render.resources if r.parent == component.urn]
    assert len(children) == 5
    for child in children:
        assert api in child.dependencies, child.name
        # Google resources use the stack's Google provider, the Kubernetes account the cluster's.
        assert child.provider.startswith(cluster if child.type.startswith("kubernetes:") else google), child.name


def test_the_component_records_its_bucket_and_kubernetes_account() -> None:
    assert component_outputs(program) == {"compile-cache": {"bucket": "example-project-llm-compile", "serviceAccount": "vllm-replicas"}}
