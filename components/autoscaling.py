"""Autoscaling on vLLM's queue, down to zero when idle: KEDA with Google Cloud Managed Prometheus.

Why KEDA and not an HPA through the Custom Metrics Stackdriver Adapter: an HPA
cannot scale to zero replicas, and the idle stack must hold no A4 node. GKE's KEDA
tutorial uses a Standard cluster; the chart values keep to what Autopilot admits
(docs/autopilot.md).
KEDA's operator reads the queue from Managed Prometheus' query API with its own
Workload Identity; the ScaledObject owns the Deployment's replica count.

Pure builders make the chart values and the KEDA objects; ``Autoscaling`` only
registers them.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.manifests import Manifest
from components.options import child_options
from stacks.plan import QUEUE_METRIC, RUNNING_METRIC, AutoscalingSpec
from stacks.settings import KEDA_NAMESPACE

# The chart's operator service account; Workload Identity maps it to a Google identity.
KEDA_OPERATOR = "keda-operator"
# The chart's metrics API server account; it reads the API server's front-proxy CA.
KEDA_METRICS_SERVER = "keda-metrics-server"
# The ConfigMap in kube-system an aggregated API server authenticates requests with.
AUTHENTICATION_CONFIG = "extension-apiserver-authentication"
AUTH_READER = "keda-extension-apiserver-authentication-reader"
KEDA_CHART = "keda"
KEDA_REPOSITORY = "https://kedacore.github.io/charts"
KEDA_API = "keda.sh/v1alpha1"
AUTHENTICATION = "managed-prometheus"
# Reads Managed Prometheus through its Prometheus-compatible query API.
MONITORING_READER = "roles/monitoring.viewer"


def query_endpoint(project: str) -> str:
    """Managed Prometheus' query API of the project (Prometheus HTTP API, global location)."""
    return f"https://monitoring.googleapis.com/v1/projects/{project}/location/global/prometheus"


def queue_query(metric: str, namespace: str) -> str:
    """The stack's total of ``metric`` over every replica and engine."""
    return f'sum({metric}{{namespace="{namespace}"}})'


def chart_values(operator_identity: pulumi.Input[str], image_registry: str) -> dict[str, Any]:
    # Every KEDA image through the stack's mirror of ghcr.io (or ghcr.io itself).
    images = {part: {"registry": image_registry} for part in ("keda", "metricsApiServer", "webhooks")}
    return {
        # Not podIdentity.gcp: it also adds the node selector iam.gke.io/gke-metadata-server-enabled,
        # which Autopilot refuses (every node has the metadata server; docs/autopilot.md).
        "serviceAccount": {"operator": {"annotations": {"iam.gke.io/gcp-service-account": operator_identity}}},
        # The chart binds the metrics server to a Role in kube-system, where Autopilot refuses
        # creates; the binding goes to KEDA's namespace and auth_reader_* grant the read instead.
        "rbac": {"controlPlaneServiceAccountsNamespace": KEDA_NAMESPACE},
        "image": images,
    }


