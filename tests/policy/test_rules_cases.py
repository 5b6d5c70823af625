"""Each guardrail on hand-made resources: what passes, what breaks it, and the opt-ins that allow it.

Inputs are camelCase as the engine sends them; every expected finding is the platform fact the rule
guards (A4 = 8 B200 and no on-demand, internal load balancers, Pulumi secrets), written per case.
"""

from __future__ import annotations

from typing import Any

import pytest

from policy.rules import (
    UNKNOWN,
    Resource,
    StackFacts,
    capacity_mode,
    compute_classes,
    credential_name,
    deletion_protection_on_production,
    gpu_pods_take_whole_a4_nodes,
    kubernetes_kind,
    model_cache_read_only,
    no_on_demand_a4,
    no_public_exposure,
    parent_types,
    pod_gpus,
    private_buckets,
    private_cluster,
    project_labels,
    secrets_never_in_plain_text,
    switch,
)
from render.engine import Secret

FACTS = StackFacts()
CLUSTER = "gcp:container/cluster:Cluster"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
B200 = {"cloud.google.com/gke-accelerator": "nvidia-b200"}
SPOT = {**B200, "cloud.google.com/gke-spot": "true"}


def deployment(containers: list[dict[str, Any]], selector: Any = None, **spec: Any) -> Resource:
    pod = {"containers": containers, "nodeSelector": SPOT if selector is None else selector, **spec}
    return Resource(DEPLOYMENT, "vllm", {"metadata": {"name": "vllm"}, "spec": {"template": {"spec": pod}}})


def gpus(request: Any = 8, limit: Any = 8, name: str = "vllm") -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if request is not None:
        resources["requests"] = {"nvidia.com/gpu": request}
    if limit is not None:
        resources["limits"] = {"nvidia.com/gpu": limit}
    return {"name": name, "resources": resources}


# --- private cluster: the opt-ins and authorized networks -----------------------------------


def cluster(**inputs: Any) -> Resource:
    return Resource(CLUSTER, "llm-serving", inputs)


PRIVATE_NODES = {"enablePrivateNodes": True, "enablePrivateEndpoint": False}
OPEN = "Cluster llm-serving: the control plane's IP endpoint is open to every address"
PUBLIC_NODES = "Cluster llm-serving: nodes get public IPs"


def test_an_open_control_plane_is_refused_unless_networks_are_named_or_the_stack_opts_in() -> None:
    (open_endpoint,) = private_cluster(cluster(privateClusterConfig=PRIVATE_NODES), FACTS)
    assert open_endpoint.startswith(OPEN) and "allowOpenControlPlane" in open_endpoint
    networks = {"cidrBlocks": [{"cidrBlock": "10.0.0.0/8", "displayName": "office"}]}
    assert private_cluster(cluster(privateClusterConfig=PRIVATE_NODES, masterAuthorizedNetworksConfig=networks), FACTS) == []
    assert private_cluster(cluster(privateClusterConfig=PRIVATE_NODES), StackFacts(allow_open_control_plane=True)) == []
    closed = {"enablePrivateNodes": True, "enablePrivateEndpoint": True}
    assert private_cluster(cluster(privateClusterConfig=closed), FACTS) == []
    # An empty list of networks opens nothing: still refused.
    empty: dict[str, list[Any]] = {"cidrBlocks": []}
    assert len(private_cluster(cluster(privateClusterConfig=PRIVATE_NODES, masterAuthorizedNetworksConfig=empty), FACTS)) == 1


def test_public_nodes_are_refused_unless_the_stack_opts_in() -> None:
    public = {"enablePrivateNodes": False, "enablePrivateEndpoint": True}
    (found,) = private_cluster(cluster(privateClusterConfig=public), FACTS)
    assert found.startswith(PUBLIC_NODES) and "allowPublicNodes" in found
    assert private_cluster(cluster(privateClusterConfig=public), StackFacts(allow_public_nodes=True)) == []
    # Nothing set: both problems, each with its own opt-in.
    both = private_cluster(cluster(), FACTS)
    assert [p.split(";")[0] for p in both] == [PUBLIC_NODES, OPEN]
    assert private_cluster(Resource("gcp:compute/network:Network", "vpc", {}), FACTS) == []


