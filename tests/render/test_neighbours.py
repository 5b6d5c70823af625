"""Two stacks of one GCP project: the render refuses a name both would create, naming both stacks; with names of its
own a second stack renders beside the first without one shared name (the Artifact Registry mirrors included)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from plan.cloud_names import cloud_names
from plan.stack import plan_stack
from render.engine import PROJECT_ROOT, Render, render_stack, stack_settings
from render.neighbours import check_neighbours
from stacks.problems import StackConfigError
from tests.conftest import rendered, stack_file_config
from tests.stacks.test_platform_rules import refusal as render_refusal
from tests.stacks.test_platform_rules import with_changes

# What the second stack sets to give every name it derives its own: the cluster's (accounts, compile cache bucket,
# cluster), the VPC's (subnets, router, NAT), the namespace's (Workload Identity principals) and the mirrors'.
OWN_NAMES = {
    "llm:cluster": {"name": "rag", "namespace": "rag"},
    "llm:network": {"name": "rag"},
    "llm:registry": {"repositoryPrefix": "rag"},
}
# The input that holds each named GCP resource's name, by type.
NAMED = {
    "gcp:serviceaccount/account:Account": "accountId",
    "gcp:storage/bucket:Bucket": "name",
    "gcp:compute/network:Network": "name",
    "gcp:compute/subnetwork:Subnetwork": "name",
    "gcp:compute/router:Router": "name",
    "gcp:compute/routerNat:RouterNat": "name",
    "gcp:container/cluster:Cluster": "name",
    "gcp:artifactregistry/repository:Repository": "repositoryId",
    "gcp:compute/futureReservation:FutureReservation": "name",
}
PRINCIPAL = ".svc.id.goog["


def with_own_names(config: dict[str, Any]) -> dict[str, Any]:
    changed = dict(config)
    for key, values in OWN_NAMES.items():
        changed[key] = {**config.get(key, {}), **values}
    return changed


def project_of(tmp_path: Path, stacks: dict[str, dict[str, Any]]) -> Path:
    """A project folder holding only ``Pulumi.yaml``, the program's entry and these stack files."""
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(PROJECT_ROOT / name, tmp_path / name)
    for stack, config in stacks.items():
        (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def refusal(stack: str, root: Path) -> list[str]:
    with pytest.raises(StackConfigError) as refused:
        check_neighbours(stack, root)
    return refused.value.problems


def rendered_names(render: Render) -> set[tuple[str, str]]:
    """Each name the render gives a GCP resource, and each Workload Identity principal it grants, by its type."""
    names = {(r.type, r.inputs[NAMED[r.type]]) for r in render.resources if r.type in NAMED}
    members = (r.inputs.get("member") for r in render.resources if r.type == "gcp:serviceaccount/iAMMember:IAMMember")
    return names | {("principal", member) for member in members if isinstance(member, str) and PRINCIPAL in member}


@pytest.mark.parametrize("stack", ["gateway", "batch"])
def test_a_second_stack_with_names_of_its_own_shares_no_name_with_the_first(stack: str, tmp_path: Path) -> None:
    first = rendered(stack)
    second = render_stack("rag", root=project_of(tmp_path, {"rag": with_own_names(stack_file_config(stack))}))
    # Same project and region, and every kind of name the first has, the mirrors included.
    assert {r.inputs.get("project") for r in second.resources} >= {stack_settings(stack).project}
    repositories = {r.inputs["repositoryId"] for r in second.by_type("gcp:artifactregistry/repository:Repository")}
    assert repositories >= {"rag-docker-hub", "rag-registry-k8s-io", "rag-ghcr-io"}
    assert {kind for kind, _ in rendered_names(second)} == {kind for kind, _ in rendered_names(first)}
    # KEDA's namespace is fixed (facts/naming.py, KEDA_NAMESPACE): its principal is one for every stack of the project.
    keda = {("principal", f"serviceAccount:{stack_settings(stack).project}.svc.id.goog[keda/keda-operator]")}
    assert rendered_names(first) & rendered_names(second) <= keda


def test_the_second_stacks_nodes_pull_from_its_own_mirrors_and_may_read_them(tmp_path: Path) -> None:
    render = render_stack("rag", root=project_of(tmp_path, {"rag": with_own_names(stack_file_config("batch"))}))
    project = stack_settings("batch").project
    deployment = render.one("kubernetes:apps/v1:Deployment", "vllm")
    image = deployment.inputs["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image.startswith(f"europe-west4-docker.pkg.dev/{project}/rag-docker-hub/vllm/vllm-openai:")
    grants = {g.inputs["repository"] for g in render.by_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")}
    assert grants == {"rag-docker-hub", "rag-registry-k8s-io", "rag-ghcr-io", "rag-pypi"}
    runner = render.one("kubernetes:apps/v1:Deployment", "batch-runner")
    install = runner.inputs["spec"]["template"]["spec"]["initContainers"][0]["command"][2]
    assert f"europe-west4-python.pkg.dev/{project}/rag-pypi/simple/" in install


def test_every_name_the_stack_gives_a_gcp_resource_is_one_the_refusal_compares(stack: str) -> None:
    # The refusal compares the plan's names (plan/cloud_names.py): a resource named past them would escape it.
    render = rendered(stack)
    settings = stack_settings(stack)
    listed = {name.name for name in cloud_names(plan_stack(settings, stack), stack)}
    for kind, name in rendered_names(render):
        if kind == "principal":
            # serviceAccount:<project>.svc.id.goog[<namespace>/<name>]; KEDA's is shared on purpose.
            principal = name.partition("[")[2].removesuffix("]")
            assert principal in listed or principal.startswith("keda/"), principal
        else:
            assert name in listed, (kind, name)


def test_a_copy_of_a_stack_in_its_project_is_refused_naming_both_stacks_each_name_and_its_setting(tmp_path: Path) -> None:
    root = project_of(tmp_path, {"dev": stack_file_config("dev"), "mine": stack_file_config("dev")})
    problems = refusal("mine", root)
    text = "\n".join(problems)
    assert all(line.startswith("stacks mine and dev both create ") for line in problems[:-1]), text
    for expected in [
        "VPC network llm-serving in project llm-serving-dev: give one of them its own llm:network.name",
        "GKE cluster llm-serving in project llm-serving-dev, region europe-west4: give one of them its own llm:cluster.name",
        "service account llm-serving-nodes, llm-serving-compile in project llm-serving-dev: give one of them its own llm:cluster.name",
        "Artifact Registry repository docker-hub, registry-k8s-io, ghcr-io in project llm-serving-dev, region europe-west4: "
        "give one of them its own llm:registry.repositoryPrefix",
        "Workload Identity principal llm-serving/vllm in project llm-serving-dev: give one of them its own llm:cluster.namespace",
    ]:
        assert expected in text, expected
    assert "409 already exists" in problems[-1] and "Workload Identity principal" in problems[-1]
    # Either stack's render refuses, naming the other.
    assert refusal("dev", root)[0].startswith("stacks dev and mine both create ")


def test_own_cluster_and_network_names_still_share_the_projects_mirrors_in_one_region(tmp_path: Path) -> None:
    config = stack_file_config("batch")
    own = {**config, "llm:cluster": {**config.get("llm:cluster", {}), "name": "rag", "namespace": "rag"}, "llm:network": {"name": "rag"}}
    problems = refusal("rag", project_of(tmp_path, {"batch": config, "rag": own}))
    assert problems[:-1] == [
        "stacks rag and batch both create Artifact Registry repository docker-hub, registry-k8s-io, ghcr-io, pypi in "
        "project llm-serving-batch, region europe-west4: give one of them its own llm:registry.repositoryPrefix"
    ]


def test_a_second_stack_with_names_of_its_own_is_accepted_and_the_check_says_which_stacks_it_compared(tmp_path: Path) -> None:
    root = project_of(tmp_path, {"batch": stack_file_config("batch"), "rag": with_own_names(stack_file_config("batch"))})
    line = check_neighbours("rag", root)
    assert line == "neighbours: no name this stack creates is another stack's of project llm-serving-batch (stacks there: batch)\n"


def test_another_region_of_the_project_has_mirrors_of_its_own_but_not_a_network_of_its_own(tmp_path: Path) -> None:
    config = stack_file_config("dev")
    moved = {**config, "llm:region": "us-central1", "llm:zone": "us-central1-b"}
    text = "\n".join(refusal("moved", project_of(tmp_path, {"dev": config, "moved": moved})))
    assert "VPC network llm-serving in project llm-serving-dev:" in text
    assert "Artifact Registry" not in text and "GKE cluster" not in text


def test_stacks_of_other_projects_and_stack_files_that_do_not_load_are_not_compared(tmp_path: Path) -> None:
    config = stack_file_config("dev")
    root = project_of(
        tmp_path,
        {"dev": config, "elsewhere": {**config, "llm:project": "another-project"}, "broken": {**config, "llm:nodes": -1}},
    )
    assert "(stacks there: none)" in check_neighbours("dev", root)
    (root / "Pulumi.unreadable.yaml").write_text("config: [")
    assert "(stacks there: none)" in check_neighbours("dev", root)


@pytest.mark.parametrize("prefix", ["Rag", "rag-", "1rag", "rag_2", "r" * 48])
def test_a_repository_prefix_artifact_registry_would_refuse_is_refused_at_its_key(prefix: str) -> None:
    # `<prefix>-registry-k8s-io` must be an id Artifact Registry takes, of at most 63 characters.
    message, record = render_refusal("dev", with_changes("dev", {"registry": {"repositoryPrefix": prefix}}))
    assert "llm:registry.repositoryPrefix" in message and prefix in message, message
    assert record.resources == []


def test_the_longest_prefix_gives_ids_of_63_characters() -> None:
    render = render_stack("batch", config={**stack_file_config("batch"), "llm:registry": {"repositoryPrefix": "r" * 47}})
    ids = [r.inputs["repositoryId"] for r in render.by_type("gcp:artifactregistry/repository:Repository")]
    assert max(len(i) for i in ids) == 63
