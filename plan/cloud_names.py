"""The names a stack gives what it creates in GCP that must be unique beyond the stack, and where each must be.

Two stacks of one project create theirs side by side: a name both derive fails the second `pulumi up` with 409
"already exists", and a destroy of either would delete what the other uses. The render compares a stack's names
with those of the other stack files of its project (render/neighbours.py); docs/architecture.md, "One project,
several stacks", says which names each setting derives and what two stacks share on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass

from facts.naming import NAT_SUFFIX, REPLICAS, ROUTER_SUFFIX, SUBNET_SUFFIX, UPSTREAMS
from plan.stack import StackPlan
from workloads.batch.layout import RUNNER

# Bucket names are one namespace for every project (facts/naming.py).
BUCKETS = "Cloud Storage (every project)"


@dataclass(frozen=True, kw_only=True)
class CloudName:
    """One name the stack creates: what it names, the name, where GCP keeps it unique, and the setting that changes it."""

    kind: str
    name: str
    within: str
    key: str


def cloud_names(plan: StackPlan, stack: str) -> tuple[CloudName, ...]:
    """Every name of the plan that another stack of its project could also derive.

    The project's APIs (left enabled on destroy) and KEDA's Workload Identity principal (each stack grants its own
    account the same project role through it) are shared on purpose and left out; alert policies and the dashboard
    get ids from the API.
    """
    project = f"project {plan.provider.project}"
    region = f"{project}, region {plan.provider.region}"
    network, cluster = plan.network, plan.cluster

    def named(kind: str, name: str, within: str, key: str) -> CloudName:
        return CloudName(kind=kind, name=name, within=within, key=key)

    names = [
        named("VPC network", network.name, project, "llm:network.name"),
        named("subnetwork", f"{network.name}{SUBNET_SUFFIX}", region, "llm:network.name"),
    ]
    if plan.proxy_subnet and plan.proxy_subnet.create and plan.gateway:
        names.append(named("subnetwork", plan.proxy_subnet.name, region, "llm:network.name"))
    if network.nat:
        names += [
            named("Cloud Router", f"{network.name}{ROUTER_SUFFIX}", region, "llm:network.name"),
            named("Cloud NAT", f"{network.name}{NAT_SUFFIX}", region, "llm:network.name"),
        ]
    names += [
        named("GKE cluster", cluster.name, region, "llm:cluster.name"),
        named("service account", cluster.node_account, project, "llm:cluster.name"),
    ]
    reservation = plan.capacity.future_reservation
    if reservation:
        zone = f"{project}, zone {plan.capacity.zone}"
        names.append(named("future reservation", reservation.name, zone, "llm:capacity.reservation.name"))
    if plan.registry:
        repositories = plan.registry.repositories
        names += [named("Artifact Registry repository", repositories[host], region, "llm:registry.repositoryPrefix") for host in UPSTREAMS]
    # Workload Identity for GKE: a Kubernetes service account of one namespace is one principal in every cluster of
    # the project, `<project>.svc.id.goog[<namespace>/<name>]`, so another stack's pods would act as this stack's accounts.
    principal = "Workload Identity principal"
    if plan.compile_cache:
        names += [
            named("service account", plan.compile_cache.account_id, project, "llm:cluster.name"),
            named("Cloud Storage bucket", plan.compile_cache.mount.bucket, BUCKETS, "llm:cluster.name"),
            named(principal, f"{plan.compile_cache.namespace}/{REPLICAS}", project, "llm:cluster.namespace"),
        ]
    if plan.autoscaling:
        names.append(named("service account", plan.autoscaling.account_id, project, "llm:cluster.name"))
    if plan.batch:
        names += [
            named("service account", plan.batch.account_id, project, "llm:cluster.name"),
            named("Cloud Storage bucket", plan.batch.bucket, BUCKETS, f"the stack's name ({stack})"),
            named("Artifact Registry repository", plan.batch.python_repository, region, "llm:registry.repositoryPrefix"),
            named(principal, f"{plan.batch.namespace}/{RUNNER}", project, "llm:cluster.namespace"),
        ]
    return tuple(names)
