"""The batch path: a private bucket, a runner with its own identities, and a wake trigger that exists at zero."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
from aiohttp import web

from facts.batch_sizing import REQUESTS_PER_SECOND_PER_WORKER, runner_workers
from render.engine import Render, render_stack, reveal
from render.lifecycle import destroy
from render.promql import check_monitoring
from render.simulations.scaling import HPA_SYNC_SECONDS, reference_serving, scaling_timeline, simulate
from stacks.problems import StackConfigError
from tests.conftest import render_with
from workloads.batch import layout
from workloads.batch.lines import Request
from workloads.batch.serving import RetryPolicy, send

CODE_ROOT = "/opt/runner"

BUCKET = "gcp:storage/bucket:Bucket"
BUCKET_MEMBER = "gcp:storage/bucketIAMMember:BucketIAMMember"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
RUNNER = "batch-runner"
ROOT = Path(__file__).resolve().parent.parent.parent
IDLE_MINUTES = 15


# Prod's 12 reserved nodes leave none spare for a rollout's surge replica: it replaces the fewest replicas in place.
IN_PLACE = {"keepServing": False}


def batch_render(stack: str = "prod", **changes: Any) -> Render:
    settings = {"autoscaling": {"enabled": True, "idleMinutes": IDLE_MINUTES}, "batch": {"enabled": True}, "rollout": IN_PLACE}
    return render_with(stack, **{**settings, **changes})


@cache
def with_batch(stack: str = "prod") -> Render:
    return batch_render(stack)


def manifest(render: Render, kind: str, name: str) -> dict[str, Any]:
    (found,) = [r.inputs for r in render.resources if r.inputs.get("kind") == kind and r.inputs["metadata"]["name"] == name]
    return dict(found)


def email(render: Render, account: str) -> str:
    """The email GCP gives the Google account registered as ``account``: `<id>@<project>.iam.gserviceaccount.com`."""
    inputs = render.one("gcp:serviceaccount/account:Account", account).inputs
    return f"{inputs['accountId']}@{inputs['project']}.iam.gserviceaccount.com"


def runner_container(render: Render) -> dict[str, Any]:
    container: dict[str, Any] = manifest(render, "Deployment", RUNNER)["spec"]["template"]["spec"]["containers"][0]
    return container


def test_batches_need_autoscaling_and_the_error_names_the_key_and_the_fix() -> None:
    with pytest.raises(StackConfigError) as error:
        render_with("prod", batch={"enabled": True})
    assert "llm:batch.enabled" in str(error.value) and "autoscaling.enabled: true" in str(error.value)


def test_without_batches_there_is_no_bucket_runner_or_wake_trigger() -> None:
    render = render_with("prod", autoscaling={"enabled": True}, rollout=IN_PLACE)
    # The compile cache's bucket is the only one (components/compile_cache.py).
    assert [r.name for r in render.by_type(BUCKET)] == ["compile-cache"] and "batchBucket" not in render.outputs
    assert [r.inputs["metadata"]["name"] for r in render.by_type(SCALED_OBJECT)] == ["vllm"]


def test_the_bucket_is_private_and_deletes_finished_inputs_after_their_retention() -> None:
    render = batch_render(batch={"enabled": True, "finishedRetentionDays": 3})
    bucket = render.one(BUCKET, "batch").inputs
    assert bucket["uniformBucketLevelAccess"] is True and bucket["publicAccessPrevention"] == "enforced"
    assert bucket["forceDestroy"] is False
    # Only inputs already answered are deleted; outputs, errors and reports stay.
    assert bucket["lifecycleRules"] == [{"action": {"type": "Delete"}, "condition": {"age": 3, "matchesPrefixes": [layout.FINISHED]}}]
    assert reveal(render.outputs)["batchBucket"] == bucket["name"] == "llm-serving-prod-prod-batch"


def test_a_production_stack_protects_its_bucket_and_a_destroy_stops_there() -> None:
    prod = with_batch()
    assert prod.one(BUCKET, "batch").protect and prod.one(BUCKET, "batch") in destroy(prod).refused
    dev = with_batch("dev")
    assert not dev.one(BUCKET, "batch").protect and dev.one(BUCKET, "batch") in destroy(dev).deletes


def test_the_runner_may_read_and_write_this_bucket_only_and_keda_may_only_read_it() -> None:
    render = with_batch()
    bucket = render.one(BUCKET, "batch").inputs["name"]
    members = [r.inputs for r in render.by_type(BUCKET_MEMBER)]
    grants = {m["member"]: m["role"] for m in members if m["bucket"] == bucket}
    runner, keda = (f"serviceAccount:{email(render, account)}" for account in (RUNNER, "keda-operator"))
    assert grants == {runner: "roles/storage.objectUser", keda: "roles/storage.objectViewer"}
    # Neither has a grant on any other bucket (the compile cache's has its own reader).
    assert all(m["member"] not in (runner, keda) for m in members if m["bucket"] != bucket)
    # No project-wide role for the runner: only the bucket's own IAM.
    assert all(r.inputs["member"] != runner for r in render.by_type(PROJECT_MEMBER))


def test_the_runners_kubernetes_account_is_its_google_account_through_workload_identity() -> None:
    render = with_batch()
    account = manifest(render, "ServiceAccount", RUNNER)
    assert account["metadata"]["annotations"]["iam.gke.io/gcp-service-account"] == email(render, RUNNER)
    (binding,) = [r.inputs for r in render.by_type("gcp:serviceaccount/iAMMember:IAMMember") if r.name == "batch-runner-workload-identity"]
    assert binding["role"] == "roles/iam.workloadIdentityUser"
    assert binding["member"] == f"serviceAccount:llm-serving-prod.svc.id.goog[llm-serving/{RUNNER}]"
    assert manifest(render, "Deployment", RUNNER)["spec"]["template"]["spec"]["serviceAccountName"] == RUNNER
    # No key anywhere: nothing in the runner's pod reads a credentials file.
    assert not any("CREDENTIALS" in e["name"] for e in runner_container(render)["env"])


def test_the_runner_may_get_the_replicas_deployment_and_read_how_they_started_and_nothing_else() -> None:
    render = with_batch()
    role = manifest(render, "Role", RUNNER)
    assert role["rules"] == [
        {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["vllm"], "verbs": ["get"]},
        # A cold start's events and the vLLM log it is measured from (the pods' names are not known in advance).
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    ]
    binding = manifest(render, "RoleBinding", RUNNER)
    assert binding["roleRef"]["name"] == RUNNER and binding["subjects"] == [
        {"kind": "ServiceAccount", "name": RUNNER, "namespace": "llm-serving"}
    ]


def test_the_files_the_runners_pod_mounts_import_the_runner_and_the_cold_start_parser(tmp_path: Path) -> None:
    render = with_batch()
    data = manifest(render, "ConfigMap", "batch-runner-code")["data"]
    pod = manifest(render, "Deployment", RUNNER)["spec"]["template"]["spec"]
    container = runner_container(render)
    volumes = {volume["name"]: volume["configMap"] for volume in pod["volumes"] if "configMap" in volume}
    for mount in [mount for mount in container["volumeMounts"] if mount["name"] in volumes]:  # as the kubelet lays out a ConfigMap volume
        source = volumes[mount["name"]]
        assert source["name"] == "batch-runner-code"
        folder = tmp_path / mount["mountPath"].lstrip("/")
        for item in source.get("items") or [{"key": key, "path": key} for key in data]:
            (folder / item["path"]).parent.mkdir(parents=True, exist_ok=True)
            (folder / item["path"]).write_text(data[item["key"]])
    code_root = next(e["value"] for e in container["env"] if e["name"] == "PYTHONPATH").split(":")[0]
    python_path = tmp_path / code_root.lstrip("/")
    check = "import workloads.batch.runner, workloads.cold_start.phases; print(workloads.cold_start.phases.__file__)"
    command = [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(python_path)!r}); {check}"]
    run = subprocess.run(command, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str(python_path / "workloads" / "cold_start" / "phases.py")


def test_the_runners_config_map_holds_the_batch_package_as_it_is_in_the_repository() -> None:
    data = manifest(with_batch(), "ConfigMap", "batch-runner-code")["data"]
    shipped = [*ROOT.glob("workloads/batch/*.py"), ROOT / "workloads/batch/requirements.txt", *ROOT.glob("workloads/cold_start/*.py")]
    expected = {p.relative_to(ROOT).as_posix().replace("/", "."): p.read_text() for p in [ROOT / "workloads/__init__.py", *shipped]}
    assert data == expected and {"workloads.batch.__init__.py", "workloads.batch.layout.py", "workloads.cold_start.phases.py"} <= set(data)


def test_the_runner_runs_the_package_from_the_config_map_on_its_python_path() -> None:
    render = with_batch()
    pod = manifest(render, "Deployment", RUNNER)["spec"]["template"]["spec"]
    container = runner_container(render)
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {mount["mountPath"]: mount for mount in container["volumeMounts"]}
    assert set(mounts) == set(env["PYTHONPATH"].split(":"))
    assert all(mount["readOnly"] for mount in mounts.values())
    assert {volume["configMap"]["name"] for volume in pod["volumes"] if "configMap" in volume} == {"batch-runner-code"}
    assert container["command"] == ["python", "-m", "workloads.batch", "run"]  # PID 1 itself: SIGTERM reaches its handler
    assert container["image"].endswith("python:3.12.7-slim-bookworm")


def test_new_runner_code_restarts_the_runners() -> None:
    template = manifest(with_batch(), "Deployment", RUNNER)["spec"]["template"]
    data = manifest(with_batch(), "ConfigMap", "batch-runner-code")["data"]
    digest = hashlib.sha256()
    for name, text in sorted(data.items()):
        digest.update(f"{name}\0{text}\0".encode())
    assert template["metadata"]["annotations"] == {"batch.llm-serving/code": digest.hexdigest()[:16]}


def test_the_runners_environment_is_the_contract_of_batch_layout() -> None:
    render = with_batch()
    env = {e["name"]: e for e in runner_container(render)["env"]}
    values = {name: e.get("value") for name, e in env.items()}
    assert values[layout.ENV_BUCKET] == render.one(BUCKET, "batch").inputs["name"]
    assert values[layout.ENV_SERVING_URL] == "http://vllm.llm-serving.svc.cluster.local:8000/v1"
    assert values[layout.ENV_SERVED_MODEL] == "Qwen/Qwen3.5-27B-FP8"
    assert values[layout.ENV_MODEL_TASK] == "generate"
    assert values[layout.ENV_REPLICAS_DEPLOYMENT] == "vllm"
    assert values[layout.ENV_CONCURRENCY_PER_REPLICA] == "2000"
    assert values[layout.ENV_METRICS_PORT] == str(layout.METRICS_PORT)
    # The stack's own prices: the reservation's list price and the estimate at 12 replicas.
    estimates = reveal(render.outputs)["estimates"]
    assert float(values[layout.ENV_PRICE_PER_REPLICA_HOUR]) == 88.93
    assert float(values[layout.ENV_ESTIMATED_USD_PER_MILLION_TOKENS]) == estimates["dollarsPerMillionTokens"]
    assert env[layout.ENV_NAMESPACE]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert layout.ENV_API_KEY not in env


def test_the_runner_reports_prods_reservation_apart_from_what_a_batch_adds() -> None:
    values = values_of(runner_container(with_batch()))
    # Prod's 12 reserved nodes at $88.93 hold every replica: a batch's replica-hours add nothing to the bill.
    assert float(values[layout.ENV_COMMITTED_USD_PER_HOUR]) == pytest.approx(12 * 88.93)
    assert values[layout.ENV_RESERVATION_HOLDS_EVERY_REPLICA] == "true"
    spot = {e["name"] for e in runner_container(batch_render("dev"))["env"]}
    assert layout.ENV_COMMITTED_USD_PER_HOUR not in spot and layout.ENV_RESERVATION_HOLDS_EVERY_REPLICA not in spot


def test_the_runner_is_given_the_stacks_expected_cold_start_to_report_a_wake_against() -> None:
    render = with_batch()
    values = {e["name"]: e.get("value") for e in runner_container(render)["env"]}
    expected = json.loads(values[layout.ENV_EXPECTED_COLD_START])
    assert expected == {"phases": reveal(render.outputs)["estimates"]["coldStart"]["phases"]}


def test_the_runner_reads_the_api_key_from_the_stacks_secret() -> None:
    render = render_stack("batch", secrets={"apiKey": "sk-test-key"})
    env = {e["name"]: e for e in runner_container(render)["env"]}
    assert env[layout.ENV_API_KEY]["valueFrom"] == {"secretKeyRef": {"name": "vllm-api-key", "key": "value"}}


def test_a_price_the_stack_does_not_know_is_left_out_of_the_runners_environment() -> None:
    render = batch_render("dev", capacity={"mode": "flex-start"})
    names = {e["name"] for e in runner_container(render)["env"]}
    assert layout.ENV_PRICE_PER_REPLICA_HOUR not in names and layout.ENV_ESTIMATED_USD_PER_MILLION_TOKENS not in names


def test_the_runner_is_scaled_from_zero_by_the_inputs_waiting_up_to_the_workers_for_the_most_replicas() -> None:
    render = batch_render(autoscaling={"enabled": True, "maxReplicas": 12, "pollSeconds": 20, "idleMinutes": IDLE_MINUTES})
    (runner,) = [r.inputs for r in render.by_type(SCALED_OBJECT) if r.inputs["metadata"]["name"] == RUNNER]
    spec = runner["spec"]
    assert spec["scaleTargetRef"]["name"] == RUNNER and manifest(render, "Deployment", RUNNER)["spec"]["replicas"] == 0
    assert (spec["minReplicaCount"], spec["maxReplicaCount"], spec["pollingInterval"]) == (0, runner_workers(12), 20)
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "gcp-storage"
    assert trigger["metadata"]["bucketName"] == render.one(BUCKET, "batch").inputs["name"]
    assert (trigger["metadata"]["blobPrefix"], trigger["metadata"]["activationTargetObjectCount"]) == (layout.INPUT, "0")
    authentication = manifest(render, "TriggerAuthentication", trigger["authenticationRef"]["name"])
    assert authentication["spec"] == {"podIdentity": {"provider": "gcp"}}
    # KEDA owns the count: `pulumi up` never puts a running batch's runners back to zero.
    assert next(r for r in render.by_type(DEPLOYMENT) if r.inputs["metadata"]["name"] == RUNNER).ignore_changes == ("spec.replicas",)


def test_an_input_waiting_wakes_the_replicas_and_the_runners_backlog_sizes_them() -> None:
    from render.simulations.scaling import replicas_scaled_object

    render = with_batch()
    scaled_object = replicas_scaled_object(render)
    assert scaled_object is not None
    triggers = {t["name"]: t for t in scaled_object["spec"]["triggers"]}
    wake = triggers["batch-input"]
    assert wake["type"] == "gcp-storage" and wake["metadata"]["blobPrefix"] == layout.INPUT
    assert wake["metadata"]["bucketName"] == render.one(BUCKET, "batch").inputs["name"]
    assert wake["metadata"]["activationTargetObjectCount"] == "0"
    backlog = triggers["batch-backlog"]
    assert backlog["metadata"]["query"] == f'sum({layout.BACKLOG}{{namespace="llm-serving"}})'
    assert backlog["metadata"]["threshold"] == triggers["concurrency"]["metadata"]["threshold"]
    # The replicas keep following their own load too.
    assert triggers["concurrency"]["type"] == "prometheus"


def test_the_runner_is_scraped_on_its_metrics_port() -> None:
    render = with_batch()
    monitoring = manifest(render, "PodMonitoring", RUNNER)
    pod = manifest(render, "Deployment", RUNNER)["spec"]["template"]
    assert monitoring["spec"]["selector"]["matchLabels"] == pod["metadata"]["labels"]
    (endpoint,) = monitoring["spec"]["endpoints"]
    (port,) = runner_container(render)["ports"]
    assert endpoint["port"] == port["name"] and port["containerPort"] == layout.METRICS_PORT


def test_the_dashboard_shows_batch_progress_and_every_query_reads_exported_metrics() -> None:
    render = with_batch()
    board = render.one("gcp:monitoring/dashboard:Dashboard").inputs["dashboardJson"]
    for metric in (layout.BACKLOG, layout.IN_FLIGHT, layout.WAITING_FILES, layout.DONE, layout.FAILED):
        assert metric in board
    assert check_monitoring(render) > 0


def test_the_storage_api_is_enabled_before_the_bucket() -> None:
    render = with_batch()
    (storage,) = [s for s in render.by_type("gcp:projects/service:Service") if s.inputs["service"] == "storage.googleapis.com"]
    assert render.depends_on(render.one(BUCKET, "batch"), storage)


def test_a_batch_submitted_at_zero_is_served_within_a_cold_start_and_the_stack_returns_to_zero_idle_minutes_after() -> None:
    from render.simulations.scaling import batch_from_zero, replicas_scaled_object

    scaled_object = replicas_scaled_object(with_batch())
    assert scaled_object is not None
    serving = reference_serving(drain_seconds=35)
    requests = 1_000_000
    steps = simulate(scaled_object, serving, batch_from_zero(requests))
    poll = scaled_object["spec"]["pollingInterval"]
    assert steps[0].ready == 0
    first_ready = next(s.second for s in steps if s.ready >= 1)
    assert first_ready <= poll + serving.cold_start_seconds + HPA_SYNC_SECONDS
    # The first replica wakes on the input; the runner's backlog asks for the rest one sync later: one cold start for all 12.
    need = min(12, math.ceil(requests / serving.requests_per_replica))
    assert max(s.desired for s in steps) == need and next(s.second for s in steps if s.ready == need) <= first_ready + HPA_SYNC_SECONDS
    # Never more in flight than the Ready replicas run; nothing aborted.
    assert all(s.outstanding <= s.ready * serving.requests_per_replica for s in steps) and sum(s.aborted for s in steps) == 0
    last_request = max(s.second for s in steps if s.outstanding > 0)
    zero = next(s.second for s in steps if s.second > last_request and s.desired == 0)
    # KEDA counts idleMinutes from its last poll that saw the batch: at most one poll before the last answer.
    assert last_request + IDLE_MINUTES * 60 - poll <= zero <= last_request + IDLE_MINUTES * 60 + poll + HPA_SYNC_SECONDS
    assert all(s.desired > 0 for s in steps if first_ready <= s.second <= last_request)


def test_the_render_prints_the_wake_trace_only_for_a_stack_that_runs_batches() -> None:
    assert "batch wake:" in scaling_timeline(with_batch())
    assert "batch wake:" not in scaling_timeline(render_with("prod", autoscaling={"enabled": True}, rollout=IN_PLACE))


def test_the_runner_posts_where_the_replicas_serve_from_the_url_its_pod_gets() -> None:
    """The pod's SERVING_URL, joined by the runner's own code, reaches vLLM's OpenAI paths (served under /v1)."""
    served_url = values_of(runner_container(with_batch()))[layout.ENV_SERVING_URL]
    path_prefix = urlsplit(served_url).path

    async def answer(request: web.Request) -> web.Response:
        choice = {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        return web.json_response({"id": "chatcmpl-1", "choices": [choice], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})

    async def post_one() -> int | None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", answer)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with aiohttp.ClientSession() as session:
                request = Request("a", "/v1/chat/completions", {"messages": []})
                outcome = await send(session, f"http://127.0.0.1:{port}{path_prefix}", request, RetryPolicy(attempts=1), lambda: True)
                return outcome.status
        finally:
            await runner.cleanup()

    # Its own loop, never installed: the Pulumi mock tests in this worker keep theirs.
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(post_one()) == 200
    finally:
        loop.close()


def values_of(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container["env"]}


def test_one_input_file_alone_gets_the_workers_that_saturate_the_most_replicas() -> None:
    container = runner_container(with_batch())
    values = values_of(container)
    # prod: 12 replicas at the reference's ~1,000 requests/s in all; a worker sustains REQUESTS_PER_SECOND_PER_WORKER.
    workers = int(values[layout.ENV_WORKERS])
    assert workers == runner_workers(12)
    assert workers * REQUESTS_PER_SECOND_PER_WORKER >= 1000
    # Each worker is a process on its own core, with the memory one worker is given.
    assert container["resources"]["requests"]["cpu"] == str(workers)
    assert container["resources"]["requests"]["memory"] == f"{workers * 1024}Mi"


def scaled_objects(render: Render) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in render.by_type(SCALED_OBJECT)}


