"""The batch path: a bucket of OpenAI Batch API files, and the runner that answers them from the replicas.

An object waiting under ``input/`` wakes the stack: KEDA's gcp-storage scaler counts it on the
replicas' ScaledObject (components/autoscaling.py) and on the runner's own. The runner claims the
file, sends its lines to the replicas' Service and writes the answers back to the bucket
(workloads/batch/layout.py names the prefixes both sides use). Its code is this repository's ``workloads.batch``
package, shipped in a ConfigMap, so the image stays a stock Python; its pinned dependencies are
installed by an init container from the stack's Artifact Registry mirror of PyPI, hashes checked,
so a pod reaches nothing beyond Google's APIs. Pure builders make the manifests; ``Batch`` only
registers them. Design and sources: docs/batch.md.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from components.credentials import SecretRef
from components.manifests import Manifest, guaranteed, scale_fallback
from components.options import child_options, keeping_account_id
from components.programs import Program, program
from components.workload_identity import kubernetes_service_account, let_act_as
from facts.kubernetes import quantity
from facts.naming import NAME_LABEL, PYTHON_REPOSITORY
from plan.stack import BatchSpec
from workloads.batch import layout

RUNNER = layout.RUNNER
CODE = "batch-runner-code"
AUTHENTICATION = "batch-bucket"
# The runner's package and the cold-start parser it measures a wake with (standard library only),
# shipped at the paths they have in this repository, so the pod imports them by the same names.
SHIPPED = ("workloads/__init__.py", "workloads/batch/*.py", "workloads/batch/requirements.txt", "workloads/cold_start/*.py")
# Where the ConfigMap's files appear: the root of the runner's PYTHONPATH.
CODE_ROOT = "/opt/runner"
# Where the init container installs the pinned dependencies (an emptyDir), next on the PYTHONPATH.
DEPS_ROOT = "/opt/deps"
# GKE's metadata server answers a pod's token request as its Google service account (Workload Identity).
TOKEN_URL = "http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token"
REQUIREMENTS = "requirements.txt"
METRICS_PORT_NAME = "metrics"
# Bucket roles: read, write and delete objects, and list them; no bucket settings, no IAM.
OBJECT_USER = "roles/storage.objectUser"
OBJECT_VIEWER = "roles/storage.objectViewer"
# Scale-down of the runner: its last scrape (backlog 0) must reach Managed Prometheus before it goes.
RUNNER_COOLDOWN_SECONDS = 300
# A runner told to stop (SIGTERM, as PID 1 it handles it) lets the open parts' requests finish, then hands
# its claim back; it gives up waiting this long before the kill, to hand the claim back and exit.
RUNNER_GRACE_SECONDS = 60
RUNNER_DRAIN_SECONDS = RUNNER_GRACE_SECONDS - 10


def runner_code() -> Program:
    """The runner's package, its pinned requirements and the cold-start parser, at their repository paths under CODE_ROOT."""
    return program(CODE, SHIPPED, CODE_ROOT)


def code_volumes(code: Program) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The pod's volumes and the runner's mounts: the code, and the installed dependencies, both on the runner's PYTHONPATH."""
    volumes = [code.volume(), {"name": "deps", "emptyDir": {}}]
    mounts = [code.mount(), {"name": "deps", "mountPath": DEPS_ROOT, "readOnly": True}]
    return volumes, mounts


# PyPI, mirrored like the images (components/registry.py): the runner's pinned packages come from here, not the internet.
# Reads its packages (Artifact Registry's reader role, as the nodes have on the image mirrors).
PACKAGE_READER = "roles/artifactregistry.reader"


def python_repository_args(*, project: str, region: str, repository: str, labels: dict[str, str]) -> gcp.artifactregistry.RepositoryArgs:
    return gcp.artifactregistry.RepositoryArgs(
        repository_id=repository,
        project=project,
        location=region,
        format="PYTHON",
        mode="REMOTE_REPOSITORY",
        description="pypi.org, cached in the stack's region for the batch runner",
        remote_repository_config=gcp.artifactregistry.RepositoryRemoteRepositoryConfigArgs(
            python_repository=gcp.artifactregistry.RepositoryRemoteRepositoryConfigPythonRepositoryArgs(public_repository="PYPI")
        ),
        labels=labels,
    )


def python_index(*, project: str, region: str, repository: str) -> str:
    """The repository's simple index, as pip reads it (Artifact Registry's Python endpoint)."""
    return f"https://{region}-python.pkg.dev/{project}/{repository}/simple/"


