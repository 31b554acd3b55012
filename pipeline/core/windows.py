"""Quota windows: UTC seconds, days and calendar months, for both sides of a quota.

The spec's plans count per month and its anonymous limits per day; the service that grants a
quota and the client that spends one must agree on where a window starts, so it is written once.
"""

from __future__ import annotations

import calendar
import enum
import time


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
    year, month = time.gmtime(t)[:2]
    start = calendar.timegm((year, month, 1, 0, 0, 0))
    year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return start, calendar.timegm((year, month, 1, 0, 0, 0))
