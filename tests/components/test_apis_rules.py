"""The Google APIs a stack enables, from hand-made components, and ``ProjectApis`` alone."""

from __future__ import annotations

import functools

import pulumi
import pulumi_gcp as gcp
import pytest

from components.apis import ProjectApis, module_of, required_apis, serving_api
from plan.stack import ApisSpec
from tests.components.alone import component_outputs, registered


class Storage(pulumi.ComponentResource):
    REGISTERS = (gcp.storage.Bucket, gcp.storage.BucketIAMMember, gcp.serviceaccount.Account)
    USES = ("iamcredentials.googleapis.com",)


class Platform(pulumi.ComponentResource):
    REGISTERS = (gcp.compute.Network, gcp.container.Cluster, gcp.projects.IAMMember)


class KubernetesOnly(pulumi.ComponentResource):
    """Registers Kubernetes objects alone: it names no Google resource and calls no API."""


class Monitoring(pulumi.ComponentResource):
    USES = ("monitoring.googleapis.com", "logging.googleapis.com")


@pytest.mark.parametrize(
    ("resource", "module"),
    [(gcp.compute.Network, "compute"), (gcp.artifactregistry.Repository, "artifactregistry"), (gcp.projects.Service, "projects")],
)
def test_a_resource_class_belongs_to_its_pulumi_gcp_module(resource: type[pulumi.Resource], module: str) -> None:
    assert module_of(resource) == module


@pytest.mark.parametrize(
    ("type_token", "api"),
    [
        ("gcp:compute/subnetwork:Subnetwork", "compute.googleapis.com"),
        ("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember", "artifactregistry.googleapis.com"),
        ("gcp:serviceaccount/iAMMember:IAMMember", "iam.googleapis.com"),
        ("gcp:monitoring/dashboard:Dashboard", "monitoring.googleapis.com"),
        # Project IAM goes through Resource Manager; enabling an API through Service Usage, not its module's.
        ("gcp:projects/iAMMember:IAMMember", "cloudresourcemanager.googleapis.com"),
        ("gcp:projects/service:Service", "serviceusage.googleapis.com"),
        ("gcp:dns/managedZone:ManagedZone", None),
    ],
)
def test_a_registered_type_is_served_by_its_api(type_token: str, api: str | None) -> None:
    assert serving_api(type_token) == api


def test_the_apis_are_those_of_the_components_resources_and_workloads_sorted_once_each() -> None:
    assert required_apis([Platform, Storage, KubernetesOnly, Storage]) == (
        "cloudresourcemanager.googleapis.com",
        "compute.googleapis.com",
        "container.googleapis.com",
        "iam.googleapis.com",
        "iamcredentials.googleapis.com",
        "storage.googleapis.com",
    )
    assert required_apis([Monitoring]) == ("logging.googleapis.com", "monitoring.googleapis.com")
    assert required_apis([KubernetesOnly]) == ()


def program() -> None:
    google = gcp.Provider("gcp", project="example-project")
    ProjectApis(
        "apis",
        ApisSpec(project="example-project"),
        apis=("compute.googleapis.com", "container.googleapis.com"),
        opts=pulumi.ResourceOptions(providers=[google]),
    )


def test_each_api_is_enabled_in_the_project_and_left_on_at_destroy() -> None:
    render = registered(program)
    component = render.one("llm:platform:ProjectApis", "apis")
    google = render.one("pulumi:providers:gcp").urn
    services = render.by_type("gcp:projects/service:Service")
    kept = {"disableOnDestroy": False, "disableDependentServices": False}
    assert {s.name: s.inputs for s in services} == {
        name: {"project": "example-project", "service": f"{name}.googleapis.com", **kept} for name in ("compute", "container")
    }
    for service in services:
        assert service.parent == component.urn and service.provider.startswith(google)


def test_the_services_are_found_by_their_api_and_recorded() -> None:
    found: dict[str, str] = {}

    def by_api() -> None:
        apis = ProjectApis("apis", ApisSpec(project="example-project"), apis=("compute.googleapis.com", "storage.googleapis.com"))
        for api, service in apis.services.items():
            service.service.apply(functools.partial(found.__setitem__, api))

    registered(by_api)
    assert found == {"compute.googleapis.com": "compute.googleapis.com", "storage.googleapis.com": "storage.googleapis.com"}
    assert component_outputs(program) == {"apis": {"apis": ["compute.googleapis.com", "container.googleapis.com"]}}
