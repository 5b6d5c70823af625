"""The model section: the Hugging Face model served, and where its config.json comes from."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

from pydantic import field_validator, model_validator

from facts.models import ModelConfigError, ModelFacts, Task, catalogue, catalogued, facts_in, hf_cache_snapshot
from stacks.problems import ConfigProblem
from stacks.section import Section

# A relative llm:model.config is read from the project's root, where Pulumi.yaml is.
PROJECT_ROOT = Path(__file__).resolve().parent.parent


class ModelSettings(Section):
    id: str = "Qwen/Qwen3.5-27B-FP8"
    """Hugging Face model id."""
    revision: str = "main"
    """Branch, tag or commit. A branch follows the repo: pin a commit for a reproducible cache."""
    served_name: str | None = None
    """Public model name clients send; default: the model id."""
    config: str | None = None
    """The model's config.json, relative to the project root; default: the catalogue's, else the Hugging Face cache's."""
    task: Task | None = None
    """`generate` (text: completions and chat) or `embed` (vectors on /v1/embeddings: vLLM's pooling runner). Default: the model's own."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not re.match(r"^[\w.-]+/[\w.-]+$", value):
            raise ConfigProblem((), value, "is not a Hugging Face model id such as Qwen/Qwen3.5-27B-FP8")
        return value

    @field_validator("revision")
    @classmethod
    def _revision(cls, value: str) -> str:
        if not value.strip() or any(c.isspace() for c in value):
            raise ConfigProblem((), value, "is not a revision; name a branch, tag or commit such as main")
        return value

    @model_validator(mode="after")
    def _facts(self) -> ModelSettings:
        facts_of(self.id, self.config)
        return self

    @property
    def public_name(self) -> str:
        return self.served_name or self.id

    @property
    def facts(self) -> ModelFacts:
        """What the model is (facts/models.py): its layers, weights, state and task."""
        return facts_of(self.id, self.config)

    @property
    def serves(self) -> Task:
        """The task the engine runs: the setting, else the model's (an embedding model embeds)."""
        return self.task or self.facts.task

    @model_validator(mode="after")
    def _task_fits_the_model(self) -> ModelSettings:
        facts = self.facts
        if self.task == "generate" and facts.task == "embed":
            # vLLM refuses `--runner generate` for a model that only pools (vllm/config/model.py, ModelConfig, 0.33.0).
            raise ConfigProblem(
                ("task",),
                self.task,
                f"does not fit {self.id}: an embedding model (its repository ships sentence-transformers' modules.json, or its "
                f"architecture {facts.architecture} pools); it generates no text. Use embed, or leave task unset",
            )
        return self


@cache
def facts_of(model_id: str, config: str | None) -> ModelFacts:
    """The facts of ``model_id`` from ``config``, else the catalogue, else the Hugging Face cache.

    Raised problems name ``config`` relative to the section.
    """
    try:
        if config is not None:
            path = PROJECT_ROOT / config
            if path.name != "config.json" or not path.is_file():
                raise ConfigProblem(("config",), config, "is not a config.json file (a path relative to the project root)")
            return facts_in(path.parent, model_id)
        found = catalogued(model_id)
        if found is not None:
            return found
        snapshot = hf_cache_snapshot(model_id, os.environ)
        if snapshot is None:
            raise ConfigProblem(
                ("config",),
                None,
                f"is required for {model_id}: the catalogue ({', '.join(catalogue())}) and the Hugging Face cache have no "
                f"config.json of it; download it (huggingface-cli download {model_id} config.json) and set its path, "
                "relative to the project root",
            )
        return facts_in(snapshot, model_id)
    except ModelConfigError as exc:
        raise ConfigProblem(("config",), config, f"cannot be read as {model_id}'s facts: {exc}") from None
