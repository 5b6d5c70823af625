"""A stack's creation order, preconditions and destroy on hand-made registrations (no stack render).

Expectations are Pulumi's documented behaviour (docs/reference.md): a resource waits for its dependencies, its
parent and its provider; `pulumi destroy` deletes dependents first, stops at a protected resource before deleting
anything, and leaves retainOnDelete resources in place; and the preconditions the module docstring names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import render.chart
from render.engine import Registration, Render
from render.lifecycle import (
    Destroy,
    LifecycleError,
    check_lifecycle,
    creation_problems,
    creation_waves,
    destroy,
    lifecycle_text,
)
from tests.render.registrations import registration

STACK = "dev::llm-serving"
CLUSTER = "gcp:container/cluster:Cluster"
SERVICE = "gcp:projects/service:Service"


def urn(type_: str, name: str) -> str:
    return f"urn:pulumi:{STACK}::{type_}::{name}"


def api(service: str, **options: Any) -> Registration:
    return registration(SERVICE, service.split(".")[0], {"service": service}, **options)


def cluster(version: str = "1.35", **options: Any) -> Registration:
    return registration(CLUSTER, "gke", {"minMasterVersion": version}, **options)


CONTAINER_API = api("container.googleapis.com")


def stack(*resources: Registration, version: str = "1.35", **render: Any) -> Render:
    """A render of a cluster (waiting for its API) and ``resources``."""
    return Render("dev", [CONTAINER_API, cluster(version, dependencies=after(CONTAINER_API)), *resources], **render)


def manifest(kind: str, name: str, api_version: str = "v1", namespace: str | None = None, **options: Any) -> Registration:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    inputs = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    return registration(f"kubernetes:{api_version if '/' in api_version else 'core/' + api_version}:{kind}", name, inputs, **options)


def after(*earlier: Registration) -> tuple[str, ...]:
    return tuple(r.urn for r in earlier)


def names(waves: list[list[Registration]]) -> list[list[str]]:
    return [[r.name for r in wave] for wave in waves]


# --- creation order ----------------------------------------------------------------------


def test_each_wave_comes_after_every_resource_it_waits_for_by_dependency_parent_or_provider() -> None:
    component = registration("llm:index:Serving", "serving", {}, custom=False)
    network = registration("gcp:compute/network:Network", "net", {})
    provider = registration("pulumi:providers:kubernetes", "k8s", {})
    subnet = registration("gcp:compute/subnetwork:Subnetwork", "subnet", {}, dependencies=after(network), parent=component.urn)
    namespace = manifest("Namespace", "ns", provider=f"{provider.urn}::some-id")
    outside = registration("gcp:compute/router:Router", "router", {}, dependencies=("urn:pulumi:other::x",), parent="urn:none")
    render = Render("dev", [subnet, namespace, network, component, provider, outside])
    # Within a wave, by URN (type, then name).
    assert names(creation_waves(render)) == [["net", "router", "serving", "k8s"], ["subnet", "ns"]]


def test_a_dependency_cycle_is_refused_naming_its_resources() -> None:
    a_urn, b_urn = urn("gcp:compute/network:Network", "a"), urn("gcp:compute/network:Network", "b")
    a = registration("gcp:compute/network:Network", "a", {}, dependencies=(b_urn,))
    b = registration("gcp:compute/network:Network", "b", {}, dependencies=(a_urn,))
    free = registration("gcp:compute/network:Network", "c", {})
    with pytest.raises(ValueError, match=rf"^dependency cycle among: {a_urn}, {b_urn}$"):
        creation_waves(Render("dev", [a, b, free]))


# --- APIs --------------------------------------------------------------------------------


def test_a_gcp_resource_needs_its_api_enabled_first() -> None:
    compute = api("compute.googleapis.com")
    waits = registration("gcp:compute/network:Network", "net", {}, dependencies=after(compute))
    assert creation_problems(stack(compute, waits)) == []
    early = registration("gcp:compute/network:Network", "net", {})
    assert creation_problems(stack(compute, early)) == [
        "gcp:compute/network:Network net: may be created before compute.googleapis.com is enabled: it does not wait for that API"
    ]
    assert creation_problems(stack(early)) == [
        "gcp:compute/network:Network net: needs compute.googleapis.com, which the stack never enables (components/apis.py)"
    ]
    unknown = registration("gcp:pubsub/topic:Topic", "topic", {})
    assert creation_problems(stack(unknown)) == [
        "gcp:pubsub/topic:Topic topic: no API is known for its type; add its module to components/apis.py SERVING_API"
    ]


def test_api_services_components_and_other_providers_need_no_api() -> None:
    component = registration("gcp:compute/network:Network", "not-custom", {}, custom=False)
    other = registration("random:index/randomId:RandomId", "id", {})
    assert creation_problems(stack(api("compute.googleapis.com"), component, other)) == []


def gateway(class_name: str = "gke-l7-rilb", **options: Any) -> Registration:
    inputs = {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "Gateway",
        "metadata": {"name": "gw"},
        "spec": {"gatewayClassName": class_name},
    }
    return registration("kubernetes:gateway.networking.k8s.io/v1:Gateway", "gw", inputs, **options)


def proxy_subnet(purpose: str = "REGIONAL_MANAGED_PROXY") -> Registration:
    return registration("gcp:compute/subnetwork:Subnetwork", "proxy", {"purpose": purpose}, custom=False)


def test_a_gke_gateway_needs_network_services_and_a_proxy_only_subnet_first() -> None:
    services = api("networkservices.googleapis.com")
    proxy = proxy_subnet()
    base = [services, proxy]
    assert creation_problems(stack(*base, gateway(dependencies=after(services, proxy)))) == []
    no_api = creation_problems(stack(*base, gateway(dependencies=after(proxy))))
    assert no_api == ["Gateway gw: GKE's Gateway controller needs networkservices.googleapis.com enabled first; it stays unprogrammed"]
    assert creation_problems(stack(proxy, gateway(dependencies=after(proxy)))) == no_api
    no_subnet = creation_problems(stack(*base, gateway(dependencies=after(services))))
    assert no_subnet == ["Gateway gw: a regional Gateway needs the VPC's proxy-only subnet first; it stays unprogrammed without one"]
    other_purpose = proxy_subnet("PRIVATE")
    assert creation_problems(stack(services, other_purpose, gateway(dependencies=after(services, other_purpose)))) == no_subnet
    # A subnet the program looks up exists before the stack.
    looked_up = stack(services, gateway(dependencies=after(services)), invokes=[("gcp:compute/getSubnetwork:getSubnetwork", {})])
    assert creation_problems(looked_up) == []
    # A Gateway of another controller is not GKE's to program.
    assert creation_problems(stack(gateway("istio"))) == []


# --- alerts ------------------------------------------------------------------------------


def test_a_promql_alert_condition_must_skip_metric_validation() -> None:
    def policy(*conditions: dict[str, Any]) -> Registration:
        return registration(
            "gcp:monitoring/alertPolicy:AlertPolicy", "errors", {"conditions": list(conditions)}, dependencies=after(monitoring)
        )

    monitoring = api("monitoring.googleapis.com")
    checked = {"conditionPrometheusQueryLanguage": {"query": "up == 0"}}
    skipped = {"conditionPrometheusQueryLanguage": {"query": "up == 0", "disableMetricValidation": True}}
    threshold = {"conditionThreshold": {"filter": "x"}}
    assert creation_problems(stack(monitoring, policy(skipped, threshold))) == []
    assert (
        creation_problems(stack(monitoring, policy(threshold, checked, checked)))
        == [
            "AlertPolicy errors: its PromQL condition is created before any replica has been scraped; Cloud Monitoring refuses a "
            "condition on metrics it has not seen unless disableMetricValidation is true"
        ]
        * 2
    )
    no_conditions = registration("gcp:monitoring/alertPolicy:AlertPolicy", "none", {}, dependencies=after(monitoring))
    assert creation_problems(stack(monitoring, no_conditions)) == []


# --- Kubernetes objects: CRDs and namespaces -----------------------------------------------


def test_built_in_and_gke_installed_groups_need_no_crd() -> None:
    objects = [
        manifest("ConfigMap", "a"),
        manifest("Deployment", "b", "apps/v1"),
        manifest("ComputeClass", "c", "cloud.google.com/v1"),
        manifest("PodMonitoring", "d", "monitoring.googleapis.com/v1"),
        manifest("HTTPRoute", "e", "gateway.networking.k8s.io/v1"),
        manifest("HealthCheckPolicy", "f", "networking.gke.io/v1"),
        manifest("VolumeSnapshotClass", "g", "snapshot.storage.k8s.io/v1"),
        manifest("PriorityClass", "h", "scheduling.k8s.io/v1"),
        manifest("Lease", "i", "coordination.k8s.io/v1"),
        manifest("HorizontalPodAutoscaler", "j", "autoscaling/v2"),
        manifest("PodDisruptionBudget", "k", "policy/v1"),
        manifest("Job", "l", "batch/v1"),
        manifest("Role", "m", "rbac.authorization.k8s.io/v1"),
        manifest("StorageClass", "n", "storage.k8s.io/v1"),
        manifest("NetworkPolicy", "o", "networking.k8s.io/v1"),
        manifest("ValidatingWebhookConfiguration", "p", "admissionregistration.k8s.io/v1"),
        manifest("APIService", "q", "apiregistration.k8s.io/v1"),
        manifest("CustomResourceDefinition", "r", "apiextensions.k8s.io/v1"),
    ]
    assert creation_problems(stack(*objects)) == []


def test_a_custom_resource_no_one_installs_the_crd_of_is_caught() -> None:
    scaler = manifest("ScaledObject", "vllm", "keda.sh/v1alpha1", "serving")
    assert creation_problems(stack(scaler)) == [
        "ScaledObject vllm: no CRD for keda.sh exists when it is created: neither GKE nor the stack installs one"
    ]


def crd_file(version: str = "v1.0.0", **options: Any) -> Registration:
    url = f"https://github.com/kubernetes-sigs/gateway-api-inference-extension/releases/download/{version}/v1-manifests.yaml"
    return registration("kubernetes:yaml/v2:ConfigFile", "inference-crds", {"file": url}, **options)


@pytest.mark.parametrize("group", ["inference.networking.k8s.io", "inference.networking.x-k8s.io"])
def test_the_inference_crds_come_from_gke_from_1_35_or_from_the_release_manifest_before(group: str) -> None:
    pool = manifest("InferencePool", "vllm", f"{group}/v1", "serving")
    assert creation_problems(stack(pool, version="1.35")) == []
    assert creation_problems(stack(pool, version="1.36.1-gke.100")) == []
    (missing,) = creation_problems(stack(pool, version="1.34"))
    assert missing == f"InferencePool vllm: no CRD for {group} exists when it is created: neither GKE nor the stack installs one"
    installer = crd_file()
    waits = manifest("InferencePool", "vllm", f"{group}/v1", "serving", dependencies=after(installer))
    assert creation_problems(stack(installer, waits, version="1.34")) == []
    assert creation_problems(stack(installer, pool, version="1.34")) == [
        f"InferencePool vllm: may be created before the CRD of {group} (inference-crds) is installed"
    ]
    elsewhere = registration("kubernetes:yaml/v2:ConfigFile", "other", {"file": "https://example.com/crds.yaml"})
    assert len(creation_problems(stack(elsewhere, pool, version="1.34"))) == 1


def test_an_object_waits_for_its_namespace_and_the_namespace_itself_does_not() -> None:
    namespace = manifest("Namespace", "serving")
    waits = manifest("ConfigMap", "a", namespace="serving", dependencies=after(namespace))
    early = manifest("ConfigMap", "b", namespace="serving")
    other = manifest("ConfigMap", "c", namespace="default")
    found = creation_problems(stack(namespace, waits, early, other))
    assert found == ["ConfigMap b: may be created before its namespace serving"]


# --- charts ------------------------------------------------------------------------------

KEDA = "kubernetes:helm.sh/v4:Chart"


@pytest.fixture
def operator_chart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Vendored chart ``operator`` 1.0.0: the CRD of group example.com and a namespaced ServiceAccount (no real chart's cost)."""
    chart = tmp_path / "operator-1.0.0" / "operator"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: operator\nversion: 1.0.0\n")
    (chart / "templates" / "objects.yaml").write_text(
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n"
        "spec:\n  group: example.com\n"
        "---\napiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: operator\n"
    )
    monkeypatch.setattr(render.chart, "CHARTS", tmp_path)


