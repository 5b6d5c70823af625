"""``python -m workloads.batch run``: the runner in the cluster (an operator submits with ``python -m ops.batch_submit``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time

import google.cloud.storage as storage
from prometheus_client import start_http_server
from prometheus_client.registry import CollectorRegistry

from workloads.batch import layout
from workloads.batch.metrics import Progress, ProgressCollector
from workloads.batch.replicas import DeploymentApi
from workloads.batch.report import Reservation
from workloads.batch.runner import Deployments, ModelRoute, RunnerSettings, count_waiting, run_waiting


def _optional_float(environ: dict[str, str], name: str) -> float | None:
    value = environ.get(name)
    return float(value) if value else None


def settings_from_env(environ: dict[str, str]) -> RunnerSettings:
    """The runner's settings from the environment its pod template sets (names in workloads.batch.layout)."""
    models = tuple(ModelRoute.from_json(model) for model in json.loads(environ.get(layout.ENV_MODELS) or "[]"))
    needed = (layout.ENV_BUCKET,) if models else (layout.ENV_BUCKET, layout.ENV_SERVING_URL, layout.ENV_CONCURRENCY_PER_REPLICA)
    missing = [name for name in needed if not environ.get(name)]
    if missing:
        raise SystemExit(f"batch run: set {', '.join(missing)} in the runner's environment")
    committed = _optional_float(environ, layout.ENV_COMMITTED_USD_PER_HOUR)
    holds_every = environ.get(layout.ENV_RESERVATION_HOLDS_EVERY_REPLICA) == "true"
    return RunnerSettings(
        bucket=environ[layout.ENV_BUCKET],
        serving_url=environ.get(layout.ENV_SERVING_URL, ""),
        concurrency_per_replica=int(environ.get(layout.ENV_CONCURRENCY_PER_REPLICA) or 0),
        served_model=environ.get(layout.ENV_SERVED_MODEL) or None,
        task=environ.get(layout.ENV_MODEL_TASK) or RunnerSettings.task,
        api_key=environ.get(layout.ENV_API_KEY) or None,
        workers=int(environ.get(layout.ENV_WORKERS) or 1),
        price_per_replica_hour=_optional_float(environ, layout.ENV_PRICE_PER_REPLICA_HOUR),
        estimated_usd_per_million_tokens=_optional_float(environ, layout.ENV_ESTIMATED_USD_PER_MILLION_TOKENS),
        reservation=None if committed is None else Reservation(committed, holds_every),
        expected_cold_start=json.loads(environ[layout.ENV_EXPECTED_COLD_START]) if environ.get(layout.ENV_EXPECTED_COLD_START) else None,
        idle_tail_seconds=_optional_float(environ, layout.ENV_IDLE_TAIL_SECONDS) or 0.0,
        drain_seconds=_optional_float(environ, layout.ENV_DRAIN_SECONDS) or RunnerSettings.drain_seconds,
        models=models,
    )


def drain_on_sigterm(progress: Progress) -> None:
    """The container runtime stops a pod with SIGTERM to its first process, this one. As PID 1 of its
    namespace the kernel delivers it only to a handler (pid_namespaces(7)): without one, every stop
    waited out the grace period and was killed. The handler only marks the drain; the runner opens no
    new part, lets the open ones finish, hands its claim back and exits."""

    def drain(signum: int, frame: object) -> None:
        logging.getLogger("batch").info("SIGTERM: finishing the parts in flight, then handing the claim back")
        progress.draining.value = 1

    signal.signal(signal.SIGTERM, drain)


def run(once: bool) -> None:
    settings = settings_from_env(dict(os.environ))
    namespace = os.environ[layout.ENV_NAMESPACE]
    deployment: Deployments = (
        {model.name: DeploymentApi.in_cluster(namespace, model.deployment) for model in settings.models}
        if settings.models
        else DeploymentApi.in_cluster(namespace, os.environ[layout.ENV_REPLICAS_DEPLOYMENT])
    )
    progress = Progress()
    drain_on_sigterm(progress)
    registry = CollectorRegistry()
    registry.register(ProgressCollector(progress))
    start_http_server(int(os.environ.get(layout.ENV_METRICS_PORT) or layout.METRICS_PORT), registry=registry)
    client = storage.Client()
    while not progress.draining.value:
        progress.waiting_files.value = count_waiting(settings, client)
        run_waiting(settings, client, deployment, progress)
        if once:
            return
        # KEDA scales the runner to zero once input/ is empty; until then, look again (a SIGTERM ends the wait).
        deadline = time.monotonic() + settings.poll_seconds
        while not progress.draining.value and time.monotonic() < deadline:
            time.sleep(0.1)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m workloads.batch")
    commands = parser.add_subparsers(dest="command", required=True)
    run_command = commands.add_parser("run", help="run waiting batches (in the cluster; settings from the environment)")
    run_command.add_argument("--once", action="store_true", help="run what is waiting, then exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(args.once)


if __name__ == "__main__":
    main(sys.argv[1:])
