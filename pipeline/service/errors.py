"""HTTP errors as RFC 9457 problem details, with the status on the exception class.

Every error the API answers is a :class:`Problem`; the error middleware turns it into one body
shape, ``application/problem+json``::

    {"type": "/problems/missing_parameter", "title": "Missing parameter",
     "status": 400, "detail": "Send exactly one of email or domain.", "code": "missing_parameter"}

``code`` is stable for programs; ``detail`` is a sentence for people. Anything unexpected becomes
``internal_error`` with no stack trace in the body.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from aiohttp import web

# A relative URI reference (RFC 9457 §3.1.1): the problem kinds are in docs/service.md#errors.
PROBLEM_TYPE_BASE = "/problems/"
PROBLEM_JSON = "application/problem+json"


class Problem(Exception):
    status = 500
    code = "internal_error"
    title = "Internal error"

    def __init__(self, detail: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.headers = dict(headers or {})

    def body(self) -> dict[str, object]:
        return {
            "type": PROBLEM_TYPE_BASE + self.code,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
            "code": self.code,
        }

    def response(self) -> web.Response:
        return web.Response(
            status=self.status,
            text=json.dumps(self.body()),
            content_type=PROBLEM_JSON,
            headers=self.headers,
        )


class MissingParameter(Problem):
    status, code, title = 400, "missing_parameter", "Missing parameter"


class ConflictingParameters(Problem):
    status, code, title = 400, "conflicting_parameters", "Conflicting parameters"


class InvalidParameter(Problem):
    status, code, title = 400, "invalid_parameter", "Invalid parameter"


class InvalidApiKey(Problem):
    status, code, title = 401, "invalid_api_key", "Invalid API key"

    def __init__(self, detail: str) -> None:
        # RFC 6750 §3: the challenge tells the client which scheme and why it failed.
        super().__init__(detail, {"WWW-Authenticate": 'Bearer error="invalid_token"'})


class QuotaExceeded(Problem):
    status, code, title = 429, "quota_exceeded", "Quota exceeded"


class TooManyAuthFailures(Problem):
    """Failed authentications from one client address, past the documented limit."""

    status, code, title = 429, "too_many_auth_failures", "Too many failed authentications"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, {"Retry-After": str(retry_after)})


class RequestTimeout(Problem):
    """A request whose headers or body did not arrive in time (``admission.py``): the
    connection closes after this answer."""

    status, code, title = 408, "request_timeout", "Request timeout"

    def response(self) -> web.Response:
        response = super().response()
        response.force_close()
        return response


class TooManyConnections(Problem):
    """A connection over the caps on unfinished requests (``admission.py``)."""

    status, code, title = 503, "too_many_connections", "Too many unfinished connections"

    def __init__(self, detail: str, retry_after: int) -> None:
        super().__init__(detail, {"Retry-After": str(retry_after)})


class NotFound(Problem):
    status, code, title = 404, "not_found", "Not found"


class MethodNotAllowed(Problem):
    status, code, title = 405, "method_not_allowed", "Method not allowed"

    def __init__(self, detail: str, allowed: list[str]) -> None:
        super().__init__(detail, {"Allow": ", ".join(allowed)})


class InternalError(Problem):
    pass


class UnreadableList(Problem):
    """A bulk job's list that ``clean`` would refuse, with its reason."""

    status, code, title = 422, "unreadable_list", "The list cannot be read"


class TooLarge(Problem):
    """A bulk job's upload or list over a limit, which the detail names."""

    status, code, title = 413, "too_large", "Too large"


class InvalidToken(Problem):
    """A download link whose token is not valid (any more) for the file it asks for."""

    status, code, title = 401, "invalid_token", "Invalid download link"


class JobNotDone(Problem):
    """A download asked of a job that has no such file (yet)."""

    status, code, title = 409, "job_not_done", "The job has not finished"


class ChecksUnavailable(Problem):
    """A job whose checks cannot be made now (an unhealthy resolver, no mail server): only
    ever a job's error, never an answer's status."""

    status, code, title = 503, "checks_unavailable", "Checks unavailable"


class UnsupportedMediaType(Problem):
    status, code, title = 415, "unsupported_media_type", "Unsupported media type"


ALL_PROBLEMS: tuple[type[Problem], ...] = (
    MissingParameter,
    ConflictingParameters,
    InvalidParameter,
    InvalidApiKey,
    QuotaExceeded,
    TooManyAuthFailures,
    RequestTimeout,
    TooManyConnections,
    NotFound,
    MethodNotAllowed,
    InternalError,
    UnreadableList,
    TooLarge,
    InvalidToken,
    JobNotDone,
    UnsupportedMediaType,
)
# Problems that are only ever a bulk job's error (GET /api/jobs/{id}), never an answer.
JOB_PROBLEMS: tuple[type[Problem], ...] = (ChecksUnavailable,)