def test_a_production_cluster_keeps_deletion_protection() -> None:
    production = StackFacts(production=True)
    (found,) = deletion_protection_on_production(cluster(deletionProtection=False), production)
    assert found == "Cluster llm-serving: deletionProtection is false on a production stack; set llm:cluster.deletionProtection: true"
    assert deletion_protection_on_production(cluster(deletionProtection=True), production) == []
    assert deletion_protection_on_production(cluster(), production) == []  # the provider's default protects
    assert deletion_protection_on_production(cluster(deletionProtection=False), FACTS) == []


# --- GPU pods take whole A4 nodes ----------------------------------------------------------


def test_a_gpu_pod_asks_for_exactly_eight_gpus_with_requests_equal_to_limits() -> None:
    assert gpu_pods_take_whole_a4_nodes(deployment([gpus()]), FACTS) == []
    (four,) = gpu_pods_take_whole_a4_nodes(deployment([gpus(4, 4)]), FACTS)
    assert four == "Deployment vllm: requests 4 nvidia.com/gpu; a GPU pod takes one whole A4 node: exactly 8"
    (unequal,) = gpu_pods_take_whole_a4_nodes(deployment([gpus(8, 4)]), FACTS)
    assert unequal.startswith("Deployment vllm: container vllm requests 8 and limits 4 nvidia.com/gpu")
    # Only a limit: Kubernetes copies it into the request, but the rule wants both written.
    (limit_only,) = gpu_pods_take_whole_a4_nodes(deployment([gpus(None, 8)]), FACTS)
    assert "requests None and limits 8" in limit_only
    assert gpu_pods_take_whole_a4_nodes(deployment([gpus("8", "8")]), FACTS) == []
    assert gpu_pods_take_whole_a4_nodes(deployment([{"name": "cpu"}]), FACTS) == []


def test_two_containers_of_four_gpus_make_one_whole_node_and_init_containers_count_apart() -> None:
    two = [gpus(4, 4, "a"), gpus(4, 4, "b")]
    assert pod_gpus({"containers": two}) == 8
    assert pod_gpus({"containers": [gpus(2, 2)], "initContainers": [gpus(8, 8, "init"), gpus(4, 4, "other")]}) == 8
    assert pod_gpus({"containers": [gpus(True, True)]}) == 0
    assert pod_gpus({"containers": [gpus(" 8 ", None)]}) == 8
    assert pod_gpus({"containers": [gpus(None, 8)]}) == 8


def test_a_gpu_pod_selects_a4_by_accelerator_or_by_a_compute_class_of_the_stack() -> None:
    (none,) = gpu_pods_take_whole_a4_nodes(deployment([gpus()], selector={}), FACTS)
    assert none.startswith("Deployment vllm: does not select A4 nodes")
    classes = StackFacts(compute_classes=frozenset({"a4-fallback"}))
    picked = {"cloud.google.com/compute-class": "a4-fallback"}
    assert gpu_pods_take_whole_a4_nodes(deployment([gpus()], selector=picked), classes) == []
    other = {"cloud.google.com/compute-class": "other"}
    (missing,) = gpu_pods_take_whole_a4_nodes(deployment([gpus()], selector=other), classes)
    assert missing == "Deployment vllm: selects compute class 'other', which this stack does not define (defined: a4-fallback)"
    (nothing,) = gpu_pods_take_whole_a4_nodes(deployment([gpus()], selector=other), StackFacts(compute_classes=frozenset()))
    assert nothing.endswith("(defined: none)")
    # Checked alone (no stack), a compute class is taken on trust.
    assert gpu_pods_take_whole_a4_nodes(deployment([gpus()], selector=other), FACTS) == []


def test_unknown_gpu_counts_or_selectors_wait_for_the_engine() -> None:
    assert gpu_pods_take_whole_a4_nodes(deployment([gpus(UNKNOWN, 8)]), FACTS) == []
    assert gpu_pods_take_whole_a4_nodes(deployment([gpus(4, 4)], selector=UNKNOWN), FACTS) == []


