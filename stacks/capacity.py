"""The capacity section: where A4 nodes come from (A4 has no on-demand capacity)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from facts.gcp import CALENDAR_MAX_DAYS, CALENDAR_MAX_VMS, CALENDAR_MIN_DAYS
from facts.gke import A4_MACHINE_TYPE, FLEX_START_MAX_HOURS
from stacks.problems import ConfigProblem, one_of
from stacks.section import Section, check_name, check_order, days_between, project_id, utc_time

# A closed set the type checker sees: a new mode is a type error wherever a branch misses it.
CapacityMode = Literal["spot", "reservation", "flex-start", "fallback"]
CAPACITY_MODES: tuple[CapacityMode, ...] = get_args(CapacityMode)
FallbackStep = Literal["reservation", "spot", "flex-start"]
FALLBACK_CHOICES: tuple[FallbackStep, ...] = get_args(FallbackStep)


class FutureReservationSettings(Section):
    """A calendar-mode future reservation, created only when a stack asks for it."""

    name: str
    """Must equal `capacity.reservation.name`: the reservation the pods consume."""
    start_time: str
    """Start, RFC 3339 UTC (e.g. 2026-12-01T00:00:00Z)."""
    end_time: str
    """End, RFC 3339 UTC; after startTime."""
    nodes: int = Field(ge=1, le=CALENDAR_MAX_VMS)
    """A4 nodes reserved (1 to 80 per request); independent of `llm:nodes`, so scaling never touches the commitment."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, 63)

    _times = field_validator("start_time", "end_time")(utc_time)

    @model_validator(mode="after")
    def _ordered(self) -> FutureReservationSettings:
        check_order(self.start_time, self.end_time)
        days = days_between(self.start_time, self.end_time)
        if not CALENDAR_MIN_DAYS <= days <= CALENDAR_MAX_DAYS:
            raise ConfigProblem(
                ("endTime",),
                self.end_time,
                f"is {days:g} days after startTime; a calendar-mode reservation lasts {CALENDAR_MIN_DAYS} to {CALENDAR_MAX_DAYS} days",
            )
        return self


class ReservationSettings(Section):
    """A specific reservation of A4 nodes (Autopilot consumes only specific ones)."""

    name: str
    """Name of a specific reservation of a4-highgpu-8g nodes (created with specific_reservation_required)."""
    project: str | None = None
    """Owner project, when the reservation is shared from another project."""
    nodes: int | None = Field(default=None, ge=1, le=1000)
    """A4 nodes the named reservation holds, as you know them: the render cannot read an existing reservation's size.
    The estimates bill them whether or not replicas run, and a rollout surges only when one is spare. Unset: assumed to hold
    the stack's most replicas (a warning says so). A created reservation's size is `create.nodes`."""
    create: FutureReservationSettings | None = None
    """Create a calendar-mode future reservation (left in place by destroy, never updated). Unset: consume an existing one."""

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value, 63)

    @field_validator("project")
    @classmethod
    def _project(cls, value: str | None) -> str | None:
        return value if value is None else project_id(value)

    @model_validator(mode="after")
    def _same_name(self) -> ReservationSettings:
        if self.create is not None and self.create.name != self.name:
            raise ConfigProblem(
                ("create", "name"), self.create.name, f"must equal reservation.name ({self.name}), the reservation the pods consume"
            )
        if self.create is not None and self.nodes is not None and self.nodes != self.create.nodes:
            raise ConfigProblem(
                ("nodes",), self.nodes, f"differs from create.nodes ({self.create.nodes}), the size of the reservation created; drop one"
            )
        return self

    @property
    def size(self) -> int | None:
        """The reservation's nodes where known: the created one's, or those the stack states; None for a named one left unstated."""
        return self.create.nodes if self.create is not None else self.nodes


class FlexStartSettings(Section):
    max_run_hours: int = Field(default=FLEX_START_MAX_HOURS)
    """How long a flex-start node may run before GKE reclaims it (at most 7 days)."""

    @field_validator("max_run_hours")
    @classmethod
    def _hours(cls, value: int) -> int:
        if not 1 <= value <= FLEX_START_MAX_HOURS:
            raise ConfigProblem((), value, f"is out of range; flex-start runs a node for 1 to {FLEX_START_MAX_HOURS} hours")
        return value


class CapacitySettings(Section):
    """Where A4 nodes come from. A4 has no on-demand capacity."""

    mode: CapacityMode = "spot"
    """Where A4 nodes come from: `spot`, `reservation`, `flex-start` or `fallback` (A4 has no on-demand)."""
    reservation: ReservationSettings | None = None
    """The specific reservation; required for `reservation`, and for `fallback` with a reservation step."""
    flex_start: FlexStartSettings = FlexStartSettings()
    """Flex-start (DWS) settings."""
    fallback: tuple[FallbackStep, ...] = ("reservation", "spot", "flex-start")
    """Order of preference when mode is `fallback` (a GKE ComputeClass)."""
    price_per_node_hour: float | None = None
    """US dollars per node-hour for the estimates; default: the reference list price of the mode."""

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: object) -> object:
        if value in ("on-demand", "ondemand", "standard"):
            raise ConfigProblem((), value, f"is not available for A4 ({A4_MACHINE_TYPE}); {one_of(CAPACITY_MODES)}")
        if value not in CAPACITY_MODES:
            raise ConfigProblem((), value, f"is not a capacity mode; {one_of(CAPACITY_MODES)}")
        return value

    @field_validator("fallback", mode="before")
    @classmethod
    def _fallback(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return value
        if not value:
            raise ConfigProblem((), [], f"is empty; list one or more of: {', '.join(FALLBACK_CHOICES)}")
        for index, mode in enumerate(value):
            if mode not in FALLBACK_CHOICES:
                raise ConfigProblem((index,), mode, f"is not a fallback step; {one_of(FALLBACK_CHOICES)}")
        if len(set(value)) != len(value):
            raise ConfigProblem((), list(value), "names a step twice; list each at most once")
        return value

    @field_validator("price_per_node_hour")
    @classmethod
    def _price(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ConfigProblem((), value, "must be a positive price in US dollars per node-hour")
        return value

    @model_validator(mode="after")
    def _reservation_named(self) -> CapacitySettings:
        wants_reservation = self.mode == "reservation" or (self.mode == "fallback" and "reservation" in self.fallback)
        if wants_reservation and self.reservation is None:
            step = " with a reservation step" if self.mode == "fallback" else ""
            raise ConfigProblem(("reservation",), None, f"is required when capacity.mode is {self.mode}{step}; set reservation.name")
        return self

    @property
    def steps(self) -> tuple[CapacityMode, ...]:
        """The capacity modes tried, in order."""
        return self.fallback if self.mode == "fallback" else (self.mode,)
