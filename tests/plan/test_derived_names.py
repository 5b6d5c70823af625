"""Names the stack derives that GCP checks: service account ids from the cluster's name, distinct for distinct
names (a stack made when long names were cut keeps the nodes' account its cluster runs as), and Artifact Registry
repository ids."""

from __future__ import annotations

import json
import re

import pytest

from facts.naming import ACCOUNT_ID_LENGTH, NETWORK_NAME_LENGTH, account_id
from plan.stack import plan_stack
from render.changes import changes, records
from render.engine import render_stack, stack_settings
from tests.conftest import render_with, rendered, stack_file_config
from tests.stacks.test_platform_rules import refusal, with_changes

ACCOUNT = "gcp:serviceaccount/account:Account"
# The accounts registered under these names take their ids from `cluster.name` (the nodes', the compile cache's).
FROM_THE_CLUSTER = ("nodes", "replicas")
LONG = "llm-serving-europe-west4-production-a"
# Compute Engine names: RFC 1035, at most 63 characters (docs/config-rules.md).
COMPUTE_NAME_LENGTH = 63


def planned_accounts(cluster_name: str) -> dict[str, str]:
    """The account ids the plan derives for the batch stack with ``cluster.name`` set, by the name each is registered under."""
    settings = stack_settings("batch")
    plan = plan_stack(settings.model_copy(update={"cluster": settings.cluster.model_copy(update={"name": cluster_name})}), "batch")
    assert plan.compile_cache and plan.autoscaling and plan.batch
    return {
        "nodes": plan.cluster.node_account,
        "replicas": plan.compile_cache.account_id,
        "keda-operator": plan.autoscaling.account_id,
        "batch-runner": plan.batch.account_id,
    }


def test_every_account_is_registered_with_the_id_the_plan_derives() -> None:
    # The other tests judge the plan's ids: this one ties them to what the components register.
    registered = {a.name: a.inputs["accountId"] for a in render_with("batch", cluster={"name": LONG}).by_type(ACCOUNT)}
    assert registered == planned_accounts(LONG)


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
    one, other = ({planned_accounts(name)[account] for account in FROM_THE_CLUSTER} for name in (first, second))
    assert len(one) == len(FROM_THE_CLUSTER)
    assert not one & other


def test_accounts_that_fit_keep_the_ids_they_had() -> None:
    # A changed id replaces the account, so a name that was never cut keeps its plain id.
    fits = "a" * 22
    accounts = planned_accounts(fits)
    assert (accounts["nodes"], accounts["replicas"]) == (f"{fits}-nodes", f"{fits}-compile")
    assert planned_accounts("a" * 24)["nodes"] == "a" * 24 + "-nodes"


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


@pytest.mark.parametrize(("first", "second"), [("llm-dev", "llm-prod"), (LONG, LONG[:-1] + "b")])
def test_two_stacks_of_one_project_derive_different_ids_for_every_account(first: str, second: str) -> None:
    # A dev and a prod stack often share a project, where account ids are unique: one id in both fails the
    # second stack's first `up` with 409.
    one, other = (planned_accounts(name) for name in (first, second))
    assert set(one) == set(other) == {*FROM_THE_CLUSTER, "keda-operator", "batch-runner"}
    assert not set(one.values()) & set(other.values())


def test_a_stack_up_with_the_fixed_ids_keeps_its_keda_and_runner_accounts_and_up_changes_nothing() -> None:
    # Stacks made before the ids were derived per stack hold `keda-operator` and `batch-runner`: a new id would
    # replace each account, and the pods acting as it would lose their grants until their next token.
    now = records(rendered("batch"))
    derived = {r["name"]: r["inputs"]["accountId"] for r in now if r["type"] == ACCOUNT}
    fixed = {"keda-operator": "keda-operator", "batch-runner": "batch-runner"}
    text = json.dumps(now)
    for name, former in fixed.items():
        # What named the account named it by its email, `<id>@<project>.iam.gserviceaccount.com`.
        text = text.replace(f"{derived[name]}@", f"{former}@")
    state = json.loads(text)
    for record in state:
        if record["type"] == ACCOUNT and record["name"] in fixed:
            record["inputs"]["accountId"] = fixed[record["name"]]
    assert state != now
    up = records(render_stack("batch", config=stack_file_config("batch"), up=state))
    assert changes(state, up) == []


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


def compute_name_problem(name: str) -> str | None:
    """Why Compute Engine refuses a resource ``name``, or None: 1 to 63 characters matching
    [a-z]([-a-z0-9]*[a-z0-9])? (RFC 1035; docs/config-rules.md)."""
    if len(name) > COMPUTE_NAME_LENGTH:
        return f"{len(name)} characters"
    return None if re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", name) else "not [a-z]([-a-z0-9]*[a-z0-9])?"


def test_every_compute_name_derived_from_the_longest_network_name_is_one_compute_engine_takes() -> None:
    # The VPC's subnet, router and NAT are `<network.name>-nodes`, `-router` and `-nat`.
    render = render_with("batch", network={**stack_file_config("batch").get("llm:network", {}), "name": "n" * NETWORK_NAME_LENGTH})
    named = [r for r in render.resources if r.type.startswith("gcp:compute/") and isinstance(r.inputs.get("name"), str)]
    kinds = {r.type.rpartition(":")[2] for r in named}
    assert kinds >= {"Network", "Subnetwork", "Router", "RouterNat"}
    for resource in named:
        assert compute_name_problem(resource.inputs["name"]) is None, (resource.type, resource.inputs["name"])


def test_a_network_name_too_long_for_its_derived_names_is_refused_at_its_key() -> None:
    config = with_changes("dev", {"network": {"name": "n" * (NETWORK_NAME_LENGTH + 1)}})
    message, record = refusal("dev", config)
    assert "llm:network.name" in message and f"at most {NETWORK_NAME_LENGTH} characters" in message, message
    assert record.resources == []
