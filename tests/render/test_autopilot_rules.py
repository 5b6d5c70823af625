"""Autopilot's admission on hand-made objects, one rule at a time (no stack render).

Each expectation is the rule as GKE documents it, through ``render/vendor/data/autopilot.yaml``'s sources: the
node-selection keys Autopilot admits and workload separation's NoSchedule toleration, a custom ComputeClass's
companion keys, a GPU pod's selector, the A4 machine's size, the general-purpose pod's ceiling, the security
constraints, managed namespaces, and the ports GKE's firewall opens to the control plane (443, 10250).
"""

from __future__ import annotations

from typing import Any

import pytest

from facts import gke
from render.autopilot import admission_problems, control_plane_ports, pod_specs
from render.cluster_model import Sourced

SOURCE = "resource picker"


def placed(kind: str, name: str = "app", namespace: str | None = "serving", source: str = SOURCE, **body: Any) -> Sourced:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    return Sourced(source, {"apiVersion": "v1", "kind": kind, "metadata": metadata, **body})


def deployment(pod: dict[str, Any], name: str = "app", labels: dict[str, str] | None = None, namespace: str = "serving") -> Sourced:
    template = {"metadata": {"labels": labels or {}}, "spec": pod}
    return placed("Deployment", name, namespace, spec={"template": template})


def container(name: str = "main", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", **fields}


def problems(pod: dict[str, Any]) -> list[str]:
    """The refusals of one Deployment with this pod, without the object's label."""
    prefix = f"Deployment serving/app ({SOURCE}): "
    found = admission_problems([deployment(pod)])
    assert all(p.startswith(prefix) for p in found), found
    return [p.removeprefix(prefix) for p in found]


# --- where the pod specs are -------------------------------------------------------------


def test_every_kind_that_makes_pods_is_read_at_its_template() -> None:
    pod = {"containers": [container()]}
    assert list(pod_specs(placed("Pod", spec=pod))) == [("spec", pod)]
    for kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        assert list(pod_specs(placed(kind, spec={"template": {"spec": pod}}))) == [("spec.template.spec", pod)], kind
    cron = placed("CronJob", spec={"jobTemplate": {"spec": {"template": {"spec": pod}}}})
    assert list(pod_specs(cron)) == [("spec.jobTemplate.spec.template.spec", pod)]
    assert list(pod_specs(placed("Service", spec={"template": {"spec": pod}}))) == []
    # Absent parts read as an empty pod, not a crash.
    assert list(pod_specs(placed("Deployment"))) == [("spec.template.spec", {})]
    assert list(pod_specs(placed("CronJob", spec={}))) == [("spec.jobTemplate.spec.template.spec", {})]
    assert list(pod_specs(placed("Pod"))) == [("spec", {})]


def test_a_cronjobs_pod_is_checked() -> None:
    pod = {"containers": [container()], "hostNetwork": True}
    (found,) = admission_problems([placed("CronJob", spec={"jobTemplate": {"spec": {"template": {"spec": pod}}}})])
    assert found.startswith("CronJob serving/app (resource picker): spec.jobTemplate.spec.template.spec.hostNetwork: true is refused")


# --- node selection ----------------------------------------------------------------------


def test_admitted_selector_keys_pass_and_others_are_refused_naming_the_key_and_constraint() -> None:
    assert problems({"nodeSelector": {"kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "z"}, "containers": []}) == []
    (found,) = problems({"nodeSelector": {"cloud.google.com/gke-nodepool": "cpu"}, "containers": []})
    assert found.startswith(
        "spec.template.spec.nodeSelector: key cloud.google.com/gke-nodepool is not one Autopilot admits for node selection "
        "(autogke-node-affinity-selector-limitation), and no NoSchedule toleration of it asks for workload separation ("
    )
    assert "https://github.com/GoogleCloudPlatform/ai-on-gke/pull/983" in found


def test_the_metadata_server_key_is_refused_whatever_the_pod_tolerates() -> None:
    key = "iam.gke.io/gke-metadata-server-enabled"
    toleration = {"key": key, "operator": "Exists", "effect": "NoSchedule"}
    (found,) = problems({"nodeSelector": {key: "true"}, "tolerations": [toleration], "containers": []})
    assert found.startswith(
        f"spec.template.spec.nodeSelector: key {key} is refused by Autopilot (autogke-node-affinity-selector-limitation: "
    )
    assert found.endswith("; https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity)")


@pytest.mark.parametrize(
    ("toleration", "admitted"),
    [
        ({"key": "group", "operator": "Equal", "value": "picker", "effect": "NoSchedule"}, True),
        ({"key": "group", "operator": "Exists", "effect": "NoSchedule"}, True),
        ({"key": "group", "value": "picker"}, True),  # no effect: every effect, NoSchedule included
        ({"key": "group", "operator": "Equal", "value": "other", "effect": "NoSchedule"}, False),
        ({"key": "group", "operator": "Equal", "value": "picker", "effect": "NoExecute"}, False),
        ({"key": "team", "operator": "Exists", "effect": "NoSchedule"}, False),
    ],
)
def test_workload_separation_admits_a_key_the_pod_tolerates_with_no_schedule(toleration: dict[str, str], admitted: bool) -> None:
    found = problems({"nodeSelector": {"group": "picker"}, "tolerations": [toleration], "containers": []})
    assert (found == []) is admitted, found


def test_affinity_terms_required_and_preferred_are_checked_with_their_paths() -> None:
    term = {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}, {"key": "pool", "values": ["a"]}]}
    fields = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [fields, term]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}, {"weight": 1, "preference": term}],
        }
    }
    found = problems({"affinity": affinity, "containers": []})
    where = "spec.template.spec.affinity.nodeAffinity."
    assert [p.split(": key ")[0] for p in found] == [
        f"{where}required…nodeSelectorTerms[0].matchFields[0]",
        f"{where}required…nodeSelectorTerms[1].matchExpressions[1]",
        f"{where}preferred…[1].preference.matchExpressions[1]",
    ]
    assert found[0].split(": key ")[1].startswith("metadata.name is not one")