def auth_reader_role(labels: dict[str, str]) -> dict[str, Any]:
    """Read access to the one ConfigMap an aggregated API server needs, granted cluster-wide by name."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": AUTH_READER, "labels": labels},
        "rules": [
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": [AUTHENTICATION_CONFIG], "verbs": ["get", "list", "watch"]}
        ],
    }


def auth_reader_binding(labels: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": AUTH_READER, "labels": labels},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AUTH_READER},
        "subjects": [{"kind": "ServiceAccount", "name": KEDA_METRICS_SERVER, "namespace": KEDA_NAMESPACE}],
    }


def trigger_authentication(spec: AutoscalingSpec) -> dict[str, Any]:
    return {
        "apiVersion": KEDA_API,
        "kind": "TriggerAuthentication",
        "metadata": {"name": AUTHENTICATION, "namespace": spec.namespace, "labels": spec.labels},
        # The operator's own Workload Identity: no key anywhere.
        "spec": {"podIdentity": {"provider": "gcp"}},
    }


def _prometheus(spec: AutoscalingSpec, name: str, metric: str, threshold: int) -> dict[str, Any]:
    return {
        "type": "prometheus",
        "name": name,
        "metadata": {
            "serverAddress": query_endpoint(spec.project),
            "query": queue_query(metric, spec.namespace),
            "threshold": str(threshold),
            # Active (kept above zero) while the value is above 0.
            "activationThreshold": "0",
        },
        "authenticationRef": {"name": AUTHENTICATION},
    }


def scaled_object(spec: AutoscalingSpec) -> dict[str, Any]:
    """Replicas follow the queue; any request running or waiting keeps one; idle for a while, zero."""
    scaling = spec.settings
    triggers = [
        # Desired replicas = waiting requests / waiting per replica.
        _prometheus(spec, "queue", QUEUE_METRIC, scaling.waiting_per_replica),
        # Never more than one replica per replica's worth of running requests: only keeps one alive.
        _prometheus(spec, "busy", RUNNING_METRIC, spec.capacity_per_replica),
        *(
            {
                "type": "cron",
                "name": f"batch-window-{index}",
                "metadata": {
                    "timezone": window.timezone,
                    "start": window.start,
                    "end": window.end,
                    "desiredReplicas": str(window.replicas),
                },
            }
            for index, window in enumerate(scaling.batch_windows)
        ),
    ]
    return {
        "apiVersion": KEDA_API,
        "kind": "ScaledObject",
        "metadata": {"name": spec.deployment, "namespace": spec.namespace, "labels": spec.labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.deployment},
            "minReplicaCount": spec.min_replicas,
            "maxReplicaCount": spec.max_replicas,
            "pollingInterval": scaling.poll_seconds,
            # Scale to minReplicas only after this long with every trigger inactive.
            "cooldownPeriod": scaling.idle_minutes * 60,
            "triggers": triggers,
        },
    }


class Autoscaling(pulumi.ComponentResource):
    """Registers KEDA (chart, namespace, Google identity) and the ScaledObject of the replicas."""

    REGISTERS = (gcp.serviceaccount.Account, gcp.projects.IAMMember, gcp.serviceaccount.IAMMember)
    # KEDA queries Managed Prometheus, as a Google service account it impersonates through Workload Identity.
    USES = ("monitoring.googleapis.com", "iamcredentials.googleapis.com")

    def __init__(
        self,
        name: str,
        spec: AutoscalingSpec,
        *,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:serving:Autoscaling", name, None, opts)
        on_gcp = child_options(self, opts)
        in_cluster = child_options(self, opts, kubernetes)
        identity = gcp.serviceaccount.Account(
            "keda-operator",
            account_id="keda-operator",
            display_name="KEDA operator (reads Managed Prometheus)",
            project=spec.project,
            opts=on_gcp,
        )
        grants = [
            gcp.projects.IAMMember("keda-reads-metrics", project=spec.project, role=MONITORING_READER, member=identity.member, opts=on_gcp),
            gcp.serviceaccount.IAMMember(
                "keda-workload-identity",
                service_account_id=identity.name,
                role="roles/iam.workloadIdentityUser",
                member=f"serviceAccount:{spec.project}.svc.id.goog[{KEDA_NAMESPACE}/{KEDA_OPERATOR}]",
                opts=on_gcp,
            ),
        ]
        namespace = k8s.core.v1.Namespace(
            "keda", metadata=k8s.meta.v1.ObjectMetaArgs(name=KEDA_NAMESPACE, labels=spec.labels), opts=in_cluster
        )
        chart = k8s.helm.v4.Chart(
            "keda",
            chart=KEDA_CHART,
            version=spec.settings.keda_version,
            repository_opts=k8s.helm.v4.RepositoryOptsArgs(repo=KEDA_REPOSITORY),
            namespace=KEDA_NAMESPACE,
            values=chart_values(identity.email, spec.image_registry),
            opts=pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[namespace, *grants])),
        )
        reader = Manifest(AUTH_READER, auth_reader_role(spec.labels), in_cluster)
        Manifest(
            AUTH_READER,
            auth_reader_binding(spec.labels),
            pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[reader])),
        )
        # The chart installs KEDA's CRDs; its objects come after them.
        after_chart = pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[chart]))
        authentication = Manifest(AUTHENTICATION, trigger_authentication(spec), after_chart)
        Manifest(
            spec.deployment,
            scaled_object(spec),
            pulumi.ResourceOptions.merge(after_chart, pulumi.ResourceOptions(depends_on=[chart, authentication])),
        )
        self.register_outputs({"minReplicas": spec.min_replicas, "maxReplicas": spec.max_replicas})
