"""The VPC and its node subnet, with the secondary ranges a VPC-native cluster uses."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.options import child_options
from stacks.plan import POD_RANGE, SERVICE_RANGE
from stacks.settings import NetworkSettings


def subnet_args(settings: NetworkSettings, *, project: str, region: str, network: pulumi.Input[str]) -> gcp.compute.SubnetworkArgs:
    return gcp.compute.SubnetworkArgs(
        name=f"{settings.name}-nodes",
        project=project,
        region=region,
        network=network,
        ip_cidr_range=settings.node_cidr,
        # Nodes reach Google APIs (Artifact Registry, GCS) without public IPs.
        private_ip_google_access=True,
        secondary_ip_ranges=[
            gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=POD_RANGE, ip_cidr_range=settings.pod_cidr),
            gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=SERVICE_RANGE, ip_cidr_range=settings.service_cidr),
        ],
    )


class Network(pulumi.ComponentResource):
    def __init__(
        self, name: str, settings: NetworkSettings, *, project: str, region: str, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("llm:platform:Network", name, None, opts)
        child = child_options(self, opts)
        self.vpc = gcp.compute.Network(
            "vpc",
            name=settings.name,
            project=project,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            opts=child,
        )
        self.subnet = gcp.compute.Subnetwork(
            "nodes", subnet_args(settings, project=project, region=region, network=self.vpc.id), opts=child
        )
        self.register_outputs({"vpc": self.vpc.id, "subnet": self.subnet.id})