def operator(**options: Any) -> Registration:
    inputs = {"chart": "operator", "version": "1.0.0", "name": "ops", "namespace": "operators", "values": {}}
    return registration(KEDA, "operator-chart", inputs, custom=False, remote=True, **options)


@pytest.mark.usefixtures("operator_chart")
def test_a_chart_installs_its_crds_and_what_depends_on_it_may_use_them() -> None:
    chart = operator()
    widget = manifest("Widget", "w", "example.com/v1", "serving", dependencies=after(chart))
    assert creation_problems(stack(chart, widget)) == []
    early = manifest("Widget", "w", "example.com/v1", "serving")
    assert creation_problems(stack(chart, early)) == [
        "Widget w: may be created before the CRD of example.com (operator-chart) is installed"
    ]
    # A chart of another release installs nothing for this one.
    other = registration(KEDA, "other-chart", {"chart": "operator", "version": "1.0.0", "name": "other"}, custom=False, dependencies=())
    assert creation_problems(stack(other, widget))[0].startswith("Widget w: ")


@pytest.mark.usefixtures("operator_chart")
def test_a_charts_objects_wait_for_their_namespace_through_the_chart() -> None:
    namespace = manifest("Namespace", "operators")
    assert creation_problems(stack(namespace, operator())) == [
        "ServiceAccount operator (chart ops (operator 1.0.0)): may be created before its namespace operators"
    ]
    assert creation_problems(stack(namespace, operator(dependencies=after(namespace)))) == []


