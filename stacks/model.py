"""The model section: the Hugging Face model served."""

from __future__ import annotations

import re

from pydantic import field_validator, model_validator

from facts.models import ModelFacts, Task, catalogued
from stacks.problems import ConfigProblem
from stacks.section import Section


class ModelSettings(Section):
    id: str = "Qwen/Qwen3.5-27B-FP8"
    """Hugging Face model id."""
    revision: str = "main"
    """Branch, tag or commit. A branch follows the repo: pin a commit for a reproducible cache."""
    served_name: str | None = None
    """Public model name clients send; default: the model id."""
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

    @property
    def public_name(self) -> str:
        return self.served_name or self.id

    @property
    def facts(self) -> ModelFacts | None:
        return catalogued(self.id)

    @property
    def serves(self) -> Task:
        """The task the engine runs: the setting, else the model's (an embedding model embeds)."""
        facts = self.facts
        return self.task or (facts.task if facts is not None else "generate")

    @model_validator(mode="after")
    def _task_fits_the_model(self) -> ModelSettings:
        facts = self.facts
        if self.task == "generate" and facts is not None and facts.task == "embed":
            # vLLM refuses `--runner generate` for a model that only pools (vllm/config/model.py, ModelConfig, 0.33.0).
            raise ConfigProblem(
                ("task",),
                self.task,
                f"does not fit {self.id}: an embedding model (its repository ships sentence-transformers' modules.json, or its "
                f"architecture {facts.architecture} pools); it generates no text. Use embed, or leave task unset",
            )
        if self.serves == "embed" and facts is None:
            raise ConfigProblem(("task",), "embed", f"needs the facts of {self.id} (its vectors' length, from its config.json); none found")
        return self
