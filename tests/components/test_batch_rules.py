"""The batch runner's objects on a hand-made spec, and ``Batch`` run alone under the mock engine."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from functools import cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s
import pytest

from components.batch import (
    TOKEN_URL,
    Batch,
    install_command,
    python_index,
    runner_code,
    runner_deployment,
    runner_environment,
    runner_scaled_object,
    worker_resources,
)
from components.credentials import SecretRef
from plan.stack import BatchSpec, plan_stack
from render.engine import Render
from stacks.settings import StackSettings
from tests.components.alone import registered
from tests.http_stand_in import serving

LABELS = {"team": "ml", "stack": "dev"}
API_KEY = SecretRef("api-key")
KEDA = "serviceAccount:keda-operator@example-project.iam.gserviceaccount.com"


@cache
def planned() -> BatchSpec:
    """A batch stack's plan: the expected cold start is the plan's own (plan/cold_start_estimate.py)."""
    settings = StackSettings.model_validate({"project": "example-project", "autoscaling": {"enabled": True}, "batch": {"enabled": True}})
    batch = plan_stack(settings, "dev").batch
    assert batch is not None
    return batch


def spec(**changes: object) -> BatchSpec:
    """The plan's spec with values of its own, so that each shows where it lands."""
    chosen = {
        "project": "example-project",
        "region": "us-central1",
        "namespace": "serving",
        "labels": LABELS,
        "bucket": "example-batches",
        "finished_retention_days": 9,
        "runner_cpu": "500m",
        "runner_memory": "768Mi",
        "image": "python:3.12-slim",
        "deployment": "vllm-a",
        "serving_url": "http://vllm-a.serving.svc.cluster.local:8123/v1",
        "served_model": "qwen",
        "concurrency_per_replica": 640,
        "max_replicas": 6,
        "workers": 3,
        "poll_seconds": 23,
        "idle_tail_seconds": 443,
        "price_per_replica_hour": 41.5,
        "estimated_usd_per_million_tokens": 0.25,
        "account_id": "llm-dev-batch",
        **changes,
    }
    return replace(planned(), **chosen)  # type: ignore[arg-type]


def test_the_runner_is_told_everything_by_the_names_of_batch_layout() -> None:
    env = runner_environment(spec(), API_KEY)
    values = {e["name"]: e.get("value") for e in env}
    cold_start = planned().expected_cold_start
    assert cold_start is not None
    assert values == {
        "BATCH_BUCKET": "example-batches",
        "SERVING_URL": "http://vllm-a.serving.svc.cluster.local:8123/v1",
        "SERVED_MODEL": "qwen",
        "MODEL_TASK": "generate",
        "REPLICAS_DEPLOYMENT": "vllm-a",
        "CONCURRENCY_PER_REPLICA": "640",
        "METRICS_PORT": "9090",
        "RUNNER_WORKERS": "3",
        "PRICE_PER_REPLICA_HOUR": "41.5",
        "ESTIMATED_USD_PER_MILLION_TOKENS": "0.25",
        "EXPECTED_COLD_START": values["EXPECTED_COLD_START"],
        "IDLE_TAIL_SECONDS": "443",
        # The grace (60 s) less 10 s to hand the claim back.
        "DRAIN_SECONDS": "50",
        "PYTHONPATH": "/opt/runner:/opt/deps",
        "PYTHONUNBUFFERED": "1",
        "POD_NAMESPACE": None,
        "VLLM_API_KEY": None,
    }
    assert json.loads(str(values["EXPECTED_COLD_START"])) == {"phases": cold_start.as_output()["phases"]}
    assert env[-2:] == [
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "api-key", "key": API_KEY.key}}},
    ]


def test_what_the_stack_does_not_know_is_left_out_of_the_environment() -> None:
    unknown = spec(price_per_replica_hour=None, estimated_usd_per_million_tokens=None, expected_cold_start=None)
    names = [e["name"] for e in runner_environment(unknown, None)]
    assert "PRICE_PER_REPLICA_HOUR" not in names and "ESTIMATED_USD_PER_MILLION_TOKENS" not in names
    assert "EXPECTED_COLD_START" not in names and "VLLM_API_KEY" not in names and names[-1] == "POD_NAMESPACE"