def test_check_lifecycle_lists_every_problem() -> None:
    check_lifecycle(stack())
    render = stack(manifest("ScaledObject", "a", "keda.sh/v1"), manifest("ScaledObject", "b", "keda.sh/v1"))
    with pytest.raises(LifecycleError) as raised:
        check_lifecycle(render)
    assert str(raised.value) == (
        "2 lifecycle problem(s):\n"
        "  - ScaledObject a: no CRD for keda.sh exists when it is created: neither GKE nor the stack installs one\n"
        "  - ScaledObject b: no CRD for keda.sh exists when it is created: neither GKE nor the stack installs one"
    )


# --- destroy -----------------------------------------------------------------------------


def test_destroy_deletes_custom_resources_dependents_first() -> None:
    network = registration("gcp:compute/network:Network", "net", {})
    component = registration("llm:index:Serving", "serving", {}, custom=False, dependencies=after(network))
    subnet = registration("gcp:compute/subnetwork:Subnetwork", "subnet", {}, dependencies=after(network))
    router = registration("gcp:compute/router:Router", "router", {}, dependencies=after(subnet))
    outcome = destroy(Render("dev", [router, network, component, subnet]))
    assert outcome == Destroy([router, subnet, network], [], [])
    assert outcome.summary() == "destroy deletes 3 resources, dependents first"


