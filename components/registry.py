"""Artifact Registry in the stack's region: a remote repository of Docker Hub the nodes pull through.

Pulls come from Google's network in the region, not from Docker Hub over NAT,
and no Docker Hub rate limit applies; the first pull of an image fills the
cache. The nodes' own identity may read it; nothing else is granted.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.options import child_options

READER = "roles/artifactregistry.reader"


def repository_args(name: str, *, project: str, region: str, labels: dict[str, str]) -> gcp.artifactregistry.RepositoryArgs:
    return gcp.artifactregistry.RepositoryArgs(
        repository_id=name,
        project=project,
        location=region,
        format="DOCKER",
        mode="REMOTE_REPOSITORY",
        description="Docker Hub, cached in the stack's region for its nodes",
        remote_repository_config=gcp.artifactregistry.RepositoryRemoteRepositoryConfigArgs(
            docker_repository=gcp.artifactregistry.RepositoryRemoteRepositoryConfigDockerRepositoryArgs(public_repository="DOCKER_HUB")
        ),
        labels=labels,
    )


class ImageRegistry(pulumi.ComponentResource):
    """Registers the remote repository and lets ``reader`` (the nodes' identity) pull from it."""

    def __init__(
        self,
        name: str,
        repository: str,
        *,
        project: str,
        region: str,
        labels: dict[str, str],
        reader: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:platform:ImageRegistry", name, None, opts)
        child = child_options(self, opts)
        self.repository = gcp.artifactregistry.Repository(
            "docker-hub", repository_args(repository, project=project, region=region, labels=labels), opts=child
        )
        self.access = gcp.artifactregistry.RepositoryIamMember(
            "nodes-read",
            project=project,
            location=region,
            repository=self.repository.name,
            role=READER,
            member=reader,
            opts=child,
        )
        self.register_outputs({"repository": self.repository.id})
