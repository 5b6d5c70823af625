"""``python -m preflight <stack>``: the stack's exact vLLM engine on this machine's GPUs, measured and judged."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from preflight import report
from preflight.caches import KEEP
from preflight.miniature import SIZES

DESCRIPTION = """\
Runs the stack's exact vLLM command line and environment on this machine's GPUs against a miniature of its
model (same architecture, random weights), or with --size full the model at its real size (dummy weights,
each engine's memory held to the plan), adapting only what the machine forces, and reports: the flags
accepted, each start's phases through the project's cold-start parser, the caches a later start reused,
every metric the stack's alerts, scaler and dashboard read, a completion and chat requests with usage, the
time from Ready to the first answer, the drain under load against the pod's grace period, preStop and
--shutdown-timeout, and a short throughput run through the project's benchmark client.
Exits 0 when nothing failed, 1 naming each failure, 2 when it cannot run here (docs/preflight.md)."""


def _list(text: str) -> tuple[str, ...]:
    return tuple(part for part in text.split(",") if part)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m preflight", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("stack", help="the stack to check (Pulumi.<stack>.yaml)")
    p.add_argument(
        "--rendered",
        type=Path,
        help="run from this render (build/<stack>) without rendering: for a GPU machine without the project's environment",
    )
    p.add_argument("--prepare", action="store_true", help="render the stack and write build/<stack>/preflight.json, then stop")
    p.add_argument("--work", type=Path, help="where the miniature, logs, caches and report go (default build/preflight/<stack>)")
    p.add_argument(
        "--engine",
        choices=("auto", "local", "docker", "podman"),
        default="auto",
        help="auto: the stack's image when Docker or Podman is here, else the installed vLLM",
    )
    p.add_argument(
        "--starts",
        type=_list,
        default=("cold", "all-caches"),
        help=f"the starts, in order; each keeps the caches its name says ({', '.join(KEEP)}); default cold,all-caches",
    )
    p.add_argument(
        "--size",
        choices=SIZES,
        default="miniature",
        help="miniature (default), or full: the stack's model at its real size and quantization with dummy weights "
        "(vLLM's dummy load format), its memory lines held to the render's plan; 12-14 min cold",
    )
    p.add_argument("--compare", type=_list, default=(), help="throughput variants after the stack's: no-mtp, defaults")
    p.add_argument("--prompts", type=int, default=300, help="prompts of the throughput run (0: none)")
    p.add_argument("--no-drain", action="store_true", help="stop the last start without load instead of the drain test")
    p.add_argument("--drain-requests", type=int, default=32, help="streamed and as many plain requests in flight at SIGTERM")
    p.add_argument(
        "--observe-after-grace", type=float, default=30.0, help="seconds to keep watching a draining engine after its SIGKILL was due"
    )
    p.add_argument("--port", type=int, help="the port the engine listens on here (default: the stack's, or a free one when that is taken)")
    p.add_argument("--ready-timeout", type=float, default=1500.0, help="seconds to wait for /health 200")
    p.add_argument(
        "--first-answer-budget", type=float, default=10.0, help="seconds after Ready within which the first completion must be answered"
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    rendered: Path = args.rendered
    if rendered is None or args.prepare:
        from preflight.prepare import prepare

        rendered = prepare(args.stack)
        if args.prepare:
            print(f"prepared {rendered}: carry it to the GPU machine and run python -m preflight {args.stack} --rendered {rendered}")
            return 0
    from preflight.rendered import read_prepared

    models: dict[str, dict[str, str]] = read_prepared(rendered).get("models") or {}
    if not models:
        return run(args, rendered, None)
    # A stack of several models: each model's engine, one after the other, each with its own report.
    worst = 0
    for name, model in models.items():
        if "refused" in model:
            print(f"{name}: not run: {model['refused']}")
            continue
        print(f"{name}:")
        worst = max(worst, run(args, rendered, name))
    return worst


def run(args: argparse.Namespace, rendered: Path, deployment: str | None) -> int:
    """One engine's preflight: the stack's only one, or with several models the one of ``deployment``."""
    from preflight.run import Options, execute

    work = args.work or Path("build") / "preflight" / args.stack
    options = Options(
        stack=args.stack,
        rendered=rendered,
        work=work / deployment if deployment else work,
        engine=args.engine,
        starts=args.starts,
        compare=args.compare,
        prompts=args.prompts,
        ready_timeout=args.ready_timeout,
        first_answer_budget=args.first_answer_budget,
        drain=not args.no_drain,
        drain_requests=args.drain_requests,
        observe_after_grace=args.observe_after_grace,
        port=args.port,
        size=args.size,
        deployment=deployment,
    )
    result = execute(options)
    print(report.text(result), end="")
    print(f"report: {options.work / 'report.json'}")
    if result.get("refused"):
        return 2
    return 0 if result["verdict"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
