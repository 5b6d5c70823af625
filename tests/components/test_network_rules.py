"""The VPC on hand-made specs: what ``Network`` registers alone, with which options, with and without NAT."""

from __future__ import annotations

from dataclasses import replace

import pulumi
import pulumi_gcp as gcp

from components.network import Network
from plan.stack import NetworkSpec
from render.engine import Render
from tests.components.alone import component_outputs, registered

SPEC = NetworkSpec(
    project="example-project",
    region="europe-west4",
    name="llm-prod",
    node_cidr="10.10.0.0/20",
    pod_cidr="10.64.0.0/14",
    service_cidr="10.96.0.0/20",
    nat=True,
    protect=True,
)


def network_alone(spec: NetworkSpec = SPEC) -> Render:
    def program() -> None:
        google = gcp.Provider("gcp", project="example-project")
        api = gcp.projects.Service("api", service="compute.googleapis.com")
        Network("network", spec, opts=pulumi.ResourceOptions(providers=[google], depends_on=[api]))

    return registered(program)


def test_the_vpc_has_only_the_node_subnet_with_the_clusters_secondary_ranges() -> None:
    render = network_alone()
    vpc = render.one("gcp:compute/network:Network", "vpc")
    assert vpc.inputs == {"name": "llm-prod", "project": "example-project", "autoCreateSubnetworks": False, "routingMode": "REGIONAL"}
    subnet = render.one("gcp:compute/subnetwork:Subnetwork", "nodes")
    assert subnet.inputs == {
        "name": "llm-prod-nodes",
        "project": "example-project",
        "region": "europe-west4",
        # The VPC's id as the provider returns it.
        "network": "vpc-id",
        "ipCidrRange": "10.10.0.0/20",
        "privateIpGoogleAccess": True,
        "secondaryIpRanges": [
            {"rangeName": "pods", "ipCidrRange": "10.64.0.0/14"},
            {"rangeName": "services", "ipCidrRange": "10.96.0.0/20"},
        ],
    }
    assert vpc.urn in subnet.dependencies


def test_private_nodes_reach_out_through_a_router_and_nat_on_that_vpc() -> None:
    render = network_alone()
    router = render.one("gcp:compute/router:Router", "router")
    assert router.inputs == {"name": "llm-prod-router", "project": "example-project", "region": "europe-west4", "network": "vpc-id"}
    nat = render.one("gcp:compute/routerNat:RouterNat", "nat")
    assert nat.inputs == {
        "name": "llm-prod-nat",
        "project": "example-project",
        "region": "europe-west4",
        "router": "llm-prod-router",
        "natIpAllocateOption": "AUTO_ONLY",
        "sourceSubnetworkIpRangesToNat": "ALL_SUBNETWORKS_ALL_IP_RANGES",
        "enableDynamicPortAllocation": True,
        "enableEndpointIndependentMapping": False,
        "minPortsPerVm": 1024,
        "maxPortsPerVm": 65536,
        "logConfig": {"enable": True, "filter": "ERRORS_ONLY"},
    }
    assert router.urn in nat.dependencies


def test_nodes_with_public_addresses_get_no_router_or_nat() -> None:
    render = network_alone(replace(SPEC, nat=False))
    assert not render.by_type("gcp:compute/router:Router") and not render.by_type("gcp:compute/routerNat:RouterNat")
    assert render.one("gcp:compute/subnetwork:Subnetwork", "nodes").inputs["name"] == "llm-prod-nodes"


def test_the_vpc_and_subnet_are_protected_as_the_stack_asks_and_wait_for_the_load_balancers_to_go() -> None:
    for protect in (True, False):
        render = network_alone(replace(SPEC, protect=protect))
        for kept in (render.one("gcp:compute/network:Network"), render.one("gcp:compute/subnetwork:Subnetwork")):
            assert (kept.protect, kept.custom_timeouts) == (protect, {"delete": "30m"}), kept.name
        # The router and NAT hold no cluster: a destroy may take them at once.
        for free in (render.one("gcp:compute/router:Router"), render.one("gcp:compute/routerNat:RouterNat")):
            assert (free.protect, free.custom_timeouts) == (False, {}), free.name


def test_every_child_belongs_to_the_network_and_waits_for_its_api() -> None:
    render = network_alone()
    component = render.one("llm:platform:Network", "network")
    api = render.one("gcp:projects/service:Service", "api").urn
    google = render.one("pulumi:providers:gcp").urn
    assert api in component.dependencies
    children = [r for r in render.resources if r.parent == component.urn]
    assert len(children) == 4
    for child in children:
        assert api in child.dependencies and child.provider.startswith(google), child.name


def test_the_network_records_its_vpc_and_subnet() -> None:
    def program() -> None:
        Network("network", SPEC)

    assert component_outputs(program) == {"network": {"vpc": "vpc-id", "subnet": "nodes-id"}}
