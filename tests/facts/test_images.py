"""Image references split as distribution/reference splits a name: registry host, then the path there."""

from __future__ import annotations

import pytest

from facts.images import parse, split_host


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


@pytest.mark.parametrize(
    ("image", "tag", "digest", "pinned"),
    [
        ("vllm/vllm-openai:v0.18.1", "v0.18.1", None, True),
        ("registry:5000/tool:1", "1", None, True),
        ("python", None, None, False),
        # latest moves: a node may pull another image under it.
        ("python:latest", "latest", None, False),
        # A digest pins whatever the tag says.
        ("python:latest@sha256:" + "a" * 64, "latest", "sha256:" + "a" * 64, True),
        ("python@sha256:" + "b" * 64, None, "sha256:" + "b" * 64, True),
    ],
)
def test_an_image_reference_gives_its_tag_its_digest_and_whether_it_is_pinned(
    image: str, tag: str | None, digest: str | None, pinned: bool
) -> None:
    reference = parse(image)
    assert reference is not None
    assert (reference.tag, reference.digest, reference.pinned) == (tag, digest, pinned)


@pytest.mark.parametrize(
    "image",
    [
        "",
        "vllm/VLLM-openai:v1",  # a path is lower case
        "python:",  # an empty tag
        "python:-1",  # a tag starts with a word character
        "python@sha256:" + "a" * 63,  # a sha256 digest has 64 hex digits
        "python:" + "a" * 129,  # a tag holds at most 128 characters
        "python v1",
    ],
)
def test_what_is_not_an_image_reference_parses_to_none(image: str) -> None:
    assert parse(image) is None


def test_a_tag_of_128_characters_is_taken() -> None:
    reference = parse("python:" + "a" * 128)
    assert reference is not None and reference.tag == "a" * 128
