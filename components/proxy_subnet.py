"""The proxy-only subnet regional Envoy-based load balancers (the Inference Gateway) need.

Without it the Gateway stays ``PROGRAMMED: False`` and says nothing
(docs/reference.md). A VPC allows one ACTIVE proxy-only subnet per
region, so a stack can name an existing one instead of creating it.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.options import NETWORK_DELETE_TIMEOUT, child_options
from plan.stack import ProxySubnetSpec


def proxy_subnet_args(spec: ProxySubnetSpec, *, network: pulumi.Input[str]) -> gcp.compute.SubnetworkArgs:
    return gcp.compute.SubnetworkArgs(
        name=spec.name,
        project=spec.project,
        region=spec.region,
        network=network,
        ip_cidr_range=spec.cidr,
        purpose="REGIONAL_MANAGED_PROXY",
        role="ACTIVE",
    )


class ProxySubnet(pulumi.ComponentResource):
    """Creates the proxy-only subnet, or looks up the existing one the stack names."""

    REGISTERS = (gcp.compute.Subnetwork,)

    def __init__(
        self,
        name: str,
        spec: ProxySubnetSpec,
        *,
        network: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:gateway:ProxySubnet", name, None, opts)
        self.subnet: gcp.compute.Subnetwork | None = None
        if spec.create:
            self.subnet = gcp.compute.Subnetwork(
                "proxy-only",
                proxy_subnet_args(spec, network=network),
                opts=pulumi.ResourceOptions.merge(
                    child_options(self, opts), pulumi.ResourceOptions(custom_timeouts=NETWORK_DELETE_TIMEOUT)
                ),
            )
            self.name: pulumi.Output[str] = self.subnet.name
        else:
            # Fails the preview when the named subnet does not exist in the region.
            existing = gcp.compute.get_subnetwork_output(
                name=spec.name, project=spec.project, region=spec.region, opts=pulumi.InvokeOutputOptions(parent=self)
            )
            self.name = existing.name.apply(lambda found: found or spec.name)
        self.register_outputs({"name": self.name})