def bucket_lifecycle_rules(spec: BatchSpec) -> list[gcp.storage.BucketLifecycleRuleArgs]:
    """Finished inputs are deleted after their retention; outputs, errors and reports stay the user's to keep."""
    return [
        gcp.storage.BucketLifecycleRuleArgs(
            action=gcp.storage.BucketLifecycleRuleActionArgs(type="Delete"),
            condition=gcp.storage.BucketLifecycleRuleConditionArgs(age=spec.finished_retention_days, matches_prefixes=[layout.FINISHED]),
        )
    ]


def runner_labels() -> dict[str, str]:
    return {NAME_LABEL: RUNNER}


def deployment_reader(spec: BatchSpec) -> list[dict[str, Any]]:
    """``get`` on the replicas' Deployment (Ready replicas, replica-hours), and the events and logs a cold start is read from."""
    meta = {"name": RUNNER, "namespace": spec.namespace, "labels": spec.labels}
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta,
            "rules": [
                {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": list(spec.deployments), "verbs": ["get"]},
                # How the last replica started, for the batch's report: the replicas' pod names are not known in advance.
                {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
                {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": RUNNER},
            "subjects": [{"kind": "ServiceAccount", "name": RUNNER, "namespace": spec.namespace}],
        },
    ]


def runner_environment(spec: BatchSpec, api_key: SecretRef | None) -> list[dict[str, Any]]:
    """The runner's environment, by the names workloads/batch/layout.py gives it: the one model's fields, or with
    several models their table (each line goes to the model its body.model names)."""
    one = not spec.models
    values: dict[str, str | None] = {
        layout.ENV_BUCKET: spec.bucket,
        layout.ENV_SERVING_URL: spec.serving_url if one else None,
        layout.ENV_SERVED_MODEL: spec.served_model if one else None,
        layout.ENV_MODEL_TASK: spec.model_task if one else None,
        layout.ENV_REPLICAS_DEPLOYMENT: spec.deployment if one else None,
        layout.ENV_CONCURRENCY_PER_REPLICA: str(spec.concurrency_per_replica) if one else None,
        layout.ENV_MODELS: None if one else json.dumps([model.as_env() for model in spec.models], sort_keys=True),
        layout.ENV_METRICS_PORT: str(layout.METRICS_PORT),
        # One input is sent by one pod, so each pod runs the workers that saturate the most replicas.
        layout.ENV_WORKERS: str(spec.workers),
        # Without a price (flex-start with no capacity.pricePerNodeHour) or a reference figure, the report leaves cost out.
        layout.ENV_PRICE_PER_REPLICA_HOUR: None if spec.price_per_replica_hour is None else str(spec.price_per_replica_hour),
        layout.ENV_ESTIMATED_USD_PER_MILLION_TOKENS: (
            None if spec.estimated_usd_per_million_tokens is None else str(spec.estimated_usd_per_million_tokens)
        ),
        # The reservation's bill, reported apart from what a batch adds (estimates.committed).
        layout.ENV_COMMITTED_USD_PER_HOUR: None if spec.committed_usd_per_hour is None else str(round(spec.committed_usd_per_hour, 2)),
        layout.ENV_RESERVATION_HOLDS_EVERY_REPLICA: "true" if spec.reservation_holds_every_replica else None,
        layout.ENV_EXPECTED_COLD_START: (
            None
            if spec.expected_cold_start is None
            else json.dumps({"phases": spec.expected_cold_start.as_output()["phases"]}, sort_keys=True)
        ),
        layout.ENV_IDLE_TAIL_SECONDS: str(spec.idle_tail_seconds),
        layout.ENV_DRAIN_SECONDS: str(RUNNER_DRAIN_SECONDS),
        "PYTHONPATH": f"{CODE_ROOT}:{DEPS_ROOT}",
        "PYTHONUNBUFFERED": "1",
    }
    env: list[dict[str, Any]] = [{"name": name, "value": value} for name, value in values.items() if value is not None]
    env.append({"name": layout.ENV_NAMESPACE, "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}})
    if api_key is not None:
        env.append(api_key.env(layout.ENV_API_KEY))
    return env


def install_command(index: str) -> list[str]:
    """Install the pinned requirements (hashes checked) from the stack's mirror of PyPI, as the runner's identity.

    Artifact Registry takes an access token as the password of user ``oauth2accesstoken``; the URL is
    passed in pip's environment, never on its command line.
    """
    token = (
        "import json, urllib.request; "
        f"request = urllib.request.Request({TOKEN_URL!r}, headers={{'Metadata-Flavor': 'Google'}}); "
        "print(json.load(urllib.request.urlopen(request, timeout=30))['access_token'])"
    )
    host_path = index.removeprefix("https://")
    script = (
        f'TOKEN=$(python -c "{token}") && '
        f'PIP_INDEX_URL="https://oauth2accesstoken:$TOKEN@{host_path}" '
        f"exec pip install --no-cache-dir --quiet --disable-pip-version-check --require-hashes --target {DEPS_ROOT} "
        f"-r {CODE_ROOT}/workloads/batch/{REQUIREMENTS}"
    )
    return ["sh", "-c", script]


# The runner is its container's first process: SIGTERM reaches its handler (docs/batch-runner.md, "Stopping").
RUNNER_COMMAND = ["python", "-m", "workloads.batch", "run"]


def worker_resources(cpu: str, memory: str, workers: int) -> dict[str, str]:
    """One worker's CPU and memory, times the workers in a pod (whole cores, MiB)."""
    millicores = quantity(cpu) * 1000 * workers
    total_cpu = str(int(millicores / 1000)) if millicores % 1000 == 0 else f"{int(millicores)}m"
    return {"cpu": total_cpu, "memory": f"{int(quantity(memory) * workers / 2**20)}Mi"}


def runner_deployment(spec: BatchSpec, code: Program, api_key: SecretRef | None) -> dict[str, Any]:
    """The runner: no replica until KEDA sees an input; a stock Python image running the ConfigMap's package."""
    volumes, mounts = code_volumes(code)
    resources = guaranteed({**worker_resources(spec.runner_cpu, spec.runner_memory, spec.workers), "ephemeral-storage": "1Gi"})
    install = {
        "name": "install-dependencies",
        "image": spec.image,
        "command": install_command(python_index(project=spec.project, region=spec.region, repository=spec.python_repository)),
        "resources": resources,
        "volumeMounts": [{**mount, "readOnly": mount["name"] == code.name} for mount in mounts],
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    container = {
        "name": RUNNER,
        "image": spec.image,
        "command": RUNNER_COMMAND,
        "env": runner_environment(spec, api_key),
        "ports": [{"name": METRICS_PORT_NAME, "containerPort": layout.METRICS_PORT, "protocol": "TCP"}],
        "resources": resources,
        "volumeMounts": mounts,
        "securityContext": {"allowPrivilegeEscalation": False},
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": RUNNER, "namespace": spec.namespace, "labels": spec.labels},
        "spec": {
            # KEDA owns the count from here on (0 until an input waits).
            "replicas": 0,
            "selector": {"matchLabels": runner_labels()},
            "template": {
                "metadata": {"labels": runner_labels(), "annotations": {"batch.llm-serving/code": code.digest()}},
                "spec": {
                    "serviceAccountName": RUNNER,
                    "terminationGracePeriodSeconds": RUNNER_GRACE_SECONDS,
                    "initContainers": [install],
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def runner_pod_monitoring(spec: BatchSpec) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.googleapis.com/v1",
        "kind": "PodMonitoring",
        "metadata": {"name": RUNNER, "namespace": spec.namespace, "labels": spec.labels},
        "spec": {
            "selector": {"matchLabels": runner_labels()},
            "endpoints": [{"port": METRICS_PORT_NAME, "path": "/metrics", "interval": "30s"}],
        },
    }


def trigger_authentication(spec: BatchSpec) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "TriggerAuthentication",
        "metadata": {"name": AUTHENTICATION, "namespace": spec.namespace, "labels": spec.labels},
        # KEDA's operator lists the bucket as its own Google identity (objectViewer on this bucket).
        "spec": {"podIdentity": {"provider": "gcp"}},
    }


def runner_scaled_object(spec: BatchSpec) -> dict[str, Any]:
    """One runner per input waiting or running, up to the workers that saturate the most replicas."""
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": RUNNER, "namespace": spec.namespace, "labels": spec.labels},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": RUNNER},
            "minReplicaCount": 0,
            "maxReplicaCount": spec.workers,
            "pollingInterval": spec.poll_seconds,
            "cooldownPeriod": RUNNER_COOLDOWN_SECONDS,
            "fallback": scale_fallback(),
            # The HPA never removes a runner: it would pick any pod, a busy one too, stranding its claim and
            # resending its requests. KEDA alone scales the runners to zero, once input/ is empty and so no
            # runner holds a batch (docs/batch.md).
            "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {"selectPolicy": "Disabled"}}}},
            "triggers": [
                {
                    "type": "gcp-storage",
                    "name": "batch-input",
                    "metadata": {
                        "bucketName": spec.bucket,
                        "blobPrefix": layout.INPUT,
                        # A runner claims one input at a time: one runner per input.
                        "targetObjectCount": "1",
                        "activationTargetObjectCount": "0",
                    },
                    "authenticationRef": {"name": AUTHENTICATION},
                }
            ],
        },
    }


class Batch(pulumi.ComponentResource):
    """Registers the bucket, the runner's identities and grants, its code, Deployment, PodMonitoring and ScaledObject."""

    REGISTERS = (
        gcp.storage.Bucket,
        gcp.storage.BucketIAMMember,
        gcp.serviceaccount.Account,
        gcp.serviceaccount.IAMMember,
        gcp.artifactregistry.Repository,
        gcp.artifactregistry.RepositoryIamMember,
    )
    # The runner and KEDA read the bucket as Google service accounts they impersonate through Workload Identity.
    USES = ("storage.googleapis.com", "iamcredentials.googleapis.com")

    def __init__(
        self,
        name: str,
        spec: BatchSpec,
        *,
        keda_identity: pulumi.Input[str],
        keda: pulumi.Resource,
        api_key: SecretRef | None,
        kubernetes: k8s.Provider,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("llm:batch:Batch", name, None, opts)
        on_gcp = child_options(self, opts)
        in_cluster = child_options(self, opts, kubernetes)
        self.bucket = gcp.storage.Bucket(
            "batch",
            name=spec.bucket,
            project=spec.project,
            location=spec.region.upper(),
            uniform_bucket_level_access=True,
            public_access_prevention="enforced",
            # Outputs and reports are the user's: a destroy never empties the bucket on its own.
            force_destroy=False,
            lifecycle_rules=bucket_lifecycle_rules(spec),
            labels=spec.labels,
            opts=pulumi.ResourceOptions.merge(on_gcp, pulumi.ResourceOptions(protect=spec.protect)),
        )
        identity = gcp.serviceaccount.Account(
            RUNNER,
            account_id=spec.account_id,
            display_name="Batch runner (reads and writes the batch bucket)",
            project=spec.project,
            opts=keeping_account_id(on_gcp),  # a stack made with the fixed id `batch-runner` keeps it
        )
        keda_reads = gcp.storage.BucketIAMMember(
            "batch-keda-reads", bucket=self.bucket.name, role=OBJECT_VIEWER, member=keda_identity, opts=on_gcp
        )
        packages = gcp.artifactregistry.Repository(
            PYTHON_REPOSITORY,
            python_repository_args(project=spec.project, region=spec.region, repository=spec.python_repository, labels=spec.labels),
            opts=on_gcp,
        )
        runner_grants = [
            gcp.artifactregistry.RepositoryIamMember(
                "batch-runner-packages",
                project=spec.project,
                location=spec.region,
                repository=packages.name,
                role=PACKAGE_READER,
                member=identity.member,
                opts=on_gcp,
            ),
            gcp.storage.BucketIAMMember(
                "batch-runner-objects", bucket=self.bucket.name, role=OBJECT_USER, member=identity.member, opts=on_gcp
            ),
            let_act_as(
                "batch-runner-workload-identity", identity, project=spec.project, namespace=spec.namespace, account=RUNNER, opts=on_gcp
            ),
        ]
        shipped = runner_code()
        # The runner acts as its own Google service account, with no key.
        account = Manifest(RUNNER, kubernetes_service_account(RUNNER, spec.namespace, spec.labels, identity.email), in_cluster)
        access = [Manifest(RUNNER, manifest, in_cluster) for manifest in deployment_reader(spec)]
        code = Manifest(CODE, shipped.config_map(spec.namespace, spec.labels), in_cluster)
        runner = Manifest(
            RUNNER,
            runner_deployment(spec, shipped, api_key),
            pulumi.ResourceOptions.merge(
                in_cluster,
                pulumi.ResourceOptions(
                    depends_on=[account, *access, code, *runner_grants],
                    # KEDA sets the count; `pulumi up` must not put it back to 0 mid-batch.
                    ignore_changes=["spec.replicas"],
                ),
            ),
        )
        Manifest(RUNNER, runner_pod_monitoring(spec), in_cluster)
        # KEDA's chart installs the CRDs of these two.
        after_keda = pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[keda]))
        authentication = Manifest(AUTHENTICATION, trigger_authentication(spec), after_keda)
        Manifest(
            RUNNER,
            runner_scaled_object(spec),
            pulumi.ResourceOptions.merge(in_cluster, pulumi.ResourceOptions(depends_on=[keda, runner, authentication, keda_reads])),
        )
        self.bucket_name = self.bucket.name
        self.register_outputs({"bucket": self.bucket_name, "workers": spec.workers})
