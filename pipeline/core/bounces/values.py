"""Cell values of bounce reports: text, and dates in the forms senders write them
(ISO 8601, Unix seconds, RFC 5322 date-times). Dates without a zone are taken as UTC.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable
from email.utils import parsedate_to_datetime
from typing import Final

_UNIX_TIME: Final = re.compile(r"[+-]?\d+(?:\.\d+)?")


def timestamp(value: object, fallback: float) -> float | None:
    """Unix time of a date cell; *fallback* when it is empty, None when it is unreadable."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return fallback
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        return _as_utc(value).timestamp()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).timestamp()
    if isinstance(value, str):
        return _parse_date(value.strip())
    return None


def _parse_date(text: str) -> float | None:
    if _UNIX_TIME.fullmatch(text):
        return float(text)
    try:
        return _as_utc(dt.datetime.fromisoformat(text)).timestamp()
    except ValueError:
        pass
    # Some exports copy the message's RFC 5322 §3.3 date-time.
    return _rfc5322_date(text)


def _rfc5322_date(text: str) -> float | None:
    try:
        return _as_utc(parsedate_to_datetime(text)).timestamp()
    except (ValueError, TypeError):
        return None


def _as_utc(moment: dt.datetime) -> dt.datetime:
    # A date without a zone (or RFC 5322 §3.3's "-0000", "zone unknown") is taken as UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def cell_text(value: object) -> str:
    """A cell or header as one line of text: folded header lines are joined (RFC 5322 §2.2.3)."""
    return "" if value is None else " ".join(str(value).split())


def first_date(values: Iterable[object], fallback: float) -> float:
    """Unix time of the first readable RFC 5322 date-time among *values*, else *fallback*."""
    for value in values:
        text = cell_text(value)
        moment = _rfc5322_date(text) if text else None
        if moment is not None:
            return moment
    return fallback
