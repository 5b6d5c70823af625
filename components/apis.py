"""The Google Cloud APIs a stack needs, derived from what its components register and use.

Each component names the pulumi-gcp resource classes it registers (``REGISTERS``)
and the APIs its workloads call at run time (``USES``); the API serving a
resource comes from its pulumi-gcp module. The render checks every registered
resource against the same table (``render.lifecycle``), so a component that
registers a new kind without its API fails the tests, not a first `pulumi up`.
Sources for each API: docs/reference.md.
"""

from __future__ import annotations

from collections.abc import Iterable

import pulumi
import pulumi_gcp as gcp

from plan.stack import ApisSpec

# The API that serves the resources of each pulumi-gcp module the program uses.
SERVING_API = {
    "artifactregistry": "artifactregistry.googleapis.com",
    "compute": "compute.googleapis.com",
    "container": "container.googleapis.com",
    "monitoring": "monitoring.googleapis.com",
    # Project IAM policy reads and writes go through Resource Manager.
    "projects": "cloudresourcemanager.googleapis.com",
    "serviceaccount": "iam.googleapis.com",
    "storage": "storage.googleapis.com",
}
# Enabling an API is itself a Service Usage call; it is on in every new project.
SERVICE_USAGE_API = "serviceusage.googleapis.com"
# A resource type whose API is not its module's.
SERVING_API_OF_TYPE = {"gcp:projects/service:Service": SERVICE_USAGE_API}


def module_of(resource: type[pulumi.Resource]) -> str:
    """``pulumi_gcp.compute.network`` -> ``compute``."""
    return resource.__module__.split(".")[1]


def serving_api(type_token: str) -> str | None:
    """The API behind a registered ``gcp:`` resource type, or None for a type the table lacks."""
    if type_token in SERVING_API_OF_TYPE:
        return SERVING_API_OF_TYPE[type_token]
    return SERVING_API.get(type_token.removeprefix("gcp:").split("/", 1)[0])


def required_apis(components: Iterable[type[pulumi.ComponentResource]]) -> tuple[str, ...]:
    """The APIs the given components' resources and workloads need, in a stable order."""
    needed: set[str] = set()
    for component in components:
        needed.update(SERVING_API[module_of(resource)] for resource in getattr(component, "REGISTERS", ()))
        needed.update(getattr(component, "USES", ()))
    return tuple(sorted(needed))


class ProjectApis(pulumi.ComponentResource):
    """Enables APIs and leaves them on at destroy: other stacks may share the project."""

    def __init__(self, name: str, spec: ApisSpec, *, apis: tuple[str, ...], opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("llm:platform:ProjectApis", name, None, opts)
        self.services = {
            api: gcp.projects.Service(
                api.split(".")[0],
                project=spec.project,
                service=api,
                disable_on_destroy=False,
                disable_dependent_services=False,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for api in apis
        }
        self.register_outputs({"apis": list(apis)})