def test_the_runners_scale_down_never_removes_a_busy_pod_and_its_grace_covers_the_drain() -> None:
    """The HPA may not remove a runner while inputs wait (it would strand a claim and resend its requests);
    KEDA alone takes them to zero once input/ is empty, when no runner holds a batch."""
    render = with_batch()
    behavior = scaled_objects(render)[RUNNER]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["selectPolicy"] == "Disabled"
    pod = manifest(render, "Deployment", RUNNER)["spec"]["template"]["spec"]
    drain = float(values_of(runner_container(render))[layout.ENV_DRAIN_SECONDS])
    assert 0 < drain < pod["terminationGracePeriodSeconds"]


def test_a_failing_trigger_never_keeps_the_a4_nodes_up() -> None:
    """KEDA keeps the replicas while any trigger errors and no fallback is set; a fallback of 0 replicas lets an
    inactive, failing stack return to zero (kedacore/keda v2.20.2 pkg/scaling/executor/scale_scaledobjects.go)."""
    for name, spec in scaled_objects(with_batch()).items():
        assert spec["fallback"]["replicas"] == 0 and spec["fallback"]["failureThreshold"] >= 1, name


def test_the_runner_counts_the_idle_tail_keda_keeps_after_the_last_batch() -> None:
    render = batch_render(autoscaling={"enabled": True, "pollSeconds": 20, "idleMinutes": IDLE_MINUTES})
    assert values_of(runner_container(render))[layout.ENV_IDLE_TAIL_SECONDS] == str(IDLE_MINUTES * 60 + 20)


