"""Quota windows are UTC seconds, days and calendar months."""

from __future__ import annotations

from datetime import datetime

from pipeline.core.clock import Window, window_bounds


def utc(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


NOON = utc("2026-01-15T12:00:00Z")

JAN = utc("2026-01-01T00:00:00Z")
FEB = utc("2026-02-01T00:00:00Z")
MAR = utc("2026-03-01T00:00:00Z")
JAN_16 = utc("2026-01-16T00:00:00Z")


def test_window_bounds_are_utc_calendar_days_and_months() -> None:
    assert window_bounds(Window.SECOND, NOON + 0.75) == (NOON, NOON + 1)
    assert window_bounds(Window.DAY, NOON) == (utc("2026-01-15T00:00:00Z"), JAN_16)
    assert window_bounds(Window.DAY, JAN_16 - 1) == (utc("2026-01-15T00:00:00Z"), JAN_16)
    assert window_bounds(Window.DAY, JAN_16) == (JAN_16, utc("2026-01-17T00:00:00Z"))
    assert window_bounds(Window.MONTH, FEB - 1) == (JAN, FEB)
    assert window_bounds(Window.MONTH, FEB) == (FEB, MAR)
    assert window_bounds(Window.MONTH, utc("2026-12-31T23:59:59Z")) == (
        utc("2026-12-01T00:00:00Z"),
        utc("2027-01-01T00:00:00Z"),
    )
