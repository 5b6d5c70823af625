"""The Google Cloud APIs a stack needs, enabled once per project."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

# Everything runs on GKE; compute carries the VPC and the disks.
BASE_APIS = ("compute.googleapis.com", "container.googleapis.com")
# The Inference Gateway's load balancer stays unprogrammed without it, silently.
GATEWAY_APIS = ("networkservices.googleapis.com",)
# KEDA reads the queue from Managed Prometheus as its own service account.
AUTOSCALING_APIS = ("monitoring.googleapis.com", "iam.googleapis.com")
# Images through a remote repository.
REGISTRY_APIS = ("artifactregistry.googleapis.com",)
# Dashboards and alert policies.
OBSERVABILITY_APIS = ("monitoring.googleapis.com",)


class ProjectApis(pulumi.ComponentResource):
    """Enables APIs and leaves them on at destroy: other stacks may share the project."""

    def __init__(self, name: str, project: str, apis: tuple[str, ...], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm:platform:ProjectApis", name, None, opts)
        self.services = {
            api: gcp.projects.Service(
                api.split(".")[0],
                project=project,
                service=api,
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for api in apis
        }
        self.register_outputs({"apis": list(apis)})
