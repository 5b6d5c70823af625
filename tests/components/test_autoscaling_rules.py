"""KEDA's objects on hand-made autoscaling specs, and ``Autoscaling`` run alone: what scales the replicas, on which signal."""

from __future__ import annotations

from dataclasses import replace

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from components.autoscaling import Autoscaling, scaled_object
from plan.stack import AutoscalingSpec, BatchWindow
from tests.components.alone import registered

LABELS = {"team": "ml", "stack": "dev"}
SPEC = AutoscalingSpec(
    project="example-project",
    namespace="serving",
    labels=LABELS,
    deployment="vllm-a",
    requests_per_replica=640,
    idle_minutes=7,
    poll_seconds=23,
    batch_windows=(),
    keda_version="2.20.2",
    min_replicas=1,
    max_replicas=6,
    image_registry="europe-docker.pkg.dev/example-project/ghcr",
    cold_start_seconds=900,
    account_id="llm-dev-keda",
)
NIGHTLY = BatchWindow(start="0 22 * * 1-5", end="0 6 * * 2-6", timezone="Europe/Amsterdam", replicas=4)
WEEKEND = BatchWindow(start="0 8 * * 6", end="0 18 * * 6", timezone="UTC", replicas=2)
PROMETHEUS = "https://monitoring.googleapis.com/v1/projects/example-project/location/global/prometheus"
QUEUE = 'sum(vllm:num_requests_running{namespace="serving"}) + sum(vllm:num_requests_waiting{namespace="serving"})'


@pytest.mark.parametrize("seconds", [5, 23, 120])
def test_keda_polls_at_the_configured_interval(seconds: int) -> None:
    assert scaled_object(replace(SPEC, poll_seconds=seconds))["spec"]["pollingInterval"] == seconds


def test_the_scaled_object_drives_the_deployment_between_its_bounds_on_the_queue() -> None:
    manifest = scaled_object(SPEC)
    assert (manifest["apiVersion"], manifest["kind"]) == ("keda.sh/v1alpha1", "ScaledObject")
    assert manifest["metadata"] == {"name": "vllm-a", "namespace": "serving", "labels": LABELS}
    body = manifest["spec"]
    assert body["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm-a"}
    assert (body["minReplicaCount"], body["maxReplicaCount"]) == (1, 6)
    # Idle for idleMinutes: down to the minimum; a fresh object waits a cold start more before that.
    assert (body["cooldownPeriod"], body["initialCooldownPeriod"]) == (7 * 60, 900 + 7 * 60)
    assert body["fallback"] == {"failureThreshold": 3, "replicas": 0}
    assert body["triggers"] == [
        {
            "type": "prometheus",
            "name": "concurrency",
            "metadata": {"serverAddress": PROMETHEUS, "query": QUEUE, "threshold": "640", "activationThreshold": "0"},
            "authenticationRef": {"name": "managed-prometheus"},
        }
    ]


def test_scaling_up_is_immediate_and_down_waits_a_cold_start_and_the_idle_minutes() -> None:
    behavior = scaled_object(SPEC)["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleUp"] == {
        "stabilizationWindowSeconds": 0,
        "selectPolicy": "Max",
        "policies": [{"type": "Pods", "value": 6, "periodSeconds": 15}],
    }
    assert behavior["scaleDown"] == {
        "stabilizationWindowSeconds": 900 + 7 * 60,
        "selectPolicy": "Max",
        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
    }


def test_each_batch_window_is_a_cron_trigger_of_its_own() -> None:
    triggers = scaled_object(replace(SPEC, batch_windows=(NIGHTLY, WEEKEND)))["spec"]["triggers"]
    assert [t["name"] for t in triggers] == ["concurrency", "batch-window-0", "batch-window-1"]
    assert triggers[1] == {
        "type": "cron",
        "name": "batch-window-0",
        "metadata": {"timezone": "Europe/Amsterdam", "start": "0 22 * * 1-5", "end": "0 6 * * 2-6", "desiredReplicas": "4"},
    }
    assert triggers[2]["metadata"] == {"timezone": "UTC", "start": "0 8 * * 6", "end": "0 18 * * 6", "desiredReplicas": "2"}


def test_a_batch_bucket_wakes_the_replicas_and_its_backlog_sizes_them() -> None:
    triggers = scaled_object(replace(SPEC, batch_bucket="example-batches"))["spec"]["triggers"]
    assert [t["name"] for t in triggers] == ["concurrency", "batch-input", "batch-backlog"]
    assert triggers[1] == {
        "type": "gcp-storage",
        "name": "batch-input",
        "metadata": {
            "bucketName": "example-batches",
            "blobPrefix": "input/",
            "targetObjectCount": "1000",
            "activationTargetObjectCount": "0",
        },
        "authenticationRef": {"name": "managed-prometheus"},
    }
    assert triggers[2] == {
        "type": "prometheus",
        "name": "batch-backlog",
        "metadata": {
            "serverAddress": PROMETHEUS,
            "query": 'sum(batch_backlog_requests{namespace="serving"})',
            "threshold": "640",
            "activationThreshold": "0",
        },
        "authenticationRef": {"name": "managed-prometheus"},
    }


def keda() -> None:
    """The component after an API it is told to wait for, as the stack registers it."""
    api = gcp.projects.Service("api", service="monitoring.googleapis.com")
    Autoscaling("autoscaling", SPEC, kubernetes=k8s.Provider("cluster"), opts=pulumi.ResourceOptions(depends_on=[api]))


