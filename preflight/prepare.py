"""The preflight's preparation, where the project is installed: render the stack, then write what the render lacks.

The render holds the engine's command line; the benchmark client's command line is built by
``components/benchmark.py`` from the stack's settings, which need the project's environment (pydantic,
Pulumi). This writes it beside the render (``build/<stack>/preflight.json``), so the preflight itself can
run on a GPU machine with no project environment.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from components.benchmark import client_command
from facts.naming import model_short_name
from plan.stack import benchmark_spec
from preflight.rendered import PREPARED_FILE
from render.engine import stack_settings
from stacks.settings import StackSettings

PROJECT_ROOT = Path(__file__).resolve().parent.parent
# Replaced by the preflight with its own engine's address.
PLACEHOLDER_URL = "http://127.0.0.1:8000"


def prepared(settings: StackSettings, stack: str) -> dict[str, Any]:
    """The benchmark client of one serving node and the model's id, as the preflight reads them.

    With several models, each one's under ``models`` by its replica set's name, run one after the other; an
    embedding model's entry says why it is not run."""
    if settings.models is None:
        refusal = embedding_refusal(settings)
        if refusal:
            raise SystemExit(refusal)
        return _prepared_model(settings, stack)
    models: dict[str, Any] = {}
    for one in settings.each_model():
        refusal = embedding_refusal(one)
        models[model_short_name(one.model.id)] = {"refused": refusal} if refusal else _prepared_model(one, stack)
    return {"stack": stack, "models": models}


def embedding_refusal(settings: StackSettings) -> str | None:
    """Why the preflight does not run the stack's model, or None when it generates."""
    if settings.model.serves != "embed":
        return None
    # Its first requests, drain and benchmark are completions, chats and generated tokens/s (preflight/run.py).
    return (
        f"the preflight checks a model that generates, with completions, chats and vllm bench serve; {settings.model.id} is "
        "an embedding model (llm:model.task embed), whose pooling runner answers none of them: it is not run for it"
    )


def _prepared_model(settings: StackSettings, stack: str) -> dict[str, Any]:
    # Client 0's command line reads neither the node count nor the labels: a stack scaled to zero has one too.
    spec = benchmark_spec(settings, {}, settings.benchmark.image)
    return {
        "stack": stack,
        "model": settings.model.id,
        "revision": settings.model.revision,
        "bench_client": client_command(spec, 0, PLACEHOLDER_URL),
    }


def prepare(stack: str, root: Path = PROJECT_ROOT) -> Path:
    """Renders ``stack`` (``python -m render``) and writes the preparation beside it; returns the render's folder."""
    done = subprocess.run([sys.executable, "-m", "render", stack], cwd=root, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the render of {stack} failed (exit {done.returncode}); the preflight runs only a stack that renders")
    folder = root / "build" / stack
    (folder / PREPARED_FILE).write_text(json.dumps(prepared(stack_settings(stack, root), stack), indent=1) + "\n", encoding="utf-8")
    return folder