def test_compute_classes_are_named_by_metadata_or_resource_name() -> None:
    named = Resource("kubernetes:cloud.google.com/v1:ComputeClass", "res", {"metadata": {"name": "a4-fallback"}})
    unnamed = Resource("kubernetes:cloud.google.com/v1:ComputeClass", "fallback", {})
    assert compute_classes([named, unnamed, deployment([])]) == frozenset({"a4-fallback", "fallback"})


# --- no on-demand A4 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("selector", "mode"),
    [
        ({"cloud.google.com/gke-spot": "true"}, "spot"),
        ({"cloud.google.com/gke-flex-start": "true"}, "flex-start"),
        ({"cloud.google.com/reservation-affinity": "specific", "cloud.google.com/reservation-name": "r"}, "reservation"),
        ({"cloud.google.com/reservation-affinity": "specific"}, None),
        ({"cloud.google.com/gke-spot": "false"}, None),
        ({}, None),
    ],
)
def test_capacity_modes_a_selector_names(selector: dict[str, str], mode: str | None) -> None:
    assert capacity_mode(selector) == mode


def test_b200_pods_without_a_capacity_selector_are_on_demand() -> None:
    (found,) = no_on_demand_a4(deployment([gpus()], selector=B200), FACTS)
    assert found.startswith("Deployment vllm: selects nvidia-b200 nodes with no capacity selector")
    unnamed = {**B200, "cloud.google.com/reservation-affinity": "specific"}
    assert no_on_demand_a4(deployment([gpus()], selector=unnamed), FACTS) == [
        "Deployment vllm: selects a specific reservation but names none; set nodeSelector cloud.google.com/reservation-name"
    ]
    assert no_on_demand_a4(deployment([gpus()], selector=SPOT), FACTS) == []
    assert no_on_demand_a4(deployment([gpus()], selector={**B200, "cloud.google.com/compute-class": "c"}), FACTS) == []
    assert no_on_demand_a4(deployment([{"name": "cpu"}], selector={}), FACTS) == []


def compute_class(*priorities: dict[str, Any], unsatisfiable: Any = "DoNotScaleUp") -> Resource:
    spec: dict[str, Any] = {"priorities": list(priorities)}
    if unsatisfiable is not None:
        spec["whenUnsatisfiable"] = unsatisfiable
    return Resource("kubernetes:cloud.google.com/v1:ComputeClass", "a4-fallback", {"metadata": {"name": "a4-fallback"}, "spec": spec})


A4_MACHINE = {"machineType": "a4-highgpu-8g"}


def test_an_a4_compute_class_names_capacity_in_every_priority_and_never_scales_up_on_demand() -> None:
    specific = {"reservations": {"affinity": "Specific", "specific": [{"name": "r"}]}}
    good = compute_class({**A4_MACHINE, **specific}, {**A4_MACHINE, "spot": True}, {**A4_MACHINE, "flexStart": {"enabled": True}})
    assert no_on_demand_a4(good, FACTS) == []
    best_effort = {**A4_MACHINE, "reservations": {"affinity": "AnyBestEffort"}}
    (found,) = no_on_demand_a4(compute_class({**A4_MACHINE, "spot": True}, best_effort), FACTS)
    assert found.startswith("ComputeClass a4-fallback: priority 1 asks for A4 without spot, flexStart or a Specific reservation")
    (unnamed,) = no_on_demand_a4(compute_class({**A4_MACHINE, "reservations": {"affinity": "Specific", "specific": [{}]}}), FACTS)
    assert "priority 0" in unnamed
    by_family = compute_class({"machineFamily": "a4"})
    by_gpu = compute_class({"gpu": {"type": "nvidia-b200", "count": 8}})
    assert len(no_on_demand_a4(by_family, FACTS)) == 1 and len(no_on_demand_a4(by_gpu, FACTS)) == 1
    (scales_up,) = no_on_demand_a4(compute_class({**A4_MACHINE, "spot": True}, unsatisfiable="ScaleUpAnyway"), FACTS)
    assert scales_up.startswith("ComputeClass a4-fallback: whenUnsatisfiable is 'ScaleUpAnyway'; set DoNotScaleUp")
    assert len(no_on_demand_a4(compute_class({**A4_MACHINE, "spot": True}, unsatisfiable=None), FACTS)) == 1
    assert no_on_demand_a4(compute_class({**A4_MACHINE, "spot": True}, unsatisfiable=UNKNOWN), FACTS) == []
    # A class of other machines is not A4's business.
    assert no_on_demand_a4(compute_class({"machineFamily": "c4"}, unsatisfiable="ScaleUpAnyway"), FACTS) == []