def test_an_affinity_key_with_one_value_is_tolerated_by_that_value_and_with_several_by_the_key() -> None:
    def pod(values: list[str], toleration: dict[str, str]) -> dict[str, Any]:
        term = {"matchExpressions": [{"key": "group", "operator": "In", "values": values}]}
        required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        return {"affinity": {"nodeAffinity": required}, "tolerations": [{**toleration, "effect": "NoSchedule"}], "containers": []}

    assert problems(pod(["a"], {"key": "group", "value": "a"})) == []
    assert len(problems(pod(["a"], {"key": "group", "value": "b"}))) == 1
    assert problems(pod(["a", "b"], {"key": "group", "value": "b"})) == []
    assert problems(pod([], {"key": "group", "value": "b"})) == []


# --- custom ComputeClass, GPUs, resources ------------------------------------------------


def test_a_custom_compute_class_takes_only_its_companion_keys() -> None:
    ok = {"cloud.google.com/compute-class": "a4", "topology.kubernetes.io/zone": "z", "cloud.google.com/gke-accelerator-count": "8"}
    assert problems({"nodeSelector": ok, "containers": []}) == []
    extra = {"cloud.google.com/compute-class": "a4", "kubernetes.io/os": "linux", "cloud.google.com/gke-spot": "true"}
    found = problems({"nodeSelector": extra, "containers": []})
    assert [p.split(" (")[0] for p in found] == [
        "spec.template.spec.nodeSelector: key cloud.google.com/gke-spot is not allowed beside the custom ComputeClass a4",
        "spec.template.spec.nodeSelector: key kubernetes.io/os is not allowed beside the custom ComputeClass a4",
    ]
    assert found[0].endswith("(https://github.com/newrelic/newrelic-prometheus-configurator/issues/472)")
    # A built-in class is not a custom one.
    assert (
        problems({"nodeSelector": {"cloud.google.com/compute-class": "Performance", "kubernetes.io/os": "linux"}, "containers": []}) == []
    )


