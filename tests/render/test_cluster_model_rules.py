"""Each check of the cluster model on small hand-made clusters: one that holds, then one break at a time.

Expected problems are what a real apply trips on (AlreadyExists, a missing reference, a route GKE does
not accept), written per case; the clusters are plain manifests, no render.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from render.cluster_model import ClusterModelError, Sourced, check_cluster, cluster_objects, made_at_runtime, problems
from render.engine import Registration, Render, Secret
from tests.render.registrations import registration as plain_registration

NS = "llm"
LABELS = {"app.kubernetes.io/name": "vllm"}


def manifest(api: str, kind: str, name: str, namespace: str | None = NS, spec: dict[str, Any] | None = None, **rest: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    found: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": metadata, **rest}
    if spec is not None:
        found["spec"] = spec
    return found


def pod_spec() -> dict[str, Any]:
    return {
        "containers": [
            {
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.18.1",
                "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
                "volumeMounts": [{"name": "weights", "mountPath": "/models", "readOnly": True}],
            }
        ],
        "volumes": [
            {"name": "weights", "persistentVolumeClaim": {"claimName": "cache", "readOnly": True}},
            {"name": "config", "configMap": {"name": "settings"}},
            {"name": "key", "secret": {"secretName": "hf"}},
        ],
        "nodeSelector": {"cloud.google.com/compute-class": "a4-fallback"},
    }


def cluster() -> list[Sourced]:
    """A small stack that holds together: every reference below resolves."""
    program = [
        manifest("v1", "Namespace", NS, namespace=None),
        manifest("cloud.google.com/v1", "ComputeClass", "a4-fallback", namespace=None, spec={}),
        manifest("storage.k8s.io/v1", "StorageClass", "hyperdisk-ml", namespace=None),
        manifest("snapshot.storage.k8s.io/v1", "VolumeSnapshotClass", "snapshots", namespace=None),
        manifest("v1", "PersistentVolumeClaim", "writer", spec={"storageClassName": "hyperdisk-ml"}),
        manifest(
            "snapshot.storage.k8s.io/v1",
            "VolumeSnapshot",
            "snap",
            spec={"volumeSnapshotClassName": "snapshots", "source": {"persistentVolumeClaimName": "writer"}},
        ),
        manifest(
            "v1",
            "PersistentVolumeClaim",
            "cache",
            spec={"storageClassName": "hyperdisk-ml", "dataSource": {"kind": "VolumeSnapshot", "name": "snap"}},
        ),
        manifest("v1", "ConfigMap", "settings"),
        manifest("v1", "Secret", "hf", stringData=Secret({"token": "x"})),
        manifest("apps/v1", "Deployment", "vllm", spec={"template": {"metadata": {"labels": LABELS}, "spec": pod_spec()}}),
        manifest("v1", "Service", "vllm", spec={"selector": LABELS}),
        manifest("monitoring.googleapis.com/v1", "PodMonitoring", "vllm", spec={"selector": {"matchLabels": LABELS}}),
        manifest("policy/v1", "PodDisruptionBudget", "vllm", spec={"selector": {"matchLabels": LABELS}}),
        manifest("gateway.networking.k8s.io/v1", "Gateway", "gw", spec={"gatewayClassName": "gke-l7-rilb"}),
        manifest(
            "gateway.networking.k8s.io/v1",
            "HTTPRoute",
            "route",
            spec={
                "parentRefs": [{"name": "gw"}],
                "rules": [{"backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "pool"}]}],
            },
        ),
    ]
    chart = [
        manifest(
            "inference.networking.k8s.io/v1",
            "InferencePool",
            "pool",
            spec={"selector": {"matchLabels": LABELS}, "endpointPickerRef": {"name": "pool-epp"}},
        ),
        manifest("v1", "Service", "pool-epp", spec={"type": "ExternalName", "externalName": "x"}),
        manifest("networking.gke.io/v1", "GCPBackendPolicy", "pool", spec={"targetRef": {"kind": "InferencePool", "name": "pool"}}),
    ]
    return [Sourced("the program", m) for m in program] + [Sourced("chart pool", m) for m in chart]


def broken(kind: str, name: str, path: tuple[str | int, ...], value: Any) -> list[str]:
    objects = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in cluster()]
    (target,) = [o for o in objects if o.kind == kind and o.name == name]
    holder: Any = target.manifest
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = value
    return problems(objects)


def test_the_small_cluster_holds_together() -> None:
    assert problems(cluster()) == []


def test_an_object_made_twice_fails_with_already_exists_naming_both_sources() -> None:
    objects = [*cluster(), Sourced("chart other", manifest("v1", "ConfigMap", "settings"))]
    assert problems(objects) == [
        "ConfigMap llm/settings: made twice, by the program and by chart other; the second create fails with AlreadyExists"
    ]
    # Same name, another namespace or kind: two objects.
    elsewhere = [*cluster(), Sourced("chart other", manifest("v1", "ConfigMap", "settings", namespace="default"))]
    assert problems(elsewhere) == []
    other_group = [*cluster(), Sourced("chart other", manifest("example.com/v1", "ConfigMap", "settings"))]
    assert problems(other_group) == []


def test_an_object_in_a_namespace_nobody_makes_is_named() -> None:
    objects = [*cluster(), Sourced("chart x", manifest("v1", "ConfigMap", "c", namespace="elsewhere"))]
    assert problems(objects) == ["ConfigMap elsewhere/c (chart x): namespace elsewhere is neither created by the stack nor built into GKE"]
    # Built-in namespaces, and a namespace-less object of a namespaced kind, land in GKE's own namespaces.
    assert problems([*cluster(), Sourced("chart x", manifest("v1", "ConfigMap", "c", namespace="gmp-public"))]) == []
    assert problems([*cluster(), Sourced("chart x", manifest("v1", "ConfigMap", "c", namespace=None))]) == []


def test_a_route_needs_its_gateway_and_backends_and_no_timeouts_on_gke() -> None:
    assert broken("HTTPRoute", "route", ("spec", "parentRefs"), [{"name": "nope"}]) == [
        "HTTPRoute llm/route: parent Gateway nope does not exist"
    ]
    rules = [{"backendRefs": [{"name": "missing"}]}]
    assert broken("HTTPRoute", "route", ("spec", "rules"), rules) == ["HTTPRoute llm/route: backend Service missing does not exist"]
    timed = [{"timeouts": {"request": "300s"}, "backendRefs": [{"name": "vllm"}]}]
    assert broken("HTTPRoute", "route", ("spec", "rules"), timed) == [
        "HTTPRoute llm/route: rules[0].timeouts is not supported by GKE's Gateway controller (the route is not Accepted); "
        "set the backend timeout on the GCPBackendPolicy"
    ]
    # Another controller's Gateway may take timeouts.
    objects = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in cluster()]
    for item in objects:
        if item.kind == "Gateway":
            item.manifest["spec"]["gatewayClassName"] = "istio"
        if item.kind == "HTTPRoute":
            item.manifest["spec"]["rules"] = timed
    assert problems(objects) == []


def test_storage_references_resolve() -> None:
    assert broken("PersistentVolumeClaim", "writer", ("spec", "storageClassName"), "fast") == [
        "PersistentVolumeClaim llm/writer: StorageClass fast does not exist"
    ]
    assert broken("PersistentVolumeClaim", "writer", ("spec", "storageClassName"), "premium-rwo") == []
    assert broken("PersistentVolumeClaim", "cache", ("spec", "dataSource"), {"kind": "VolumeSnapshot", "name": "old"}) == [
        "PersistentVolumeClaim llm/cache: data source VolumeSnapshot old does not exist"
    ]
    assert broken("VolumeSnapshot", "snap", ("spec", "volumeSnapshotClassName"), "other") == [
        "VolumeSnapshot llm/snap: VolumeSnapshotClass other does not exist"
    ]
    assert broken("VolumeSnapshot", "snap", ("spec", "source"), {"persistentVolumeClaimName": "gone"}) == [
        "VolumeSnapshot llm/snap: source PersistentVolumeClaim gone does not exist"
    ]


@pytest.mark.parametrize(
    ("index", "volume", "problem"),
    [
        (0, {"name": "weights", "persistentVolumeClaim": {"claimName": "x"}}, "volume weights mounts PersistentVolumeClaim x"),
        (1, {"name": "config", "configMap": {"name": "x"}}, "volume config mounts ConfigMap x"),
        (2, {"name": "key", "secret": {"secretName": "x"}}, "volume key mounts Secret x"),
    ],
)
def test_every_volume_a_pod_mounts_exists(index: int, volume: dict[str, Any], problem: str) -> None:
    path = ("spec", "template", "spec", "volumes", index)
    assert broken("Deployment", "vllm", path, volume) == [f"Deployment llm/vllm: {problem}, which does not exist"]


def test_a_pods_secret_reference_needs_the_secret_and_its_key() -> None:
    env = ("spec", "template", "spec", "containers", 0, "env")
    assert broken("Deployment", "vllm", env, [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "nope", "key": "token"}}}]) == [
        "Deployment llm/vllm: env HF_TOKEN reads Secret nope, which does not exist"
    ]
    assert broken("Deployment", "vllm", env, [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "other"}}}]) == [
        "Deployment llm/vllm: env HF_TOKEN reads key other that Secret hf lacks"
    ]
    # Keys in data count as well as stringData; plain values need no Secret.
    assert broken("Secret", "hf", ("data",), {"other": "eA=="}) == []
    assert broken("Deployment", "vllm", env, [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {}}}]) == []


def test_a_pods_compute_class_must_be_the_stacks_or_gkes_own() -> None:
    selector = ("spec", "template", "spec", "nodeSelector")
    assert broken("Deployment", "vllm", selector, {"cloud.google.com/compute-class": "other"}) == [
        "Deployment llm/vllm: ComputeClass other does not exist"
    ]
    assert broken("Deployment", "vllm", selector, {"cloud.google.com/compute-class": "Performance"}) == []


@pytest.mark.parametrize(
    ("kind", "name", "path", "label"),
    [
        ("Service", "vllm", ("spec", "selector"), "Service llm/vllm (the program)"),
        ("PodMonitoring", "vllm", ("spec", "selector", "matchLabels"), "PodMonitoring llm/vllm (the program)"),
        ("PodDisruptionBudget", "vllm", ("spec", "selector", "matchLabels"), "PodDisruptionBudget llm/vllm (the program)"),
        ("InferencePool", "pool", ("spec", "selector", "matchLabels"), "InferencePool llm/pool (chart pool)"),
    ],
)
def test_a_selector_that_matches_no_pod_is_named(kind: str, name: str, path: tuple[str, ...], label: str) -> None:
    wrong = {"app.kubernetes.io/name": "other"}
    assert broken(kind, name, path, wrong) == [f"{label}: selector {wrong} matches no pod the stack runs"]
    # A selector matching only part of the pod's labels matches; one in another namespace does not.
    assert broken(kind, name, path, {**LABELS}) == []


def test_pods_in_another_namespace_do_not_satisfy_a_selector() -> None:
    objects = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in cluster()]
    for item in objects:
        if item.kind == "Service" and item.name == "vllm":
            item.manifest["metadata"]["namespace"] = "other"
    found = problems([*objects, Sourced("the program", manifest("v1", "Namespace", "other", namespace=None))])
    assert found == [f"Service other/vllm (the program): selector {LABELS} matches no pod the stack runs"]


def test_the_pools_endpoint_picker_and_a_policys_target_exist() -> None:
    assert broken("InferencePool", "pool", ("spec", "endpointPickerRef"), {"name": "gone"}) == [
        "InferencePool llm/pool: endpoint picker Service gone does not exist"
    ]
    assert broken("GCPBackendPolicy", "pool", ("spec", "targetRef"), {"kind": "InferencePool", "name": "gone"}) == [
        "GCPBackendPolicy llm/pool (chart pool): target InferencePool gone does not exist"
    ]


def test_a_secret_an_operator_writes_at_runtime_counts_as_made() -> None:
    operator = manifest(
        "apps/v1",
        "Deployment",
        "keda-operator",
        spec={
            "template": {
                "metadata": {"labels": {"app": "keda"}},
                "spec": {"containers": [{"name": "o", "args": ["--enable-cert-rotation=true", "--cert-secret-name=keda-certs"]}]},
            }
        },
    )
    made = made_at_runtime([Sourced("chart keda", operator)])
    assert [(m.kind, m.namespace, m.name) for m in made] == [("Secret", NS, "keda-certs")]
    assert made_at_runtime([Sourced("chart keda", {**operator, "kind": "Service"})]) == []
    reader = {"name": "certs", "secret": {"secretName": "keda-certs"}}
    objects = [*cluster(), Sourced("chart keda", operator)]
    objects[9].manifest["spec"]["template"]["spec"]["volumes"].append(reader)
    assert problems(objects) == []


def registration(inputs: dict[str, Any]) -> Registration:
    type_ = f"kubernetes:core/{inputs['apiVersion']}:{inputs['kind']}"
    return plain_registration(type_, inputs["metadata"]["name"], inputs, stack="dev::p")


def test_cluster_objects_are_the_programs_manifests_then_the_charts() -> None:
    (found,) = cluster_objects(Render(stack="dev", resources=[registration(manifest("v1", "ConfigMap", "settings"))]))
    assert (found.source, found.label(), found.identity) == (
        "the program (kubernetes:core/v1:ConfigMap settings)",
        "ConfigMap llm/settings",
        ("", "ConfigMap", NS, "settings"),
    )


UNMADE = "namespace llm is neither created by the stack nor built into GKE"


def test_check_cluster_lists_every_problem_or_returns_the_objects() -> None:
    good = Render(
        stack="dev",
        resources=[registration(manifest("v1", "Namespace", NS, namespace=None)), registration(manifest("v1", "ConfigMap", "a"))],
    )
    assert [o.name for o in check_cluster(good)] == [NS, "a"]
    bad = Render(stack="dev", resources=[registration(manifest("v1", "ConfigMap", "a")), registration(manifest("v1", "ConfigMap", "b"))])
    with pytest.raises(ClusterModelError) as error:
        check_cluster(bad)
    assert str(error.value) == (
        "2 cluster model problem(s):\n"
        f"  - ConfigMap llm/a (the program (kubernetes:core/v1:ConfigMap a)): {UNMADE}\n"
        f"  - ConfigMap llm/b (the program (kubernetes:core/v1:ConfigMap b)): {UNMADE}"
    )


def test_a_cluster_scoped_object_made_twice_is_named_without_a_namespace() -> None:
    objects = [*cluster(), Sourced("chart other", manifest("cloud.google.com/v1", "ComputeClass", "a4-fallback", namespace=None))]
    assert problems(objects) == [
        "ComputeClass a4-fallback: made twice, by the program and by chart other; the second create fails with AlreadyExists"
    ]


def test_a_bare_pod_satisfies_a_selector_by_its_own_labels() -> None:
    objects = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in cluster() if o.kind != "Deployment"]
    objects.append(
        Sourced(
            "the program", {**manifest("v1", "Pod", "p", spec=pod_spec()), "metadata": {"name": "p", "namespace": NS, "labels": LABELS}}
        )
    )
    assert problems(objects) == []


def test_an_external_name_service_has_no_pods_to_select() -> None:
    service = manifest("v1", "Service", "outside", spec={"type": "ExternalName", "externalName": "x", "selector": {"a": "b"}})
    assert problems([*cluster(), Sourced("the program", service)]) == []


def test_secret_keys_count_from_data_as_well_as_string_data() -> None:
    reader = [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "data-only", "key": "token"}}}]
    for data, found in (
        ({"token": "eA=="}, []),
        ({"other": "eA=="}, ["Deployment llm/vllm: env HF_TOKEN reads key token that Secret data-only lacks"]),
    ):
        objects = [Sourced(o.source, copy.deepcopy(o.manifest)) for o in cluster()]
        objects.append(Sourced("the program", manifest("v1", "Secret", "data-only", data=Secret(data))))
        (deployment,) = [o for o in objects if o.kind == "Deployment"]
        deployment.manifest["spec"]["template"]["spec"]["containers"][0]["env"] = reader
        assert problems(objects) == found, data


def test_init_containers_secret_references_are_checked_too() -> None:
    init = [{"name": "fetch", "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "gone", "key": "token"}}}]}]
    assert broken("Deployment", "vllm", ("spec", "template", "spec", "initContainers"), init) == [
        "Deployment llm/vllm: env HF_TOKEN reads Secret gone, which does not exist"
    ]


def test_older_pools_name_their_picker_by_extension_ref_and_any_kind() -> None:
    assert broken("InferencePool", "pool", ("spec",), {"selector": {"matchLabels": LABELS}, "extensionRef": {"name": "gone"}}) == [
        "InferencePool llm/pool: endpoint picker Service gone does not exist"
    ]
    assert broken("InferencePool", "pool", ("spec", "endpointPickerRef"), {"kind": "ConfigMap", "name": "settings"}) == []
    assert broken("InferencePool", "pool", ("spec", "endpointPickerRef"), {"kind": "Secret", "name": "settings"}) == [
        "InferencePool llm/pool: endpoint picker Secret settings does not exist"
    ]


def test_a_health_check_policy_needs_its_target() -> None:
    policy = manifest("networking.gke.io/v1", "HealthCheckPolicy", "hc", spec={"targetRef": {"kind": "InferencePool", "name": "gone"}})
    assert problems([*cluster(), Sourced("chart pool", policy)]) == [
        "HealthCheckPolicy llm/hc (chart pool): target InferencePool gone does not exist"
    ]


def test_references_across_namespaces_name_the_other_namespace() -> None:
    other = [
        manifest("v1", "Namespace", "edge", namespace=None),
        manifest("gateway.networking.k8s.io/v1", "Gateway", "shared", namespace="edge", spec={"gatewayClassName": "gke-l7-rilb"}),
        manifest("v1", "Service", "vllm", namespace="edge", spec={"type": "ExternalName", "externalName": "x"}),
    ]
    route = manifest(
        "gateway.networking.k8s.io/v1",
        "HTTPRoute",
        "cross",
        spec={"parentRefs": [{"name": "shared", "namespace": "edge"}], "rules": [{"backendRefs": [{"name": "vllm", "namespace": "edge"}]}]},
    )
    objects = [*cluster(), *(Sourced("the program", m) for m in other)]
    assert problems([*objects, Sourced("the program", route)]) == []
    # Without the namespace, the route's own one is meant: there is no Gateway "shared" in it.
    local = copy.deepcopy(route)
    del local["spec"]["parentRefs"][0]["namespace"]
    assert problems([*objects, Sourced("the program", local)]) == ["HTTPRoute llm/cross: parent Gateway shared does not exist"]
    timed = copy.deepcopy(route)
    timed["spec"]["rules"][0]["timeouts"] = {"request": "10s"}
    assert len(problems([*objects, Sourced("the program", timed)])) == 1
