"""The wall clock as a run records it."""

from __future__ import annotations

import datetime as dt


def now() -> str:
    """The time in UTC, ISO 8601, to the second (``2026-11-23T07:45:12Z``)."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
