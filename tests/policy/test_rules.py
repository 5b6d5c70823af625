"""The guardrails over the offline render of every stack: all pass, and each break is caught by its own rule."""

from __future__ import annotations

import copy
import importlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pytest

from components.gateway import GATEWAY_CLASSES
from facts.naming import PROGRAM_LABELS
from plan.stack import plan_stack
from policy.rules import (
    ALLOW_OPEN_CONTROL_PLANE,
    ALLOW_PUBLIC_EXPOSURE,
    ALLOW_PUBLIC_NODES,
    EXTERNAL_GATEWAY_CLASSES,
    GCP_WITHOUT_LABELS,
    PRODUCTION,
    RULES,
    UNKNOWN,
    Resource,
    Rule,
    StackFacts,
    compute_classes,
    credential_name,
    is_cache_reader,
    no_public_exposure,
    switch,
)
from render.engine import Render, reveal
from stacks import settings
from stacks.loading import Stack, StackSecrets
from tests.conftest import STACKS, render_once, render_with, stack_file_config


@dataclass(frozen=True)
class Finding:
    rule: str
    resource: str
    message: str


def check(resources: Sequence[Resource], facts: StackFacts, rules: Iterable[Rule] = RULES) -> list[Finding]:
    """Every finding of ``rules`` over ``resources``, as the pack would report them."""
    return [
        Finding(rule.name, resource.urn or resource.name, message)
        for rule in rules
        for resource in resources
        for message in rule.check(resource, facts)
    ]


DEPLOYMENT = "kubernetes:apps/v1:Deployment"
CLUSTER = "gcp:container/cluster:Cluster"
SECRET = "kubernetes:core/v1:Secret"
SERVICE = "kubernetes:core/v1:Service"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
COMPUTE_CLASS = "kubernetes:cloud.google.com/v1:ComputeClass"
BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
RESERVATION = {"name": "a4-llm-serving"}
FUTURE_RESERVATION = {**RESERVATION, "startTime": "2026-12-01T00:00:00Z", "endTime": "2027-02-01T00:00:00Z", "nodes": 12}
FALLBACK = {"mode": "fallback", "reservation": RESERVATION}
SECRETS = {"hfToken": "hf_x", "apiKey": "sk-not-a-real-key"}


def engine_config(config: Mapping[str, Any]) -> dict[str, str]:
    """Stack config as the CLI hands it to a policy pack (PULUMI_CONFIG): every value a string."""
    return {key: json.dumps(value) if not isinstance(value, str) else value for key, value in config.items()}


@dataclass
class Snapshot:
    """A stack's registrations as rules see them: inputs with secret markers, copied so a test can edit them."""

    resources: list[Resource]
    stack_config: dict[str, str]

    @classmethod
    def of(cls, render: Render, config: Mapping[str, Any]) -> Snapshot:
        resources = [Resource(r.type, r.name, copy.deepcopy(r.inputs), r.urn) for r in render.resources]
        return cls(resources, engine_config(config))

    def inputs(self, type_: str, name: str | None = None) -> dict[str, Any]:
        """The (editable) inputs of the one resource of that type and name."""
        found = [r.inputs for r in self.resources if r.type == type_ and (name is None or r.name == name)]
        assert len(found) == 1, f"expected one {type_} {name or ''}, found {len(found)}"
        assert isinstance(found[0], dict)
        return found[0]

    def reader_claim(self) -> dict[str, Any]:
        (claim,) = (r for r in self.resources if r.type == CLAIM and is_cache_reader(r.inputs["metadata"]["name"]))
        return self.inputs(CLAIM, claim.name)

    def pod(self, type_: str = DEPLOYMENT) -> dict[str, Any]:
        spec: dict[str, Any] = self.inputs(type_)["spec"]["template"]["spec"]
        return spec

    def findings(self, pack_config: Mapping[str, Any] | None = None, **facts: Any) -> list[Finding]:
        stack = StackFacts(
            compute_classes=compute_classes(self.resources),
            allow_public_exposure=switch(ALLOW_PUBLIC_EXPOSURE.key, pack_config or {}, self.stack_config, "llm"),
            production=switch(PRODUCTION.key, pack_config or {}, self.stack_config, "llm"),
            allow_public_nodes=switch(ALLOW_PUBLIC_NODES.key, pack_config or {}, self.stack_config, "llm"),
            allow_open_control_plane=switch(ALLOW_OPEN_CONTROL_PLANE.key, pack_config or {}, self.stack_config, "llm"),
        )
        found: list[Finding] = []
        for rule in RULES:
            # Only the secrets rule judges secret markers; the others read the values, as a live pack does.
            resources = self.resources if rule.reads_secret_markers else [replace(r, inputs=reveal(r.inputs)) for r in self.resources]
            found += check(resources, replace(stack, **facts), [rule])
        return found

    def broken(self, pack_config: Mapping[str, Any] | None = None, **facts: Any) -> set[str]:
        return {finding.rule for finding in self.findings(pack_config, **facts)}


