"""The render's scaling trace for a stack of several models: one per model's ScaledObject, or why it has none."""

from __future__ import annotations

from render.simulations.scaling import replica_sets, replicas_scaled_object, scaling_timeline
from tests.conftest import rendered


def test_the_rag_stack_shows_a_trace_for_each_model_or_says_why_none() -> None:
    render = rendered("rag")
    names = replica_sets(render)
    assert names == tuple(render.outputs["estimates"])
    # Each model's ScaledObject targets its own replica set.
    assert all(replicas_scaled_object(render, name) is not None for name in names)
    text = scaling_timeline(render)
    generator, embedder = names
    lines = text.splitlines()
    (start,) = [i for i, line in enumerate(lines) if line.startswith(f"scaling of {generator}:")]
    assert lines[start + 1].startswith("  (a model of KEDA v2.20.2 and the HPA; the stack's estimates:")
    assert lines[start + 2] == "    time  desired  ready  requests  aborted"
    # The embedding model generates no tokens: no batch plan paces a trace, and the render says so.
    (embedding,) = [line for line in lines if line.startswith(f"scaling of {embedder}:")]
    assert "no trace" in embedding and "embedding model" in embedding
    # No batch in this stack: no wake trace, said per model.
    assert sum(line.startswith("  batch wake: none") for line in lines) == 1