# --- no public exposure ---------------------------------------------------------------------


def service(type_: str, annotations: dict[str, str] | None = None) -> Resource:
    return Resource(
        "kubernetes:core/v1:Service", "svc", {"metadata": {"name": "svc", "annotations": annotations or {}}, "spec": {"type": type_}}
    )


def test_public_services_gateways_and_ingresses_need_the_opt_in() -> None:
    assert no_public_exposure(service("ClusterIP"), FACTS) == []
    (node_port,) = no_public_exposure(service("NodePort"), FACTS)
    assert node_port.startswith("Service svc is a NodePort Service: it exposes the model to the internet")
    assert node_port.endswith("or opt the stack in with llm:allowPublicExposure: true")
    assert len(no_public_exposure(service("LoadBalancer"), FACTS)) == 1
    for key in ("networking.gke.io/load-balancer-type", "cloud.google.com/load-balancer-type"):
        assert no_public_exposure(service("LoadBalancer", {key: "Internal"}), FACTS) == []
    assert no_public_exposure(service("LoadBalancer"), StackFacts(allow_public_exposure=True)) == []
    gateway = Resource(
        "kubernetes:gateway.networking.k8s.io/v1:Gateway",
        "gw",
        {"metadata": {"name": "gw"}, "spec": {"gatewayClassName": "gke-l7-regional-external-managed"}},
    )
    (external,) = no_public_exposure(gateway, FACTS)
    assert "an external Gateway (class gke-l7-regional-external-managed)" in external
    internal = Resource("kubernetes:gateway.networking.k8s.io/v1:Gateway", "gw", {"spec": {"gatewayClassName": "gke-l7-rilb"}})
    assert no_public_exposure(internal, FACTS) == []


@pytest.mark.parametrize(
    ("spec", "annotations", "public"),
    [
        ({}, {}, "an external Ingress (class default: gce)"),
        ({"ingressClassName": "gce"}, {}, "an external Ingress (class gce)"),
        ({"ingressClassName": "gce-internal"}, {}, None),
        ({}, {"kubernetes.io/ingress.class": "gce-internal"}, None),
        ({"ingressClassName": UNKNOWN}, {}, None),
    ],
)
def test_ingresses_are_public_unless_internal(spec: dict[str, Any], annotations: dict[str, str], public: str | None) -> None:
    ingress = Resource(
        "kubernetes:networking.k8s.io/v1:Ingress", "in", {"metadata": {"name": "in", "annotations": annotations}, "spec": spec}
    )
    found = no_public_exposure(ingress, FACTS)
    assert (found[0].split(" is ", 1)[1].split(": it exposes")[0] if found else None) == public


# --- secrets --------------------------------------------------------------------------------


def test_secret_data_must_be_a_pulumi_secret_when_the_engine_marks_them() -> None:
    plain = Resource("kubernetes:core/v1:Secret", "hf", {"metadata": {"name": "hf"}, "stringData": {"token": "x"}, "data": {"a": "eA=="}})
    assert [p.split(":")[1].strip().split(" ")[0] for p in secrets_never_in_plain_text(plain, FACTS)] == ["data", "stringData"]
    marked = Resource("kubernetes:core/v1:Secret", "hf", {"stringData": Secret({"token": "x"}), "data": {"a": Secret("eA==")}})
    assert secrets_never_in_plain_text(marked, FACTS) == []
    assert secrets_never_in_plain_text(plain, StackFacts(secrets_marked=False)) == []


