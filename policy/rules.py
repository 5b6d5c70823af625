"""The guardrails of LLM serving on GKE A4, as pure functions over plain resource data.

A rule reads one resource (its type token and inputs, camelCase as the engine
sends them) and the facts of its stack, and returns what is wrong with it, one
message per problem, written for the person who edits the program or
``Pulumi.<stack>.yaml``. Nothing here imports Pulumi: ``policy/guardrails.py``
wires the rules into a policy pack, and the tests run them over the offline
render of every stack.

GKE's label keys and one A4 node's facts come from ``facts/gke.py``, the program's
labels and the model cache's names from ``facts/naming.py``: the one place the
program keeps each; the pack runs in the project's environment with
the project root on its path (``policy/__main__.py``). A mistake there is not
left to agree with itself: the render checks the same keys against Autopilot's
admission rules and GKE's ComputeClass CRD (docs/autopilot.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from facts import gke
from facts.naming import MODEL_CACHE_PREFIX, MODEL_CACHE_WRITER_SUFFIX, PROGRAM_LABELS

# a4-highgpu-8g, and any other shape of the A4 family.
A4_MACHINE_PREFIX = f"{gke.A4_MACHINE_FAMILY}-"

# GKE GatewayClasses whose load balancer has an internet-facing address.
EXTERNAL_GATEWAY_CLASSES = frozenset(
    {
        "gke-l7-global-external-managed",
        "gke-l7-regional-external-managed",
        "gke-l7-gxlb",
        "gke-l7-global-external-managed-mc",
        "gke-l7-regional-external-managed-mc",
        "gke-l7-gxlb-mc",
    }
)
# A LoadBalancer Service with this annotation gets an internal passthrough load balancer.
INTERNAL_LOAD_BALANCER_ANNOTATIONS = ("networking.gke.io/load-balancer-type", "cloud.google.com/load-balancer-type")
# Any other Ingress class, and no class at all, is GKE's external HTTP(S) load balancer.
INTERNAL_INGRESS_CLASS = "gce-internal"

CLUSTER = "gcp:container/cluster:Cluster"
# GCP resources whose pulumi-gcp schema has no labels field: nothing to check.
GCP_WITHOUT_LABELS = frozenset(
    {
        "gcp:projects/service:Service",
        "gcp:compute/network:Network",
        "gcp:compute/subnetwork:Subnetwork",
        "gcp:compute/futureReservation:FutureReservation",
        "gcp:monitoring/dashboard:Dashboard",
        "gcp:serviceaccount/account:Account",
        "gcp:serviceaccount/iAMMember:IAMMember",
        "gcp:projects/iAMMember:IAMMember",
        "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember",
        "gcp:storage/bucketIAMMember:BucketIAMMember",
        "gcp:compute/router:Router",
        "gcp:compute/routerNat:RouterNat",
    }
)
# GCP resources whose labels field has another name.
GCP_LABEL_FIELDS = {"gcp:container/cluster:Cluster": "resourceLabels", "gcp:monitoring/alertPolicy:AlertPolicy": "userLabels"}
# Objects rendered from others' manifests (Helm charts, YAML files, kustomizations)
# carry their authors' labels; the program cannot label them without a transform.
THIRD_PARTY_MANIFESTS = ("kubernetes:helm.sh/", "kubernetes:yaml/", "kubernetes:kustomize/")

# Where each workload kind keeps its pod spec.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")

# Words that make a variable or flag name a credential's. Whole words only, so
# `--max-num-batched-tokens` is not one.
CREDENTIAL_WORDS = frozenset({"token", "key", "apikey", "password", "passwd", "secret"})
# The shapes of Hugging Face and OpenAI-style keys, wherever they appear in a string.
CREDENTIAL_SHAPE = re.compile(r"(?<![A-Za-z0-9])(hf_[A-Za-z0-9]{8,}|sk-[A-Za-z0-9_-]{8,})")
CREDENTIAL_PREFIXES = ("hf_", "sk-")
# `$(VAR)` (Kubernetes) and `${VAR}` (shell) name a variable; they hold no value.
VARIABLE_REFERENCE = re.compile(r"^\$(\([A-Za-z_][A-Za-z0-9_]*\)|\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\})$")


class Unknown:
    """A value the engine does not know yet (a preview of something that depends on another resource)."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = Unknown()


