"""Serves the guardrails to the Pulumi CLI: `pulumi preview --policy-pack policy`."""

import sys
from pathlib import Path

# The CLI runs this directory as a script; the project root makes the `policy` package importable.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulumi_policy import EnforcementLevel, PolicyPack

from policy.guardrails import PACK_NAME, policies

PolicyPack(
    PACK_NAME,
    policies=policies(),
    enforcement_level=EnforcementLevel.MANDATORY,
    description="Guardrails for vLLM serving on GKE A4: whole-node GPU pods on approved capacity, "
    "no public exposure without opt-in, no plain-text credentials, a read-only model cache, "
    "deletion protection in production, the project's labels.",
)
