"""The VPC and its node subnet, with the secondary ranges a VPC-native cluster uses."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from components.options import NETWORK_DELETE_TIMEOUT, child_options
from facts.naming import NAT_SUFFIX, ROUTER_SUFFIX, SUBNET_SUFFIX
from plan.stack import POD_RANGE, SERVICE_RANGE, NetworkSpec

NAT_MIN_PORTS = 1024
NAT_MAX_PORTS = 65536


def subnet_args(spec: NetworkSpec, *, network: pulumi.Input[str]) -> gcp.compute.SubnetworkArgs:
    return gcp.compute.SubnetworkArgs(
        name=f"{spec.name}{SUBNET_SUFFIX}",
        project=spec.project,
        region=spec.region,
        network=network,
        ip_cidr_range=spec.node_cidr,
        # Nodes reach Google APIs (Artifact Registry, GCS) without public IPs.
        private_ip_google_access=True,
        secondary_ip_ranges=[
            gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=POD_RANGE, ip_cidr_range=spec.pod_cidr),
            gcp.compute.SubnetworkSecondaryIpRangeArgs(range_name=SERVICE_RANGE, ip_cidr_range=spec.service_cidr),
        ],
    )


class Network(pulumi.ComponentResource):
    """The VPC, its node subnet and, for private nodes, the router and NAT that give them egress."""

    REGISTERS = (gcp.compute.Network, gcp.compute.Subnetwork, gcp.compute.Router, gcp.compute.RouterNat)

    def __init__(
        self,
        name: str,
        spec: NetworkSpec,
        *,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:platform:Network", name, None, opts)
        child = child_options(self, opts)
        # The cluster lives in them: a destroy of a protected stack stops here.
        kept = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(protect=spec.protect, custom_timeouts=NETWORK_DELETE_TIMEOUT))
        self.vpc = gcp.compute.Network(
            "vpc",
            name=spec.name,
            project=spec.project,
            auto_create_subnetworks=False,
            routing_mode="REGIONAL",
            opts=kept,
        )
        self.subnet = gcp.compute.Subnetwork("nodes", subnet_args(spec, network=self.vpc.id), opts=kept)
        if spec.nat:
            # Private nodes reach Hugging Face and upstream registries through NAT. Dynamic port
            # allocation gives a busy node (a download, 24 benchmark clients' tokenizer fetches)
            # up to 65,536 ports and an idle one few; AUTO_ONLY adds addresses as nodes are added.
            router = gcp.compute.Router(
                "router", name=f"{spec.name}{ROUTER_SUFFIX}", project=spec.project, region=spec.region, network=self.vpc.id, opts=child
            )
            gcp.compute.RouterNat(
                "nat",
                name=f"{spec.name}{NAT_SUFFIX}",
                project=spec.project,
                region=spec.region,
                router=router.name,
                nat_ip_allocate_option="AUTO_ONLY",
                source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
                enable_dynamic_port_allocation=True,
                enable_endpoint_independent_mapping=False,
                min_ports_per_vm=NAT_MIN_PORTS,
                max_ports_per_vm=NAT_MAX_PORTS,
                log_config=gcp.compute.RouterNatLogConfigArgs(enable=True, filter="ERRORS_ONLY"),
                opts=child,
            )
        self.register_outputs({"vpc": self.vpc.id, "subnet": self.subnet.id})
