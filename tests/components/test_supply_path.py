"""Private nodes, NAT egress, a control plane reached through its DNS endpoint, images from Artifact Registry."""

from __future__ import annotations

from typing import Any

import pytest

from plan.stack import pulled_from
from render.chart import chart_objects
from render.engine import Render
from stacks.problems import StackConfigError
from stacks.settings import StackSettings
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


def test_every_pod_image_program_and_charts_comes_from_the_stacks_artifact_registry() -> None:
    render = render_with("gateway", benchmark={"enabled": True}, autoscaling={"enabled": True})
    pods = [item.manifest.get("spec", {}).get("template", {}).get("spec", {}) for item in chart_objects(render)]
    chart_images = [container["image"] for pod in pods for container in pod.get("containers", [])]
    images = pod_images(render) + chart_images
    assert len(images) >= 7
    prefix = "europe-west4-docker.pkg.dev/llm-serving-gateway/"
    assert all(image.startswith(prefix) for image in images), [i for i in images if not i.startswith(prefix)]
    assert f"{prefix}docker-hub/vllm/vllm-openai:v0.18.1" in images
    assert f"{prefix}docker-hub/library/python:3.12.7-slim-bookworm" in images
    assert f"{prefix}registry-k8s-io/gateway-api-inference-extension/epp:v1.4.0" in images
    assert any(image.startswith(f"{prefix}ghcr-io/kedacore/keda:") for image in images)


def test_the_v1_5_chart_takes_the_mirror_under_its_renamed_keys() -> None:
    render = render_with("gateway", gateway={"chartVersion": "v1.5.0"})
    pods = [item.manifest.get("spec", {}).get("template", {}).get("spec", {}) for item in chart_objects(render)]
    (image,) = [container["image"] for pod in pods for container in pod.get("containers", [])]
    assert image.startswith("europe-west4-docker.pkg.dev/llm-serving-gateway/registry-k8s-io/gateway-api-inference-extension/epp:")


def test_each_upstream_has_a_remote_repository_that_only_the_nodes_read() -> None:
    render = rendered("dev")
    repositories = {r.inputs["repositoryId"]: r.inputs for r in render.by_type("gcp:artifactregistry/repository:Repository")}
    assert set(repositories) == {"docker-hub", "registry-k8s-io", "ghcr-io"}
    assert all((r["mode"], r["format"], r["location"]) == ("REMOTE_REPOSITORY", "DOCKER", "europe-west4") for r in repositories.values())
    assert repositories["docker-hub"]["remoteRepositoryConfig"]["dockerRepository"] == {"publicRepository": "DOCKER_HUB"}
    custom = repositories["ghcr-io"]["remoteRepositoryConfig"]["dockerRepository"]["customRepository"]
    assert custom == {"uri": "https://ghcr.io"}
    grants = render.by_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    assert len(grants) == 3 and {g.inputs["role"] for g in grants} == {"roles/artifactregistry.reader"}
    # The nodes run as their own account (the grants' member), not the Compute Engine default.
    nodes = render.one("gcp:serviceaccount/account:Account", "nodes").inputs
    assert nodes["accountId"] == "llm-serving-nodes"
    defaults = cluster(render)["clusterAutoscaling"]["autoProvisioningDefaults"]
    assert defaults["oauthScopes"] == ["https://www.googleapis.com/auth/cloud-platform"]


def test_images_are_mirrored_by_their_registry_and_others_stay_where_they_are() -> None:
    settings = StackSettings.model_validate({"project": "example-project"})
    mirror = "europe-west4-docker.pkg.dev/example-project"
    assert pulled_from("python:3.12", settings) == f"{mirror}/docker-hub/library/python:3.12"
    assert pulled_from("vllm/vllm-openai:v1", settings) == f"{mirror}/docker-hub/vllm/vllm-openai:v1"
    assert pulled_from("ghcr.io/org/image:1", settings) == f"{mirror}/ghcr-io/org/image:1"
    assert pulled_from("quay.io/org/image:1", settings) == "quay.io/org/image:1"
    assert pulled_from("localhost:5000/image:1", settings) == "localhost:5000/image:1"
    # Docker Hub named by its host, or its older one: official images still live under library/.
    assert pulled_from("docker.io/python:3.12", settings) == f"{mirror}/docker-hub/library/python:3.12"
    assert pulled_from("index.docker.io/vllm/vllm-openai:v1", settings) == f"{mirror}/docker-hub/vllm/vllm-openai:v1"
    # A first component with capitals is a host (a path may hold none), never a Docker Hub user.
    assert pulled_from("Registry/image:1", settings) == "Registry/image:1"
    direct = StackSettings.model_validate({"project": "example-project", "registry": {"enabled": False}})
    assert pulled_from("python:3.12", direct) == "python:3.12"


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
