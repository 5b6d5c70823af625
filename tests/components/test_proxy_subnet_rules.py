"""The proxy-only subnet on hand-made specs: ``ProxySubnet`` alone, creating it or looking up the one the stack names."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.proxy_subnet import ProxySubnet
from plan.stack import ProxySubnetSpec
from render.engine import Render, _Mocks
from tests.components.alone import component_outputs, registered

SPEC = ProxySubnetSpec(project="example-project", region="europe-west4", name="llm-gateway-proxy", cidr="10.129.0.0/23", create=True)


class Lookups(_Mocks):
    """The render's engine, keeping the provider each lookup went through."""

    def __init__(self) -> None:
        self.providers: list[str] = []

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        self.providers.append(args.provider)
        return super().call(args)


def proxy_subnet_alone(spec: ProxySubnetSpec, engine: pulumi.runtime.Mocks | None = None) -> Render:
    def program() -> None:
        google = gcp.Provider("gcp", project="example-project")
        api = gcp.projects.Service("api", service="compute.googleapis.com")
        ProxySubnet("proxy-subnet", spec, network="vpc-id", opts=pulumi.ResourceOptions(providers=[google], depends_on=[api]))

    return registered(program, engine)


def test_a_created_proxy_only_subnet_is_the_active_regional_managed_proxy_one_in_the_vpc() -> None:
    render = proxy_subnet_alone(SPEC)
    subnet = render.one("gcp:compute/subnetwork:Subnetwork", "proxy-only")
    assert subnet.inputs == {
        "name": "llm-gateway-proxy",
        "project": "example-project",
        "region": "europe-west4",
        "network": "vpc-id",
        "ipCidrRange": "10.129.0.0/23",
        "purpose": "REGIONAL_MANAGED_PROXY",
        "role": "ACTIVE",
    }
    # A destroy waits for the load balancer's proxies to leave it.
    assert subnet.custom_timeouts == {"delete": "30m"}
    component = render.one("llm:gateway:ProxySubnet", "proxy-subnet")
    api = render.one("gcp:projects/service:Service", "api").urn
    assert subnet.parent == component.urn and api in subnet.dependencies and api in component.dependencies
    assert subnet.provider.startswith(render.one("pulumi:providers:gcp").urn)
    assert not render.invokes


def test_a_named_subnet_is_looked_up_in_its_region_through_the_stacks_provider_and_not_created() -> None:
    engine = Lookups()
    render = proxy_subnet_alone(replace(SPEC, create=False), engine)
    assert not render.by_type("gcp:compute/subnetwork:Subnetwork")
    assert render.invokes == [
        ("gcp:compute/getSubnetwork:getSubnetwork", {"name": "llm-gateway-proxy", "project": "example-project", "region": "europe-west4"})
    ]
    [provider] = engine.providers
    assert provider.startswith(render.one("pulumi:providers:gcp").urn)


def test_the_component_holds_the_subnet_it_created_and_none_it_looked_up() -> None:
    held: dict[bool, object] = {}

    def program() -> None:
        for create in (True, False):
            held[create] = ProxySubnet(f"proxy-subnet-{create}", replace(SPEC, create=create), network="vpc-id").subnet

    registered(program)
    assert isinstance(held[True], gcp.compute.Subnetwork) and held[False] is None


def test_the_component_records_the_subnets_name_created_or_found() -> None:
    for create in (True, False):

        def program(create: bool = create) -> None:
            ProxySubnet("proxy-subnet", replace(SPEC, create=create), network="vpc-id")

        # The lookup finds no name in a preview (the mock engine's answer): the named one stands in.
        assert component_outputs(program) == {"proxy-subnet": {"name": "llm-gateway-proxy"}}, create
