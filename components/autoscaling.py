"""Autoscaling on the requests running and waiting, down to zero when idle: KEDA with Google Cloud Managed Prometheus.

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

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.manifests import Manifest, scale_fallback
from components.options import child_options, keeping_account_id
from components.workload_identity import GCP_SERVICE_ACCOUNT_ANNOTATION, let_act_as
from facts.naming import KEDA_NAMESPACE
from facts.vllm import REQUESTS_RUNNING, REQUESTS_WAITING
from plan.stack import AutoscalingSpec
from workloads.batch import layout

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
# The pod port of KEDA's admission webhook and of its metrics API server. The control plane calls
# both at the pod (chart defaults 9443 and 6443), and on private nodes GKE's own firewall rule opens
# only 443 and 10250 to it; 10250 needs no privilege to bind (docs/autoscaling.md).
CONTROL_PLANE_PORT = 10250


def query_endpoint(project: str) -> str:
    """Managed Prometheus' query API of the project (Prometheus HTTP API, global location)."""
    return f"https://monitoring.googleapis.com/v1/projects/{project}/location/global/prometheus"


def concurrency_query(namespace: str, model_name: str | None = None) -> str:
    """The stack's requests running and waiting, summed over every replica and engine; with several models, one
    model's (vLLM labels its series model_name with the served name)."""
    where = f'namespace="{namespace}"' + (f',model_name="{model_name}"' if model_name is not None else "")
    return f"sum({REQUESTS_RUNNING}{{{where}}}) + sum({REQUESTS_WAITING}{{{where}}})"


def batch_backlog_query(namespace: str, model_name: str | None = None) -> str:
    """Lines of the batches the runners hold and have not answered: what the batch still asks of the replicas;
    with several models, the lines naming one model (the runner labels its backlog model_name with the served name)."""
    where = f'namespace="{namespace}"' + (f',model_name="{model_name}"' if model_name is not None else "")
    return f"sum({layout.BACKLOG}{{{where}}})"


def batch_wake_trigger(bucket: str, authentication: str) -> dict[str, Any]:
    """KEDA's gcp-storage scaler: any object waiting under input/ is a count above zero, even at zero replicas.

    A count is state, not an event: a notification missed or late cannot strand a batch, and an
    input stays under input/ until the runner has answered every line (docs/batch.md).
    """
    return {
        "type": "gcp-storage",
        "name": "batch-input",
        "metadata": {
            "bucketName": bucket,
            "blobPrefix": layout.INPUT,
            # One replica at most: the scan stops at maxBucketItemsToScan (1000 by default), so the count never
            # exceeds this target; the runner's backlog, then the running requests, say how many the batch needs.
            "targetObjectCount": "1000",
            "activationTargetObjectCount": "0",
        },
        "authenticationRef": {"name": authentication},
    }


def chart_values(operator_identity: pulumi.Input[str], image_registry: str) -> dict[str, Any]:
    # Every KEDA image through the stack's mirror of ghcr.io (or ghcr.io itself).
    images = {part: {"registry": image_registry} for part in ("keda", "metricsApiServer", "webhooks")}
    return {
        # Not podIdentity.gcp: it also adds the node selector iam.gke.io/gke-metadata-server-enabled,
        # which Autopilot refuses (every node has the metadata server; docs/autopilot.md).
        "serviceAccount": {"operator": {"annotations": {GCP_SERVICE_ACCOUNT_ANNOTATION: operator_identity}}},
        # The chart binds the metrics server to a Role in kube-system, where Autopilot refuses
        # creates; the binding goes to KEDA's namespace and auth_reader_* grant the read instead.
        "rbac": {"controlPlaneServiceAccountsNamespace": KEDA_NAMESPACE},
        "webhooks": {"port": CONTROL_PLANE_PORT},
        # The operator's own metrics (scaler values and errors) on port "metrics", for the batch and trigger alerts.
        "prometheus": {"operator": {"enabled": True}},
        "service": {"portHttpsTarget": CONTROL_PLANE_PORT},
        "image": images,
    }


def operator_pod_monitoring(labels: dict[str, str]) -> dict[str, Any]:
    """Managed Prometheus scrapes KEDA's operator: keda_scaler_metrics_value and keda_scaler_detail_errors_total
    (kedacore/keda v2.20.2 pkg/metricscollector/prommetrics.go), on the chart's port "metrics"."""
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": KEDA_OPERATOR, "namespace": KEDA_NAMESPACE, "labels": labels},
        "spec": {
            # The chart's operator pods (templates/manager/deployment.yaml: app: <operator.name>).
            "selector": {"matchLabels": {"app": KEDA_OPERATOR}},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}],
        },
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


# The HPA may add up to the maximum at every sync (15 s): each new replica takes a cold start
# to serve, so waiting to add more only delays the batch.
SCALE_UP_PERIOD_SECONDS = 15


