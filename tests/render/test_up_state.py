"""A render of a stack already up: an input under ``ignoreChanges`` keeps its value in the stack's state, as
`pulumi up` keeps it (pulumi.com/docs/iac/concepts/options/ignorechanges/), and what reads the resource's outputs
sees the kept value."""

from __future__ import annotations

import json
from typing import Any

from render.changes import changes, records
from render.engine import render_stack
from tests.conftest import rendered, stack_file_config

ACCOUNT = "gcp:serviceaccount/account:Account"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
KEPT_ID = "nodes-made-long-ago"


def up_state() -> list[dict[str, Any]]:
    """The batch stack as a former release left it: another id on the nodes' account (ignored), another count and
    another annotation on the runner's Deployment (the count ignored, the annotation not)."""
    now = records(rendered("batch"))
    (nodes,) = [r["inputs"]["accountId"] for r in now if r["type"] == ACCOUNT and r["name"] == "nodes"]
    # Everything that named the account named it by its email, `<id>@<project>.iam.gserviceaccount.com`.
    state: list[dict[str, Any]] = json.loads(json.dumps(now).replace(f"{nodes}@", f"{KEPT_ID}@"))
    for record in state:
        inputs = record["inputs"]
        if record["type"] == ACCOUNT and record["name"] == "nodes":
            inputs["accountId"] = KEPT_ID
        if record["type"] == DEPLOYMENT and record["name"] == "batch-runner":
            inputs["spec"]["replicas"] = 3
            inputs["metadata"]["annotations"] = {"former": "release"}
    return state


def by_name(render_records: list[dict[str, Any]], type_: str, name: str) -> dict[str, Any]:
    (found,) = [r for r in render_records if r["type"] == type_ and r["name"] == name]
    inputs: dict[str, Any] = found["inputs"]
    return inputs


def test_an_ignored_input_keeps_its_value_in_the_state_and_the_rest_take_the_programs() -> None:
    state = up_state()
    now = records(render_stack("batch", config=stack_file_config("batch"), up=state))
    assert by_name(now, ACCOUNT, "nodes")["accountId"] == KEPT_ID
    runner = by_name(now, DEPLOYMENT, "batch-runner")
    assert runner["spec"]["replicas"] == 3
    assert "former" not in runner["metadata"].get("annotations", {})
    # The account's email follows the id it keeps: the registry grants name the account the nodes run as.
    members = [r["inputs"]["member"] for r in now if r["name"].endswith("-nodes-read")]
    assert members and all(m.startswith(f"serviceAccount:{KEPT_ID}@") for m in members)
    # Only the annotation no option covers is set back.
    assert [(c.name, c.action, c.fields) for c in changes(state, now)] == [("batch-runner", "update", ("metadata.annotations",))]


def test_without_a_state_every_input_is_the_programs() -> None:
    assert records(render_stack("batch", config=stack_file_config("batch"), up=[])) == records(rendered("batch"))
