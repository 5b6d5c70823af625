"""How many runner workers keep the stack's largest replica count busy."""

from __future__ import annotations

import math
from typing import Final

# The reference's 12 nodes completed on the order of 1,000 requests per second.
REQUESTS_PER_SECOND_PER_REPLICA: Final = 1000 / 12
# Sustained requests per second one runner worker (one process on one core) sends
# and records. `python -m dev.benchmarks.batch_runner` measured a median of 1,406 per CPU
# second (1,300-1,510) on a shared 2-core machine (docs/batch-runner.md); half of that,
# for slower pod cores, larger answers and a core the worker shares with its threads.
REQUESTS_PER_SECOND_PER_WORKER: Final = 700.0
# Headroom so the runner is never the bottleneck when a replica runs faster than the reference.
HEADROOM: Final = 1.5


def runner_workers(
    max_replicas: int,
    *,
    per_replica: float = REQUESTS_PER_SECOND_PER_REPLICA,
    per_worker: float = REQUESTS_PER_SECOND_PER_WORKER,
) -> int:
    """Workers that saturate ``max_replicas`` replicas, with headroom; at least one."""
    if max_replicas < 1:
        raise ValueError(f"max_replicas must be at least 1, got {max_replicas}")
    return max(1, math.ceil(max_replicas * per_replica * HEADROOM / per_worker))
