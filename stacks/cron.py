"""The cron expressions KEDA's cron scaler takes, read the way its parser reads them.

KEDA v2.20.2 (pkg/scalers/cron_scaler.go) parses start and end with robfig/cron v3.0.1's
``NewParser(Minute | Hour | Dom | Month | Dow)``: exactly five fields, no ``@daily``
descriptors, no seconds, and none of Quartz's ``L``, ``W`` or ``#`` (docs/config-rules.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Bounds and names of each field, in order (robfig/cron v3.0.1, spec.go).
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@dataclass(frozen=True)
class CronField:
    name: str
    low: int
    high: int
    names: dict[str, int]


FIELDS = (
    CronField("minute", 0, 59, {}),
    CronField("hour", 0, 23, {}),
    CronField("day of month", 1, 31, {}),
    CronField("month", 1, 12, {name: number for number, name in enumerate(_MONTHS, start=1)}),
    CronField("day of week", 0, 6, {name: number for number, name in enumerate(_WEEKDAYS)}),
)
# Go's strconv.Atoi: ASCII digits with an optional sign, within int64.
_NUMBER = re.compile(r"^[+-]?[0-9]+$", re.ASCII)
_INT64_MAX = 2**63 - 1


class CronError(ValueError):
    """Why the parser refuses an expression; finishes a sentence about it."""


# What a field matches, and whether it was '*' or '?' (that changes how day of month and day of week combine).
FieldMatch = tuple[frozenset[int], bool]


def schedule(expression: str) -> tuple[FieldMatch, ...]:
    """The instants an expression fires at, field by field; raises CronError where KEDA's parser would refuse."""
    if expression.startswith("@"):
        raise CronError("is a descriptor, which KEDA's parser does not take; write the 5 fields, e.g. '0 0 * * *' for @daily")
    if expression.startswith(("TZ=", "CRON_TZ=")):
        raise CronError("names a time zone in the expression; set the window's timezone instead")
    fields = expression.split()
    if len(fields) != len(FIELDS):
        raise CronError(f"has {len(fields)} fields; KEDA takes exactly 5 fields: minute hour day-of-month month day-of-week")
    return tuple(_field(text, field) for text, field in zip(fields, FIELDS, strict=True))


def _field(text: str, field: CronField) -> FieldMatch:
    values: set[int] = set()
    star = False
    for part in (p for p in text.split(",") if p):
        matched, part_star = _range(part, field)
        values |= matched
        star = star or part_star
    return frozenset(values), star


def _range(part: str, field: CronField) -> FieldMatch:
    names = f" or names such as {', '.join(list(field.names)[:3])}" if field.names else ""
    allowed = f"the {field.name} takes {field.low}-{field.high}{names}"
    range_and_step = part.split("/")
    if len(range_and_step) > 2:
        raise CronError(f"has too many '/' in {part!r}")
    low_high = range_and_step[0].split("-")
    star = low_high[0] in ("*", "?")
    if star:
        # The parser reads only the '*' of '*-n'.
        low, high = field.low, field.high
    else:
        if len(low_high) > 2:
            raise CronError(f"has too many '-' in {part!r}")
        low = _number(low_high[0], field, part)
        high = _number(low_high[1], field, part) if len(low_high) == 2 else low
    step = 1
    if len(range_and_step) == 2:
        step = _number(range_and_step[1], None, part)
        if len(low_high) == 1:
            high = field.high
        star = star and step <= 1
    if low < field.low or high > field.high:
        raise CronError(f"is out of range in {part!r}: {allowed}")
    if low > high:
        raise CronError(f"has a range that ends before it starts: {part!r}")
    if step == 0:
        raise CronError(f"has a step of 0 in {part!r}")
    return frozenset(range(low, high + 1, step)), star


def _number(text: str, field: CronField | None, part: str) -> int:
    if field is not None and text.lower() in field.names:
        return field.names[text.lower()]
    if not _NUMBER.match(text) or int(text) > _INT64_MAX:
        where = f"the {field.name} takes {field.low}-{field.high}" if field else "a step is a whole number"
        raise CronError(f"has {text!r} in {part!r}, which KEDA's parser does not take: {where} (no L, W or #)")
    if int(text) < 0:
        raise CronError(f"has a negative number in {part!r}")
    return int(text)
