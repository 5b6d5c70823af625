"""Artifact Registry in the stack's region: remote repositories of the registries the stack pulls from.

Docker Hub (vLLM, the download and benchmark images), registry.k8s.io (the
endpoint picker) and ghcr.io (KEDA) are each mirrored by a remote repository:
pulls come from Google's network in the region, not over NAT from the
upstream; the first pull of an image fills the cache. Cache misses still meet
the upstream's own rate limits (Docker Hub's, unauthenticated: docs/operations.md, "Network and
supply path"). The nodes' own identity may read them; nothing else is granted.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.options import child_options
from facts.naming import UPSTREAMS
from plan.stack import RegistrySpec

READER = "roles/artifactregistry.reader"


def upstream(host: str) -> gcp.artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgs:
    """Docker Hub by its preset; any other registry as a custom upstream."""
    if host == "docker.io":
        return gcp.artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgs(public_repository="DOCKER_HUB")
    return gcp.artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgs(
        custom_repository=gcp.artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryCustomRepositoryArgs(uri=f"https://{host}")
    )


def repository_args(host: str, spec: RegistrySpec) -> gcp.artifactregistry.RepositoryArgs:
    return gcp.artifactregistry.RepositoryArgs(
        repository_id=spec.repositories[host],
        project=spec.project,
        location=spec.region,
        format="DOCKER",
        mode="REMOTE_REPOSITORY",
        description=f"{host}, cached in the stack's region for its nodes",
        remote_repository_config=gcp.artifactregistry.RepositoryRemoteRepositoryConfigArgs(docker_repository=upstream(host)),
        labels=spec.labels,
    )


class ImageRegistry(pulumi.ComponentResource):
    """Registers one remote repository per upstream and lets ``reader`` (the nodes' identity) pull from each."""

    REGISTERS = (gcp.artifactregistry.Repository, gcp.artifactregistry.RepositoryIamMember)

    def __init__(
        self,
        name: str,
        spec: RegistrySpec,
        *,
        reader: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:platform:ImageRegistry", name, None, opts)
        child = child_options(self, opts)
        # Registered under the upstream's plain id whatever the prefix: the name in the stack, not in the project.
        for host, name in UPSTREAMS.items():
            repository = gcp.artifactregistry.Repository(name, repository_args(host, spec), opts=child)
            gcp.artifactregistry.RepositoryIamMember(
                f"{name}-nodes-read",
                project=spec.project,
                location=spec.region,
                repository=repository.name,
                role=READER,
                member=reader,
                opts=child,
            )
        self.register_outputs({"repositories": list(spec.repositories.values())})
