"""``python -m ops.cold_start``: the last cold start of a replica, phase by phase.

    kubectl -n llm-serving get events -o json > events.json
    kubectl -n llm-serving logs --timestamps <pod> > vllm.log
    pulumi stack output estimates --json > estimates.json     # optional: the expected figures
    python -m ops.cold_start --events events.json --logs vllm.log --estimates estimates.json

Events are kept for an hour by default (kube-apiserver --event-ttl), so save them soon after a wake.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from facts.naming import REPLICAS
from workloads.cold_start.phases import MeasureError, against_expected, measure


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ops.cold_start", description="A replica's last cold start, phase by phase.")
    parser.add_argument("--events", type=Path, required=True, help="output of `kubectl get events -o json` in the stack's namespace")
    parser.add_argument("--logs", type=Path, required=True, help="output of `kubectl logs --timestamps <pod>` ('-' reads stdin)")
    parser.add_argument("--pod", help=f"the pod (default: the {REPLICAS}-... pod that started last)")
    parser.add_argument(
        "--estimates", type=Path, help="output of `pulumi stack output estimates --json`: print the expected figures beside"
    )
    parser.add_argument("--json", action="store_true", help="print the breakdown as JSON")
    options = parser.parse_args(argv)
    events = json.loads(options.events.read_text())
    lines = sys.stdin if str(options.logs) == "-" else options.logs.read_text().splitlines()
    try:
        breakdown = measure(events, lines, pod=options.pod, prefix=REPLICAS)
    except MeasureError as error:
        print(f"cold start: {error}", file=sys.stderr)
        return 2
    if options.json:
        print(json.dumps(breakdown.as_output(), indent=2))
        return 0
    print(breakdown.table(), end="")
    if options.estimates:
        cold_start = json.loads(options.estimates.read_text()).get("coldStart") or {}
        print(f"against the estimate of a wake to {cold_start.get('replicas', '?')} replica(s):")
        for name, measured, expected in against_expected(breakdown, cold_start):
            print(f"  {name:<32} {_seconds(measured):>10} measured  {_seconds(expected):>10} expected")
    return 0


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} s"


if __name__ == "__main__":
    sys.exit(main())
