"""The drain section: how a replica stops."""

from __future__ import annotations

from pydantic import Field

from config.section import Section


class DrainSettings(Section):
    """How a replica stops: endpoints drop it first, then vLLM finishes what it is serving."""

    pre_stop_seconds: int = Field(default=10, ge=0, le=120)
    """Time for the Service, the load balancer and the endpoint picker to stop sending to a stopping pod."""
    shutdown_timeout_seconds: int = Field(default=35, ge=0, le=3600)
    """vLLM's --shutdown-timeout: how long in-flight requests may finish (a reference one: ~5.6 s to first token + 512 x 46 ms)."""
