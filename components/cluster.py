"""The GKE Autopilot cluster and the Kubernetes provider every Kubernetes resource uses."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import yaml

from components.options import child_options
from stacks.plan import POD_RANGE, SERVICE_RANGE
from stacks.settings import EXCLUSION_SCOPES, ClusterSettings, MaintenanceSettings


def maintenance_policy(settings: MaintenanceSettings) -> gcp.container.ClusterMaintenancePolicyArgs | None:
    """The recurring window and the exclusions; None leaves GKE's default (any time)."""
    if settings.window is None and not settings.exclusions:
        return None
    window = settings.window
    return gcp.container.ClusterMaintenancePolicyArgs(
        recurring_window=gcp.container.ClusterMaintenancePolicyRecurringWindowArgs(
            start_time=window.start_time, end_time=window.end_time, recurrence=window.recurrence
        )
        if window
        else None,
        maintenance_exclusions=[
            gcp.container.ClusterMaintenancePolicyMaintenanceExclusionArgs(
                exclusion_name=exclusion.name,
                start_time=exclusion.start_time,
                end_time=exclusion.end_time,
                exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(
                    scope=EXCLUSION_SCOPES[exclusion.scope]
                ),
            )
            for exclusion in settings.exclusions
        ]
        or None,
    )


def cluster_args(
    settings: ClusterSettings,
    *,
    project: str,
    region: str,
    network: pulumi.Input[str],
    subnetwork: pulumi.Input[str],
    labels: dict[str, str],
) -> gcp.container.ClusterArgs:
    return gcp.container.ClusterArgs(
        name=settings.name,
        project=project,
        # Regional: the control plane survives a zone outage; A4 pods still
        # pin their zone through the capacity's node selector.
        location=region,
        # Autopilot adds an A4 node only while a pod asks for 8 B200s, so an
        # idle stack pays no GPU bill (docs/reference.md).
        enable_autopilot=True,
        network=network,
        subnetwork=subnetwork,
        ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name=POD_RANGE,
            services_secondary_range_name=SERVICE_RANGE,
        ),
        release_channel=gcp.container.ClusterReleaseChannelArgs(channel=settings.release_channel.upper()),
        min_master_version=settings.version,
        gateway_api_config=gcp.container.ClusterGatewayApiConfigArgs(channel="CHANNEL_STANDARD"),
        addons_config=gcp.container.ClusterAddonsConfigArgs(
            # The Inference Gateway needs the HTTP load balancing add-on.
            http_load_balancing=gcp.container.ClusterAddonsConfigHttpLoadBalancingArgs(disabled=False),
        ),
        monitoring_config=gcp.container.ClusterMonitoringConfigArgs(
            # DCGM exports GPU metrics, DEPLOYMENT the replica counts the dashboard and
            # alerts read (kube-state); managed Prometheus scrapes vLLM's /metrics.
            enable_components=["SYSTEM_COMPONENTS", "DCGM", "DEPLOYMENT"],
            managed_prometheus=gcp.container.ClusterMonitoringConfigManagedPrometheusArgs(enabled=True),
        ),
        workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(workload_pool=f"{project}.svc.id.goog"),
        maintenance_policy=maintenance_policy(settings.maintenance),
        deletion_protection=settings.deletion_protection,
        resource_labels=labels,
    )


def kubeconfig(cluster_name: str, endpoint: str, ca_certificate: str) -> str:
    """A kubeconfig that authenticates through gke-gcloud-auth-plugin: it holds no credential."""
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "installHint": "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
        }
    }
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster_name, "cluster": {"server": f"https://{endpoint}", "certificate-authority-data": ca_certificate}}],
        "users": [{"name": cluster_name, "user": user}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
    }
    return yaml.safe_dump(document, sort_keys=True)


class Cluster(pulumi.ComponentResource):
    """The cluster, and ``provider``: the one Kubernetes provider built from its outputs."""

    def __init__(
        self,
        name: str,
        settings: ClusterSettings,
        *,
        network: pulumi.Input[str],
        subnetwork: pulumi.Input[str],
        project: str,
        region: str,
        labels: dict[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:platform:Cluster", name, None, opts)
        self.cluster = gcp.container.Cluster(
            "gke",
            cluster_args(settings, project=project, region=region, network=network, subnetwork=subnetwork, labels=labels),
            opts=child_options(self, opts),
        )
        self.name = self.cluster.name
        self.endpoint = self.cluster.endpoint
        config = pulumi.Output.all(self.cluster.name, self.cluster.endpoint, self.cluster.master_auth.cluster_ca_certificate).apply(
            lambda parts: kubeconfig(str(parts[0]), str(parts[1]), str(parts[2]))
        )
        self.provider = k8s.Provider("gke", kubeconfig=config, opts=pulumi.ResourceOptions(parent=self))
        self.namespace = k8s.core.v1.Namespace(
            "workloads",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=settings.namespace, labels=labels),
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider),
        )
        self.register_outputs({"name": self.name, "endpoint": self.endpoint, "namespace": settings.namespace})
