"""``python -m ops.cold_start``: the last cold start of a replica, phase by phase.

    kubectl -n llm-serving get events -o json > events.json
    kubectl -n llm-serving logs --timestamps <pod> > vllm.log
    pulumi stack output estimates --json > estimates.json     # optional: the expected figures
    python -m ops.cold_start --events events.json --logs vllm.log --estimates estimates.json

With several models each has its own replica set, named by the model's short name (the keys of
``pulumi stack output serving --json``'s models, and of estimates): name it with ``--model``.
Events are kept for an hour by default (kube-apiserver --event-ttl), so save them soon after a wake.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from facts.naming import REPLICAS
from workloads.cold_start.phases import MeasureError, against_expected, deployment_pod, measure

# A container's event names it so (spec.containers{vllm}).
CONTAINER_PATH = re.compile(r"spec\.containers\{(?P<container>[^}]+)\}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.cold_start", description="A replica's last cold start, phase by phase.")
    parser.add_argument("--events", type=Path, required=True, help="output of `kubectl get events -o json` in the stack's namespace")
    parser.add_argument("--logs", type=Path, required=True, help="output of `kubectl logs --timestamps <pod>` ('-' reads stdin)")
    parser.add_argument("--pod", help=f"the pod (default: the {REPLICAS}-... pod that started last)")
    parser.add_argument(
        "--model", help=f"with several models: the model's short name, its replica set (default: {REPLICAS}, a one-model stack's)"
    )
    parser.add_argument(
        "--estimates", type=Path, help="output of `pulumi stack output estimates --json`: print the expected figures beside"
    )
    parser.add_argument("--json", action="store_true", help="print the breakdown as JSON")
    options = parser.parse_args(argv)
    events = json.loads(options.events.read_text())
    lines = sys.stdin if str(options.logs) == "-" else options.logs.read_text().splitlines()
    estimates: dict[str, Any] = json.loads(options.estimates.read_text()) if options.estimates else {}
    # With several models the estimates hold each model's figures by its short name.
    models = [name for name, figures in estimates.items() if isinstance(figures, dict) and "basis" in figures]
    if models and options.model is None:
        print(f"cold start: the stack serves several models ({', '.join(models)}): name one with --model", file=sys.stderr)
        return 2
    if models and options.model not in models:
        print(f"cold start: no model {options.model} in the estimates; the stack's models: {', '.join(models)}", file=sys.stderr)
        return 2
    replicas = options.model or REPLICAS
    try:
        breakdown = measure(events, lines, pod=options.pod, prefix=replicas)
    except MeasureError as error:
        started = replica_sets(events)
        hint = (
            "" if options.pod or replicas in started else f"; replica sets started in the events: {', '.join(started) or 'none'} (--model)"
        )
        print(f"cold start: {error}{hint}", file=sys.stderr)
        return 2
    if options.json:
        print(json.dumps(breakdown.as_output(), indent=2))
        return 0
    print(breakdown.table(), end="")
    if options.estimates:
        cold_start = (estimates[replicas] if models else estimates).get("coldStart") or {}
        print(f"against the estimate of a wake to {cold_start.get('replicas', '?')} replica(s):")
        for name, measured, expected in against_expected(breakdown, cold_start):
            print(f"  {name:<32} {_seconds(measured):>10} measured  {_seconds(expected):>10} expected")
    return 0


def replica_sets(events: Mapping[str, Any]) -> list[str]:
    """The Deployments whose pods started a container of the Deployment's own name, as every replica set's do
    (components/replicas.py): ``vllm``, or each model's short name."""
    found: set[str] = set()
    for event in events.get("items") or []:
        subject = event.get("involvedObject") or {}
        path = CONTAINER_PATH.fullmatch(str(subject.get("fieldPath", "")))
        if event.get("reason") == "Started" and path and deployment_pod(path["container"]).fullmatch(str(subject.get("name", ""))):
            found.add(path["container"])
    return sorted(found)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} s"


if __name__ == "__main__":
    sys.exit(main())