@pytest.mark.parametrize(
    ("cpu", "memory", "workers", "expected"),
    [
        ("500m", "768Mi", 3, {"cpu": "1500m", "memory": "2304Mi"}),
        ("1", "1Gi", 4, {"cpu": "4", "memory": "4096Mi"}),
        ("250m", "512Mi", 4, {"cpu": "1", "memory": "2048Mi"}),
    ],
)
def test_a_pod_is_sized_for_its_workers(cpu: str, memory: str, workers: int, expected: dict[str, str]) -> None:
    assert worker_resources(cpu, memory, workers) == expected


def test_pip_installs_the_pinned_requirements_from_the_stacks_mirror_with_a_metadata_token() -> None:
    index = python_index(project="example-project", region="us-central1", repository="pypi")
    assert index == "https://us-central1-python.pkg.dev/example-project/pypi/simple/"
    shell, flag, script = install_command(index)
    assert (shell, flag) == ("sh", "-c")
    assert "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token" in script
    assert "'Metadata-Flavor': 'Google'" in script and "['access_token']" in script
    assert 'PIP_INDEX_URL="https://oauth2accesstoken:$TOKEN@us-central1-python.pkg.dev/example-project/pypi/simple/" ' in script
    assert script.endswith(
        "exec pip install --no-cache-dir --quiet --disable-pip-version-check --require-hashes --target /opt/deps"
        " -r /opt/runner/workloads/batch/requirements.txt"
    )


def test_the_runner_starts_at_zero_from_a_stock_image_with_its_code_and_dependencies() -> None:
    code = runner_code()
    manifest = runner_deployment(spec(), code, None)
    assert manifest["metadata"] == {"name": "batch-runner", "namespace": "serving", "labels": LABELS}
    body = manifest["spec"]
    assert body["replicas"] == 0 and body["selector"] == {"matchLabels": {"app.kubernetes.io/name": "batch-runner"}}
    template = body["template"]
    assert template["metadata"] == {
        "labels": {"app.kubernetes.io/name": "batch-runner"},
        "annotations": {"batch.llm-serving/code": code.digest()},
    }
    pod = template["spec"]
    assert (pod["serviceAccountName"], pod["terminationGracePeriodSeconds"]) == ("batch-runner", 60)
    assert pod["volumes"] == [code.volume(), {"name": "deps", "emptyDir": {}}]
    amounts = {"cpu": "1500m", "memory": "2304Mi", "ephemeral-storage": "1Gi"}
    (install,) = pod["initContainers"]
    assert install == {
        "name": "install-dependencies",
        "image": "python:3.12-slim",
        "command": install_command("https://us-central1-python.pkg.dev/example-project/pypi/simple/"),
        "resources": {"requests": amounts, "limits": amounts},
        "volumeMounts": [
            {"name": "batch-runner-code", "mountPath": "/opt/runner", "readOnly": True},
            {"name": "deps", "mountPath": "/opt/deps", "readOnly": False},
        ],
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    (runner,) = pod["containers"]
    assert runner == {
        "name": "batch-runner",
        "image": "python:3.12-slim",
        "command": ["python", "-m", "workloads.batch", "run"],
        "env": runner_environment(spec(), None),
        "ports": [{"name": "metrics", "containerPort": 9090, "protocol": "TCP"}],
        "resources": {"requests": amounts, "limits": amounts},
        "volumeMounts": [
            {"name": "batch-runner-code", "mountPath": "/opt/runner", "readOnly": True},
            {"name": "deps", "mountPath": "/opt/deps", "readOnly": True},
        ],
        "securityContext": {"allowPrivilegeEscalation": False},
    }


def test_one_runner_per_input_waiting_and_never_one_removed_by_the_hpa() -> None:
    assert runner_scaled_object(spec()) == {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "batch-runner", "namespace": "serving", "labels": LABELS},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "batch-runner"},
            "minReplicaCount": 0,
            "maxReplicaCount": 3,
            "pollingInterval": 23,
            "cooldownPeriod": 300,
            "fallback": {"failureThreshold": 3, "replicas": 0},
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"selectPolicy": "Disabled"}}}},
            "triggers": [
                {
                    "type": "gcp-storage",
                    "name": "batch-input",
                    "metadata": {
                        "bucketName": "example-batches",
                        "blobPrefix": "input/",
                        "targetObjectCount": "1",
                        "activationTargetObjectCount": "0",
                    },
                    "authenticationRef": {"name": "batch-bucket"},
                }
            ],
        },
    }


@pytest.mark.parametrize("seconds", [5, 61])
def test_the_runners_scaler_polls_at_its_setting(seconds: int) -> None:
    assert runner_scaled_object(spec(poll_seconds=seconds))["spec"]["pollingInterval"] == seconds


