"""The workload section: the request shape the serving profile and the estimates are for."""

from __future__ import annotations

import math
from typing import Annotated

from pydantic import Field

from stacks.problems import FractionOf
from stacks.section import Section


class WorkloadSettings(Section):
    """The request shape the serving profile is sized for (the reference method)."""

    input_tokens: int = Field(default=1024, gt=0)
    """Mean prompt length (ISL)."""
    output_tokens: int = Field(default=512, gt=0)
    """Mean generation length (OSL)."""
    range_ratio: Annotated[float, FractionOf("the mean length")] = Field(default=0.5, ge=0, lt=1)
    """Lengths vary by up to this fraction around the mean."""

    @property
    def longest_request(self) -> int:
        # vLLM's random dataset draws lengths within +/- range_ratio of the mean.
        grow = 1 + self.range_ratio
        return math.ceil(self.input_tokens * grow) + math.ceil(self.output_tokens * grow)