@pytest.mark.parametrize(
    ("env", "found"),
    [
        ({"name": "HF_TOKEN", "value": "abc"}, "holds a credential in plain text"),
        ({"name": "MODEL", "value": "hf_abcdefghij"}, "holds a credential in plain text"),
        ({"name": "NOTE", "value": "see sk-abcdefghijk"}, "holds a credential in plain text"),
        ({"name": "HF_TOKEN", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}, "reads a credential from outside a Secret"),
        ({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}, None),
        ({"name": "HF_TOKEN", "value": "$(TOKEN)"}, None),
        ({"name": "HF_TOKEN", "value": "${TOKEN:-x}"}, None),
        ({"name": "HF_TOKEN", "value": ""}, None),
        ({"name": "MODEL", "value": "Qwen/Qwen3.5-27B-FP8"}, None),
    ],
)
def test_env_credentials_come_from_secrets(env: dict[str, Any], found: str | None) -> None:
    problems = secrets_never_in_plain_text(deployment([{"name": "vllm", "env": [env]}]), FACTS)
    assert (problems[0].split(f"env {env['name']} ", 1)[1].split(";")[0] if problems else None) == found


@pytest.mark.parametrize(
    ("args", "found"),
    [
        (["--api-key=abc"], "args[0] passes --api-key a literal value"),
        (["--api-key", "abc"], "args[0] passes --api-key a literal value"),
        (["--api-key", "--port=8000"], None),
        (["--api-key=$(API_KEY)"], None),
        (["--max-num-batched-tokens=16384"], None),
        (["serve", "hf_abcdefghijk"], "args[1] holds what looks like a token"),
        (["--api-key"], None),
    ],
)
def test_credential_flags_take_variables_not_literals(args: list[str], found: str | None) -> None:
    problems = secrets_never_in_plain_text(deployment([{"name": "vllm", "args": args}]), FACTS)
    assert (problems[0].split("container vllm ", 1)[1].split(";")[0] if problems else None) == found


@pytest.mark.parametrize("name", ["HF_TOKEN", "apiKey", "--api-key", "DB_PASSWORD", "client-secret", "passwd"])
def test_credential_names(name: str) -> None:
    assert credential_name(name)


@pytest.mark.parametrize("name", ["--max-num-batched-tokens", "MODEL", "keyboard", "TOKENIZER", "monkey"])
def test_not_credential_names(name: str) -> None:
    assert not credential_name(name)


# --- the model cache is read-only -----------------------------------------------------------


def claim(name: str, modes: Any) -> Resource:
    return Resource("kubernetes:core/v1:PersistentVolumeClaim", name, {"metadata": {"name": name}, "spec": {"accessModes": modes}})


def test_the_cache_claim_replicas_read_is_read_only_many() -> None:
    assert model_cache_read_only(claim("model-cache-q", ["ReadOnlyMany"]), FACTS) == []
    (found,) = model_cache_read_only(claim("model-cache-q", ["ReadWriteOnce"]), FACTS)
    assert found == "PersistentVolumeClaim model-cache-q: accessModes are ['ReadWriteOnce']; the model cache's claim must be [ReadOnlyMany]"
    assert model_cache_read_only(claim("model-cache-q-writer", ["ReadWriteOnce"]), FACTS) == []
    assert model_cache_read_only(claim("other", ["ReadWriteOnce"]), FACTS) == []
    assert model_cache_read_only(claim("model-cache-q", UNKNOWN), FACTS) == []


def test_replicas_mount_the_cache_read_only_in_the_volume_and_every_mount() -> None:
    def mounting(volume_read_only: Any, mount_read_only: Any, claim_name: str = "model-cache-q") -> list[str]:
        volume = {"name": "weights", "persistentVolumeClaim": {"claimName": claim_name, "readOnly": volume_read_only}}
        container = {"name": "vllm", "volumeMounts": [{"name": "weights", "mountPath": "/models", "readOnly": mount_read_only}]}
        return model_cache_read_only(deployment([container], volumes=[volume]), FACTS)

    assert mounting(True, True) == []
    assert mounting(False, True) == [
        "Deployment vllm: volume weights mounts the model cache writable; set persistentVolumeClaim.readOnly: true"
    ]
    assert mounting(True, None) == ["Deployment vllm: container vllm mounts weights at /models writable; set readOnly: true"]
    assert mounting(UNKNOWN, UNKNOWN) == []
    assert mounting(False, False, "model-cache-q-writer") == []


# --- labels -----------------------------------------------------------------------------------

LABELS = {"app": "llm-serving", "managed-by": "pulumi", "stack": "dev"}