def batch_alone(protect: bool = False) -> Render:
    def program() -> None:
        api = gcp.projects.Service("api", service="storage.googleapis.com")
        keda = k8s.core.v1.Namespace("keda")
        Batch(
            "batch",
            spec(protect=protect),
            keda_identity=KEDA,
            keda=keda,
            api_key=API_KEY,
            kubernetes=k8s.Provider("cluster"),
            opts=pulumi.ResourceOptions(depends_on=[api]),
        )

    return registered(program)


def test_the_bucket_is_private_regional_and_deletes_finished_inputs_after_their_retention() -> None:
    render = batch_alone()
    bucket = render.one("gcp:storage/bucket:Bucket", "batch")
    inputs = bucket.inputs
    assert (inputs["name"], inputs["project"], inputs["location"]) == ("example-batches", "example-project", "US-CENTRAL1")
    assert inputs["uniformBucketLevelAccess"] is True and inputs["publicAccessPrevention"] == "enforced"
    assert inputs["forceDestroy"] is False and inputs["labels"] == LABELS
    assert inputs["lifecycleRules"] == [{"action": {"type": "Delete"}, "condition": {"age": 9, "matchesPrefixes": ["finished/"]}}]
    assert not bucket.protect and batch_alone(protect=True).one("gcp:storage/bucket:Bucket").protect


def test_the_runner_reads_and_writes_the_bucket_as_its_own_identity_and_keda_only_reads_it() -> None:
    render = batch_alone()
    found = render.one("gcp:serviceaccount/account:Account", "batch-runner")
    assert found.ignore_changes == ("accountId",)
    account = found.inputs
    assert account == {
        "accountId": "llm-dev-batch",
        "displayName": "Batch runner (reads and writes the batch bucket)",
        "project": "example-project",
    }
    runner = "serviceAccount:llm-dev-batch@example-project.iam.gserviceaccount.com"
    objects = render.one("gcp:storage/bucketIAMMember:BucketIAMMember", "batch-runner-objects").inputs
    assert objects == {"bucket": "example-batches", "role": "roles/storage.objectUser", "member": runner}
    keda = render.one("gcp:storage/bucketIAMMember:BucketIAMMember", "batch-keda-reads").inputs
    assert keda == {"bucket": "example-batches", "role": "roles/storage.objectViewer", "member": KEDA}
    acts = render.one("gcp:serviceaccount/iAMMember:IAMMember", "batch-runner-workload-identity").inputs
    assert acts["member"] == "serviceAccount:example-project.svc.id.goog[serving/batch-runner]"
    packages = render.one("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember", "batch-runner-packages").inputs
    assert packages == {
        "project": "example-project",
        "location": "us-central1",
        "repository": "pypi",
        "role": "roles/artifactregistry.reader",
        "member": runner,
    }
    repository = render.one("gcp:artifactregistry/repository:Repository", "pypi").inputs
    assert repository == {
        "repositoryId": "pypi",
        "project": "example-project",
        "location": "us-central1",
        "format": "PYTHON",
        "mode": "REMOTE_REPOSITORY",
        "description": "pypi.org, cached in the stack's region for the batch runner",
        "remoteRepositoryConfig": {"pythonRepository": {"publicRepository": "PYPI"}},
        "labels": LABELS,
    }
    service_account = render.one("kubernetes:core/v1:ServiceAccount", "batch-runner").inputs
    assert service_account["metadata"]["annotations"] == {"iam.gke.io/gcp-service-account": runner.removeprefix("serviceAccount:")}
    assert service_account["metadata"]["namespace"] == "serving"


def test_the_runner_may_get_the_replicas_deployment_and_read_how_they_started() -> None:
    render = batch_alone()
    role = render.one("kubernetes:rbac.authorization.k8s.io/v1:Role", "batch-runner").inputs
    assert role["metadata"] == {"name": "batch-runner", "namespace": "serving", "labels": LABELS}
    assert role["rules"] == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["vllm-a"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    ]
    binding = render.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding", "batch-runner").inputs
    assert binding["metadata"] == {"name": "batch-runner", "namespace": "serving", "labels": LABELS}
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "batch-runner"}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "batch-runner", "namespace": "serving"}]


