"""The runner's smaller parts: submitting a file, reading the Deployment, its environment, the replica meter."""

from __future__ import annotations

import json
from pathlib import Path

import google.cloud.storage as storage
import pytest
from google.api_core.exceptions import PreconditionFailed

from tests.workloads.batch.conftest import DEPLOYMENT, NAMESPACE, KubernetesApi


def test_submit_streams_the_file_under_input_and_never_replaces_a_waiting_batch(bucket: storage.Bucket, tmp_path: Path) -> None:
    from ops.batch_submit import submit

    batch_file = tmp_path / "nightly.jsonl"
    batch_file.write_bytes(b'{"custom_id": "a"}\n' * 50_000)

    assert submit(batch_file, bucket.name, None) == "input/nightly.jsonl"
    assert bucket.blob("input/nightly.jsonl").download_as_bytes() == batch_file.read_bytes()
    with pytest.raises(PreconditionFailed):
        submit(batch_file, bucket.name, "nightly.jsonl")
    assert submit(batch_file, bucket.name, "nightly-2.jsonl") == "input/nightly-2.jsonl"


def test_the_deployment_read_sends_the_token_and_counts_omitted_fields_as_zero(kubernetes_api: KubernetesApi, tmp_path: Path) -> None:
    from workloads.batch.replicas import DeploymentApi, ReplicaCount

    token = tmp_path / "token"
    token.write_text("first\n")
    api = DeploymentApi(kubernetes_api.url, NAMESPACE, DEPLOYMENT, token_file=token)
    kubernetes_api.status = {"replicas": 3, "readyReplicas": 1}
    assert api.count() == ReplicaCount(replicas=3, ready=1)
    kubernetes_api.status = {}  # scaled to zero: the API server omits the counts
    token.write_text("rotated\n")
    assert api.count() == ReplicaCount(replicas=0, ready=0)
    assert kubernetes_api.authorizations == ["Bearer first", "Bearer rotated"]


def test_replica_hours_hold_each_count_until_the_next_sample() -> None:
    from workloads.batch.replicas import ReplicaCount, ReplicaMeter

    meter = ReplicaMeter(held_before=600.0, at=0.0, first=ReplicaCount(2, 0))
    meter.sample(100.0, ReplicaCount(4, 2))
    meter.sample(400.0, ReplicaCount(0, 0))
    meter.sample(1000.0, ReplicaCount(0, 0))
    assert meter.replica_seconds == 600 + 2 * 100 + 4 * 300


def test_the_runner_environment_names_what_is_missing() -> None:
    from workloads.batch import layout
    from workloads.batch.__main__ import settings_from_env

    with pytest.raises(SystemExit, match=f"{layout.ENV_BUCKET}, {layout.ENV_CONCURRENCY_PER_REPLICA}"):
        settings_from_env({layout.ENV_SERVING_URL: "http://vllm:8000/v1"})
    settings = settings_from_env(
        {
            layout.ENV_BUCKET: "b",
            layout.ENV_SERVING_URL: "http://vllm:8000/v1",
            layout.ENV_CONCURRENCY_PER_REPLICA: "2000",
            layout.ENV_WORKERS: "6",
            layout.ENV_PRICE_PER_REPLICA_HOUR: "88.93",
        }
    )
    assert (settings.workers, settings.concurrency_per_replica, settings.price_per_replica_hour) == (6, 2000, 88.93)
    assert settings.estimated_usd_per_million_tokens is None


def test_the_runner_reads_the_expected_cold_start_from_its_environment() -> None:
    from workloads.batch import layout
    from workloads.batch.__main__ import settings_from_env

    required = {layout.ENV_BUCKET: "b", layout.ENV_SERVING_URL: "http://vllm:8000/v1", layout.ENV_CONCURRENCY_PER_REPLICA: "1"}
    phases = {"phases": {"weights": {"seconds": 12}}}
    assert settings_from_env({**required, layout.ENV_EXPECTED_COLD_START: json.dumps(phases)}).expected_cold_start == phases
    assert settings_from_env(required).expected_cold_start is None


def test_the_pods_requirements_pin_what_the_tests_ran_with_and_carry_hashes() -> None:
    import re
    from importlib.metadata import version

    text = (Path(__file__).parents[3] / "workloads" / "batch" / "requirements.txt").read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", text, re.MULTILINE))
    assert {"aiohttp", "google-cloud-storage", "prometheus-client"} <= set(pins)
    assert {name: version(name) for name in pins} == pins
    assert text.count("==") == len(pins) and all(
        re.search(rf"^{re.escape(name)}=={re.escape(pin)}[^\n]*\\\n    --hash=sha256:", text, re.MULTILINE) for name, pin in pins.items()
    )
