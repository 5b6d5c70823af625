"""The registry section: where nodes pull images."""

from __future__ import annotations

from pydantic import field_validator

from facts.naming import PYTHON_REPOSITORY, UPSTREAMS
from stacks.section import ConfigBool, Section, check_name

# Artifact Registry documents no length limit (docs/config-rules.md): the longest id, `<prefix>-<repository>`, is kept
# to 63 characters, as the stack's Compute Engine names are.
PREFIX_LENGTH = 63 - 1 - max(len(repository) for repository in (*UPSTREAMS.values(), PYTHON_REPOSITORY))


class RegistrySettings(Section):
    """Where nodes pull images: Artifact Registry remote repositories in the stack's region."""

    enabled: ConfigBool = True
    """Pull images through remote repositories of Docker Hub, registry.k8s.io, ghcr.io (cached in region; upstream limits on a miss)."""
    repository_prefix: str = ""
    """Put before each repository id (`<prefix>-docker-hub`, also `pypi`): a second stack of the project and region needs its own."""

    @field_validator("repository_prefix")
    @classmethod
    def _prefix(cls, value: str) -> str:
        # Ids are unique per project and region, and `<prefix>-<id>` must still be an id Artifact Registry takes.
        return check_name(value, PREFIX_LENGTH) if value else value
