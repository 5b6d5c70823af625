"""The registry section: where nodes pull images."""

from __future__ import annotations

from stacks.section import ConfigBool, Section


class RegistrySettings(Section):
    """Where nodes pull images: Artifact Registry remote repositories in the stack's region."""

    enabled: ConfigBool = True
    """Pull images through remote repositories of Docker Hub, registry.k8s.io, ghcr.io (cached in region; upstream limits on a miss)."""