def snapshot(stack: str, secrets: Mapping[str, str] | None = None, **changes: Any) -> Snapshot:
    """The stack rendered with some ``llm:`` keys changed (as ``render_with``), and its config."""
    config = stack_file_config(stack)
    config.update({f"llm:{key}": value for key, value in changes.items()})
    render = render_once(stack, config, secrets)
    return Snapshot.of(render, config)


# --- every stack passes ------------------------------------------------------------------


@pytest.mark.parametrize("stack_name", STACKS)
def test_every_stack_passes_every_rule(stack_name: str) -> None:
    assert snapshot(stack_name).findings() == []


VARIANTS: dict[str, Callable[[], Snapshot]] = {
    "dev with both credentials set": lambda: snapshot("dev", secrets=SECRETS),
    "dev without the cache, downloading with the token": lambda: snapshot("dev", secrets=SECRETS, cache={"enabled": False}),
    "dev on flex-start": lambda: snapshot("dev", capacity={"mode": "flex-start"}),
    "dev on the fallback ComputeClass": lambda: snapshot("dev", capacity=FALLBACK),
    "dev scaled to zero": lambda: snapshot("dev", nodes=0),
    "prod creating its future reservation": lambda: snapshot(
        "prod", capacity={"mode": "reservation", "reservation": {**RESERVATION, "create": FUTURE_RESERVATION}}
    ),
    "gateway exposed after opting in": lambda: snapshot("gateway", gateway={"exposure": "external"}, allowPublicExposure=True),
    "rag's two models through the gateway": lambda: snapshot("rag", routing="gateway", gateway={"chartVersion": "v1.5.0"}),
}


@pytest.mark.parametrize("variant", VARIANTS)
def test_supported_variants_pass_every_rule(variant: str) -> None:
    assert VARIANTS[variant]().findings() == []


# --- each break is caught by its own rule ------------------------------------------------


@dataclass(frozen=True)
class Break:
    rule: str
    make: Callable[[], Snapshot]
    pack_config: Mapping[str, Any] | None = None


def _edited(stack_snapshot: Snapshot, edit: Callable[[Snapshot], None]) -> Snapshot:
    edit(stack_snapshot)
    return stack_snapshot


def _edit(stack: str, edit: Callable[[Snapshot], None], secrets: Mapping[str, str] | None = None, **changes: Any) -> Callable[[], Snapshot]:
    return lambda: _edited(snapshot(stack, secrets, **changes), edit)


def _gpus(count: str) -> Callable[[Snapshot], None]:
    def edit(s: Snapshot) -> None:
        resources = s.pod()["containers"][0]["resources"]
        resources["requests"]["nvidia.com/gpu"] = resources["limits"]["nvidia.com/gpu"] = count

    return edit


def _selector(drop: str = "", add: Mapping[str, str] | None = None) -> Callable[[Snapshot], None]:
    def edit(s: Snapshot) -> None:
        selector = s.pod()["nodeSelector"]
        selector.pop(drop, None)
        selector.update(add or {})

    return edit


def _first_priority(change: Callable[[dict[str, Any]], None]) -> Callable[[Snapshot], None]:
    return lambda s: change(s.inputs(COMPUTE_CLASS)["spec"]["priorities"][0])


def _container(change: Callable[[dict[str, Any]], None]) -> Callable[[Snapshot], None]:
    return lambda s: change(s.pod()["containers"][0])


def _cache_volume(s: Snapshot) -> dict[str, Any]:
    volume: dict[str, Any] = next(v for v in s.pod()["volumes"] if v["name"] == "model-cache")
    return volume


def _plain_string_data(s: Snapshot) -> None:
    s.inputs(SECRET, "hf-token")["stringData"] = {"value": "hf_x"}