def test_every_child_waits_for_what_the_component_waits_for() -> None:
    render = registered(keda)
    api = render.one("gcp:projects/service:Service").urn
    children = [r for r in render.resources if r.type.startswith(("kubernetes:", "gcp:")) and r.urn != api]
    component = render.one("llm:serving:Autoscaling").urn
    assert api in render.one("llm:serving:Autoscaling").dependencies
    assert len(children) == 10 and all(api in r.dependencies and r.parent == component for r in children)


def test_keda_reads_managed_prometheus_as_its_own_google_identity() -> None:
    render = registered(keda)
    component = render.one("llm:serving:Autoscaling", "autoscaling")
    account = render.one("gcp:serviceaccount/account:Account", "keda-operator")
    assert account.inputs["accountId"] == "llm-dev-keda" and account.inputs["project"] == "example-project"
    # A stack made with the earlier fixed id keeps its account.
    assert account.ignore_changes == ("accountId",)
    assert account.inputs["displayName"] == "KEDA operator (reads Managed Prometheus)"
    email = "llm-dev-keda@example-project.iam.gserviceaccount.com"
    reads = render.one("gcp:projects/iAMMember:IAMMember", "keda-reads-metrics").inputs
    assert reads == {"project": "example-project", "role": "roles/monitoring.viewer", "member": f"serviceAccount:{email}"}
    acts = render.one("gcp:serviceaccount/iAMMember:IAMMember", "keda-workload-identity").inputs
    assert acts["role"] == "roles/iam.workloadIdentityUser"
    assert acts["member"] == "serviceAccount:example-project.svc.id.goog[keda/keda-operator]"
    for resource in (account, render.one("gcp:projects/iAMMember:IAMMember"), render.one("gcp:serviceaccount/iAMMember:IAMMember")):
        assert resource.parent == component.urn and not resource.provider.startswith("urn:pulumi:dev::llm::pulumi:providers:kubernetes")
    chart = render.one("kubernetes:helm.sh/v4:Chart", "keda")
    assert chart.inputs["values"]["serviceAccount"] == {"operator": {"annotations": {"iam.gke.io/gcp-service-account": email}}}


def test_the_chart_installs_keda_in_its_namespace_after_the_grants_and_from_the_stacks_mirror() -> None:
    render = registered(keda)
    cluster = render.one("pulumi:providers:kubernetes", "cluster").urn
    namespace = render.one("kubernetes:core/v1:Namespace", "keda")
    assert namespace.inputs["metadata"] == {"name": "keda", "labels": LABELS} and namespace.provider.startswith(cluster)
    chart = render.one("kubernetes:helm.sh/v4:Chart", "keda")
    assert chart.provider.startswith(cluster)
    inputs = chart.inputs
    assert (inputs["chart"], inputs["version"], inputs["namespace"]) == ("keda", "2.20.2", "keda")
    assert inputs["repositoryOpts"] == {"repo": "https://kedacore.github.io/charts"}
    values = inputs["values"]
    mirror = {"registry": "europe-docker.pkg.dev/example-project/ghcr"}
    assert values["image"] == {"keda": mirror, "metricsApiServer": mirror, "webhooks": mirror}
    assert values["rbac"] == {"controlPlaneServiceAccountsNamespace": "keda"}
    # The control plane reaches private nodes on 10250 (and 443) only.
    assert values["webhooks"] == {"port": 10250} and values["service"] == {"portHttpsTarget": 10250}
    assert values["prometheus"] == {"operator": {"enabled": True}}
    for earlier in (
        namespace,
        render.one("gcp:projects/iAMMember:IAMMember", "keda-reads-metrics"),
        render.one("gcp:serviceaccount/iAMMember:IAMMember", "keda-workload-identity"),
    ):
        assert earlier.urn in chart.dependencies


def test_the_metrics_server_reads_the_authentication_config_through_a_cluster_role_of_one_configmap() -> None:
    render = registered(keda)
    role = render.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
    name = "keda-extension-apiserver-authentication-reader"
    assert role.name == name and role.inputs["metadata"] == {"name": name, "labels": LABELS}
    assert role.inputs["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": ["extension-apiserver-authentication"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    binding = render.one("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
    assert binding.name == name and binding.inputs["metadata"] == {"name": name, "labels": LABELS}
    assert binding.inputs["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}
    assert binding.inputs["subjects"] == [{"kind": "ServiceAccount", "name": "keda-metrics-server", "namespace": "keda"}]
    assert role.urn in binding.dependencies


def test_kedas_objects_wait_for_its_crds_and_the_scaler_for_its_authentication() -> None:
    render = registered(keda)
    chart = render.one("kubernetes:helm.sh/v4:Chart", "keda")
    authentication = render.one("kubernetes:keda.sh/v1alpha1:TriggerAuthentication", "managed-prometheus")
    assert authentication.inputs["metadata"] == {"name": "managed-prometheus", "namespace": "serving", "labels": LABELS}
    assert authentication.inputs["spec"] == {"podIdentity": {"provider": "gcp"}}
    monitoring = render.one("kubernetes:monitoring.googleapis.com/v1:PodMonitoring", "keda-operator")
    assert monitoring.inputs["metadata"] == {"name": "keda-operator", "namespace": "keda", "labels": LABELS}
    assert monitoring.inputs["spec"] == {
        "selector": {"matchLabels": {"app": "keda-operator"}},
        "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}],
    }
    scaler = render.one("kubernetes:keda.sh/v1alpha1:ScaledObject", "vllm-a")
    assert scaler.inputs["spec"]["pollingInterval"] == 23
    for waiting in (authentication, monitoring, scaler):
        assert chart.urn in waiting.dependencies
    assert authentication.urn in scaler.dependencies
