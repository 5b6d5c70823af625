"""The rollout section: how an engine or image change reaches the running replicas."""

from __future__ import annotations

from pydantic import Field

from stacks.section import ConfigBool, Section

# A rollout replaces this many replicas at once by default: a 12-node rollout
# then takes 3 cold starts, which fits the deploy job's time limit.
ROLLOUT_PARALLELISM = 4


class RolloutSettings(Section):
    """How an engine or image change reaches the running replicas."""

    parallelism: int = Field(default=ROLLOUT_PARALLELISM, ge=1, le=1000)
    """Replicas replaced at once, each on its own node (no surge: no extra A4 node); `pulumi up` waits one cold start per round."""
    keep_serving: ConfigBool = True
    """Keep at least one replica serving through a rollout: at most replicas - 1 are replaced at once, and a
    one-replica stack starts the new replica on a second node before stopping the old. False replaces
    `parallelism` at once even if that is every replica."""