BREAKS: dict[str, Break] = {
    "a replica asks for 4 GPUs": Break("gpu-pods-take-whole-a4-nodes", _edit("dev", _gpus("4"))),
    "a replica requests GPUs without limits": Break(
        "gpu-pods-take-whole-a4-nodes", _edit("dev", _container(lambda c: c["resources"]["limits"].pop("nvidia.com/gpu")))
    ),
    "a replica selects no accelerator": Break("gpu-pods-take-whole-a4-nodes", _edit("dev", _selector("cloud.google.com/gke-accelerator"))),
    "a replica names a compute class the stack lacks": Break(
        "gpu-pods-take-whole-a4-nodes",
        _edit(
            "dev",
            _selector(add={"cloud.google.com/compute-class": "h100-somewhere"}),
            capacity=FALLBACK,
        ),
    ),
    "a B200 replica drops its spot selector": Break("no-on-demand-a4", _edit("dev", _selector("cloud.google.com/gke-spot"))),
    "a B200 replica selects a reservation without its name": Break(
        "no-on-demand-a4", _edit("prod", _selector("cloud.google.com/reservation-name"))
    ),
    "an A4 ComputeClass priority that is neither spot, flex-start nor reserved": Break(
        "no-on-demand-a4",
        _edit("dev", _first_priority(lambda p: p.pop("spot")), capacity={"mode": "fallback", "fallback": ["spot", "flex-start"]}),
    ),
    "an A4 ComputeClass reservation taken best-effort": Break(
        "no-on-demand-a4",
        _edit(
            "dev",
            _first_priority(lambda p: p["reservations"].update(affinity="AnyBestEffort")),
            capacity=FALLBACK,
        ),
    ),
    "an A4 ComputeClass that scales up anyway": Break(
        "no-on-demand-a4",
        _edit(
            "dev",
            lambda s: s.inputs(COMPUTE_CLASS)["spec"].update(whenUnsatisfiable="ScaleUpAnyway"),
            capacity=FALLBACK,
        ),
    ),
    "an external gateway the policy config does not allow": Break(
        "no-public-exposure",
        lambda: Snapshot.of(
            render_with("gateway", gateway={"exposure": "external"}, allowPublicExposure=True),
            {**stack_file_config("gateway"), "llm:allowPublicExposure": True},
        ),
        pack_config={"allowPublicExposure": False},
    ),
    "a LoadBalancer Service": Break("no-public-exposure", _edit("dev", lambda s: s.inputs(SERVICE)["spec"].update(type="LoadBalancer"))),
    "a NodePort Service": Break("no-public-exposure", _edit("dev", lambda s: s.inputs(SERVICE)["spec"].update(type="NodePort"))),
    "a Kubernetes Secret with plain-text stringData": Break(
        "secrets-never-in-plain-text", _edit("dev", _plain_string_data, secrets=SECRETS)
    ),
    "a token as a literal env value": Break(
        "secrets-never-in-plain-text", _edit("dev", _container(lambda c: c["env"].append({"name": "HF_TOKEN", "value": "hf_x"})))
    ),
    "a key-shaped env value under any name": Break(
        "secrets-never-in-plain-text", _edit("dev", _container(lambda c: c["env"].append({"name": "EXTRA", "value": "sk-live-0123456789"})))
    ),
    "an API key on the command line": Break(
        "secrets-never-in-plain-text", _edit("dev", _container(lambda c: c["command"].append("--api-key=letmein")))
    ),
    "an API key as the next argument": Break(
        "secrets-never-in-plain-text", _edit("dev", _container(lambda c: c["command"].extend(["--api-key", "letmein"])))
    ),
    "a credential env read from a ConfigMap": Break(
        "secrets-never-in-plain-text",
        _edit(
            "dev",
            _container(lambda c: c["env"].append({"name": "HF_TOKEN", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}})),
        ),
    ),
    "the cache volume mounted writable": Break(
        "model-cache-read-only", _edit("dev", lambda s: _cache_volume(s)["persistentVolumeClaim"].update(readOnly=False))
    ),
    "a cache mount without readOnly": Break(
        "model-cache-read-only",
        _edit("dev", _container(lambda c: next(m for m in c["volumeMounts"] if m["name"] == "model-cache").pop("readOnly"))),
    ),
    "the replicas' cache claim made ReadWriteOnce": Break(
        "model-cache-read-only", _edit("dev", lambda s: s.reader_claim()["spec"].update(accessModes=["ReadWriteOnce"]))
    ),
    "a production cluster without deletion protection": Break(
        "deletion-protection-on-production", _edit("prod", lambda s: s.inputs(CLUSTER).update(deletionProtection=False))
    ),
    "nodes with public IPs": Break(
        "private-cluster", _edit("dev", lambda s: s.inputs(CLUSTER)["privateClusterConfig"].update(enablePrivateNodes=False))
    ),
    "a control plane open to every address": Break(
        "private-cluster", _edit("dev", lambda s: s.inputs(CLUSTER)["privateClusterConfig"].update(enablePrivateEndpoint=False))
    ),
    "dev's unprotected cluster when the policy config marks it production": Break(
        "deletion-protection-on-production", lambda: snapshot("dev"), pack_config={"production": True}
    ),
    "a manifest without the stack label": Break(
        "project-labels", _edit("dev", lambda s: s.inputs(DEPLOYMENT)["metadata"]["labels"].pop("stack"))
    ),
    "a cluster without the app label": Break("project-labels", _edit("dev", lambda s: s.inputs(CLUSTER)["resourceLabels"].pop("app"))),
    "a batch bucket that inherits public access": Break(
        "private-buckets", _edit("batch", lambda s: s.inputs(BUCKET, "batch").update(publicAccessPrevention="inherited"))
    ),
    "a batch bucket with object ACLs": Break(
        "private-buckets", _edit("batch", lambda s: s.inputs(BUCKET, "batch").update(uniformBucketLevelAccess=False))
    ),
    "a batch bucket readable by allUsers": Break(
        "private-buckets", _edit("batch", lambda s: s.inputs(BUCKET_MEMBER, "batch-keda-reads").update(member="allUsers"))
    ),
    "a batch bucket readable by anyone signed in": Break(
        "private-buckets", _edit("batch", lambda s: s.inputs(BUCKET_MEMBER, "batch-runner-objects").update(member="allAuthenticatedUsers"))
    ),
}