def test_a_gpu_pod_must_select_its_accelerator_or_a_compute_class() -> None:
    asks: dict[str, Any] = {"resources": {"limits": {"nvidia.com/gpu": "8"}}}
    (found,) = problems({"containers": [container(**asks)]})
    assert found.startswith(
        "spec.template.spec.nodeSelector: a pod requesting nvidia.com/gpu must select cloud.google.com/gke-accelerator or "
        "cloud.google.com/compute-class (autogke-gpu-limitation; "
    )
    assert problems({"initContainers": [container(resources={"requests": {"nvidia.com/gpu": "1"}})], "containers": []}) != []
    b200 = {"cloud.google.com/gke-accelerator": "nvidia-b200", "cloud.google.com/gke-spot": "true"}
    assert problems({"nodeSelector": b200, "containers": [container(**asks)]}) == []
    assert problems({"nodeSelector": {"cloud.google.com/compute-class": "a4"}, "containers": [container(**asks)]}) == []


def test_a_b200_pod_may_ask_up_to_the_a4_machine_summed_over_its_containers() -> None:
    selector = {"cloud.google.com/gke-accelerator": "nvidia-b200", "cloud.google.com/gke-spot": "true"}

    def pod(*requests: dict[str, str]) -> dict[str, Any]:
        return {"nodeSelector": selector, "containers": [container(f"c{i}", resources={"requests": r}) for i, r in enumerate(requests)]}

    # a4-highgpu-8g: 224 vCPUs, 3,968 GiB (https://cloud.google.com/compute/docs/accelerator-optimized-machines#a4-vms).
    assert problems(pod({"cpu": "200", "memory": "3000Gi"}, {"cpu": "24", "memory": "968Gi"})) == []
    (cpu,) = problems(pod({"cpu": "200"}, {"cpu": "24500m"}))
    assert cpu.startswith("spec.template.spec.containers[*].resources: cpu 224.5 is above the 224 Autopilot can give a nvidia-b200 pod")
    assert "(the a4-highgpu-8g machine; https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-resource-requests, " in cpu
    (memory,) = problems(pod({"memory": "3968Gi"}, {"memory": "1Mi"}))
    assert "memory " in memory and "is above the 3968Gi" in memory
    # A limit stands for an absent request.
    (limited,) = problems({"nodeSelector": selector, "containers": [container(resources={"limits": {"cpu": "225"}})]})
    assert "cpu 225 is above the 224" in limited
    assert (
        problems({"nodeSelector": selector, "containers": [container(resources={"limits": {"cpu": "225"}, "requests": {"cpu": "1"}})]})
        == []
    )


def test_a_general_purpose_pod_may_ask_up_to_autopilots_general_purpose_ceiling() -> None:
    most_cpu, most_memory = gke.GENERAL_PURPOSE_MAX_CPU, gke.GENERAL_PURPOSE_MAX_MEMORY
    at_most = {"cpu": f"{most_cpu:f}", "memory": str(int(most_memory))}
    assert problems({"containers": [container(resources={"requests": at_most})]}) == []
    over = {"cpu": f"{most_cpu + 1:f}", "memory": str(int(most_memory) + 1)}
    found = problems({"containers": [container(resources={"requests": over})]})
    assert [p.split(" is above")[0] for p in found] == [
        f"spec.template.spec.containers[*].resources: cpu {(most_cpu + 1).normalize():f}",
        f"spec.template.spec.containers[*].resources: memory {int(most_memory) + 1}",
    ]
    assert found[0].endswith(
        "Autopilot gives a general-purpose pod (autogke-pod-limit-constraints; "
        "https://cloud.google.com/kubernetes-engine/docs/concepts/autopilot-resource-requests)"
    )
    # A pod that picks its hardware is not a general-purpose pod.
    for key in (gke.COMPUTE_CLASS_LABEL, gke.MACHINE_FAMILY_LABEL, gke.ACCELERATOR_LABEL):
        assert problems({"nodeSelector": {key: "x"}, "containers": [container(resources={"requests": over})]}) == [], key


# --- security ----------------------------------------------------------------------------


def test_host_namespaces_are_refused_each() -> None:
    found = problems({"hostNetwork": True, "hostPID": True, "hostIPC": True, "containers": []})
    assert [p.split(" (")[0] for p in found] == [
        "spec.template.spec.hostNetwork: true is refused",
        "spec.template.spec.hostPID: true is refused",
        "spec.template.spec.hostIPC: true is refused",
    ]
    assert found[0].startswith("spec.template.spec.hostNetwork: true is refused (autogke-disallow-hostnamespaces; ")
    assert problems({"hostNetwork": False, "containers": []}) == []


