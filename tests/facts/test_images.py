"""Image references split as distribution/reference splits a name: registry host, then the path there."""

from __future__ import annotations

import pytest

from facts.images import split_host


@pytest.mark.parametrize(
    ("image", "host", "path"),
    [
        ("python:3.12", "docker.io", "library/python:3.12"),
        ("vllm/vllm-openai:v1", "docker.io", "vllm/vllm-openai:v1"),
        ("docker.io/python", "docker.io", "library/python"),
        ("index.docker.io/vllm/vllm-openai", "docker.io", "vllm/vllm-openai"),
        ("ghcr.io/org/image:1", "ghcr.io", "org/image:1"),
        ("localhost/image", "localhost", "image"),
        ("localhost:5000/image", "localhost:5000", "image"),
        ("Registry/image", "Registry", "image"),
        ("registry.k8s.io/pause@sha256:" + "0" * 64, "registry.k8s.io", "pause@sha256:" + "0" * 64),
    ],
)
def test_an_image_splits_into_its_registry_host_and_path(image: str, host: str, path: str) -> None:
    assert split_host(image) == (host, path)