def behavior(spec: AutoscalingSpec) -> dict[str, Any]:
    """HPA behavior: up at once to what the load needs; down only once the load stayed lower long enough.

    Removing a replica that is needed again within a cold start is the flap that costs most, so
    a lower load must last a cold start plus idleMinutes before a replica goes.
    """
    return {
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [{"type": "Pods", "value": spec.max_replicas, "periodSeconds": SCALE_UP_PERIOD_SECONDS}],
        },
        "scaleDown": {
            "stabilizationWindowSeconds": spec.cold_start_seconds + spec.idle_minutes * 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": SCALE_UP_PERIOD_SECONDS}],
        },
    }


def scaled_object(spec: AutoscalingSpec) -> dict[str, Any]:
    """Replicas follow the requests running and waiting; idle for a while, zero."""
    triggers = [
        {
            "type": "prometheus",
            "name": "concurrency",
            "metadata": {
                "serverAddress": query_endpoint(spec.project),
                "query": concurrency_query(spec.namespace, spec.model_name),
                # AverageValue (KEDA's default): replicas = ceil(running and waiting / target). Running
                # requests count, so the replicas never drop below what the running requests need.
                "threshold": str(spec.requests_per_replica),
                # Active (kept above zero) while anything runs or waits.
                "activationThreshold": "0",
            },
            "authenticationRef": {"name": AUTHENTICATION},
        },
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
            for index, window in enumerate(spec.batch_windows)
        ),
    ]
    if spec.batch_bucket is not None:
        triggers += [
            batch_wake_trigger(spec.batch_bucket, AUTHENTICATION),
            {
                "type": "prometheus",
                "name": "batch-backlog",
                "metadata": {
                    "serverAddress": query_endpoint(spec.project),
                    "query": batch_backlog_query(spec.namespace, spec.model_name),
                    # The runner sends at most this many per Ready replica (plan/stack.py), so vLLM's
                    # queue never shows the batch's size; its backlog does, against the same target.
                    "threshold": str(spec.requests_per_replica),
                    "activationThreshold": "0",
                },
                "authenticationRef": {"name": AUTHENTICATION},
            },
        ]
    idle_seconds = spec.idle_minutes * 60
    return {
        "apiVersion": KEDA_API,
        "kind": "ScaledObject",
        "metadata": {"name": spec.deployment, "namespace": spec.namespace, "labels": spec.labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": spec.deployment},
            "minReplicaCount": spec.min_replicas,
            "maxReplicaCount": spec.max_replicas,
            "pollingInterval": spec.poll_seconds,
            # Scale to minReplicas only after this long with every trigger inactive.
            "cooldownPeriod": idle_seconds,
            # KEDA's default is 0: a new ScaledObject with no load drops its replicas at the first
            # poll (scale_executor.go), while they still load. Give them their cold start, then idle.
            "initialCooldownPeriod": spec.cold_start_seconds + idle_seconds,
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": behavior(spec)}},
            "fallback": scale_fallback(),
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
        scaled: Sequence[AutoscalingSpec] = (),
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``scaled``: each model's ScaledObject with several models; else the one of ``spec``."""
        super().__init__("llm:serving:Autoscaling", name, None, opts)
        on_gcp = child_options(self, opts)
        in_cluster = child_options(self, opts, kubernetes)
        self.identity = identity = gcp.serviceaccount.Account(
            "keda-operator",
            account_id=spec.account_id,
            display_name="KEDA operator (reads Managed Prometheus)",
            project=spec.project,
            opts=keeping_account_id(on_gcp),  # a stack made with the fixed id `keda-operator` keeps it
        )
        grants = [
            gcp.projects.IAMMember("keda-reads-metrics", project=spec.project, role=MONITORING_READER, member=identity.member, opts=on_gcp),
            let_act_as(
                "keda-workload-identity", identity, project=spec.project, namespace=KEDA_NAMESPACE, account=KEDA_OPERATOR, opts=on_gcp
            ),
        ]
        namespace = k8s.core.v1.Namespace(
            "keda", metadata=k8s.meta.v1.ObjectMetaArgs(name=KEDA_NAMESPACE, labels=spec.labels), opts=in_cluster
        )
        self.chart = chart = k8s.helm.v4.Chart(
            "keda",
            chart=KEDA_CHART,
            version=spec.keda_version,
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
        Manifest(KEDA_OPERATOR, operator_pod_monitoring(spec.labels), after_chart)
        for each in scaled or (spec,):
            Manifest(
                each.deployment,
                scaled_object(each),
                pulumi.ResourceOptions.merge(after_chart, pulumi.ResourceOptions(depends_on=[chart, authentication])),
            )
        self.register_outputs({"minReplicas": spec.min_replicas, "maxReplicas": spec.max_replicas})