def test_a_host_path_outside_var_log_is_refused_and_inside_it_only_mounted_writable() -> None:
    volumes = [{"name": "logs", "hostPath": {"path": "/var/log"}}, {"name": "root", "hostPath": {"path": "/var/lib"}}, {"name": "e"}]
    mounts = [{"name": "logs", "mountPath": "/l", "readOnly": True}, {"name": "e", "mountPath": "/e"}]
    found = problems({"volumes": volumes, "containers": [container(volumeMounts=mounts)]})
    assert [p.split(" (")[0] for p in found] == ["spec.template.spec.volumes[root].hostPath: /var/lib is outside ['/var/log/']"]
    assert "(autogke-no-write-mode-hostpath; https://cloud.google.com/kubernetes-engine/docs/reference/crds/workloadallowlist" in found[0]
    writable = problems({"volumes": volumes[:1], "containers": [container(volumeMounts=[{"name": "logs", "mountPath": "/l"}])]})
    assert [p.split(" (")[0] for p in writable] == [
        "spec.template.spec.containers[main].volumeMounts[logs]: a hostPath mounted writable is refused"
    ]
    assert problems({"volumes": [{"name": "v", "hostPath": {}}], "containers": []}) != []  # no path is the root


def test_privileged_containers_added_capabilities_and_host_ports_are_refused() -> None:
    init = container("init", securityContext={"privileged": True})
    main = container(
        securityContext={"capabilities": {"add": ["NET_ADMIN", "CAP_CHOWN", "NET_RAW", "CAP_SYS_ADMIN"]}},
        ports=[{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81}],
    )
    found = problems({"initContainers": [init], "containers": [main]})
    assert [p.split(" (")[0] for p in found] == [
        "spec.template.spec.containers[init].securityContext.privileged: true is refused",
        "spec.template.spec.containers[main].securityContext.capabilities.add: CAP_SYS_ADMIN is refused",
        "spec.template.spec.containers[main].securityContext.capabilities.add: NET_ADMIN is refused",
        "spec.template.spec.containers[main].ports: hostPort 8080 is refused",
    ]
    assert found[0].startswith(
        "spec.template.spec.containers[init].securityContext.privileged: true is refused (autogke-disallow-privilege; "
    )
    assert "(autogke-default-linux-capabilities; " in found[1]
    assert "(autogke-no-host-port; " in found[3]
    assert problems({"containers": [container(securityContext={"privileged": False, "capabilities": {"drop": ["ALL"]}})]}) == []


# --- managed namespaces ------------------------------------------------------------------


def test_creating_any_object_in_kube_system_is_refused() -> None:
    (found,) = admission_problems([placed("ConfigMap", "settings", "kube-system")])
    assert found.startswith(
        "ConfigMap kube-system/settings (resource picker): metadata.namespace: kube-system is managed by GKE; "
        "creating a ConfigMap there is refused (managed-namespaces-limitation; "
    )
    assert admission_problems([placed("ConfigMap", "settings", "kube-public")]) == []


# --- the control plane's calls into the stack's pods ---------------------------------------


def webhook_configuration(kind: str = "ValidatingWebhookConfiguration", **service: Any) -> Sourced:
    hooks = [{"name": "a", "clientConfig": {"service": service}}, {"name": "b", "clientConfig": {"url": "https://x"}}]
    return placed(kind, "hooks", None, source="chart keda", webhooks=hooks)


def backend(
    target: Any, service_namespace: str = "keda", pod_namespace: str = "keda", labels: dict[str, str] | None = None
) -> list[Sourced]:
    service = placed(
        "Service", "hooks", service_namespace, spec={"selector": {"app": "hooks"}, "ports": [{"port": 443, "targetPort": target}]}
    )
    pod = {"containers": [container(ports=[{"name": "https", "containerPort": 9443}, {"name": "other", "containerPort": 10250}])]}
    return [service, deployment(pod, "hooks", {"app": "hooks", "tier": "x"} if labels is None else labels, pod_namespace)]