def test_the_runner_installs_nothing_from_the_internet_at_start() -> None:
    """Its pinned dependencies come through the stack's own supply path: an Artifact Registry remote repository
    of PyPI in the stack's region, read as the runner's Google identity, every file checked against its hash."""
    render = with_batch()
    pod = manifest(render, "Deployment", RUNNER)["spec"]["template"]["spec"]
    (install,) = pod["initContainers"]
    script = " ".join(install["command"])
    repository = next(r.inputs for r in render.by_type("gcp:artifactregistry/repository:Repository") if r.inputs["format"] == "PYTHON")
    assert repository["mode"] == "REMOTE_REPOSITORY"
    assert repository["remoteRepositoryConfig"]["pythonRepository"] == {"publicRepository": "PYPI"}
    index = f"https://oauth2accesstoken:$TOKEN@{repository['location']}-python.pkg.dev/{repository['project']}/{repository['repositoryId']}/simple/"
    assert f'PIP_INDEX_URL="{index}"' in script and "--require-hashes" in script and "pypi.org" not in script
    assert f"-r {CODE_ROOT}/workloads/batch/requirements.txt" in script
    (grant,) = [
        r.inputs
        for r in render.by_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
        if r.inputs["repository"] == repository["repositoryId"]
    ]
    assert grant["role"] == "roles/artifactregistry.reader" and grant["member"] == f"serviceAccount:{email(render, RUNNER)}"
    # The installed packages reach the runner on its Python path, through a volume of the pod only.
    deps = next(m["mountPath"] for m in install["volumeMounts"] if not m.get("readOnly"))
    assert deps in values_of(runner_container(render))["PYTHONPATH"].split(":")
