"""The program's own names: the labels it puts on what it registers and the names it derives.

The settings (which refuse a stack label that would replace the program's), the plan and the
policy pack (policy/rules.py) all read them here, in facts/ (the layer below the settings) so
that imports flow stacks -> plan and never back.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from facts.gcp import bucket_name_problem
from facts.images import DOCKER_HUB

# The Deployment, Service and PodMonitoring of the replicas, and the container of each pod.
REPLICAS = "vllm"
# The recommended labels that name an app and its instance: pods are picked by them (selector_labels).
NAME_LABEL, INSTANCE_LABEL = "app.kubernetes.io/name", "app.kubernetes.io/instance"
# The labels every labelled resource carries; a stack's own labels may not replace them.
APP_LABEL, MANAGED_BY_LABEL, STACK_LABEL = "app", "managed-by", "stack"
PROGRAM_LABELS = (APP_LABEL, MANAGED_BY_LABEL, STACK_LABEL)
# The namespace the stack installs KEDA in; the stack's own workloads may not share it.
KEDA_NAMESPACE = "keda"
# The model cache's objects: `model-cache-<id>` for the volume replicas read and its snapshot,
# `model-cache-<id>-writer` for the one the download Job writes once.
MODEL_CACHE_PREFIX = "model-cache-"
MODEL_CACHE_WRITER_SUFFIX = "-writer"
# Cloud Storage bucket names: 3 to 63 of a-z, 0-9, '-', '_', '.', one namespace for every project
# (cloud.google.com/storage/docs/buckets#naming); the project id makes the name the stack's own.
BUCKET_NAME_LENGTH = 63
# Compute Engine names: 1 to 63 characters of [a-z]([-a-z0-9]*[a-z0-9])? (RFC 1035; docs/config-rules.md). The VPC's
# node subnet, router and NAT take its name and a suffix, so the VPC's name leaves room for the longest.
COMPUTE_NAME_LENGTH = 63
SUBNET_SUFFIX, ROUTER_SUFFIX, NAT_SUFFIX = "-nodes", "-router", "-nat"
NETWORK_NAME_LENGTH = COMPUTE_NAME_LENGTH - max(len(suffix) for suffix in (SUBNET_SUFFIX, ROUTER_SUFFIX, NAT_SUFFIX))
# Artifact Registry remote repositories, unique per project and region: one per upstream the nodes pull images from,
# by host, and one of PyPI for the batch runner. `registry.repositoryPrefix` goes before each (repository_id).
UPSTREAMS = {DOCKER_HUB: "docker-hub", "registry.k8s.io": "registry-k8s-io", "ghcr.io": "ghcr-io"}
PYTHON_REPOSITORY = "pypi"
# IAM service account ids: 6 to 30 of [a-z]([-a-z0-9]*[a-z0-9]), unique within the project (docs/config-rules.md).
ACCOUNT_ID_LENGTH = 30


def stack_labels(stack: str, own: Mapping[str, str]) -> dict[str, str]:
    """The labels every labelled resource carries: the program's, then the stack's ``own``."""
    # Stack names may hold '.' or capitals; label values may not.
    value = re.sub(r"[^a-z0-9_-]", "-", stack.lower())[:63]
    return {APP_LABEL: "llm-serving", MANAGED_BY_LABEL: "pulumi", STACK_LABEL: value, **own}


def selector_labels(stack: str, replicas: str = REPLICAS) -> dict[str, str]:
    """The labels that pick the replica pods: the Deployment, Service, PodMonitoring and InferencePool all use these.

    ``replicas`` is the replica set's name: ``vllm`` for a one-model stack, the model's short name with several."""
    return {NAME_LABEL: replicas, INSTANCE_LABEL: stack}


# A model's short name names its Deployment, Service and more: a DNS-1035 label, with room for "-replicas".
MODEL_NAME_LENGTH = 40


def model_short_name(model_id: str) -> str:
    """The replica set's name of a model in a stack of several: its Hugging Face name in lowercase,
    other characters as '-', e.g. Qwen/Qwen3-Embedding-8B -> qwen3-embedding-8b."""
    name = re.sub(r"[^a-z0-9]+", "-", model_id.split("/")[-1].lower()).strip("-")
    # A Service name starts with a letter (DNS-1035).
    name = name if name[:1].isalpha() else f"m-{name}"
    return name[:MODEL_NAME_LENGTH].rstrip("-")


@dataclass(frozen=True)
class CacheNames:
    """Names of the per-model objects; all derive from the cache's id."""

    writer: str
    claim: str
    download: str
    snapshot: str
    reader: str
    release: str


def cache_names(key: str) -> CacheNames:
    return CacheNames(
        writer=f"{MODEL_CACHE_PREFIX}{key}{MODEL_CACHE_WRITER_SUFFIX}",
        claim=f"{MODEL_CACHE_PREFIX}{key}-claim",
        download=f"model-download-{key}",
        snapshot=f"{MODEL_CACHE_PREFIX}{key}",
        reader=f"{MODEL_CACHE_PREFIX}{key}",
        release=f"{MODEL_CACHE_PREFIX}{key}-release",
    )


def account_id(name: str) -> str:
    """``name`` as a service account id: itself when it fits 30 characters, else its head and a hash of the whole.

    A plain cut gave two long names that share a head one account. An id that fits is kept as it was, so no
    stack's account changes; a hashed id ends in 8 hex digits, never in a word the program appends, so it cannot
    equal an id that fits."""
    if len(name) <= ACCOUNT_ID_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: ACCOUNT_ID_LENGTH - len(digest) - 1].rstrip('-')}-{digest}"


def repository_id(prefix: str, repository: str) -> str:
    """``repository`` as the stack names it: alone, or after the stack's prefix."""
    return f"{prefix}-{repository}" if prefix else repository


def compile_cache_bucket(project: str, cluster: str) -> str:
    """A bucket name unique to the project's cluster (names are global); hashed when it would pass 63 characters
    or hold "google", which Cloud Storage refuses (a project id cannot hold it)."""
    name = f"{project}-{cluster}-compile-cache"
    if len(name) <= BUCKET_NAME_LENGTH and bucket_name_problem(name) is None:
        return name
    return f"{project}-compile-cache-{hashlib.sha256(cluster.encode()).hexdigest()[:8]}"


def batch_bucket_name(project: str, stack: str) -> str:
    """``<project>-<stack>-batch``; a stack name too long or not a bucket name's characters is hashed instead."""
    readable = f"{project}-{stack}-batch"
    # Bucket names may not contain "google" (same page).
    if len(readable) <= BUCKET_NAME_LENGTH and re.fullmatch(r"[a-z0-9-]+", stack) and bucket_name_problem(readable) is None:
        return readable
    return f"{project}-{hashlib.sha256(stack.encode()).hexdigest()[:8]}-batch"
