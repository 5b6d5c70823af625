"""Plain-dict manifests registered as the provider's own types, read back, and the shared pieces of pod specs."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest
import yaml

from components.manifests import Manifest, guaranteed, scale_fallback, type_token
from render.engine import _Mocks
from tests.components.alone import registered


@pytest.mark.parametrize(
    ("api_version", "kind", "token"),
    [
        ("apps/v1", "Deployment", "kubernetes:apps/v1:Deployment"),
        # The core group has no name in apiVersion.
        ("v1", "ConfigMap", "kubernetes:core/v1:ConfigMap"),
        ("keda.sh/v1alpha1", "ScaledObject", "kubernetes:keda.sh/v1alpha1:ScaledObject"),
    ],
)
def test_a_manifest_is_registered_under_the_token_of_its_api_version_and_kind(api_version: str, kind: str, token: str) -> None:
    assert type_token(api_version, kind) == token


JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "download", "namespace": "serving"},
    "spec": {"backoffLimit": 2},
}


class Filled(_Mocks):
    """The render's engine, filling in a Job's status as the cluster does."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        name, state = super().new_resource(args)
        return name, {**state, "status": {"succeeded": 1}} if args.typ == "kubernetes:batch/v1:Job" else state


def test_a_manifest_registers_as_given_with_its_options_and_reads_back_what_the_cluster_fills_in() -> None:
    read: list[object] = []

    def program() -> None:
        api = gcp.projects.Service("api", service="container.googleapis.com")
        job = Manifest("download", JOB, pulumi.ResourceOptions(provider=k8s.Provider("cluster"), depends_on=[api]), outputs=("status",))
        job.output("status").apply(read.append)

    render = registered(program, Filled())
    job = render.one("kubernetes:batch/v1:Job", "download")
    # The field to read back is asked for empty: the cluster fills it in.
    assert job.inputs == JOB and job.custom
    assert job.provider.startswith(render.one("pulumi:providers:kubernetes", "cluster").urn)
    assert render.one("gcp:projects/service:Service", "api").urn in job.dependencies
    assert read == [{"succeeded": 1}]


def test_a_guaranteed_container_requests_what_it_is_limited_to() -> None:
    amounts = {"cpu": "2", "memory": "4Gi"}
    resources = guaranteed(amounts)
    assert resources == {"requests": amounts, "limits": amounts}
    # Two mappings, not one under two keys: a YAML render would write an anchor and an alias.
    assert "&" not in yaml.safe_dump(resources)
    amounts["cpu"] = "4"
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == "2"


def test_a_failing_trigger_counts_as_zero_replicas_after_three_polls() -> None:
    assert scale_fallback() == {"failureThreshold": 3, "replicas": 0}