@pytest.mark.parametrize("case", BREAKS)
def test_each_break_is_reported_by_exactly_its_rule(case: str) -> None:
    broken = BREAKS[case]
    assert broken.make().broken(broken.pack_config) == {broken.rule}


def test_every_rule_has_a_break() -> None:
    assert {broken.rule for broken in BREAKS.values()} == {rule.name for rule in RULES}


def test_every_finding_names_its_resource_and_the_fix() -> None:
    findings = _edited(snapshot("dev"), _selector("cloud.google.com/gke-spot")).findings()
    assert [(f.rule, f.resource) for f in findings] == [
        ("no-on-demand-a4", "urn:pulumi:dev::llm::llm:serving:ReplicaSet$" + DEPLOYMENT + "::vllm")
    ]
    assert "Deployment vllm" in findings[0].message
    assert "cloud.google.com/gke-spot" in findings[0].message


# --- rule details ------------------------------------------------------------------------


def test_the_stack_opt_in_allows_exposure_and_the_policy_config_can_veto_it() -> None:
    exposed = snapshot("gateway", gateway={"exposure": "external"}, allowPublicExposure=True)
    assert exposed.broken() == set()
    assert exposed.broken({"allowPublicExposure": False}) == {"no-public-exposure"}


def test_an_internal_load_balancer_is_not_public() -> None:
    def internal(s: Snapshot) -> None:
        service = s.inputs(SERVICE)
        service["spec"]["type"] = "LoadBalancer"
        service["metadata"]["annotations"] = {"networking.gke.io/load-balancer-type": "Internal"}

    assert _edited(snapshot("dev"), internal).broken() == set()


@pytest.mark.parametrize(("ingress_class", "public"), [(None, True), ("gce", True), ("gce-internal", False)])
def test_ingresses_are_public_unless_internal(ingress_class: str | None, public: bool) -> None:
    spec = {"ingressClassName": ingress_class} if ingress_class else {}
    ingress = Resource("kubernetes:networking.k8s.io/v1:Ingress", "api", {"metadata": {"name": "api"}, "spec": spec})
    assert bool(no_public_exposure(ingress, StackFacts())) is public


def test_switches_follow_the_policy_config_then_the_stack_config_then_default_to_off() -> None:
    stack_on = {"llm:production": "true"}
    assert switch("production", {"production": False}, stack_on, "llm") is False
    assert switch("production", {"production": True}, {}, "llm") is True
    assert switch("production", {}, stack_on, "llm") is True
    assert switch("production", {}, {}, "llm") is False


def test_a_live_pack_cannot_judge_secret_markers_so_it_leaves_secret_data_alone() -> None:
    plain_text = _edited(snapshot("dev", secrets=SECRETS), _plain_string_data)
    assert plain_text.broken(secrets_marked=False) == set()


@pytest.mark.parametrize("name", ["HF_TOKEN", "VLLM_API_KEY", "--api-key", "apiKey", "DB_PASSWORD", "client-secret"])
def test_credential_names(name: str) -> None:
    assert credential_name(name)


@pytest.mark.parametrize(
    "name", ["--max-num-batched-tokens", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "HF_HUB_OFFLINE", "--kv-cache-dtype"]
)
def test_not_credential_names(name: str) -> None:
    assert not credential_name(name)


