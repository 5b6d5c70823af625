"""The model section: the Hugging Face model served."""

from __future__ import annotations

import re

from pydantic import field_validator

from stacks.problems import ConfigProblem
from stacks.section import Section


class ModelSettings(Section):
    id: str = "Qwen/Qwen3.5-27B-FP8"
    """Hugging Face model id."""
    revision: str = "main"
    """Branch, tag or commit. A branch follows the repo: pin a commit for a reproducible cache."""
    served_name: str | None = None
    """Public model name clients send; default: the model id."""

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