def test_a_protected_resource_stops_the_destroy_and_retained_ones_are_named() -> None:
    bucket = registration("gcp:storage/bucket:Bucket", "cache", {}, retain_on_delete=True)
    keep = registration("gcp:compute/network:Network", "net2", {}, retain_on_delete=True)
    gke = cluster(protect=True)
    component = registration("llm:index:Serving", "serving", {}, custom=False, protect=True, retain_on_delete=True)
    stopped = destroy(Render("dev", [bucket, gke, component, keep]))
    assert stopped == Destroy([], [gke], [bucket, keep])
    assert stopped.summary() == "destroy stops at 1 protected resource(s) (Cluster gke); deletes nothing"
    two = destroy(Render("dev", [gke, registration("gcp:compute/network:Network", "net", {}, protect=True)]))
    assert two.summary() == "destroy stops at 2 protected resource(s) (Cluster gke, Network net); deletes nothing"
    kept = destroy(Render("dev", [bucket, keep, component]))
    assert kept.deletes == [keep, bucket]  # one wave, by URN
    assert kept.summary() == "destroy deletes 2 resources, dependents first; leaves 2 in place: cache, net2"


def test_the_lifecycle_text_shows_the_waves_the_destroy_and_the_idle_bill() -> None:
    network = registration("gcp:compute/network:Network", "net", {})
    provider = registration("pulumi:providers:gcp", "gcp", {}, custom=True)
    component = registration("llm:index:Serving", "serving", {}, custom=False)
    chart = registration(KEDA, "keda", {}, custom=False, remote=True, dependencies=after(network))
    subnet = registration("gcp:compute/subnetwork:Subnetwork", "subnet", {}, dependencies=after(network))
    idle = {"whenIdle": {"costPerHour": 1.2345, "keeps": {"cluster": 0.1, "bucket": 0.00004}}}
    render = Render("dev", [network, provider, component, chart, subnet], outputs={"estimates": idle})
    assert lifecycle_text(render) == (
        "creation order from nothing: 2 waves (a wave's resources are created in parallel)\n"
        "   1. Network net, gcp gcp\n"
        "   2. Subnetwork subnet, Chart keda\n"
        "destroy deletes 3 resources, dependents first\n"
        "after a scale to zero: $1.23/h keeps billing (cluster $0.1000, bucket $0.0000)\n"
    )
    only_components = Render("dev", [component, registration("llm:index:Other", "other", {}, custom=False, dependencies=after(component))])
    assert lifecycle_text(only_components) == (
        "creation order from nothing: 0 waves (a wave's resources are created in parallel)\ndestroy deletes 0 resources, dependents first\n"
    )
