"""Text from outside: is it text at all, and how to put it in a log line safely.

Python strings can hold what Unicode text cannot: lone surrogates (U+D800-U+DFFF), which JSON's
``\\ud800`` escapes and ``surrogateescape`` decoding (command-line arguments, HTTP headers) put
there. They cannot be encoded as UTF-8, so they break everything downstream (hashing, polars,
the database). Every front checks its input with :func:`invalid_at` first.

A value written to a log must never start a new line or close the quotes around it, or one
request could forge others (CWE-117); :func:`for_log` escapes it.
"""

from __future__ import annotations

import traceback
from pathlib import PurePath

from pipeline.core.errors import StoreError

_LOG_ESCAPES = {ord("\\"): "\\\\", ord('"'): '\\"'}


def invalid_at(text: str) -> int | None:
    """Index of the first character that is not a Unicode scalar value, or None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def decode_utf8(raw: bytes) -> str | int:
    """*raw* as strict UTF-8 (RFC 3629: no surrogates, no overlongs), or the first bad offset."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start


def for_log(value: str, limit: int = 120) -> str:
    """*value* on one line: backslash, quotes, control and unprintable characters escaped as
    ``\\xNN`` / ``\\uNNNN``, cut to *limit* characters with a trailing ``...``."""
    cut = value[:limit]
    escaped = cut.translate(_LOG_ESCAPES) if cut.isprintable() else _escape(cut)
    return escaped + ("..." if len(value) > limit else "")


def _escape(text: str) -> str:
    out = []
    for char in text:
        if char.isprintable():
            out.append(_LOG_ESCAPES.get(ord(char), char))
        else:  # C0/C1 controls, line and paragraph separators, surrogates, unassigned
            out.append(char.encode("unicode_escape").decode("ascii"))
    return "".join(out)


def failure_line(exc: BaseException) -> str:
    """An unexpected error in one line: its type and the frames it came through, innermost
    first. Our store's errors keep their message (it names the file, never a request value)."""
    frames = traceback.extract_tb(exc.__traceback__)[-8:]
    where = " < ".join(f"{PurePath(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
    message = f": {for_log(str(exc), 300)}" if isinstance(exc, StoreError) else ""
    return f"{type(exc).__name__}{message} at {where or '?'}"
