"""A short throughput run through the project's own benchmark client and summary.

The client's command line is the one ``components/benchmark.py`` builds for the stack (written beside the
render by ``python -m preflight <stack> --prepare``); the preflight changes only where it points, the
tokenizer, the number of prompts and where results go. ``workloads/benchmark_summary.py`` sums the result.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from preflight.adapt import Adaptation
from workloads import benchmark_summary as summarize

# The flags the preflight sets itself; every other flag of the stack's client is kept.
OWN = ("--base-url", "--tokenizer", "--num-prompts", "--result-dir", "--result-filename")


def client_argv(
    client: Sequence[str], *, base_url: str, tokenizer: str, prompts: int, result_dir: str, result_file: str, launcher: Sequence[str]
) -> tuple[list[str], list[Adaptation]]:
    """The stack's ``vllm bench serve`` command pointed at this engine, and each change with its reason."""
    words = list(client)
    if words[:3] != ["vllm", "bench", "serve"]:
        raise ValueError(f"not a `vllm bench serve` command: {' '.join(words[:3])}")
    given = {arg.split("=", 1)[0]: arg.split("=", 1)[1] for arg in words[3:] if arg.startswith("--") and "=" in arg}
    wanted = {
        "--base-url": base_url,
        "--tokenizer": tokenizer,
        "--num-prompts": str(prompts),
        "--result-dir": result_dir,
        "--result-filename": result_file,
    }
    reasons = {
        "--base-url": "the engine runs on this machine",
        "--tokenizer": "the miniature's tokenizer (the stack's is downloaded from Hugging Face)",
        "--num-prompts": "a short run: minutes of one GPU, not the cluster benchmark's",
        "--result-dir": "the preflight's own folder",
        "--result-filename": "the preflight's own folder",
    }
    kept = [arg for arg in words[3:] if arg.split("=", 1)[0] not in OWN]
    argv = [*launcher, "bench", "serve", *kept, *(f"{flag}={value}" for flag, value in wanted.items())]
    changes = [
        Adaptation(f"bench {flag}", given.get(flag), value, reasons[flag]) for flag, value in wanted.items() if given.get(flag) != value
    ]
    return argv, changes


def run(argv: Sequence[str], *, env: dict[str, str], log: Path, result: Path, timeout: float) -> dict[str, Any]:
    """Runs the client; its summary (``summarize.summarize``) or the error."""
    with log.open("w", encoding="utf-8") as out:
        out.write(" ".join(argv) + "\n")
        out.flush()
        try:
            code = subprocess.run(list(argv), env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout, check=False).returncode
        except subprocess.TimeoutExpired:
            return {"error": f"the client ran past {timeout:.0f} s"}
    if not result.exists():
        return {"error": f"the client exited {code} and saved no result (see {log.name})"}
    saved = json.loads(result.read_text(encoding="utf-8"))
    try:
        summary = summarize.summarize([saved])
    except summarize.ResultError as error:
        return {"error": str(error), "returncode": code}
    summary["returncode"] = code
    summary["duration_s"] = saved.get("duration")
    return summary


def ratio(numerator: dict[str, Any] | None, denominator: dict[str, Any] | None, key: str = "total_token_throughput") -> float | None:
    if not numerator or not denominator or not denominator.get(key):
        return None
    return float(numerator.get(key) or 0.0) / float(denominator[key])


def python_launcher() -> list[str]:
    """``vllm`` as its console script runs it, through this interpreter (the script's shebang may name another)."""
    return [sys.executable, "-m", "vllm.entrypoints.cli.main"]
