"""Time as the project keeps it: the wall clock a run records, and the quota windows.

Quota windows are UTC seconds, days and calendar months, for both sides of a quota. The spec's
plans count per month and its anonymous limits per day; the service that grants a quota and
the client that spends one must agree on where a window starts, so it is written once.
"""

from __future__ import annotations

import calendar
import datetime as dt
import enum
import functools
import time


def now() -> str:
    """The time in UTC, ISO 8601, to the second (``2026-11-23T07:45:12Z``)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Window(enum.StrEnum):
    SECOND = "second"
    DAY = "day"
    MONTH = "month"


def window_bounds(window: Window, now: float) -> tuple[int, int]:
    """[start, end) of the UTC window holding *now*, as Unix seconds."""
    t = int(now)
    if window is Window.SECOND:
        return t, t + 1
    if window is Window.DAY:
        start = t - t % 86400
        return start, start + 86400
    # A month is the same for every request of the day: computed once per UTC day.
    return _month_bounds(t - t % 86400)


@functools.lru_cache(maxsize=64)
def _month_bounds(day: int) -> tuple[int, int]:
    year, month = time.gmtime(day)[:2]
    start = calendar.timegm((year, month, 1, 0, 0, 0))
    year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return start, calendar.timegm((year, month, 1, 0, 0, 0))
