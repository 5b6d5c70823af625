"""The gateway section: the Inference Gateway of `routing: gateway`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from stacks.section import Section, check_name, kubernetes_quantity, memory_quantity, private_cidr


class GatewaySettings(Section):
    """The Inference Gateway, used when routing is gateway."""

    exposure: Literal["internal", "external"] = "internal"
    """`internal` (gke-l7-rilb) or `external` (gke-l7-regional-external-managed; needs allowPublicExposure)."""
    proxy_subnet_cidr: str = "10.129.0.0/23"
    """Range of the proxy-only subnet this stack creates."""
    existing_proxy_subnet: str | None = None
    """Name of an existing ACTIVE proxy-only subnet to use instead (a VPC allows one per region)."""
    install_crds: Literal["auto", "always", "never"] = "auto"
    """Install the InferencePool CRDs: `auto` when cluster.version is below what installs them (1.35)."""
    chart_version: Literal["v1.4.0", "v1.5.0"] = "v1.4.0"
    """Version of the inferencepool chart (endpoint picker) and, with several models, of the body-based-routing chart;
    an embedding model needs v1.5.0."""
    backend_timeout_seconds: int = Field(default=300, ge=10, le=3600)
    """Request timeout of the route and the backend, for long generations."""
    endpoint_picker_cpu: str = "10"
    """CPU of the endpoint picker (requests = limits); 4 and less crashed under ~8K connections."""
    endpoint_picker_memory: str = "16Gi"
    """Memory of the endpoint picker (requests = limits)."""
    endpoint_picker_replicas: int = Field(default=1, ge=1, le=3)
    """More than 1 adds standby replicas (leader election), not capacity."""
    programmed_timeout_minutes: int = Field(default=15, ge=1, le=60)
    """How long `pulumi up` waits for the Gateway to be Programmed."""
    price_per_vcpu_hour: float = Field(default=0.0445, ge=0)
    """US dollars per vCPU-hour of the endpoint picker's Autopilot Pods, for the estimates (general-purpose, us-central1)."""
    price_per_gib_hour: float = Field(default=0.0049225, ge=0)
    """US dollars per GiB-hour of the endpoint picker's Autopilot Pods, for the estimates (general-purpose, us-central1)."""
    load_balancer_price_per_hour: float = Field(default=0.025, ge=0)
    """US dollars per hour of the Gateway's load balancer, for the estimates (before data processed)."""

    @field_validator("existing_proxy_subnet")
    @classmethod
    def _subnet_name(cls, value: str | None) -> str | None:
        # The program looks the subnet up by name in the stack's project and region.
        return value if value is None else check_name(value, 63)

    @field_validator("proxy_subnet_cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        return private_cidr(value)

    @field_validator("endpoint_picker_cpu")
    @classmethod
    def _cpu(cls, value: str) -> str:
        return kubernetes_quantity(value)

    @field_validator("endpoint_picker_memory")
    @classmethod
    def _memory(cls, value: str) -> str:
        return memory_quantity(value)