def test_labelled_resources_carry_app_managed_by_and_stack_in_their_own_field() -> None:
    assert project_labels(Resource(CLUSTER, "c", {"resourceLabels": LABELS}), FACTS) == []
    (missing,) = project_labels(Resource(CLUSTER, "c", {"labels": LABELS}), FACTS)
    assert missing == "Cluster c: missing label(s) app, managed-by, stack; give it the stack's labels (Stack.labels)"
    policy = Resource("gcp:monitoring/alertPolicy:AlertPolicy", "a", {"userLabels": {**LABELS, "stack": ""}})
    assert project_labels(policy, FACTS) == ["AlertPolicy a: missing label(s) stack; give it the stack's labels (Stack.labels)"]
    assert project_labels(Resource("gcp:storage/bucket:Bucket", "b", {"labels": LABELS}), FACTS) == []
    assert project_labels(Resource("gcp:compute/network:Network", "vpc", {}), FACTS) == []
    config_map = Resource("kubernetes:core/v1:ConfigMap", "c", {"metadata": {"labels": {"app": "x", "managed-by": "y", "stack": UNKNOWN}}})
    assert project_labels(config_map, FACTS) == []
    assert project_labels(Resource("kubernetes:core/v1:ConfigMap", "c", {"metadata": {"labels": UNKNOWN}}), FACTS) == []
    assert len(project_labels(Resource("kubernetes:core/v1:ConfigMap", "c", {"metadata": {}}), FACTS)) == 1


def test_charts_manifest_files_and_their_children_are_exempt_from_labels() -> None:
    for type_ in ("kubernetes:helm.sh/v4:Chart", "kubernetes:yaml/v2:ConfigFile", "pulumi:providers:kubernetes", "llm:serving:Replicas"):
        assert project_labels(Resource(type_, "x", {}), FACTS) == []
    child = Resource(
        "kubernetes:core/v1:ConfigMap",
        "c",
        {},
        urn="urn:pulumi:dev::p::llm:serving:Gateway$kubernetes:helm.sh/v4:Chart$kubernetes:core/v1:ConfigMap::c",
    )
    assert project_labels(child, FACTS) == []
    own = Resource("kubernetes:core/v1:ConfigMap", "c", {}, urn="urn:pulumi:dev::p::llm:serving:Gateway$kubernetes:core/v1:ConfigMap::c")
    assert len(project_labels(own, FACTS)) == 1


def test_type_tokens_and_urns_are_read_as_pulumi_writes_them() -> None:
    assert kubernetes_kind("kubernetes:apps/v1:Deployment") == ("apps", "Deployment")
    assert kubernetes_kind("kubernetes:core/v1:Pod") == ("core", "Pod")
    assert kubernetes_kind("gcp:container/cluster:Cluster") is None
    assert kubernetes_kind("kubernetes:apps/v1") is None
    assert parent_types("urn:pulumi:dev::p::a:b:C$d:e:F$g:h:I::name") == ["a:b:C", "d:e:F"]
    assert parent_types("urn:pulumi:dev::p::g:h:I::name") == []
    assert parent_types("not-a-urn") == []


# --- switches ---------------------------------------------------------------------------------


def test_the_policy_config_pins_a_switch_else_the_stacks_key_decides_else_off() -> None:
    assert switch("allowOpenControlPlane", {"allowOpenControlPlane": True}, {"llm:allowOpenControlPlane": "false"}, "llm")
    assert not switch("allowOpenControlPlane", {"allowOpenControlPlane": False}, {"llm:allowOpenControlPlane": "true"}, "llm")
    assert switch("allowOpenControlPlane", {}, {"llm:allowOpenControlPlane": " True "}, "llm")
    assert not switch("allowOpenControlPlane", {}, {"other:allowOpenControlPlane": "true"}, "llm")
    assert not switch("allowOpenControlPlane", {}, {}, "llm")
    assert not switch("allowOpenControlPlane", {"allowOpenControlPlane": "true"}, {}, "llm")


# --- private buckets --------------------------------------------------------------------------
# Public access prevention "enforced" and uniform bucket-level access (cloud.google.com/storage/docs/public-access-prevention,
# /uniform-bucket-level-access); allUsers and allAuthenticatedUsers are the public principals
# (cloud.google.com/iam/docs/principals-overview).