def test_an_env_reference_on_the_command_line_is_not_a_credential() -> None:
    edited = _edited(snapshot("dev"), _container(lambda c: c["command"].append("--api-key=$(VLLM_API_KEY)")))
    assert edited.broken() == set()


def test_the_download_job_may_write_its_own_claim() -> None:
    dev = snapshot("dev")
    job = dev.inputs("kubernetes:batch/v1:Job", next(r.name for r in dev.resources if r.name.startswith("download-")))
    claims = [v["persistentVolumeClaim"]["claimName"] for v in job["spec"]["template"]["spec"]["volumes"]]
    assert claims and not any(is_cache_reader(claim) for claim in claims)


def test_gpu_pods_with_an_init_container_count_the_larger_of_the_two() -> None:
    def init_with_gpus(s: Snapshot) -> None:
        gpu = {"nvidia.com/gpu": "8"}
        s.pod()["initContainers"] = [{"name": "warmup", "image": "x", "resources": {"requests": gpu, "limits": gpu}}]

    assert _edited(snapshot("dev"), init_with_gpus).broken() == set()


def test_objects_rendered_from_a_chart_are_exempt_from_the_project_labels() -> None:
    urn = "urn:pulumi:gateway::llm::llm:gateway:InferenceGateway$kubernetes:helm.sh/v4:Chart$kubernetes:apps/v1:Deployment::vllm-epp"
    chart_object = Resource(DEPLOYMENT, "vllm-epp", {"metadata": {"name": "vllm-epp", "labels": {"app": "epp"}}}, urn)
    own_object = replace(chart_object, urn=urn.replace("$kubernetes:helm.sh/v4:Chart", ""))
    assert [f.rule for f in check([chart_object, own_object], StackFacts())] == ["project-labels"]


def test_gcp_types_exempt_from_labels_have_no_labels_field() -> None:
    def arguments(type_token: str) -> set[str]:
        module, name = type_token.split(":")[1].split("/")[0], type_token.split(":")[2]
        args = getattr(importlib.import_module(f"pulumi_gcp.{module}"), f"{name}Args")
        return set(inspect.signature(args.__init__).parameters)

    for type_token in GCP_WITHOUT_LABELS:
        assert not {"labels", "resource_labels"} & arguments(type_token), type_token
    assert "resource_labels" in arguments(CLUSTER)


def test_the_rules_state_the_same_facts_as_the_program() -> None:
    stack = Stack("dev", settings.StackSettings(project="llm-serving-dev"), StackSecrets(None, None))
    assert set(PROGRAM_LABELS) <= set(stack.labels)
    cache = plan_stack(stack.settings, stack.name).cache
    assert cache is not None
    assert is_cache_reader(cache.names.reader)
    assert not is_cache_reader(cache.names.writer)
    assert GATEWAY_CLASSES["external"] in EXTERNAL_GATEWAY_CLASSES
    assert GATEWAY_CLASSES["internal"] not in EXTERNAL_GATEWAY_CLASSES


def test_public_nodes_pass_once_the_stack_opts_in() -> None:
    opted_in = snapshot("dev", cluster={"deletionProtection": False, "privateNodes": False}, allowPublicNodes=True)
    assert "private-cluster" not in opted_in.broken()
    assert "private-cluster" in opted_in.broken(pack_config={"allowPublicNodes": False})


def test_a_public_bucket_is_refused_however_it_is_made_public() -> None:
    (rule,) = [rule for rule in RULES if rule.name == "private-buckets"]
    private = {"name": "b", "uniformBucketLevelAccess": True, "publicAccessPrevention": "enforced"}
    assert rule.check(Resource(BUCKET, "b", private), StackFacts()) == []
    assert rule.check(Resource(BUCKET, "b", {**private, "publicAccessPrevention": "inherited"}), StackFacts())
    assert rule.check(Resource(BUCKET, "b", {**private, "uniformBucketLevelAccess": False}), StackFacts())
    acl = Resource("gcp:storage/bucketACL:BucketACL", "acl", {"bucket": "b", "roleEntities": ["READER:allUsers"]})
    binding = Resource("gcp:storage/bucketIAMBinding:BucketIAMBinding", "all", {"members": ["allAuthenticatedUsers"], "role": "r"})
    named = Resource(BUCKET_MEMBER, "runner", {"member": "serviceAccount:batch-runner@p.iam.gserviceaccount.com", "role": "r"})
    assert [len(rule.check(r, StackFacts())) for r in (acl, binding, named)] == [1, 1, 0]
    # A value a preview does not know yet is not judged.
    assert rule.check(Resource(BUCKET, "b", {**private, "publicAccessPrevention": UNKNOWN}), StackFacts()) == []
