"""``python -m cold_start``: the last cold start of a replica, phase by phase.

    kubectl -n llm-serving get events -o json > events.json
    kubectl -n llm-serving logs --timestamps <pod> > vllm.log
    python -m cold_start --events events.json --logs vllm.log

Events are kept for an hour by default (kube-apiserver --event-ttl), so save them soon after a wake.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from cold_start.phases import MeasureError, measure
from stacks.plan import REPLICAS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cold_start", description="A replica's last cold start, phase by phase.")
    parser.add_argument("--events", type=Path, required=True, help="output of `kubectl get events -o json` in the stack's namespace")
    parser.add_argument("--logs", type=Path, required=True, help="output of `kubectl logs --timestamps <pod>` ('-' reads stdin)")
    parser.add_argument("--pod", help=f"the pod (default: the {REPLICAS}-... pod that started last)")
    parser.add_argument("--json", action="store_true", help="print the breakdown as JSON")
    options = parser.parse_args(argv)
    events = json.loads(options.events.read_text())
    lines = sys.stdin if str(options.logs) == "-" else options.logs.read_text().splitlines()
    try:
        breakdown = measure(events, lines, pod=options.pod, prefix=REPLICAS)
    except MeasureError as error:
        print(f"cold start: {error}", file=sys.stderr)
        return 2
    print(json.dumps(breakdown.as_output(), indent=2) if options.json else breakdown.table(), end="" if not options.json else "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
