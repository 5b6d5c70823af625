"""Artifact Registry on a hand-made spec: what ``ImageRegistry`` registers alone, with which options."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.registry import ImageRegistry
from plan.stack import RegistrySpec
from tests.components.alone import component_outputs, registered

LABELS = {"team": "ml", "stack": "prod"}
REPOSITORIES = {"docker.io": "docker-hub", "registry.k8s.io": "registry-k8s-io", "ghcr.io": "ghcr-io"}
SPEC = RegistrySpec(project="example-project", region="europe-west4", labels=LABELS, repositories=REPOSITORIES)
NODES = "serviceAccount:llm-prod-nodes@example-project.iam.gserviceaccount.com"


def program() -> None:
    google = gcp.Provider("gcp", project="example-project")
    api = gcp.projects.Service("api", service="artifactregistry.googleapis.com")
    ImageRegistry("registry", SPEC, reader=NODES, opts=pulumi.ResourceOptions(providers=[google], depends_on=[api]))


def remote(host: str, repository_id: str, upstream: dict[str, object]) -> dict[str, object]:
    return {
        "repositoryId": repository_id,
        "project": "example-project",
        "location": "europe-west4",
        "format": "DOCKER",
        "mode": "REMOTE_REPOSITORY",
        "description": f"{host}, cached in the stack's region for its nodes",
        "remoteRepositoryConfig": {"dockerRepository": upstream},
        "labels": LABELS,
    }


def test_each_upstream_is_a_remote_docker_repository_in_the_stacks_region() -> None:
    render = registered(program)
    repositories = {r.name: r.inputs for r in render.by_type("gcp:artifactregistry/repository:Repository")}
    assert repositories == {
        # Docker Hub by its preset, the others by their address.
        "docker-hub": remote("docker.io", "docker-hub", {"publicRepository": "DOCKER_HUB"}),
        "registry-k8s-io": remote("registry.k8s.io", "registry-k8s-io", {"customRepository": {"uri": "https://registry.k8s.io"}}),
        "ghcr-io": remote("ghcr.io", "ghcr-io", {"customRepository": {"uri": "https://ghcr.io"}}),
    }


def test_the_nodes_may_read_each_repository_and_nothing_more() -> None:
    render = registered(program)
    grants = render.by_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    assert {grant.name: grant.inputs for grant in grants} == {
        f"{repository}-nodes-read": {
            "project": "example-project",
            "location": "europe-west4",
            "repository": repository,
            "role": "roles/artifactregistry.reader",
            "member": NODES,
        }
        for repository in ("docker-hub", "registry-k8s-io", "ghcr-io")
    }
    for grant in grants:
        repository = render.one("gcp:artifactregistry/repository:Repository", grant.inputs["repository"])
        assert repository.urn in grant.dependencies


def test_every_repository_and_grant_belongs_to_the_registry_and_waits_for_its_api() -> None:
    render = registered(program)
    component = render.one("llm:platform:ImageRegistry", "registry")
    api = render.one("gcp:projects/service:Service", "api").urn
    google = render.one("pulumi:providers:gcp").urn
    assert api in component.dependencies
    children = [r for r in render.resources if r.parent == component.urn]
    assert len(children) == 6
    for child in children:
        assert api in child.dependencies and child.provider.startswith(google), child.name


def test_the_registry_records_its_repositories() -> None:
    assert component_outputs(program) == {"registry": {"repositories": ["docker-hub", "registry-k8s-io", "ghcr-io"]}}


def test_a_prefix_gives_the_project_other_repository_ids_and_keeps_the_names_in_the_stack() -> None:
    prefixed = {host: f"rag-{repository}" for host, repository in REPOSITORIES.items()}

    def second() -> None:
        ImageRegistry("registry", RegistrySpec("example-project", "europe-west4", LABELS, prefixed), reader=NODES)

    render = registered(second)
    repositories = {r.name: r.inputs["repositoryId"] for r in render.by_type("gcp:artifactregistry/repository:Repository")}
    # Same names in the stack, so a stack that sets a prefix replaces its repositories and nothing else.
    assert repositories == {repository: f"rag-{repository}" for repository in REPOSITORIES.values()}
    grants = render.by_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    assert sorted(grant.inputs["repository"] for grant in grants) == sorted(prefixed.values())
    assert component_outputs(second) == {"registry": {"repositories": list(prefixed.values())}}
