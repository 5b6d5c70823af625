"""What the bucket, the runner and the wake trigger agree on.

The components register the bucket and the runner from these names, and the
runner reads and writes exactly these; one module keeps both sides in step.
"""

from __future__ import annotations

from typing import Final

# The runner's Deployment, ScaledObject and accounts (components/batch.py), named in the stack's alerts too.
RUNNER: Final = "batch-runner"

# Object prefixes in the stack's batch bucket.
INPUT: Final = "input/"  # waiting and running batches: the wake trigger counts these
# Every derived object is named by the batch's key, <input name>/<input generation> (bucket.batch_key):
# a new upload under a used name is a new batch, with its own claim, parts and report.
CLAIMS: Final = "claims/"  # one object per batch a runner holds (created with a generation precondition)
OUTPUT: Final = "output/"  # OpenAI batch output lines, written in parts per input
ERRORS: Final = "errors/"  # lines that could not be sent, and requests that failed for good
REPORTS: Final = "reports/"  # one JSON report per finished input
FINISHED: Final = "finished/"  # inputs moved here when done; a lifecycle rule deletes them

# The runner's environment, set by the runner's pod template.
ENV_BUCKET: Final = "BATCH_BUCKET"
ENV_SERVING_URL: Final = "SERVING_URL"  # the replicas' OpenAI base URL, e.g. http://name.namespace.svc:8000/v1
ENV_SERVED_MODEL: Final = "SERVED_MODEL"
# A stack of several models: a JSON list of {name, url, task, deployment, requestsPerReplica, expectedColdStart},
# one per model whose batch is on; each line goes to the one its body.model names. It replaces SERVING_URL,
# SERVED_MODEL, MODEL_TASK, REPLICAS_DEPLOYMENT, CONCURRENCY_PER_REPLICA and EXPECTED_COLD_START.
ENV_MODELS: Final = "SERVED_MODELS"
ENV_MODEL_TASK: Final = "MODEL_TASK"  # llm:model.task: which urls a line may name (lines.URLS_BY_TASK); default generate
ENV_API_KEY: Final = "VLLM_API_KEY"  # optional; from the stack's API-key Secret
ENV_NAMESPACE: Final = "POD_NAMESPACE"
ENV_REPLICAS_DEPLOYMENT: Final = "REPLICAS_DEPLOYMENT"  # read for Ready replicas and replica-hours
ENV_CONCURRENCY_PER_REPLICA: Final = "CONCURRENCY_PER_REPLICA"
ENV_PRICE_PER_REPLICA_HOUR: Final = "PRICE_PER_REPLICA_HOUR"  # USD, the stack's estimate
ENV_ESTIMATED_USD_PER_MILLION_TOKENS: Final = "ESTIMATED_USD_PER_MILLION_TOKENS"
# USD per hour of the reservation under the replicas (estimates.committed), billed whether or not they run; unset off one.
ENV_COMMITTED_USD_PER_HOUR: Final = "COMMITTED_USD_PER_HOUR"
# "true" when the reservation holds every replica (mode reservation): their hours then add nothing to the bill.
ENV_RESERVATION_HOLDS_EVERY_REPLICA: Final = "RESERVATION_HOLDS_EVERY_REPLICA"
ENV_METRICS_PORT: Final = "METRICS_PORT"
# JSON {"phases": ...}: the stack's expected cold start (estimates.coldStart), to report a wake against.
ENV_EXPECTED_COLD_START: Final = "EXPECTED_COLD_START"

METRICS_PORT: Final = 9090
# Prometheus metrics the runner exports (and the dashboard, alerts and PromQL checks use).
BACKLOG: Final = "batch_backlog_requests"  # gauge: lines of claimed inputs not yet answered
IN_FLIGHT: Final = "batch_in_flight_requests"  # gauge
DONE: Final = "batch_done_requests_total"  # counter: answered with a response
FAILED: Final = "batch_failed_requests_total"  # counter: answered with an error
WAITING_FILES: Final = "batch_waiting_files"  # gauge: inputs not yet claimed
# KEDA's cooldown (autoscaling.idleMinutes) plus a poll: the replicas' idle tail after the last batch.
ENV_IDLE_TAIL_SECONDS: Final = "IDLE_TAIL_SECONDS"
# From SIGTERM to handing the claim back: the pod's grace period less time to write and exit.
ENV_DRAIN_SECONDS: Final = "DRAIN_SECONDS"
ENV_WORKERS: Final = "RUNNER_WORKERS"  # worker processes in one runner pod (facts.batch_sizing.runner_workers)
