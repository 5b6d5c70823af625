"""How much time a recurring maintenance window leaves GKE, measured the way GKE's rule counts it.

GKE refuses a window that allows less than 48 hours of maintenance in any 32 days, counting only
stretches of at least 4 hours (docs/config-rules.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from dateutil.rrule import rrulestr

MIN_AVAILABLE = timedelta(hours=48)
ROLLING_PERIOD = timedelta(days=32)
MIN_STRETCH = timedelta(hours=4)
# DAILY and WEEKLY;BYDAY rules (all a window may use) repeat every week.
_CYCLE = timedelta(weeks=1)


def stretches(start: datetime, end: datetime, recurrence: str, until: datetime) -> list[tuple[datetime, datetime]]:
    """The window's occurrences from ``start`` to ``until``, overlapping or touching ones merged into one stretch."""
    merged: list[tuple[datetime, datetime]] = []
    for begin in rrulestr(recurrence, dtstart=start).between(start, until, inc=True):
        finish = begin + (end - start)
        if merged and begin <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(finish, merged[-1][1]))
        else:
            merged.append((begin, finish))
    return merged


def least_available(start: datetime, end: datetime, recurrence: str) -> timedelta:
    """The least maintenance time any 32 days hold, counting stretches of 4 hours or more."""
    # Look at every 32-day span starting in the second week, so stretches that began before it are whole.
    first = start + _CYCLE
    horizon = first + _CYCLE + ROLLING_PERIOD + (end - start)
    counted = [(a, b) for a, b in stretches(start, end, recurrence, horizon) if b - a >= MIN_STRETCH]

    def available(at: datetime) -> timedelta:
        return sum((max(min(b, at + ROLLING_PERIOD) - max(a, at), timedelta(0)) for a, b in counted), timedelta(0))

    # The total is piecewise linear in the span's start: its least value is where a span edge meets a stretch edge.
    edges = {t for a, b in counted for t in (a, b, a - ROLLING_PERIOD, b - ROLLING_PERIOD)}
    candidates = [t for t in edges if first <= t < first + _CYCLE] + [first]
    return min(available(t) for t in candidates)
