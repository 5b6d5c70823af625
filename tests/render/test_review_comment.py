"""The pull-request review comment, per stack: consequences first, the details collapsed, an unchanged stack one line.

The two fixtures are the program's own output for two changes (``tests/render/reviews/``); the test renders both
sides again and compares. After an intended change of the comment, write them anew with
``REGENERATE_REVIEWS=1 uv run pytest tests/render/test_review_comment.py`` and read the diff.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from render.changes import write_records
from render.cli import main
from render.engine import Render
from render.files import write
from render.review import review, rollout_of
from tests.conftest import render_with, rendered

REVIEWS = Path(__file__).resolve().parent / "reviews"
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "dev-nodes-1-to-4": ("dev", {"nodes": 4}),
    "prod-image-v0.18.1-to-v0.33.0": ("prod", {"serving": {"image": "vllm/vllm-openai:v0.33.0"}}),
}


def folder(render: Render, path: Path) -> Path:
    write(render, path)
    write_records(render, path)
    return path


def comment(tmp_path: Path, case: str) -> str:
    stack, config = CASES[case]
    return review(stack, folder(rendered(stack), tmp_path / "base"), folder(render_with(stack, **config), tmp_path / "head"))


def consequences(text: str) -> list[str]:
    """The lines a reviewer reads before the collapsed details."""
    return text.split("<details>")[0].strip().splitlines()


@pytest.mark.parametrize("case", CASES)
def test_the_review_comment_of_each_change_is_its_committed_fixture(tmp_path: Path, case: str) -> None:
    text = comment(tmp_path, case)
    fixture = REVIEWS / f"{case}.md"
    if os.environ.get("REGENERATE_REVIEWS"):
        fixture.write_text(text)
    assert text == fixture.read_text()


def test_a_new_image_on_prod_leads_with_three_rounds_105_minutes_a_third_down_a_cold_compile_cache_and_the_cost(
    tmp_path: Path,
) -> None:
    heading, _, resources, rollout, capacity, cache, cost = consequences(comment(tmp_path, "prod-image-v0.18.1-to-v0.33.0"))
    assert heading == "### `prod`"
    assert resources == "- **Resources**: 1 updated in place (Deployment `vllm`)."
    # 12 replicas, 4 at a time (rollout.parallelism) keeping 8 serving: 3 rounds, each a cold start of 25 min + 10.
    assert "restarts its pods (all 12) in 3 rounds, 4 at a time: up to ~105 min (3 x 35 min" in rollout
    assert "4 of 12 replicas (a third of the capacity) down at a time; 8 keep serving" in capacity
    assert cache.startswith("- **Compile cache**: **cold**: a new compile-cache entry for the new image")
    assert "`vllm-openai:v0.18.1` -> `vllm-openai:v0.33.0`" in cache
    # Twelve reserved nodes at $88.93, the $0.10 cluster fee and $0.41 of Hyperdisk ML: unchanged by the image.
    assert cost.startswith("- **Cost per hour**: $1,067.67")


def test_four_dev_nodes_lead_with_three_new_pods_no_restart_a_warm_cache_and_four_times_the_cost(tmp_path: Path) -> None:
    lines = consequences(comment(tmp_path, "dev-nodes-1-to-4"))
    text = "\n".join(lines)
    assert "none restart; Deployment `vllm` goes from 1 to 4 replicas: 3 new pods start" in text
    assert "**Rollout**" not in text
    assert "**Compile cache**: warm" in text
    # One Spot node at $32.61 + $0.51 against four.
    assert "**Cost per hour**: $33.12 -> $130.95" in text


def test_an_unchanged_stack_is_one_line(tmp_path: Path) -> None:
    dev = folder(rendered("dev"), tmp_path / "dev")
    assert review("dev", dev, dev) == "- `dev`: no change.\n"


def test_a_subnet_replacement_is_flagged_stateful_and_names_the_cluster_on_it(tmp_path: Path) -> None:
    base = folder(rendered("dev"), tmp_path / "base")
    head = folder(render_with("dev", network={"nodeCidr": "10.16.0.0/20"}), tmp_path / "head")
    (line,) = [line for line in consequences(review("dev", base, head)) if "Subnetwork" in line]
    assert line.startswith("  - replaced: Subnetwork `nodes` **stateful")
    assert "IsShrinkageIpCidr" in line and line.endswith("Cluster gke depends on it")


def test_a_new_stack_is_all_creation_under_its_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    absent = tmp_path / "absent"
    absent.mkdir()
    (absent / "plan.txt").write_text("")
    head = folder(rendered("dev"), tmp_path / "head")
    main(["review", "dev", str(absent), str(head), "--note", "New stack: diffed against nothing.", "--max-lines", "5"])
    text = capsys.readouterr().out
    assert consequences(text)[2] == "New stack: diffed against nothing."
    # A new stack creates everything, counted by kind.
    assert consequences(text)[4].startswith("- **Resources**: ") and consequences(text)[4].endswith(" created.")
    assert "replaced" not in text.split("<details>")[0] and "  - created: " in text
    assert "Cut at 5 of" in text


def test_the_cost_line_shows_every_dollar_figure_of_the_estimates_and_nothing_else(tmp_path: Path) -> None:
    def side(name: str, estimates: str) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "outputs.yaml").write_text(f"estimates:\n{estimates}")
        (folder / "plan.txt").write_text("stack\n")
        return folder

    before = side("before", "  costPerHour: 33.12\n  whenIdle: {costPerHour: 0.51}\n")
    after = side(
        "after",
        "  costPerHour: 478.2\n  whenIdle: {costPerHour: 445.16}\n"
        "  committed: {nodes: 5, costPerHour: 444.65, term: {hours: 1488, totalUsd: 661639.2}, basis: a calendar reservation}\n",
    )
    (cost,) = [line for line in review("dev", before, after).splitlines() if line.startswith("- **Cost per hour**")]
    assert cost == (
        "- **Cost per hour**: $33.12 -> $478.20; committed capacity: none -> $444.65; "
        "whole committed term: none -> $661,639.20; scaled to zero: $0.51 -> $445.16."
    )


def test_an_autoscaled_stack_rolls_its_ceiling_one_surge_replica_at_a_time(tmp_path: Path) -> None:
    base = folder(rendered("batch"), tmp_path / "base")
    head = folder(render_with("batch", serving={"image": "vllm/vllm-openai:v0.33.0"}), tmp_path / "head")
    text = "\n".join(consequences(review("batch", base, head)))
    # autoscaling.maxReplicas 4, one replica surging at a time (a lone serving replica): 4 rounds of a 35-minute deadline.
    assert "restarts its pods (up to 4, autoscaled) in 4 rounds, 1 at a time: up to ~140 min" in text
    assert "none missing: 1 extra replica starts before old ones stop, which needs a spare node" in text


@pytest.mark.parametrize(
    ("strategy", "replicas", "rounds", "down"),
    [
        ({}, 8, 2, 2),  # Kubernetes' defaults: 25% surge (2) and 25% unavailable (2)
        ({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "50%"}}, 5, 3, 2),  # 50% of 5 rounds down
        ({"type": "Recreate"}, 3, 1, 3),
    ],
)
def test_rounds_and_replicas_down_follow_the_deployments_strategy(strategy: dict[str, Any], replicas: int, rounds: int, down: int) -> None:
    rollout = rollout_of({"spec": {"replicas": replicas, "strategy": strategy}}, None)
    assert (rollout.rounds, rollout.down, rollout.round_seconds) == (rounds, down, 600)


def test_with_several_models_the_cost_line_leads_with_every_models_total(tmp_path: Path) -> None:
    def side(name: str, generator: float, total: float, idle: float) -> Path:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "outputs.yaml").write_text(
            f"estimates:\n  qwen3-5-27b-fp8: {{costPerHour: {generator}}}\n  qwen3-embedding-8b: {{costPerHour: 33.12}}\n"
            f"estimatesTotal: {{costPerHour: {total}, whenIdle: {{costPerHour: {idle}}}}}\n"
        )
        (folder / "plan.txt").write_text("stack\n")
        return folder

    before, after = side("before", 33.12, 66.14, 0.92), side("after", 65.73, 98.75, 0.92)
    (cost,) = [line for line in review("rag", before, after).splitlines() if line.startswith("- **Cost per hour**")]
    assert cost == (
        "- **Cost per hour**: every model: $66.14 -> $98.75; every model scaled to zero: $0.92; "
        "qwen3-5-27b-fp8: $33.12 -> $65.73; qwen3-embedding-8b: $33.12."
    )
