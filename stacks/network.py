"""The network section: the VPC, its node subnet and the subnet's secondary ranges."""

from __future__ import annotations

import ipaddress

from pydantic import field_validator, model_validator

from facts.naming import NETWORK_NAME_LENGTH
from stacks.problems import ConfigProblem
from stacks.section import Section, check_name, private_cidr


class NetworkSettings(Section):
    """The VPC, its node subnet and the subnet's secondary ranges (VPC-native)."""

    name: str = "llm-serving"
    """Name of the VPC; its node subnet, router and NAT are `<name>-nodes`, `-router` and `-nat`, each at most 63 characters."""
    node_cidr: str = "10.0.0.0/20"
    """Primary range of the node subnet."""
    pod_cidr: str = "10.4.0.0/14"
    """Secondary range for pod IPs (VPC-native)."""
    service_cidr: str = "10.8.0.0/20"
    """Secondary range for Service IPs."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        # Its subnet, router and NAT are named from it, each at most 63 characters (facts/naming.py).
        return check_name(value, NETWORK_NAME_LENGTH)

    @field_validator("node_cidr", "pod_cidr", "service_cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        return private_cidr(value)

    @model_validator(mode="after")
    def _disjoint(self) -> NetworkSettings:
        ranges = {"nodeCidr": self.node_cidr, "podCidr": self.pod_cidr, "serviceCidr": self.service_cidr}
        seen: list[tuple[str, ipaddress.IPv4Network]] = []
        for key, cidr in ranges.items():
            network = ipaddress.IPv4Network(cidr)
            for other_key, other in seen:
                if network.overlaps(other):
                    raise ConfigProblem((key,), cidr, f"overlaps {other_key} ({other}); the ranges must be disjoint")
            seen.append((key, network))
        return self
