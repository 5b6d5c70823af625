"""The cloud workflows as a real run meets them: the project's guardrails enforced, the update's time limit."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import policy.guardrails as guardrails
from render.engine import PROJECT_ROOT
from tests.conftest import rendered

WORKFLOWS = PROJECT_ROOT / ".github" / "workflows"
# A GitHub-hosted runner stops any job after 6 hours.
HOSTED_RUNNER_MINUTES = 6 * 60
# What the longest update waits for before the rollout: the cluster (about 15 min in practice)
# and its first A4 node; a generous allowance, not a measurement.
CLUSTER_MINUTES = 30


def job(name: str) -> dict[str, Any]:
    """The job that runs Pulumi (another job lists the stacks first)."""
    document = yaml.safe_load((WORKFLOWS / name).read_text())
    (pulumi,) = [j for j in document["jobs"].values() if any(str(s.get("uses", "")).startswith("pulumi/actions@") for s in j["steps"])]
    assert isinstance(pulumi, dict)
    return pulumi


def pulumi_step(name: str) -> dict[str, Any]:
    (step,) = [s for s in job(name)["steps"] if str(s.get("uses", "")).startswith("pulumi/actions@")]
    assert isinstance(step, dict)
    return step


def minutes(timeout: str) -> int:
    hours, mins = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?", timeout).groups()  # type: ignore[union-attr]
    return int(hours or 0) * 60 + int(mins or 0)


@pytest.mark.parametrize("name", ["preview.yml", "deploy.yml"])
def test_previews_and_updates_enforce_the_projects_policy_pack(name: str) -> None:
    packs = str(pulumi_step(name)["with"].get("policyPacks", "")).split()
    # The action runs from the repository root: each pack it names is the folder the guardrails are served from.
    assert [(PROJECT_ROOT / pack).resolve() for pack in packs] == [Path(guardrails.__file__).resolve().parent]
    assert (PROJECT_ROOT / packs[0] / "PulumiPolicy.yaml").is_file()


def test_the_deploy_job_outlasts_the_longest_update_and_fits_a_hosted_runner() -> None:
    prod = rendered("prod")
    rollout = minutes(prod.one("kubernetes:apps/v1:Deployment").custom_timeouts["update"])
    download = minutes(next(r for r in prod.by_type("kubernetes:batch/v1:Job") if r.name.startswith("download-")).custom_timeouts["create"])
    limit = int(job("deploy.yml")["timeout-minutes"])
    assert CLUSTER_MINUTES + download + rollout <= limit < HOSTED_RUNNER_MINUTES
