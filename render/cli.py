"""Offline render: ``python -m render <stack>`` and ``python -m render diff <a> <b>``.

Runs the real program under Pulumi's mock engine: no cloud, no Pulumi CLI.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from pathlib import Path

from render.progress import Progress

# Importing the checks (Kubernetes schemas, CEL, Helm, the Dashboards API types) takes over a second.
with Progress.on_terminal().step("loading the render's checks"):
    from render.changes import changes, read_records, summary, write_records
    from render.chart import ChartError
    from render.cluster_model import ClusterModelError, check_cluster
    from render.engine import PROJECT_ROOT, Render, render_stack
    from render.files import PLAN_FILE, changed_files, diff, write
    from render.lifecycle import LIFECYCLE_FILE, LifecycleError, check_lifecycle, lifecycle_text
    from render.neighbours import check_neighbours
    from render.promql import PromQLError, check_monitoring
    from render.provider_rules import ProviderConstraintError, check_provider
    from render.refresh import RefreshError, check_refresh, refresh_text
    from render.review import estimate_changes, review
    from render.validation import ManifestError, kubernetes_version, validate_render
    from stacks.problems import StackConfigError

BUILD = PROJECT_ROOT / "build"


def provider_sdks_compiled() -> bool:
    """Whether the install compiled the provider SDKs: Python reads bytecode it is not allowed to write."""
    spec = importlib.util.find_spec("pulumi_gcp")
    assert spec is not None and spec.origin is not None
    return Path(importlib.util.cache_from_source(str(Path(spec.origin).parent / "compute" / "_inputs.py"))).exists()


def _loading_step(stack: str) -> str:
    step = f"running the program of {stack} under the mock engine (loads the provider SDKs)"
    if sys.dont_write_bytecode and not provider_sdks_compiled():
        step += "; they have no bytecode and Python writes none here: `uv sync --compile-bytecode` once saves ~10 s a render"
    return step


def _render_to(stack: str, folder: Path, progress: Progress | None = None) -> Render:
    progress = progress or Progress.on_terminal()
    with progress.step(_loading_step(stack)):
        render = render_stack(stack)
    with progress.step(f"rendering the charts and writing {folder}"):
        write(render, folder)
        write_records(render, folder)
    return render


def _folder_or_stack(target: str, scratch: Path) -> Path:
    path = Path(target)
    if path.is_dir() and (path / PLAN_FILE).exists():
        return path
    folder = scratch / target
    _render_to(target, folder)
    return folder


def check_render(render: Render, progress: Progress | None = None) -> list[str]:
    """Runs every check of the render, in order; the report's lines. Raises the first check's error.

    The one list of checks: the tests run it on every documented capacity path, so a check added here
    cannot refuse a documented stack unseen.
    """
    progress = progress or Progress(sys.stderr, shown=False)
    with progress.step("validating every object against the Kubernetes schema and the vendored CRDs"):
        checks = validate_render(render)
    schemas = f"Kubernetes {kubernetes_version(render)} schema, vendored CRDs and their CEL rules"
    report = [f"\n{len(checks)} Kubernetes objects valid (strict: {schemas})\n"]
    with progress.step("checking the cluster model"):
        objects = check_cluster(render)
    report.append(
        f"cluster model: {len(objects)} objects of the program and its charts; identities unique, references resolved, no GKE refusal\n"
    )
    with progress.step("checking GCP inputs against the provider's schema"):
        provider_checked = check_provider(render)
    report.append(f"provider: {provider_checked} GCP resources meet google-beta's schema checks (docs/provider.md)\n")
    with progress.step("checking the stack's creation order and destroy"):
        check_lifecycle(render)
        report.append(f"\n{lifecycle_text(render)}")
    with progress.step("checking what an up after `pulumi refresh` would change"):
        check_refresh(render)
        report.append(refresh_text(render))
    with progress.step("checking the monitoring queries"):
        queries = check_monitoring(render)
    report.append(
        f"monitoring: {queries} PromQL queries parse and read only exported metrics; dashboard reads as the Dashboards API type\n"
    )
    return report


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["review"]:
        parser = argparse.ArgumentParser(
            prog="python -m render review",
            description="One stack's section of the pull-request review: consequences first, then the details collapsed (Markdown).",
        )
        parser.add_argument("stack", help="the stack's name, for the heading")
        parser.add_argument("before", type=Path, help="the base's render folder")
        parser.add_argument("after", type=Path, help="the pull request's render folder")
        parser.add_argument("--note", default="", help="a line under the heading (a new stack, a base that did not render)")
        parser.add_argument("--max-lines", type=int, default=300, help="rendered-file diff lines shown before the cut")
        options = parser.parse_args(args[1:])
        sys.stdout.write(review(options.stack, options.before, options.after, note=options.note, max_lines=options.max_lines))
        return 0
    if args[:1] == ["diff"]:
        parser = argparse.ArgumentParser(prog="python -m render diff", description="Diff two stacks, or two render folders.")
        parser.add_argument("before", help="a stack name or a render folder")
        parser.add_argument("after", help="a stack name or a render folder")
        parser.add_argument("--exit-code", action="store_true", help="exit 1 when they differ")
        options = parser.parse_args(args[1:])
        with tempfile.TemporaryDirectory() as scratch:
            before = _folder_or_stack(options.before, Path(scratch))
            after = _folder_or_stack(options.after, Path(scratch))
            try:
                classified = summary(changes(read_records(before), read_records(after)))
            except FileNotFoundError as missing:
                # A folder rendered by an older renderer (the base of a pull request, say).
                classified = [f"resource changes: not classified ({missing})\n\n"]
            lines = diff(before, after, labels=(options.before, options.after))
            estimates = estimate_changes(before, after)
        sys.stdout.writelines(estimates)
        sys.stdout.writelines(classified)
        sys.stdout.writelines(lines)
        print(f"{changed_files(lines)} files differ between {options.before} and {options.after}")
        return 1 if lines and options.exit_code else 0

    parser = argparse.ArgumentParser(
        prog="python -m render",
        description="Render a stack offline: plan, manifests, cloud inputs.",
        epilog="python -m render diff <before> <after> [--exit-code] compares two stacks or render folders; "
        "python -m render review <stack> <before> <after> writes one stack's section of the pull-request review.",
    )
    parser.add_argument("stack", help="the stack: Pulumi.<stack>.yaml")
    parser.add_argument("--out", type=Path, help="output folder (default: build/<stack>)")
    options = parser.parse_args(args)
    folder = options.out or BUILD / options.stack
    progress = Progress.on_terminal()
    render = _render_to(options.stack, folder, progress)
    with progress.step("comparing the names it creates with the other stacks of its project"):
        # After the render, which reports the stack's own settings' problems first.
        neighbours = check_neighbours(options.stack)
    print((folder / PLAN_FILE).read_text(), end="")  # as written: the plan runs the scaling simulations
    report = [*check_render(render, progress), neighbours]
    (folder / LIFECYCLE_FILE).write_text(lifecycle_text(render) + refresh_text(render))
    print("".join(report), end="")
    print(f"written to {folder}")
    return 0


def run(argv: list[str]) -> int:
    """``main`` with the render's own errors as a message and exit code 2, never a traceback."""
    try:
        return main(argv)
    except (
        StackConfigError,
        ManifestError,
        ClusterModelError,
        ProviderConstraintError,
        ChartError,
        PromQLError,
        LifecycleError,
        RefreshError,
        FileNotFoundError,
        FileExistsError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
