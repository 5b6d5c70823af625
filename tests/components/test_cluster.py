"""The cluster: Autopilot, regional, VPC-native, Gateway API, managed Prometheus with DCGM."""

from __future__ import annotations

import yaml

from components.cluster import kubeconfig
from render.engine import reveal
from tests.conftest import STACKS, render_with, rendered


def test_dev_cluster_is_regional_autopilot_on_the_rapid_channel() -> None:
    inputs = rendered("dev").one("gcp:container/cluster:Cluster").inputs
    assert inputs["enableAutopilot"] is True
    assert inputs["location"] == "europe-west4"
    assert inputs["releaseChannel"] == {"channel": "RAPID"}
    assert inputs["gatewayApiConfig"] == {"channel": "CHANNEL_STANDARD"}
    assert inputs["workloadIdentityConfig"] == {"workloadPool": "llm-serving-dev.svc.id.goog"}


def test_cluster_scrapes_gpu_metrics_with_managed_prometheus() -> None:
    monitoring = rendered("dev").one("gcp:container/cluster:Cluster").inputs["monitoringConfig"]
    assert set(monitoring["enableComponents"]) == {"SYSTEM_COMPONENTS", "DCGM", "DEPLOYMENT"}
    assert monitoring["managedPrometheus"] == {"enabled": True}


def test_cluster_is_vpc_native_on_the_subnet_secondary_ranges() -> None:
    render = rendered("dev")
    cluster = render.one("gcp:container/cluster:Cluster")
    subnet = render.one("gcp:compute/subnetwork:Subnetwork")
    ranges = {r["rangeName"] for r in subnet.inputs["secondaryIpRanges"]}
    policy = cluster.inputs["ipAllocationPolicy"]
    assert {policy["clusterSecondaryRangeName"], policy["servicesSecondaryRangeName"]} == ranges
    assert subnet.urn in cluster.dependencies


def test_deletion_protection_follows_the_stack() -> None:
    assert rendered("dev").one("gcp:container/cluster:Cluster").inputs["deletionProtection"] is False
    protected = render_with("dev", cluster={"deletionProtection": True})
    assert protected.one("gcp:container/cluster:Cluster").inputs["deletionProtection"] is True


def test_network_waits_for_the_compute_api() -> None:
    render = rendered("dev")
    vpc = render.one("gcp:compute/network:Network")
    cluster = render.one("gcp:container/cluster:Cluster")
    assert render.depends_on(vpc, render.one("gcp:projects/service:Service", "compute"))
    assert render.depends_on(cluster, render.one("gcp:projects/service:Service", "container"))


def test_every_kubernetes_resource_uses_the_cluster_provider() -> None:
    for stack in STACKS:
        render = rendered(stack)
        provider = render.one("pulumi:providers:kubernetes")
        for registration in render.resources:
            if registration.type.startswith("kubernetes:") and registration.custom:
                assert registration.provider.startswith(provider.urn + "::"), registration.name


def test_kubeconfig_reaches_the_dns_endpoint_with_the_gke_plugin_and_holds_no_credential() -> None:
    document = yaml.safe_load(kubeconfig("c", "gke-0123.europe-west4.gke.goog"))
    user = document["users"][0]["user"]
    assert user["exec"]["command"] == "gke-gcloud-auth-plugin"
    assert set(user) == {"exec"}
    # The DNS endpoint's certificate is publicly trusted: no CA data, no IP address.
    assert document["clusters"][0]["cluster"] == {"server": "https://gke-0123.europe-west4.gke.goog"}


def test_stack_outputs_name_the_cluster_without_credentials() -> None:
    outputs = reveal(rendered("dev").outputs)
    assert outputs["clusterName"] == "llm-serving"
    assert outputs["region"] == "europe-west4"
    assert "clusterEndpoint" in outputs
    assert not any("kubeconfig" in key.lower() or "token" in key.lower() for key in outputs)


def test_authorized_networks_or_the_open_opt_in_open_the_ip_endpoint_and_nothing_else_does() -> None:
    closed = rendered("dev").one("gcp:container/cluster:Cluster").inputs
    assert closed["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert "masterAuthorizedNetworksConfig" not in closed
    networks = render_with("dev", cluster={"deletionProtection": False, "authorizedNetworks": ["10.0.0.0/8", "192.168.0.0/16"]})
    inputs = networks.one("gcp:container/cluster:Cluster").inputs
    assert inputs["privateClusterConfig"] == {"enablePrivateNodes": True, "enablePrivateEndpoint": False}
    assert [b["cidrBlock"] for b in inputs["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == ["10.0.0.0/8", "192.168.0.0/16"]
    assert inputs["masterAuthorizedNetworksConfig"]["gcpPublicCidrsAccessEnabled"] is False
    opened = render_with("dev", allowOpenControlPlane=True).one("gcp:container/cluster:Cluster").inputs
    assert opened["privateClusterConfig"]["enablePrivateEndpoint"] is False
    assert "masterAuthorizedNetworksConfig" not in opened