def test_the_runner_starts_after_its_account_access_code_and_grants_and_keeps_kedas_count() -> None:
    render = batch_alone()
    runner = render.one("kubernetes:apps/v1:Deployment", "batch-runner")
    assert runner.ignore_changes == ("spec.replicas",)
    code = render.one("kubernetes:core/v1:ConfigMap", "batch-runner-code")
    assert code.inputs["metadata"] == {"name": "batch-runner-code", "namespace": "serving", "labels": LABELS}
    assert code.inputs["data"] == runner_code().files()
    for earlier in (
        render.one("kubernetes:core/v1:ServiceAccount", "batch-runner"),
        render.one("kubernetes:rbac.authorization.k8s.io/v1:Role"),
        render.one("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"),
        code,
        render.one("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember"),
        render.one("gcp:storage/bucketIAMMember:BucketIAMMember", "batch-runner-objects"),
        render.one("gcp:serviceaccount/iAMMember:IAMMember"),
    ):
        assert earlier.urn in runner.dependencies, earlier.name
    monitoring = render.one("kubernetes:monitoring.googleapis.com/v1:PodMonitoring", "batch-runner").inputs
    assert monitoring["metadata"] == {"name": "batch-runner", "namespace": "serving", "labels": LABELS}
    assert monitoring["spec"] == {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "batch-runner"}},
        "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s"}],
    }


def test_kedas_objects_wait_for_keda_and_the_scaler_for_the_runner_and_kedas_read() -> None:
    render = batch_alone()
    keda = render.one("kubernetes:core/v1:Namespace", "keda").urn
    authentication = render.one("kubernetes:keda.sh/v1alpha1:TriggerAuthentication", "batch-bucket")
    assert authentication.inputs["metadata"] == {"name": "batch-bucket", "namespace": "serving", "labels": LABELS}
    assert authentication.inputs["spec"] == {"podIdentity": {"provider": "gcp"}} and keda in authentication.dependencies
    scaler = render.one("kubernetes:keda.sh/v1alpha1:ScaledObject", "batch-runner")
    for earlier in (
        keda,
        render.one("kubernetes:apps/v1:Deployment").urn,
        authentication.urn,
        render.one("gcp:storage/bucketIAMMember:BucketIAMMember", "batch-keda-reads").urn,
    ):
        assert earlier in scaler.dependencies


def test_every_child_is_the_components_and_waits_for_what_it_waits_for() -> None:
    render = batch_alone()
    component = render.one("llm:batch:Batch", "batch").urn
    api = render.one("gcp:projects/service:Service").urn
    cluster = render.one("pulumi:providers:kubernetes").urn
    children = [r for r in render.resources if r.parent == component]
    assert api in render.one("llm:batch:Batch").dependencies
    assert len(children) == 15
    for child in children:
        assert api in child.dependencies, child.name
        assert child.provider.startswith(cluster) == child.type.startswith("kubernetes:"), child.name


def test_the_runners_kubernetes_account_is_named_for_it_with_the_stacks_labels_and_its_deployment_gets_the_api_key() -> None:
    render = batch_alone()
    metadata = render.one("kubernetes:core/v1:ServiceAccount", "batch-runner").inputs["metadata"]
    assert (metadata["name"], metadata["labels"]) == ("batch-runner", LABELS)
    runner = render.one("kubernetes:apps/v1:Deployment", "batch-runner").inputs
    env = runner["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "api-key", "key": API_KEY.key}}} in env


def test_the_install_step_fetches_the_token_from_the_metadata_server_and_hands_it_to_pip(tmp_path: Path) -> None:
    """The install command under sh: its token snippet against a stand-in metadata server, pip a stand-in that logs."""

    class Metadata(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            google = self.headers.get("Metadata-Flavor") == "Google"
            body = json.dumps({"access_token": "ya29.token", "expires_in": 3599}).encode() if google else b"{}"
            self.send_response(200 if google else 403)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "python").symlink_to(sys.executable)
    (tools / "pip").write_text('#!/bin/sh\necho "index $PIP_INDEX_URL"\necho "pip $*"\n')
    (tools / "pip").chmod(0o755)
    _, _, script = install_command("https://us-central1-python.pkg.dev/example-project/pypi/simple/")
    with serving(Metadata) as url:
        local = script.replace(TOKEN_URL, f"{url}/token")
        done = subprocess.run(
            ["sh", "-c", local], env={"PATH": f"{tools}:/usr/bin:/bin"}, capture_output=True, text=True, timeout=60, check=False
        )
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.splitlines()[0] == "index https://oauth2accesstoken:ya29.token@us-central1-python.pkg.dev/example-project/pypi/simple/"
    )