@runtime_checkable
class SecretMarker(Protocol):
    """A value marked as a Pulumi secret: the offline render's ``Secret``, or pulumi-policy's."""

    value: Any


@dataclass(frozen=True)
class Resource:
    """One registered resource as a rule sees it."""

    type: str
    name: str
    inputs: Mapping[str, Any]
    urn: str = ""


@dataclass(frozen=True)
class StackFacts:
    """What a rule needs to know beyond the resource itself."""

    # Names of the stack's ComputeClasses; None when one resource is checked alone.
    compute_classes: frozenset[str] | None = None
    allow_public_exposure: bool = False
    allow_public_nodes: bool = False
    allow_open_control_plane: bool = False
    production: bool = False
    # True when inputs still carry secret markers (the offline render). A live
    # policy pack gets secrets as plain values (pulumi/pulumi-policy#241), so it
    # cannot tell a Pulumi secret from plain text and must not judge it.
    secrets_marked: bool = True


@dataclass(frozen=True)
class Switch:
    """A yes/no a stack opts into: a policy config key and the stack config key of the same name."""

    key: str
    description: str


Check = Callable[[Resource, StackFacts], list[str]]


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    check: Check
    # The verdict depends on other resources of the stack (runs as a stack policy).
    needs_stack: bool = False
    # The check reads secret markers, so its inputs must not be unwrapped first.
    reads_secret_markers: bool = False
    switches: tuple[Switch, ...] = ()


# --- reading plain resource data ---------------------------------------------------------


def _unwrap(value: Any) -> Any:
    while isinstance(value, SecretMarker):
        value = value.value
    return value


def _mapping(value: Any) -> Mapping[str, Any]:
    value = _unwrap(value)
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> list[Any]:
    value = _unwrap(value)
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else []


def _text(value: Any) -> str | None:
    value = _unwrap(value)
    return value if isinstance(value, str) else None


def _at(value: Any, *path: str) -> Any:
    for key in path:
        value = _mapping(value).get(key)
    return _unwrap(value)


def _is_unknown(value: Any) -> bool:
    return isinstance(_unwrap(value), Unknown)


def kubernetes_kind(type_token: str) -> tuple[str, str] | None:
    """``kubernetes:apps/v1:Deployment`` -> (``apps``, ``Deployment``); the core group is ``core``."""
    parts = type_token.split(":")
    if len(parts) != 3 or parts[0] != "kubernetes":
        return None
    return parts[1].rsplit("/", 1)[0], parts[2]


def _is_kind(resource: Resource, group: str, kind: str) -> bool:
    return kubernetes_kind(resource.type) == (group, kind)


def _label(resource: Resource) -> str:
    name = _text(_at(resource.inputs, "metadata", "name"))
    kind = kubernetes_kind(resource.type)
    return f"{kind[1]} {name or resource.name}" if kind else f"{resource.type.rsplit(':', 1)[-1]} {resource.name}"


def pod_spec(resource: Resource) -> Mapping[str, Any] | None:
    """The pod spec of a workload (a pod or anything with a pod template), else None."""
    kind = kubernetes_kind(resource.type)
    if kind is None or kind[0] not in ("core", "apps", "batch") or kind[1] not in POD_SPEC_PATHS:
        return None
    spec = _at(resource.inputs, *POD_SPEC_PATHS[kind[1]])
    return spec if isinstance(spec, Mapping) else None


def _containers(spec: Mapping[str, Any], lists: Iterable[str] = CONTAINER_LISTS) -> list[Mapping[str, Any]]:
    return [_mapping(container) for key in lists for container in _items(spec.get(key))]


