"""The autoscaling section: replicas that follow vLLM's queue (KEDA), and batch windows that wake them."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Annotated
from zoneinfo import available_timezones

from pydantic import AfterValidator, Field, field_validator, model_validator

from stacks.cron import CronError, schedule
from stacks.problems import ConfigProblem, one_of
from stacks.section import ConfigBool, Section


class BatchWindowSettings(Section):
    """A period in which the replicas are scaled up whatever the queue: the wake-up from zero."""

    start: str
    """Cron expression (5 fields) of the window's start, e.g. `0 22 * * 1-5`."""
    end: str
    """Cron expression of its end, e.g. `0 6 * * 2-6`."""
    timezone: str = "Etc/UTC"
    """IANA time zone of both expressions."""
    replicas: int = Field(ge=1, le=1000)
    """Replicas kept during the window."""

    @field_validator("start", "end")
    @classmethod
    def _cron(cls, value: str) -> str:
        try:
            schedule(value)
        except CronError as error:
            raise ConfigProblem((), value, f"is not a cron expression KEDA takes: it {error} (e.g. '0 22 * * 1-5')") from None
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        # KEDA loads the zone with Go's time.LoadLocation on every poll; an unknown one fails each time.
        if value not in _time_zones():
            raise ConfigProblem((), value, "is not an IANA time zone such as Etc/UTC or Europe/Amsterdam")
        return value

    @model_validator(mode="after")
    def _opens(self) -> BatchWindowSettings:
        if schedule(self.start) == schedule(self.end):
            # KEDA refuses an identical start and end; an equal schedule spelt otherwise never opens.
            raise ConfigProblem(("end",), self.end, f"fires when start ({self.start}) does: the window would never be open")
        return self


@cache
def _time_zones() -> frozenset[str]:
    return frozenset(available_timezones())


def vendored_keda_versions() -> tuple[str, ...]:
    """The KEDA chart versions with source under render/vendor/charts/ (its PROVENANCE.md)."""
    charts = Path(__file__).parent.parent / "render" / "vendor" / "charts"
    return tuple(sorted(p.name.removeprefix("keda-") for p in charts.glob("keda-*") if p.is_dir()))


def _vendored_keda(value: str) -> str:
    # The render reads the chart's source; an unvendored version would fail only after resources were registered.
    versions = vendored_keda_versions()
    if value not in versions:
        hint = "or vendor it under render/vendor/charts/ first"
        raise ConfigProblem((), value, f"is not a vendored KEDA chart version; {one_of(versions)}, {hint}")
    return value


KedaVersion = Annotated[str, AfterValidator(_vendored_keda)]


class AutoscalingSettings(Section):
    """Replicas follow vLLM's queue between a minimum and a maximum, down to zero when idle (KEDA)."""

    enabled: ConfigBool = False
    """Scale on queue depth; `nodes` is then only the replica count the Deployment is created with."""
    min_replicas: int = Field(default=0, ge=0, le=1000)
    """Fewest replicas; 0 lets an idle stack go to zero GPU nodes."""
    max_replicas: int | None = Field(default=None, ge=1, le=1000)
    """Most replicas; default: `nodes`."""
    requests_per_replica: int = Field(default=2000, ge=1, le=100_000)
    """Target of requests running or waiting per replica (the reference ran ~2,000 per node); replicas = total / target."""
    idle_minutes: int = Field(default=15, ge=1, le=1440)
    """Minutes without requests before scaling to `minReplicas`; replicas go after load is lower for a cold start plus this."""
    poll_seconds: int = Field(default=30, ge=5, le=600)
    """How often the queue is read."""
    batch_windows: tuple[BatchWindowSettings, ...] = ()
    """Scheduled wake-ups: from zero no vLLM reports a queue, so a window (or raising minReplicas) starts a batch."""
    keda_version: KedaVersion = "2.20.2"
    """KEDA Helm chart version (kedacore/charts)."""
