"""The observability section: the stack's dashboard and alert policies."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator

from stacks.problems import ConfigProblem, FractionOf
from stacks.section import ConfigBool, Section


class ObservabilitySettings(Section):
    """The stack's Cloud Monitoring dashboard and alert policies."""

    enabled: ConfigBool = True
    """Register the dashboard and the alert policies."""
    notification_channels: tuple[str, ...] = ()
    """Alert notification channels, as `projects/<project>/notificationChannels/<id>`; none: alerts only show in the console."""
    minutes: int = Field(default=10, ge=1, le=120)
    """How long a condition must hold before an alert opens."""
    waiting_requests: int = Field(default=4096, ge=1)
    """Queue depth (requests waiting, all replicas) that opens the queue alert."""
    kv_cache_usage: Annotated[float, FractionOf("an engine's KV cache")] = Field(default=0.95, gt=0, le=1)
    """KV-cache usage of any engine that opens the KV-cache alert."""
    ttft_p99_seconds: float = Field(default=30.0, gt=0)
    """Objective for time to first token, p99; the reference median was 5.6-8 s under full load."""
    throughput_fraction: Annotated[float, FractionOf("the stack's estimated throughput")] = Field(default=0.5, gt=0, le=1)
    """Under load, throughput below this share of the stack's own estimate opens an alert (reference profile only)."""

    @field_validator("notification_channels")
    @classmethod
    def _channels(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, channel in enumerate(value):
            # Cloud Monitoring names a channel by project id or project number.
            if not re.match(r"^projects/([a-z][-a-z0-9]{4,28}[a-z0-9]|[0-9]+)/notificationChannels/[0-9]+$", channel):
                raise ConfigProblem(
                    (index,), channel, "is not a notification channel: projects/<project id or number>/notificationChannels/<id>"
                )
        return value