BUCKET = "gcp:storage/bucket:Bucket"
PRIVATE_BUCKET = {"name": "batch", "publicAccessPrevention": "enforced", "uniformBucketLevelAccess": True}


def test_a_bucket_enforces_public_access_prevention_and_uniform_access() -> None:
    assert private_buckets(Resource(BUCKET, "batch", PRIVATE_BUCKET), FACTS) == []
    assert private_buckets(Resource(BUCKET, "batch", {**PRIVATE_BUCKET, "uniformBucketLevelAccess": Secret(True)}), FACTS) == []
    inherited = private_buckets(Resource(BUCKET, "batch", {**PRIVATE_BUCKET, "publicAccessPrevention": "inherited"}), FACTS)
    assert inherited == ["Bucket batch: public access prevention is not enforced; set publicAccessPrevention: enforced"]
    acls = private_buckets(Resource(BUCKET, "batch", {**PRIVATE_BUCKET, "uniformBucketLevelAccess": False}), FACTS)
    assert acls == ["Bucket batch: object ACLs could grant access past IAM; set uniformBucketLevelAccess: true"]
    # Unset is not enforced and not uniform; a value a preview does not know yet is not judged.
    assert len(private_buckets(Resource(BUCKET, "batch", {"name": "batch"}), FACTS)) == 2
    unknown = {"publicAccessPrevention": UNKNOWN, "uniformBucketLevelAccess": UNKNOWN}
    assert private_buckets(Resource(BUCKET, "batch", unknown), FACTS) == []


@pytest.mark.parametrize(
    ("type_", "inputs", "public"),
    [
        ("gcp:storage/bucketIAMMember:BucketIAMMember", {"member": "allUsers", "role": "roles/storage.objectViewer"}, "allUsers"),
        ("gcp:storage/bucketIAMMember:BucketIAMMember", {"member": "serviceAccount:runner@p.iam.gserviceaccount.com"}, None),
        (
            "gcp:storage/bucketIAMBinding:BucketIAMBinding",
            {"members": ["group:a@example.com", "allAuthenticatedUsers"]},
            "allAuthenticatedUsers",
        ),
        ("gcp:storage/bucketIAMBinding:BucketIAMBinding", {"members": ["group:a@example.com"]}, None),
        ("gcp:storage/bucketACL:BucketACL", {"roleEntities": ["OWNER:project-owners-1", "READER:allUsers"]}, "allUsers"),
        ("gcp:storage/bucketACL:BucketACL", {"predefinedAcl": "publicRead"}, None),
        ("gcp:storage/bucketACL:BucketACL", {"roleEntities": ["READER:AllAuthenticatedUsers"]}, "allAuthenticatedUsers"),
        ("gcp:storage/bucketIAMMember:BucketIAMMember", {"member": UNKNOWN}, None),
        ("gcp:storage/bucketObject:BucketObject", {"member": "allUsers"}, None),
    ],
)
def test_a_bucket_grant_to_the_public_is_refused(type_: str, inputs: dict[str, Any], public: str | None) -> None:
    found = private_buckets(Resource(type_, "grant", inputs), FACTS)
    kind = type_.rsplit(":", 1)[-1]
    expected = [f"{kind} grant: grants {public} access to a bucket; grant named service accounts or groups only"] if public else []
    assert found == expected


def test_a_grant_naming_both_public_principals_names_both() -> None:
    both = Resource("gcp:storage/bucketIAMBinding:BucketIAMBinding", "grant", {"members": ["allUsers", "allAuthenticatedUsers"]})
    assert private_buckets(both, FACTS) == [
        "BucketIAMBinding grant: grants allAuthenticatedUsers, allUsers access to a bucket; grant named service accounts or groups only"
    ]
    acl = Resource("gcp:storage/bucketACL:BucketACL", "acl", {"roleEntities": [], "predefinedAcl": "allUsers"})
    assert len(private_buckets(acl, FACTS)) == 1


def test_an_unknown_value_reads_as_unknown() -> None:
    assert repr(UNKNOWN) == "<unknown>"
