"""The GKE Autopilot cluster and the Kubernetes provider every Kubernetes resource uses."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import yaml

from components.options import child_options, keeping_account_id
from plan.stack import POD_RANGE, SERVICE_RANGE, ClusterSpec, Maintenance


def maintenance_policy(maintenance: Maintenance) -> gcp.container.ClusterMaintenancePolicyArgs | None:
    """The recurring window and the exclusions; None leaves GKE's default (any time)."""
    if maintenance.window is None and not maintenance.exclusions:
        return None
    window = maintenance.window
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
                exclusion_options=gcp.container.ClusterMaintenancePolicyMaintenanceExclusionExclusionOptionsArgs(scope=exclusion.scope),
            )
            for exclusion in maintenance.exclusions
        ]
        or None,
    )


def cluster_args(
    spec: ClusterSpec, *, network: pulumi.Input[str], subnetwork: pulumi.Input[str], node_identity: pulumi.Input[str]
) -> gcp.container.ClusterArgs:
    networks = spec.authorized_networks
    return gcp.container.ClusterArgs(
        name=spec.name,
        project=spec.project,
        # Regional: the control plane survives a zone outage; A4 pods still
        # pin their zone through the capacity's node selector.
        location=spec.region,
        # Autopilot adds an A4 node only while a pod asks for 8 B200s, so an
        # idle stack pays no GPU bill (docs/reference.md).
        enable_autopilot=True,
        network=network,
        subnetwork=subnetwork,
        ip_allocation_policy=gcp.container.ClusterIpAllocationPolicyArgs(
            cluster_secondary_range_name=POD_RANGE,
            services_secondary_range_name=SERVICE_RANGE,
        ),
        release_channel=gcp.container.ClusterReleaseChannelArgs(channel=spec.release_channel.upper()),
        min_master_version=spec.version,
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
        workload_identity_config=gcp.container.ClusterWorkloadIdentityConfigArgs(workload_pool=f"{spec.project}.svc.id.goog"),
        maintenance_policy=maintenance_policy(spec.maintenance),
        # Nodes get no public IP; the DNS endpoint takes kubectl and Pulumi through IAM from anywhere;
        # the IP endpoint is internal unless authorized networks (or the open opt-in) say otherwise.
        private_cluster_config=gcp.container.ClusterPrivateClusterConfigArgs(
            enable_private_nodes=spec.private_nodes, enable_private_endpoint=not networks and not spec.open_control_plane
        ),
        control_plane_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigArgs(
            dns_endpoint_config=gcp.container.ClusterControlPlaneEndpointsConfigDnsEndpointConfigArgs(allow_external_traffic=True),
            ip_endpoints_config=gcp.container.ClusterControlPlaneEndpointsConfigIpEndpointsConfigArgs(enabled=True),
        ),
        master_authorized_networks_config=gcp.container.ClusterMasterAuthorizedNetworksConfigArgs(
            cidr_blocks=[gcp.container.ClusterMasterAuthorizedNetworksConfigCidrBlockArgs(cidr_block=cidr) for cidr in networks],
            gcp_public_cidrs_access_enabled=False,
        )
        if networks
        else None,
        # The nodes' own identity, so image pulls and metrics need no Compute Engine default account.
        cluster_autoscaling=gcp.container.ClusterClusterAutoscalingArgs(
            auto_provisioning_defaults=gcp.container.ClusterClusterAutoscalingAutoProvisioningDefaultsArgs(
                service_account=node_identity, oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"]
            )
        ),
        deletion_protection=spec.deletion_protection,
        resource_labels=spec.labels,
    )


def kubeconfig(cluster_name: str, dns_endpoint: str) -> str:
    """A kubeconfig for the DNS endpoint, authenticated through gke-gcloud-auth-plugin: it holds no credential.

    The DNS endpoint serves a publicly trusted certificate and authorises by IAM, so it needs no
    CA data and no IP allowlist: it works from a laptop and from CI alike.
    """
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
        "clusters": [{"name": cluster_name, "cluster": {"server": f"https://{dns_endpoint}"}}],
        "users": [{"name": cluster_name, "user": user}],
        "contexts": [{"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}],
        "current-context": cluster_name,
    }
    return yaml.safe_dump(document, sort_keys=True)


NODE_ROLE = "roles/container.defaultNodeServiceAccount"


def _dns_endpoint(config: gcp.container.outputs.ClusterControlPlaneEndpointsConfig | None) -> str:
    dns = config.dns_endpoint_config if config else None
    return (dns.endpoint if dns else None) or ""


class Cluster(pulumi.ComponentResource):
    """The cluster, and ``provider``: the one Kubernetes provider built from its outputs."""

    REGISTERS = (gcp.container.Cluster, gcp.serviceaccount.Account, gcp.projects.IAMMember)
    # Image streaming, on by default on Autopilot, needs the Container File System API (docs/reference.md).
    USES = ("containerfilesystem.googleapis.com",)

    def __init__(
        self,
        name: str,
        spec: ClusterSpec,
        *,
        network: pulumi.Input[str],
        subnetwork: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:platform:Cluster", name, None, opts)
        child = child_options(self, opts)
        self.node_identity = gcp.serviceaccount.Account(
            "nodes",
            account_id=spec.node_account,
            display_name="GKE nodes of the LLM serving stack",
            project=spec.project,
            # The cluster keeps the account it was created with (below): a stack made when long names were cut keeps its cut id.
            opts=keeping_account_id(child),
        )
        # GKE's least-privilege role for node identities (logging, monitoring, metadata).
        node_role = gcp.projects.IAMMember(
            "nodes-default-role", project=spec.project, role=NODE_ROLE, member=self.node_identity.member, opts=child
        )
        self.cluster = gcp.container.Cluster(
            "gke",
            cluster_args(spec, network=network, subnetwork=subnetwork, node_identity=self.node_identity.email),
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    depends_on=[node_role],
                    # GKE's deletionProtection trips only inside the cluster's own delete, after everything
                    # in it is gone; Pulumi's protect stops a destroy before it deletes anything.
                    protect=spec.protect,
                    # The nodes' identity is set when the cluster is created; GKE documents no change
                    # of it on an existing Autopilot cluster, so an update never tries one.
                    ignore_changes=["clusterAutoscaling.autoProvisioningDefaults.serviceAccount"],
                ),
            ),
        )
        self.name = self.cluster.name
        self.endpoint = self.cluster.control_plane_endpoints_config.apply(_dns_endpoint)
        config = pulumi.Output.all(self.cluster.name, self.endpoint).apply(lambda parts: kubeconfig(str(parts[0]), str(parts[1])))
        self.provider = k8s.Provider("gke", kubeconfig=config, opts=pulumi.ResourceOptions(parent=self))
        self.namespace = k8s.core.v1.Namespace(
            "workloads",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=spec.namespace, labels=spec.labels),
            # Deleting the namespace deletes every object in it, the model cache's volumes included.
            opts=pulumi.ResourceOptions(parent=self, provider=self.provider, protect=spec.protect),
        )
        self.register_outputs({"name": self.name, "endpoint": self.endpoint, "namespace": spec.namespace})
