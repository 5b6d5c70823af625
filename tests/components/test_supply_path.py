"""Private nodes, NAT egress, a control plane reached through its DNS endpoint, images from Artifact Registry."""

from __future__ import annotations

from typing import Any

import pytest

from render.chart import chart_objects
from render.engine import Render
from stacks.plan import pulled_from
from stacks.problems import StackConfigError
from tests.conftest import STACKS, render_with, rendered

CLUSTER = "gcp:container/cluster:Cluster"
REGISTRY = "europe-west4-docker.pkg.dev/llm-serving-dev/docker-hub"


def cluster(render: Render) -> dict[str, Any]:
    inputs: dict[str, Any] = render.one(CLUSTER).inputs
    return inputs


def pod_images(render: Render) -> list[str]:
    images = []
    for registration in render.resources:
        spec = (registration.inputs.get("spec") or {}) if isinstance(registration.inputs, dict) else {}
        pod = (spec.get("template") or {}).get("spec") or {}
        images += [c["image"] for c in pod.get("containers", []) + pod.get("initContainers", [])]
    return images


@pytest.mark.parametrize("stack", STACKS)
def test_nodes_are_private_and_reach_out_through_cloud_nat(stack: str) -> None:
    render = rendered(stack)
    assert cluster(render)["privateClusterConfig"]["enablePrivateNodes"] is True
    nat = render.one("gcp:compute/routerNat:RouterNat").inputs
    assert nat["sourceSubnetworkIpRangesToNat"] == "ALL_SUBNETWORKS_ALL_IP_RANGES"
    assert nat["natIpAllocateOption"] == "AUTO_ONLY" and nat["enableDynamicPortAllocation"] is True
    assert nat["maxPortsPerVm"] == 65536 and nat["enableEndpointIndependentMapping"] is False
    assert render.one("gcp:compute/router:Router").inputs["network"]


def test_the_control_plane_is_reached_through_its_dns_endpoint_and_its_ip_endpoint_is_internal() -> None:
    inputs = cluster(rendered("prod"))
    assert inputs["controlPlaneEndpointsConfig"]["dnsEndpointConfig"]["allowExternalTraffic"] is True
    assert inputs["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert "masterAuthorizedNetworksConfig" not in inputs


def test_authorized_networks_open_the_ip_endpoint_only_to_them() -> None:
    inputs = cluster(render_with("dev", cluster={"deletionProtection": False, "authorizedNetworks": ["203.0.113.0/24"]}))
    assert inputs["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"] == [{"cidrBlock": "203.0.113.0/24"}]
    assert inputs["masterAuthorizedNetworksConfig"]["gcpPublicCidrsAccessEnabled"] is False


def test_every_program_pod_image_comes_from_the_stacks_artifact_registry() -> None:
    render = render_with("dev", benchmark={"enabled": True})
    images = pod_images(render)
    assert len(images) == 3 and all(image.startswith(REGISTRY + "/") for image in images), images
    assert f"{REGISTRY}/vllm/vllm-openai:v0.18.1" in images
    assert f"{REGISTRY}/library/python:3.12.7-slim-bookworm" in images


def test_the_remote_repository_mirrors_docker_hub_and_only_the_nodes_read_it() -> None:
    render = rendered("dev")
    repository = render.one("gcp:artifactregistry/repository:Repository").inputs
    assert (repository["mode"], repository["format"], repository["location"]) == ("REMOTE_REPOSITORY", "DOCKER", "europe-west4")
    assert repository["remoteRepositoryConfig"]["dockerRepository"]["publicRepository"] == "DOCKER_HUB"
    grant = render.one("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    assert grant.inputs["role"] == "roles/artifactregistry.reader"
    assert grant.inputs["location"] == "europe-west4"
    # The nodes run as their own account (the grant's member), not the Compute Engine default.
    nodes = render.one("gcp:serviceaccount/account:Account", "nodes").inputs
    assert nodes["accountId"] == "llm-serving-nodes"
    defaults = cluster(render)["clusterAutoscaling"]["autoProvisioningDefaults"]
    assert defaults["oauthScopes"] == ["https://www.googleapis.com/auth/cloud-platform"]


def test_images_of_other_registries_stay_where_they_are() -> None:
    assert pulled_from("vllm/vllm-openai:v0.18.1", None) == "vllm/vllm-openai:v0.18.1"
    assert pulled_from("python:3.12", "r") == "r/library/python:3.12"
    assert pulled_from("ghcr.io/org/image:1", "r") == "ghcr.io/org/image:1"
    assert pulled_from("localhost:5000/image:1", "r") == "localhost:5000/image:1"


def test_charts_pull_their_images_from_their_own_registries() -> None:
    # Not moved: the endpoint picker comes from registry.k8s.io (documented in the README).
    images = [
        c["image"]
        for item in chart_objects(rendered("gateway"))
        for c in (item.manifest.get("spec", {}).get("template", {}).get("spec", {}).get("containers", []))
    ]
    assert images and all(image.startswith("registry.k8s.io/") for image in images)


def test_public_nodes_need_the_opt_in() -> None:
    with pytest.raises(StackConfigError, match=r"llm:cluster\.privateNodes: false gives every node a public IP; set allowPublicNodes"):
        render_with("dev", cluster={"deletionProtection": False, "privateNodes": False})
    render = render_with("dev", cluster={"deletionProtection": False, "privateNodes": False}, allowPublicNodes=True)
    assert cluster(render)["privateClusterConfig"]["enablePrivateNodes"] is False
    assert render.by_type("gcp:compute/routerNat:RouterNat") == []


def test_a_control_plane_open_to_everyone_is_refused_as_an_authorized_network() -> None:
    with pytest.raises(StackConfigError, match=r"llm:cluster.authorizedNetworks\[0\]: '0.0.0.0/0' opens the control plane"):
        render_with("dev", cluster={"deletionProtection": False, "authorizedNetworks": ["0.0.0.0/0"]})


def test_an_existing_clusters_node_identity_is_never_changed_by_an_update() -> None:
    assert "clusterAutoscaling.autoProvisioningDefaults.serviceAccount" in rendered("prod").one(CLUSTER).ignore_changes
