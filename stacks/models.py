"""The models section (``llm:models``): several models on one cluster, each with what is its own.

Everything else (image, cluster, capacity, network, routing, cache, drain, observability...) stays at the
top level, once, shared by every model. Each model is checked as the one-model stack it would be
(``StackSettings.each_model``), then with the others (stacks/settings.py).
"""

from __future__ import annotations

from pydantic import Field

from stacks.model import ModelSettings
from stacks.section import ConfigBool, Section


class ModelServing(Section):
    """The engine settings one model sets for itself; unset ones are the top-level serving section's."""

    tensor_parallel_size: int | None = None
    """GPUs one engine of this model spans."""
    data_parallel_size: int | None = None
    """Engines per pod of this model; default: the node's 8 GPUs / tensorParallelSize."""
    expert_parallel: ConfigBool | None = None
    """MoE models: whole experts per GPU (--enable-expert-parallel)."""
    max_model_len: int | None = None
    """This model's context length."""
    max_num_seqs: int | None = None
    """This model's concurrent sequences per engine; default: from its memory budget."""
    mtp_tokens: int | None = None
    """This model's multi-token-prediction speculative tokens."""
    extra_args: tuple[str, ...] | None = None
    """This model's extra engine flags, in place of the top-level serving.extraArgs."""


class ModelScaling(Section):
    """The autoscaling bounds one model sets for itself; unset ones are the top-level autoscaling section's."""

    min_replicas: int | None = None
    """This model's fewest replicas while autoscaled."""
    max_replicas: int | None = None
    """This model's most replicas while autoscaled."""
    requests_per_replica: int | None = None
    """Requests one replica of this model takes before another is added."""


class ModelEntry(ModelSettings):
    """One model of ``llm:models``: the model itself, its replicas and what its engine and scaling set apart."""

    id: str
    """Hugging Face model id; the replica set's name derives from it (qwen3-embedding-8b for Qwen/Qwen3-Embedding-8B)."""

    nodes: int = Field(default=1, ge=0, le=1000)
    """A4 nodes of this model, one replica each; 0 scales it to zero."""
    serving: ModelServing = ModelServing()
    """This model's engine settings over the top-level serving section."""
    autoscaling: ModelScaling = ModelScaling()
    """This model's autoscaling bounds over the top-level autoscaling section."""
    batch: ConfigBool = True
    """Whether the batch runner sends this model's lines (with batch.enabled); false refuses them."""


# The keys of the one-model form each model sets in its own entry.
PER_MODEL_TOP_LEVEL = ("model", "nodes")