def _node_selector(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(spec.get("nodeSelector"))


def parent_types(urn: str) -> list[str]:
    """The type tokens of a resource's ancestors, from its URN (``...::parent$child::name``)."""
    parts = urn.split("::")
    return parts[2].split("$")[:-1] if len(parts) >= 4 else []


# --- GPU pods take whole A4 nodes --------------------------------------------------------


def _gpu_count(value: Any) -> int | Unknown | None:
    value = _unwrap(value)
    if isinstance(value, Unknown):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


GpuAsk = tuple[int | Unknown | None, int | Unknown | None]


def _gpu_ask(container: Mapping[str, Any]) -> GpuAsk | None:
    """A container's (request, limit) of GPUs; None when it mentions none."""
    resources = _mapping(container.get("resources"))
    requests, limits = _mapping(resources.get("requests")), _mapping(resources.get("limits"))
    if gke.GPU_RESOURCE not in requests and gke.GPU_RESOURCE not in limits:
        return None
    return _gpu_count(requests.get(gke.GPU_RESOURCE)), _gpu_count(limits.get(gke.GPU_RESOURCE))


def _gpus(ask: GpuAsk | None) -> int:
    # The request, or the limit Kubernetes copies into an unset request.
    return next((count for count in ask or () if isinstance(count, int)), 0)


def pod_gpus(spec: Mapping[str, Any]) -> int:
    """A pod's GPUs: its containers' together, or its largest init container's, whichever is more."""
    app = sum(_gpus(_gpu_ask(container)) for container in _containers(spec, ("containers",)))
    init = max((_gpus(_gpu_ask(container)) for container in _containers(spec, ("initContainers",))), default=0)
    return max(app, init)


def gpu_pods_take_whole_a4_nodes(resource: Resource, facts: StackFacts) -> list[str]:
    """A pod that requests GPUs requests exactly one A4 node's 8 (requests = limits) and selects A4."""
    spec = pod_spec(resource)
    if spec is None:
        return []
    asks = {_text(c.get("name")) or "?": ask for c in _containers(spec) if (ask := _gpu_ask(c)) is not None}
    if not asks:
        return []
    if any(isinstance(count, Unknown) for ask in asks.values() for count in ask) or _is_unknown(spec.get("nodeSelector")):
        return []  # judged again once the engine knows the values
    problems = [
        f"{_label(resource)}: container {name} requests {request} and limits {limit} {gke.GPU_RESOURCE}; set both, to the same whole number"
        for name, (request, limit) in asks.items()
        if request is None or request != limit
    ]
    if (total := pod_gpus(spec)) != gke.GPUS_PER_NODE:
        problems.append(
            f"{_label(resource)}: requests {total} {gke.GPU_RESOURCE}; a GPU pod takes one whole A4 node: exactly {gke.GPUS_PER_NODE}"
        )
    selector = _node_selector(spec)
    compute_class = _text(selector.get(gke.COMPUTE_CLASS_LABEL))
    if compute_class is not None:
        if facts.compute_classes is not None and compute_class not in facts.compute_classes:
            defined = ", ".join(sorted(facts.compute_classes)) or "none"
            problems.append(
                f"{_label(resource)}: selects compute class {compute_class!r}, which this stack does not define (defined: {defined})"
            )
    elif _text(selector.get(gke.ACCELERATOR_LABEL)) != gke.GPU_TYPE:
        problems.append(
            f"{_label(resource)}: does not select A4 nodes; set nodeSelector {gke.ACCELERATOR_LABEL}: {gke.GPU_TYPE}, "
            f"or {gke.COMPUTE_CLASS_LABEL} naming a ComputeClass of this stack"
        )
    return problems


# --- no on-demand A4 ---------------------------------------------------------------------


def capacity_mode(selector: Mapping[str, Any]) -> str | None:
    """The approved capacity a node selector asks for (spot, flex-start, reservation), else None."""
    if _text(selector.get(gke.SPOT_LABEL)) == "true":
        return "spot"
    if _text(selector.get(gke.FLEX_START_LABEL)) == "true":
        return "flex-start"
    if _text(selector.get(gke.RESERVATION_AFFINITY_LABEL)) == "specific" and _text(selector.get(gke.RESERVATION_NAME_LABEL)):
        return "reservation"
    return None


def _is_a4_priority(priority: Mapping[str, Any]) -> bool:
    machine_type = _text(priority.get("machineType")) or ""
    return (
        machine_type.startswith(A4_MACHINE_PREFIX)
        or _text(priority.get("machineFamily")) == gke.A4_MACHINE_FAMILY
        or _text(_at(priority, "gpu", "type")) == gke.GPU_TYPE
    )


def _priority_capacity(priority: Mapping[str, Any]) -> bool:
    reservations = _mapping(priority.get("reservations"))
    # AnyBestEffort consumes a reservation when one is free and goes on-demand when not.
    specific = _text(reservations.get("affinity")) == "Specific" and any(
        _text(_mapping(entry).get("name")) for entry in _items(reservations.get("specific"))
    )
    return _unwrap(priority.get("spot")) is True or _at(priority, "flexStart", "enabled") is True or specific


def _compute_class_on_demand(resource: Resource) -> list[str]:
    spec = _mapping(resource.inputs.get("spec"))
    priorities = [_mapping(p) for p in _items(spec.get("priorities"))]
    if not any(_is_a4_priority(p) for p in priorities):
        return []
    problems = [
        f"{_label(resource)}: priority {index} asks for A4 without spot, flexStart or a Specific reservation: "
        "that is on-demand, which A4 does not offer"
        for index, priority in enumerate(priorities)
        if _is_a4_priority(priority) and not _priority_capacity(priority)
    ]
    unsatisfiable = _unwrap(spec.get("whenUnsatisfiable"))
    if unsatisfiable != "DoNotScaleUp" and not isinstance(unsatisfiable, Unknown):
        problems.append(
            f"{_label(resource)}: whenUnsatisfiable is {unsatisfiable!r}; set DoNotScaleUp, "
            "or GKE falls back to on-demand nodes when no priority can be met"
        )
    return problems


def no_on_demand_a4(resource: Resource, facts: StackFacts) -> list[str]:
    """B200 pods name a capacity mode; A4 ComputeClasses never fall back to on-demand."""
    if _is_kind(resource, gke.GROUP, "ComputeClass"):
        return _compute_class_on_demand(resource)
    spec = pod_spec(resource)
    if spec is None:
        return []
    selector = _node_selector(spec)
    # With a compute class the class decides the capacity; it is checked on the class.
    if gke.COMPUTE_CLASS_LABEL in selector or _text(selector.get(gke.ACCELERATOR_LABEL)) != gke.GPU_TYPE:
        return []
    if capacity_mode(selector) is not None:
        return []
    if _text(selector.get(gke.RESERVATION_AFFINITY_LABEL)) == "specific":
        return [f"{_label(resource)}: selects a specific reservation but names none; set nodeSelector {gke.RESERVATION_NAME_LABEL}"]
    return [
        f"{_label(resource)}: selects {gke.GPU_TYPE} nodes with no capacity selector, which is on-demand and A4 has none; "
        f"select {gke.SPOT_LABEL}: 'true', {gke.FLEX_START_LABEL}: 'true', "
        f"or {gke.RESERVATION_AFFINITY_LABEL}: specific with {gke.RESERVATION_NAME_LABEL}"
    ]


# --- no public exposure ------------------------------------------------------------------

ALLOW_PUBLIC_EXPOSURE = Switch(
    "allowPublicExposure",
    "Opt in to internet-facing load balancers (LoadBalancer/NodePort Services, external Gateways and Ingresses). "
    "Unset: the stack's own llm:allowPublicExposure decides, false when that is unset too.",
)


def _public_entry(resource: Resource) -> str | None:
    spec = _mapping(resource.inputs.get("spec"))
    annotations = _mapping(_at(resource.inputs, "metadata", "annotations"))
    if _is_kind(resource, "core", "Service"):
        service_type = _text(spec.get("type"))
        internal = any(_text(annotations.get(key)) == "Internal" for key in INTERNAL_LOAD_BALANCER_ANNOTATIONS)
        if service_type == "NodePort" or (service_type == "LoadBalancer" and not internal):
            return f"a {service_type} Service"
    if _is_kind(resource, "gateway.networking.k8s.io", "Gateway"):
        gateway_class = _text(spec.get("gatewayClassName"))
        if gateway_class in EXTERNAL_GATEWAY_CLASSES:
            return f"an external Gateway (class {gateway_class})"
    if _is_kind(resource, "networking.k8s.io", "Ingress"):
        ingress_class = _text(spec.get("ingressClassName")) or _text(annotations.get("kubernetes.io/ingress.class"))
        if ingress_class != INTERNAL_INGRESS_CLASS and not _is_unknown(spec.get("ingressClassName")):
            return f"an external Ingress (class {ingress_class or 'default: gce'})"
    return None


def no_public_exposure(resource: Resource, facts: StackFacts) -> list[str]:
    """Nothing faces the internet unless the stack opts in."""
    entry = _public_entry(resource)
    if entry is None or facts.allow_public_exposure:
        return []
    return [
        f"{_label(resource)} is {entry}: it exposes the model to the internet; keep it internal, "
        "or opt the stack in with llm:allowPublicExposure: true"
    ]


# --- secrets never in plain text ---------------------------------------------------------


def credential_name(name: str) -> bool:
    """True when a variable or flag name says it holds a credential (HF_TOKEN, --api-key, apiKey)."""
    words = re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", name)
    return any(word.lower() in CREDENTIAL_WORDS for word in words)


def _literal(value: Any) -> str | None:
    """A plain-text value, or None when there is none (empty, a variable reference, unknown)."""
    text = _text(value)
    if not text or VARIABLE_REFERENCE.match(text):
        return None
    return text


def _looks_like_credential(text: str) -> bool:
    return text.startswith(CREDENTIAL_PREFIXES) or CREDENTIAL_SHAPE.search(text) is not None


def _marked(value: Any) -> bool:
    if isinstance(value, (SecretMarker, Unknown)):
        return True
    return isinstance(value, Mapping) and all(isinstance(item, (SecretMarker, Unknown)) for item in value.values())


def _secret_fields(resource: Resource, facts: StackFacts) -> list[str]:
    if not facts.secrets_marked or not _is_kind(resource, "core", "Secret"):
        return []
    return [
        f"{_label(resource)}: {field} is plain text; build it from a Pulumi secret "
        "(`pulumi config set --secret`, or pulumi.Output.secret) so state and previews never show it"
        for field in ("data", "stringData")
        if resource.inputs.get(field) is not None and not _marked(resource.inputs[field])
    ]


def _env_problems(resource: Resource, container: str, env: Mapping[str, Any]) -> list[str]:
    name = _text(env.get("name")) or "?"
    where = f"{_label(resource)}: container {container} env {name}"
    literal = _literal(env.get("value"))
    if literal is not None and (credential_name(name) or _looks_like_credential(literal)):
        return [f"{where} holds a credential in plain text; read it with valueFrom.secretKeyRef"]
    value_from = _mapping(env.get("valueFrom"))
    if credential_name(name) and value_from and "secretKeyRef" not in value_from:
        return [f"{where} reads a credential from outside a Secret; use valueFrom.secretKeyRef"]
    return []


def _argument_problems(resource: Resource, container: str, field: str, items: list[Any]) -> list[str]:
    where = f"{_label(resource)}: container {container} {field}"
    problems: list[str] = []
    texts = [_text(item) or "" for item in items]
    for index, text in enumerate(texts):
        flag, has_value, value = text.partition("=")
        following = texts[index + 1] if index + 1 < len(texts) else ""
        if _looks_like_credential(text):
            problems.append(f"{where}[{index}] holds what looks like a token; pass it through a Secret-backed env variable")
        elif text.startswith("-") and credential_name(flag):
            given = value if has_value else ("" if following.startswith("-") else following)
            if _literal(given) is not None:
                problems.append(f"{where}[{index}] passes {flag} a literal value; pass $(VARIABLE) from a Secret-backed env")
    return problems


def secrets_never_in_plain_text(resource: Resource, facts: StackFacts) -> list[str]:
    """Secret data is a Pulumi secret; pods read credentials from Secrets, never from literals."""
    problems = _secret_fields(resource, facts)
    spec = pod_spec(resource)
    if spec is None:
        return problems
    for container in _containers(spec):
        name = _text(container.get("name")) or "?"
        for env in _items(container.get("env")):
            problems += _env_problems(resource, name, _mapping(env))
        for field in ("command", "args"):
            problems += _argument_problems(resource, name, field, _items(container.get(field)))
    return problems


# --- the model cache is mounted read-only ------------------------------------------------


def is_cache_reader(claim: str | None) -> bool:
    """The replicas' claim on the model cache (not the download Job's writer)."""
    return claim is not None and claim.startswith(MODEL_CACHE_PREFIX) and not claim.endswith(MODEL_CACHE_WRITER_SUFFIX)


def _writable(read_only: Any) -> bool:
    return _unwrap(read_only) is not True and not _is_unknown(read_only)


def model_cache_read_only(resource: Resource, facts: StackFacts) -> list[str]:
    """Replicas mount the model cache read-only, from a ReadOnlyMany claim."""
    if _is_kind(resource, "core", "PersistentVolumeClaim"):
        name = _text(_at(resource.inputs, "metadata", "name"))
        modes = _at(resource.inputs, "spec", "accessModes")
        if is_cache_reader(name) and not isinstance(modes, Unknown) and _items(modes) != ["ReadOnlyMany"]:
            return [f"{_label(resource)}: accessModes are {_items(modes)}; the model cache's claim must be [ReadOnlyMany]"]
        return []
    spec = pod_spec(resource)
    if spec is None:
        return []
    problems: list[str] = []
    for volume in map(_mapping, _items(spec.get("volumes"))):
        claim = _mapping(volume.get("persistentVolumeClaim"))
        if not is_cache_reader(_text(claim.get("claimName"))):
            continue
        name = _text(volume.get("name"))
        if _writable(claim.get("readOnly")):
            problems.append(f"{_label(resource)}: volume {name} mounts the model cache writable; set persistentVolumeClaim.readOnly: true")
        problems += [
            f"{_label(resource)}: container {_text(container.get('name'))} mounts {name} at {_text(mount.get('mountPath'))} "
            "writable; set readOnly: true"
            for container in _containers(spec)
            for mount in map(_mapping, _items(container.get("volumeMounts")))
            if _text(mount.get("name")) == name and _writable(mount.get("readOnly"))
        ]
    return problems


# --- private nodes and a closed control plane --------------------------------------------

ALLOW_PUBLIC_NODES = Switch(
    "allowPublicNodes",
    "Allow GKE nodes with public IPs. Unset: the stack's own llm:allowPublicNodes decides, false when that is unset too.",
)
ALLOW_OPEN_CONTROL_PLANE = Switch(
    "allowOpenControlPlane",
    "Allow a control-plane IP endpoint any address can reach. Unset: the stack's llm:allowOpenControlPlane decides.",
)


def private_cluster(resource: Resource, facts: StackFacts) -> list[str]:
    """Nodes without public IPs, and a control plane reached through its DNS endpoint or from named networks only."""
    if resource.type != CLUSTER:
        return []
    private = _mapping(_unwrap(resource.inputs.get("privateClusterConfig")))
    problems = []
    if _unwrap(private.get("enablePrivateNodes")) is not True and not facts.allow_public_nodes:
        problems.append(f"{_label(resource)}: nodes get public IPs; keep llm:cluster.privateNodes true, or opt in with allowPublicNodes")
    networks = _items(_at(resource.inputs, "masterAuthorizedNetworksConfig", "cidrBlocks"))
    if _unwrap(private.get("enablePrivateEndpoint")) is not True and not networks and not facts.allow_open_control_plane:
        problems.append(
            f"{_label(resource)}: the control plane's IP endpoint is open to every address; set llm:cluster.authorizedNetworks, "
            "use the DNS endpoint only, or opt in with allowOpenControlPlane"
        )
    return problems


# --- deletion protection on production ---------------------------------------------------

PRODUCTION = Switch(
    "production",
    "Treat the stack as production: its GKE cluster must keep deletion protection. "
    "Unset: the stack's own llm:production decides, false when that is unset too.",
)


def deletion_protection_on_production(resource: Resource, facts: StackFacts) -> list[str]:
    """A production stack's GKE cluster refuses deletion."""
    if resource.type != CLUSTER or not facts.production:
        return []
    # Unset is the provider's default: protected.
    if _unwrap(resource.inputs.get("deletionProtection")) is not False:
        return []
    return [f"{_label(resource)}: deletionProtection is false on a production stack; set llm:cluster.deletionProtection: true"]


# --- private buckets ---------------------------------------------------------------------

BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_MEMBER_TYPES = frozenset(
    {"gcp:storage/bucketIAMMember:BucketIAMMember", "gcp:storage/bucketIAMBinding:BucketIAMBinding", "gcp:storage/bucketACL:BucketACL"}
)
# IAM principals meaning anyone, signed in or not (cloud.google.com/iam/docs/principals-overview).
PUBLIC_PRINCIPALS = ("allUsers", "allAuthenticatedUsers")


def _grantees(resource: Resource) -> list[str]:
    """Who a bucket grant or ACL names: IAM members, ``ROLE:entity`` ACL entries, a predefined ACL."""
    inputs = resource.inputs
    found = [_text(inputs.get("member")), *(_text(m) for m in _items(inputs.get("members")))]
    found += [_text(entry) for entry in _items(inputs.get("roleEntities"))] + [_text(inputs.get("predefinedAcl"))]
    return [text for text in found if text]


def private_buckets(resource: Resource, facts: StackFacts) -> list[str]:
    """Buckets hold batches of prompts and answers: reached through IAM only, never by the public."""
    if resource.type == BUCKET:
        problems = []
        prevention, uniform = resource.inputs.get("publicAccessPrevention"), resource.inputs.get("uniformBucketLevelAccess")
        if _text(prevention) != "enforced" and not _is_unknown(prevention):
            problems.append(f"{_label(resource)}: public access prevention is not enforced; set publicAccessPrevention: enforced")
        if _unwrap(uniform) is not True and not _is_unknown(uniform):
            problems.append(f"{_label(resource)}: object ACLs could grant access past IAM; set uniformBucketLevelAccess: true")
        return problems
    if resource.type in BUCKET_MEMBER_TYPES:
        public = sorted({p for p in PUBLIC_PRINCIPALS for grantee in _grantees(resource) if p.lower() in grantee.lower()})
        if public:
            return [f"{_label(resource)}: grants {', '.join(public)} access to a bucket; grant named service accounts or groups only"]
    return []


# --- every resource carries the project's labels -----------------------------------------


def takes_labels(resource: Resource) -> bool:
    """GCP resources with a labels field, and Kubernetes objects the program writes itself."""
    if resource.type.startswith("gcp:"):
        return resource.type not in GCP_WITHOUT_LABELS
    if kubernetes_kind(resource.type) is None or resource.type.startswith(THIRD_PARTY_MANIFESTS):
        return False  # providers, components, and the chart and manifest-file resources themselves
    return not any(parent.startswith(THIRD_PARTY_MANIFESTS) for parent in parent_types(resource.urn))


def labels_of(resource: Resource) -> Any:
    if resource.type in GCP_LABEL_FIELDS:
        return _unwrap(resource.inputs.get(GCP_LABEL_FIELDS[resource.type]))
    if resource.type.startswith("gcp:"):
        return _unwrap(resource.inputs.get("labels"))
    return _at(resource.inputs, "metadata", "labels")


def project_labels(resource: Resource, facts: StackFacts) -> list[str]:
    """GCP resources and Kubernetes objects carry app, managed-by and stack."""
    if not takes_labels(resource):
        return []
    labels = labels_of(resource)
    if isinstance(labels, Unknown):
        return []
    present = {key for key, value in _mapping(labels).items() if _text(value) or _is_unknown(value)}
    missing = [key for key in PROGRAM_LABELS if key not in present]
    if not missing:
        return []
    return [f"{_label(resource)}: missing label(s) {', '.join(missing)}; give it the stack's labels (Stack.labels)"]


# --- the rules, and running them ---------------------------------------------------------

RULES: tuple[Rule, ...] = (
    Rule(
        "gpu-pods-take-whole-a4-nodes",
        "GPU pods request exactly one A4 node's 8 nvidia.com/gpu (requests = limits) and select A4: "
        f"the {gke.GPU_TYPE} accelerator or a ComputeClass of the stack.",
        gpu_pods_take_whole_a4_nodes,
        needs_stack=True,
    ),
    Rule(
        "no-on-demand-a4",
        "A4 has no on-demand capacity: B200 pods select Spot, Flex-start or a specific reservation, "
        "and A4 ComputeClasses never fall back to on-demand.",
        no_on_demand_a4,
    ),
    Rule(
        "no-public-exposure",
        "No internet-facing Service, Gateway or Ingress unless the stack opts in (allowPublicExposure).",
        no_public_exposure,
        switches=(ALLOW_PUBLIC_EXPOSURE,),
    ),
    Rule(
        "secrets-never-in-plain-text",
        "Kubernetes Secret data is a Pulumi secret, and pods read credentials from Secrets, never from literal env values or arguments.",
        secrets_never_in_plain_text,
        reads_secret_markers=True,
    ),
    Rule(
        "model-cache-read-only",
        "Replicas mount the model cache read-only, from a ReadOnlyMany claim.",
        model_cache_read_only,
    ),
    Rule(
        "private-cluster",
        "GKE nodes have no public IPs and the control plane's IP endpoint is closed or limited to named networks, "
        "unless the stack opts in (allowPublicNodes, allowOpenControlPlane).",
        private_cluster,
        switches=(ALLOW_PUBLIC_NODES, ALLOW_OPEN_CONTROL_PLANE),
    ),
    Rule(
        "deletion-protection-on-production",
        "The GKE cluster of a production stack keeps deletion protection on.",
        deletion_protection_on_production,
        switches=(PRODUCTION,),
    ),
    Rule(
        "private-buckets",
        "Cloud Storage buckets enforce public access prevention and uniform bucket-level access, and no grant names allUsers "
        "or allAuthenticatedUsers.",
        private_buckets,
    ),
    Rule(
        "project-labels",
        "GCP resources that take labels and every Kubernetes object carry the labels app, managed-by and stack.",
        project_labels,
    ),
)


def compute_classes(resources: Iterable[Resource]) -> frozenset[str]:
    """The names of the stack's ComputeClasses."""
    return frozenset(
        name
        for resource in resources
        if _is_kind(resource, gke.GROUP, "ComputeClass")
        for name in [_text(_at(resource.inputs, "metadata", "name")) or resource.name]
    )


def switch(key: str, pack_config: Mapping[str, Any], stack_config: Mapping[str, Any], namespace: str) -> bool:
    """A stack's opt-in: the policy config when it sets ``key``, else ``<namespace>:<key>`` of the stack config.

    The policy config (``--policy-pack-config`` or a Pulumi Cloud policy group)
    lets whoever runs the pack pin the answer; without it the pack follows the
    same ``llm:`` key the program validates, which the Pulumi CLI hands every
    policy pack with the rest of the stack's config.
    """
    if key in pack_config:
        return pack_config[key] is True
    value = stack_config.get(f"{namespace}:{key}")
    return str(value).strip().lower() == "true"
