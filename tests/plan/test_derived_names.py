"""Names the stack derives that GCP checks: service account ids from the cluster's name, distinct for distinct
names (a stack made when long names were cut keeps the nodes' account its cluster runs as), and Artifact Registry
repository ids."""

from __future__ import annotations

import re

import pytest

from facts.naming import ACCOUNT_ID_LENGTH, account_id
from render.changes import changes, records
from render.engine import Render
from tests.conftest import render_with, rendered

ACCOUNT = "gcp:serviceaccount/account:Account"
# The accounts registered under these names take their ids from `cluster.name` (the nodes', the compile cache's).
FROM_THE_CLUSTER = ("nodes", "replicas")
LONG = "llm-serving-europe-west4-production-a"


def cluster_accounts(render: Render) -> dict[str, str]:
    return {a.name: a.inputs["accountId"] for a in render.by_type(ACCOUNT) if a.name in FROM_THE_CLUSTER}


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # Two names GKE takes that agree on their first 30 characters (a cut also gave each stack's nodes
        # and compile cache one account).
        (LONG, LONG[:-1] + "b"),
        # A name whose cut id equals another's, cut within `-nodes`, or whole.
        ("a" * 26, "a" * 26 + "-nod"),
        ("a" * 24, "a" * 24 + "-nodes-x"),
        ("c" * 22, "c" * 22 + "-compile-x"),
    ],
)
def test_two_cluster_names_never_derive_one_account(first: str, second: str) -> None:
    one, other = (set(cluster_accounts(render_with("batch", cluster={"name": name})).values()) for name in (first, second))
    assert len(one) == len(FROM_THE_CLUSTER)
    assert not one & other


def test_accounts_that_fit_keep_the_ids_they_had() -> None:
    # A changed id replaces the account, so a name that was never cut keeps its plain id.
    fits = "a" * 22
    assert cluster_accounts(render_with("batch", cluster={"name": fits})) == {"nodes": f"{fits}-nodes", "replicas": f"{fits}-compile"}
    assert cluster_accounts(render_with("batch", cluster={"name": "a" * 24}))["nodes"] == "a" * 24 + "-nodes"


def test_a_stack_made_when_long_names_were_cut_keeps_its_nodes_account() -> None:
    # GKE keeps the account the cluster was created with, so replacing it would leave the nodes on a deleted one;
    # the compile cache's account is replaced once, and its Kubernetes identity follows the new one.
    now = records(render_with("batch", cluster={"name": LONG}))
    before = [
        {**r, "inputs": {**r["inputs"], "accountId": f"{LONG}-{suffix}"[:ACCOUNT_ID_LENGTH].rstrip("-")}}
        if r["type"] == ACCOUNT and (suffix := {"nodes": "nodes", "replicas": "compile"}.get(r["name"]))
        else r
        for r in now
    ]
    found = {(c.type, c.name): c.action for c in changes(before, now)}
    assert (ACCOUNT, "nodes") not in found
    assert found[(ACCOUNT, "replicas")] == "replace"


@pytest.mark.parametrize("name", ["a" * 31, "llm-serving-europe-west4-production-a-nodes", "a" * 20 + "-" * 5 + "b" * 10])
def test_a_long_id_is_its_head_and_a_hash_of_the_whole_name(name: str) -> None:
    found = account_id(name)
    head, _, digest = found.rpartition("-")
    assert len(found) <= ACCOUNT_ID_LENGTH
    assert name.startswith(head) and not head.endswith("-")
    assert len(digest) == 8 and int(digest, 16) >= 0
    assert account_id(name + "x") != found


def repository_id_problem(repository_id: str) -> str | None:
    """Why `gcloud artifacts repositories create` refuses ``repository_id``, or None: lowercase letters, digits and
    '-', from a letter to a letter or digit (Google Cloud CLI, command_lib/artifacts/util.py; docs/config-rules.md)."""
    return None if re.fullmatch(r"[a-z]([a-z0-9-]*[a-z0-9])?", repository_id) else "not [a-z]([a-z0-9-]*[a-z0-9])?"


@pytest.mark.parametrize("stack", ["dev", "prod", "gateway", "batch"])
def test_every_repository_id_the_stack_derives_is_one_artifact_registry_takes(stack: str) -> None:
    repositories = [r.inputs["repositoryId"] for r in rendered(stack).by_type("gcp:artifactregistry/repository:Repository")]
    assert repositories
    for repository in repositories:
        assert repository_id_problem(repository) is None, repository


@pytest.mark.parametrize("repository_id", ["1-pypi", "docker-hub-", "docker_hub", "Docker-hub", "registry.k8s.io", "-pypi"])
def test_repository_ids_artifact_registry_refuses_are_found(repository_id: str) -> None:
    assert repository_id_problem(repository_id) is not None
