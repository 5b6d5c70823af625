"""The Autopilot cluster on hand-made specs: what ``Cluster`` registers alone, its kubeconfig and its maintenance policy."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pytest
import yaml

from components.cluster import Cluster, _dns_endpoint, kubeconfig
from plan.stack import ClusterSpec, Maintenance, MaintenanceExclusion, MaintenanceWindow
from render.engine import Render
from tests.components.alone import registered

LABELS = {"team": "ml", "stack": "dev"}
WINDOW = MaintenanceWindow("2026-01-03T02:00:00Z", "2026-01-03T08:00:00Z", "FREQ=WEEKLY;BYDAY=SA")
FREEZE = MaintenanceExclusion("year-end", "2026-12-20T00:00:00Z", "2027-01-05T00:00:00Z", "NO_MINOR_OR_NODE_UPGRADES")
SPEC = ClusterSpec(
    project="example-project",
    region="us-central1",
    name="llm-serving-development-clust",
    release_channel="regular",
    version="1.35",
    deletion_protection=True,
    namespace="serving",
    maintenance=Maintenance(WINDOW, (FREEZE,)),
    private_nodes=True,
    authorized_networks=(),
    labels=LABELS,
    open_control_plane=False,
    protect=False,
    node_account="llm-serving-dev-nodes",
)


def cluster_alone(spec: ClusterSpec, outputs: dict[str, list[str]] | None = None) -> Render:
    def program() -> None:
        api = gcp.projects.Service("api", service="container.googleapis.com")
        found = Cluster("cluster", spec, network="vpc-id", subnetwork="nodes-id", opts=pulumi.ResourceOptions(depends_on=[api]))
        if outputs is not None:
            found.endpoint.apply(outputs.setdefault("endpoint", []).append)
            found.name.apply(outputs.setdefault("name", []).append)

    return registered(program)


def cluster_inputs(spec: ClusterSpec) -> dict[str, Any]:
    inputs: dict[str, Any] = cluster_alone(spec).one("gcp:container/cluster:Cluster", "gke").inputs
    return inputs


def test_the_cluster_is_a_regional_autopilot_cluster_with_what_serving_reads() -> None:
    inputs = cluster_inputs(SPEC)
    assert (inputs["name"], inputs["project"], inputs["location"]) == ("llm-serving-development-clust", "example-project", "us-central1")
    assert inputs["enableAutopilot"] is True and (inputs["network"], inputs["subnetwork"]) == ("vpc-id", "nodes-id")
    assert inputs["ipAllocationPolicy"] == {"clusterSecondaryRangeName": "pods", "servicesSecondaryRangeName": "services"}
    assert inputs["releaseChannel"] == {"channel": "REGULAR"} and inputs["minMasterVersion"] == "1.35"
    assert inputs["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    assert inputs["addonsConfig"] == {"httpLoadBalancing": {"disabled": False}}
    assert inputs["monitoringConfig"] == {
        "enableComponents": ["SYSTEM_COMPONENTS", "DCGM", "DEPLOYMENT"],
        "managedPrometheus": {"enabled": True},
    }
    assert inputs["workloadIdentityConfig"] == {"workloadPool": "example-project.svc.id.goog"}
    assert inputs["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": True},
        "ipEndpointsConfig": {"enabled": True},
    }
    node = "llm-serving-dev-nodes@example-project.iam.gserviceaccount.com"
    assert inputs["clusterAutoscaling"] == {
        "autoProvisioningDefaults": {"serviceAccount": node, "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"]}
    }
    assert inputs["deletionProtection"] is True and inputs["resourceLabels"] == LABELS


def test_the_maintenance_window_and_exclusions_reach_gke() -> None:
    assert cluster_inputs(SPEC)["maintenancePolicy"] == {
        "recurringWindow": {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T08:00:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA"},
        "maintenanceExclusions": [
            {
                "exclusionName": "year-end",
                "startTime": "2026-12-20T00:00:00Z",
                "endTime": "2027-01-05T00:00:00Z",
                "exclusionOptions": {"scope": "NO_MINOR_OR_NODE_UPGRADES"},
            }
        ],
    }
    only_window = cluster_inputs(replace(SPEC, maintenance=Maintenance(WINDOW, ())))["maintenancePolicy"]
    assert "maintenanceExclusions" not in only_window and only_window["recurringWindow"]["recurrence"] == "FREQ=WEEKLY;BYDAY=SA"
    only_freeze = cluster_inputs(replace(SPEC, maintenance=Maintenance(None, (FREEZE,))))["maintenancePolicy"]
    assert "recurringWindow" not in only_freeze and only_freeze["maintenanceExclusions"][0]["exclusionName"] == "year-end"
    assert "maintenancePolicy" not in cluster_inputs(replace(SPEC, maintenance=Maintenance(None, ())))


@pytest.mark.parametrize(
    ("networks", "open_plane", "private_endpoint"),
    [((), False, True), (("203.0.113.0/24",), False, False), ((), True, False)],
)
def test_the_ip_endpoint_is_private_unless_networks_are_authorized_or_it_is_opened(
    networks: tuple[str, ...], open_plane: bool, private_endpoint: bool
) -> None:
    inputs = cluster_inputs(replace(SPEC, authorized_networks=networks, open_control_plane=open_plane, private_nodes=False))
    assert inputs["privateClusterConfig"] == {"enablePrivateNodes": False, "enablePrivateEndpoint": private_endpoint}
    if networks:
        assert inputs["masterAuthorizedNetworksConfig"] == {
            "cidrBlocks": [{"cidrBlock": "203.0.113.0/24"}],
            "gcpPublicCidrsAccessEnabled": False,
        }
    else:
        assert "masterAuthorizedNetworksConfig" not in inputs


def test_the_nodes_act_as_their_own_least_privileged_identity() -> None:
    render = cluster_alone(SPEC)
    account = render.one("gcp:serviceaccount/account:Account", "nodes")
    assert account.inputs == {
        "accountId": "llm-serving-dev-nodes",
        "displayName": "GKE nodes of the LLM serving stack",
        "project": "example-project",
    }
    # The cluster keeps the account it was made with: a new id must not replace it.
    assert account.ignore_changes == ("accountId",)
    role = render.one("gcp:projects/iAMMember:IAMMember", "nodes-default-role")
    assert role.inputs == {
        "project": "example-project",
        "role": "roles/container.defaultNodeServiceAccount",
        "member": "serviceAccount:llm-serving-dev-nodes@example-project.iam.gserviceaccount.com",
    }
    cluster = render.one("gcp:container/cluster:Cluster")
    assert role.urn in cluster.dependencies
    assert cluster.ignore_changes == ("clusterAutoscaling.autoProvisioningDefaults.serviceAccount",)


def test_the_provider_reaches_the_cluster_by_its_dns_endpoint_and_the_namespace_is_made_with_it() -> None:
    outputs: dict[str, list[str]] = {}
    render = cluster_alone(SPEC, outputs)
    endpoint = "gke-0123456789abcdef-000000000000.us-central1.gke.goog"
    assert outputs == {"endpoint": [endpoint], "name": ["llm-serving-development-clust"]}
    provider = render.one("pulumi:providers:kubernetes", "gke")
    assert provider.inputs["kubeconfig"] == kubeconfig("llm-serving-development-clust", endpoint)
    namespace = render.one("kubernetes:core/v1:Namespace", "workloads")
    assert namespace.inputs["metadata"] == {"name": "serving", "labels": LABELS}
    assert namespace.provider.startswith(provider.urn) and not namespace.protect
    component = render.one("llm:platform:Cluster", "cluster").urn
    api = render.one("gcp:projects/service:Service").urn
    assert api in render.one("llm:platform:Cluster").dependencies
    assert provider.parent == component and namespace.parent == component
    for child in render.resources:
        if child.type.startswith("gcp:") and child.urn != api:
            assert child.parent == component and api in child.dependencies


def test_a_protected_cluster_protects_its_namespace_too() -> None:
    render = cluster_alone(replace(SPEC, protect=True, deletion_protection=False))
    assert render.one("gcp:container/cluster:Cluster").protect and render.one("kubernetes:core/v1:Namespace").protect
    assert render.one("gcp:container/cluster:Cluster").inputs["deletionProtection"] is False


def test_the_kubeconfig_authenticates_through_gcloud_and_holds_no_credential() -> None:
    document = yaml.safe_load(kubeconfig("llm", "gke-1.us-central1.gke.goog"))
    assert document == {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "llm", "cluster": {"server": "https://gke-1.us-central1.gke.goog"}}],
        "users": [
            {
                "name": "llm",
                "user": {
                    "exec": {
                        "apiVersion": "client.authentication.k8s.io/v1beta1",
                        "command": "gke-gcloud-auth-plugin",
                        "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
                        "provideClusterInfo": True,
                    }
                },
            }
        ],
        "contexts": [{"name": "llm", "context": {"cluster": "llm", "user": "llm"}}],
        "current-context": "llm",
    }


def test_a_cluster_without_a_dns_endpoint_yet_has_an_empty_endpoint() -> None:
    # A preview of a new cluster knows no endpoint: the kubeconfig is built with an empty server.
    config = gcp.container.outputs.ClusterControlPlaneEndpointsConfig
    dns = gcp.container.outputs.ClusterControlPlaneEndpointsConfigDnsEndpointConfig
    assert _dns_endpoint(None) == ""
    assert _dns_endpoint(config(dns_endpoint_config=None)) == ""
    assert _dns_endpoint(config(dns_endpoint_config=dns(endpoint=None))) == ""
    assert _dns_endpoint(config(dns_endpoint_config=dns(endpoint="gke-1a2b.europe-west4.gke.goog"))) == "gke-1a2b.europe-west4.gke.goog"