def test_a_webhook_on_a_port_the_firewall_opens_passes_and_on_another_is_refused() -> None:
    hooks = webhook_configuration(namespace="keda", name="hooks")
    assert admission_problems([hooks, *backend(10250)]) == []
    assert control_plane_ports([hooks, *backend(10250)]) == {"ValidatingWebhookConfiguration hooks": 10250}
    (found,) = admission_problems([hooks, *backend(9443)])
    assert found == (
        "ValidatingWebhookConfiguration hooks (chart keda): webhooks[0].clientConfig.service: the control plane calls keda/hooks "
        "port 443, which sends it to pod port 9443; GKE's firewall lets the control plane reach private nodes only on 443, 10250 "
        "(https://cloud.google.com/kubernetes-engine/docs/concepts/firewall-rules, https://github.com/kubernetes/kubernetes/issues/79739, "
        "https://github.com/kedacore/keda/issues/1642, "
        "https://github.com/cert-manager/cert-manager/blob/master/deploy/charts/cert-manager/values.yaml)"
    )


def test_a_named_target_port_is_the_container_port_of_the_pods_the_service_selects_in_its_namespace() -> None:
    hooks = webhook_configuration(namespace="keda", name="hooks")
    assert control_plane_ports([hooks, *backend("https")]) == {"ValidatingWebhookConfiguration hooks": 9443}
    assert control_plane_ports([hooks, *backend("other")]) == {"ValidatingWebhookConfiguration hooks": 10250}
    # Pods in another namespace are not the Service's endpoints, whatever their labels.
    assert control_plane_ports([hooks, *backend("https", pod_namespace="elsewhere")]) == {}
    # Nor are pods whose labels lack the selector's.
    assert control_plane_ports([hooks, *backend("https", labels={"app": "other"})]) == {}
    assert control_plane_ports([hooks, *backend("missing")]) == {}


def test_a_selectorless_service_sends_a_named_port_to_no_pod() -> None:
    hooks = webhook_configuration(namespace="keda", name="hooks")
    service, pods = backend("https")
    service.manifest["spec"]["selector"] = {}
    assert control_plane_ports([hooks, service, pods]) == {}


def test_the_service_port_defaults_to_443_and_the_target_to_the_port() -> None:
    hooks = webhook_configuration("MutatingWebhookConfiguration", namespace="keda", name="hooks")
    service = placed("Service", "hooks", "keda", spec={"ports": [{"port": 443}]})
    assert control_plane_ports([hooks, service]) == {"MutatingWebhookConfiguration hooks": 443}
    on_port = webhook_configuration(namespace="keda", name="hooks", port=10250)
    assert control_plane_ports([on_port, service]) == {}  # the Service has no port 10250
    other = placed("Service", "hooks", "keda", spec={"ports": [{"port": 443}, {"port": 10250, "targetPort": 8443}]})
    (found,) = admission_problems([on_port, other])
    assert "calls keda/hooks port 10250, which sends it to pod port 8443" in found


def test_an_api_service_is_a_control_plane_call_and_other_kinds_are_not() -> None:
    api = placed("APIService", "v1beta1.external.metrics.k8s.io", None, spec={"service": {"namespace": "keda", "name": "metrics"}})
    metrics = placed("Service", "metrics", "keda", spec={"ports": [{"port": 443, "targetPort": 6443}]})
    (found,) = admission_problems([api, metrics])
    assert found.startswith(
        "APIService v1beta1.external.metrics.k8s.io (resource picker): spec.service: the control plane calls keda/metrics"
    )
    assert admission_problems([placed("APIService", "local", None, spec={}), metrics]) == []
    not_a_caller = placed("ConfigMap", "hooks", "keda", webhooks=[{"clientConfig": {"service": {"namespace": "keda", "name": "metrics"}}}])
    assert admission_problems([not_a_caller, metrics]) == []


def test_a_call_to_a_service_the_stack_lacks_or_in_another_namespace_is_not_judged() -> None:
    metrics = placed("Service", "metrics", "keda", spec={"ports": [{"port": 443, "targetPort": 6443}]})
    assert admission_problems([webhook_configuration(namespace="other", name="metrics"), metrics]) == []
    assert admission_problems([webhook_configuration(namespace="keda", name="gone"), metrics]) == []
    assert len(admission_problems([webhook_configuration(namespace="keda", name="metrics"), metrics])) == 1
