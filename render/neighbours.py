"""The stack's neighbours: the other stack files of the repository in its GCP project.

Pulumi runs one stack at a time and cannot see that another stack of the project already created a name, so the
second `pulumi up` fails with 409 "already exists" halfway. The render can see the other ``Pulumi.<stack>.yaml``
files: it refuses a name two stacks of one project would both create, naming both stacks, each name and the setting
that changes it (plan/cloud_names.py lists the names).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from pydantic import ValidationError

from plan.cloud_names import CloudName, cloud_names
from plan.stack import plan_stack
from render.engine import PROJECT_ROOT, stack_settings
from stacks.problems import StackConfigError


def stack_names(stack: str, root: Path = PROJECT_ROOT) -> tuple[str, tuple[CloudName, ...]] | None:
    """The project of ``Pulumi.<stack>.yaml`` and the names it creates; None for a file whose settings do not load
    (its own render says why)."""
    try:
        settings = stack_settings(stack, root)
    except (StackConfigError, ValidationError, ValueError):
        return None
    return settings.project, cloud_names(plan_stack(settings, stack), stack)


def neighbours(root: Path) -> list[str]:
    return sorted(path.name.removeprefix("Pulumi.").removesuffix(".yaml") for path in root.glob("Pulumi.*.yaml"))


def clashes(stack: str, mine: tuple[CloudName, ...], other: str, theirs: tuple[CloudName, ...]) -> list[str]:
    """One line per kind of name, place and setting that ``stack`` and ``other`` both create."""
    shared = {(name.kind, name.within, name.name) for name in theirs}
    found: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for name in mine:
        if (name.kind, name.within, name.name) in shared:
            found[(name.kind, name.within, name.key)].append(name.name)
    return [
        f"stacks {stack} and {other} both create {kind} {', '.join(names)} in {within}: give one of them its own {key}"
        for (kind, within, key), names in found.items()
    ]


def check_neighbours(stack: str, root: Path = PROJECT_ROOT) -> str:
    """The report's line; raises naming both stacks when another stack file of the project creates one of the stack's names."""
    own = stack_names(stack, root)
    if own is None:
        return ""
    project, mine = own
    found = {other: stack_names(other, root) for other in neighbours(root) if other != stack}
    others = [(other, names) for other, names in found.items() if names and names[0] == project]
    problems = [line for other, (_, theirs) in others for line in clashes(stack, mine, other, theirs)]
    if problems:
        raise StackConfigError(
            [
                *problems,
                "the second `pulumi up` of the two would fail with 409 already exists, a destroy of one would delete what "
                "the other uses, and through one Workload Identity principal each stack's pods would act as the other's "
                'accounts (docs/operations.md, "Two stacks in one project")',
            ]
        )
    checked = ", ".join(other for other, _ in others) or "none"
    return f"neighbours: no name this stack creates is another stack's of project {project} (stacks there: {checked})\n"
