"""What the service writes to its log: one line per request, nothing secret, nothing forged.

- The access log shows the path and the query's parameter *names*; of the values it shows only
  what identifies no one: the domain of ``email`` (``email=***@gmail.com``), ``domain`` (with
  any local part masked) and ``find_Contact``. Keys, search terms and everything else are
  ``***``. Bodies are never logged.
- Every value that reaches a line goes through :func:`~pipeline.core.text.for_log`: an encoded
  CR/LF or quote cannot end the line or the quoted target and forge another request (CWE-117).
- An unexpected error is logged as one line: the exception's type and where it was raised,
  never its message, which may quote what the request sent.
"""

from __future__ import annotations

import logging
import urllib.parse

from aiohttp import web
from aiohttp.abc import AbstractAccessLogger

from pipeline.core.text import failure_line, for_log

# Set on the answer to a request aiohttp could not parse: there is no method or path to show.
UNREADABLE = web.ResponseKey("listclean.unreadable", bool)
_SHOWN = frozenset({"domain", "find_Contact"})


def query_for_log(raw_query: str) -> str:
    """The query string as the access log shows it (see the module docstring)."""
    shown = []
    for part in raw_query.split("&"):
        if part:
            raw_name, _, raw_value = part.partition("=")
            name = _unquote(raw_name)
            shown.append(f"{for_log(name, 40)}={_value_for_log(name, _unquote(raw_value))}")
    return "&".join(shown)


def _value_for_log(name: str, value: str) -> str:
    if name == "email" or (name in _SHOWN and "@" in value):
        _, at, domain = value.rpartition("@")
        return f"***@{for_log(domain, 80)}" if at else "***"
    return for_log(value, 80) if name in _SHOWN else "***"


def _unquote(text: str) -> str:
    return urllib.parse.unquote_plus(text, errors="replace") if "%" in text or "+" in text else text


class RedactingAccessLogger(AbstractAccessLogger):
    """One access log line per request, without keys, search terms or full addresses."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        if response.get(UNREADABLE):
            target = "(unreadable request)"
        else:
            raw_query = request.rel_url.raw_query_string
            query = f"?{query_for_log(raw_query)}" if raw_query else ""
            target = f"{request.method} {for_log(request.path, 200)}{query}"
        self.logger.info('%s "%s" %s %.1fms', request.remote, target, response.status, time * 1000)

    @property
    def enabled(self) -> bool:
        return self.logger.isEnabledFor(logging.INFO)


def log_failure(log: logging.Logger, request: web.BaseRequest, exc: BaseException) -> None:
    log.error(
        "unexpected error on %s %s: %s",
        request.method,
        for_log(request.path, 200),
        failure_line(exc),
    )
