"""The jobs API's part of the OpenAPI 3.1 document (``/openapi.json``): its paths, schemas and
the link-token security scheme. The service's document (:mod:`pipeline.service.openapi`) adds
them to its own, handing in how it describes a problem answer, so both parts say it alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from pipeline.core.config import JobsConfig
from pipeline.service.jobs.types import FORMATS, OPTION_NAMES, STAGES, VERDICTS, JobState

# (description, the codes its status can carry, extra headers) -> a problem answer
ProblemAnswer = Callable[..., dict[str, Any]]
RATE_HEADERS: Final = (
    "RateLimit-Policy",
    "RateLimit",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
)
_KEY: Final[list[dict[str, list[str]]]] = [{"bearer": []}]
_KEY_OR_TOKEN: Final[list[dict[str, list[str]]]] = [{"bearer": []}, {"linkToken": []}]
_ID: Final = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "The job's id, as POST /api/jobs answered it.",
    "schema": {"type": "string", "pattern": "^j_[A-Za-z0-9_-]{22}$"},
}


def _headers(*extra: str) -> dict[str, Any]:
    return {h: {"$ref": f"#/components/headers/{h}"} for h in (*RATE_HEADERS, *extra)}


def _json(description: str, schema: str, *extra: str) -> dict[str, Any]:
    return {
        "description": description,
        "headers": _headers(*extra),
        "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
    }


def _common(problem: ProblemAnswer) -> dict[str, Any]:
    """The answers every jobs operation can give."""
    return {
        "401": problem(
            "No key in the Authorization header, or one that is unknown or revoked.",
            ["invalid_api_key"],
            "WWW-Authenticate",
        ),
        "429": problem(
            "Too many failed authentications from this client address.",
            ["too_many_auth_failures", "quota_exceeded"],
            "Retry-After",
        ),
        "500": problem("Unexpected failure.", ["internal_error"]),
        "503": problem(
            "Too many unfinished connections; answered as the connection opens.",
            ["too_many_connections"],
            "Retry-After",
        ),
    }


def _options(settings: JobsConfig, modes: tuple[str, ...], longest: int) -> dict[str, Any]:
    text = {"type": "string", "maxLength": longest}
    described = {
        "email_column": {
            "type": "array",
            "items": {**text, "minLength": 1},
            "description": "The column holding the addresses (default: found as clean finds "
            "it); repeated, each further column of addresses is checked too, as clean's "
            "--email-column given again.",
        },
        "encoding": {**text, "description": "A text list's encoding (cp1252, utf-8...)."},
        "header_row": {
            "type": "string",
            "pattern": "^[1-9][0-9]{0,8}$",
            "description": "The line (a sheet's row) the header starts on, counted from 1 "
            "(default: found, as clean finds it).",
        },
        "sheet": {**text, "description": "The workbook sheet to read (default: the first)."},
        "member": {**text, "description": "The zip member to read (default: every CSV)."},
        "verify": {"type": "string", "enum": list(modes), "description": "Address checks."},
        "split": {
            "type": "string",
            "enum": ["true", "false"],
            "description": "Also write each verdict's rows to a file of its own.",
        },
        "callback_url": {
            "type": "string",
            "maxLength": longest,
            "pattern": "^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[!-~]*)?$",
            "description": f"POSTed {{id, state, url}} when the job ends ({settings.callbacks}).",
        },
    }
    assert set(described) == set(OPTION_NAMES)
    return described


def _create(problem: ProblemAnswer, options: dict[str, Any], most: int) -> dict[str, Any]:
    form = {
        "type": "object",
        "required": ["file"],
        "properties": {
            "file": {
                "type": "string",
                "contentMediaType": "application/octet-stream",
                "description": "The list: CSV or text, Parquet, xlsx, zip, gzip, bzip2, zstd.",
            },
            **options,
        },
    }
    addresses = {
        "type": "object",
        "required": ["addresses"],
        "properties": {
            "addresses": {"type": "array", "items": {"type": "string"}},
            **{k: v for k, v in options.items() if k in ("verify", "split", "callback_url")},
        },
    }
    return {
        "requestBody": {
            "required": True,
            "description": f"At most {most:,} bytes as sent (a JSON body: 64 MiB).",
            "content": {
                "multipart/form-data": {"schema": form},
                "application/json": {"schema": addresses},
            },
        },
        "responses": {
            "400": problem(
                "An option clean refuses, or a body that cannot be read.",
                ["invalid_parameter", "missing_parameter", "conflicting_parameters"],
            ),
            "408": problem("The upload fell below the minimum transfer rate.", ["request_timeout"]),
            "413": problem("The upload or the list is over a limit, named.", ["too_large"]),
            "415": problem("Neither a form nor JSON.", ["unsupported_media_type"]),
            "422": problem("A list clean would refuse, with its reason.", ["unreadable_list"]),
            **_common(problem),
        },
    }


def _status_schema() -> dict[str, Any]:
    number = {"type": ["integer", "null"]}
    stage = {
        "type": "object",
        "required": ["name", "done", "total"],
        "properties": {
            "name": {"enum": list(STAGES)},
            "done": {"type": "integer"},
            "total": number,
        },
    }
    return {
        "type": "object",
        "required": [
            "id",
            "url",
            "state",
            "rows_read",
            "distinct_addresses",
            "stages",
            "eta_seconds",
            "units",
        ],
        "properties": {
            "id": {"type": "string"},
            "url": {"type": "string"},
            "state": {"enum": [s.value for s in JobState]},
            "rows_read": {"type": "integer"},
            "distinct_addresses": number,
            "stages": {"type": "array", "items": stage},
            "eta_seconds": {"type": ["number", "null"]},
            "units": {"type": "object"},
            "summary": {"type": "object", "description": "summary.json, once done."},
            "error": {"$ref": "#/components/schemas/Problem"},
        },
    }


def schemas() -> dict[str, Any]:
    link = {
        "type": "object",
        "required": ["file", "name", "url"],
        "properties": {
            "file": {"type": "string"},
            "name": {"type": "string"},
            "format": {"enum": [*FORMATS, "rejects"]},
            "verdict": {"enum": list(VERDICTS)},
            "url": {"type": "string"},
        },
    }
    return {
        "JobStatus": _status_schema(),
        "JobCreated": {
            "type": "object",
            "required": ["id", "url"],
            "properties": {
                "id": {"type": "string"},
                "url": {"type": "string"},
                "state": {"const": "queued"},
            },
        },
        "JobList": {
            "type": "object",
            "required": ["jobs", "next_cursor"],
            "properties": {
                "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/JobStatus"}},
                "next_cursor": {"type": ["string", "null"]},
            },
        },
        "JobFiles": {
            "type": "object",
            "required": ["files", "expires_at"],
            "properties": {
                "files": {"type": "array", "items": link},
                "expires_at": {"type": "string"},
            },
        },
        "JobPreview": {
            "type": "object",
            "required": ["columns", "email_column", "preview", "units_left"],
            "properties": {
                "columns": {"type": "array", "items": {"type": "string"}},
                "email_column": {"type": "string"},
                "preview": {"type": "array", "items": {"type": "array"}},
                "units_at_most": {"type": ["integer", "null"]},
                "units_left": {"type": "integer"},
            },
        },
    }


def jobs_paths(
    problem: ProblemAnswer, settings: JobsConfig, modes: tuple[str, ...], longest: int
) -> dict[str, Any]:
    """The jobs API's paths, each answer described with *problem* as the service's are."""
    options = _options(settings, modes, longest)
    most = settings.max_upload_bytes
    create = _create(problem, options, most)
    missing = problem("No job of this key has this id.", ["not_found"])
    not_done = problem("The job has no such file (yet).", ["job_not_done"])
    common = _common(problem)
    downloads = {
        "400": problem(
            "A format or verdict that is not one, or a format the list does not fit (an Excel "
            "sheet holds 1,048,575 rows).",
            ["invalid_parameter"],
        ),
        "401": problem(
            "No key and no token, or a link's token that expired or is for another file.",
            ["invalid_api_key", "invalid_token"],
            "WWW-Authenticate",
        ),
        "404": missing,
        "409": not_done,
    }
    binary = {"schema": {"type": "string", "contentMediaType": "application/octet-stream"}}
    return {
        "/api/jobs": {
            "post": {
                "operationId": "createJob",
                "summary": "Upload a list (a file, or addresses as JSON) and queue its job",
                "security": _KEY,
                **create,
                "responses": dict(
                    sorted(
                        {
                            "202": _json("Queued.", "JobCreated", "Location"),
                            **create["responses"],
                        }.items()
                    )
                ),
            },
            "get": {
                "operationId": "listJobs",
                "summary": "The caller's jobs, newest first",
                "security": _KEY,
                "parameters": [
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "string", "pattern": "^[1-9][0-9]?$"},
                    },
                    {"name": "cursor", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {
                    "200": _json("A page of jobs.", "JobList"),
                    **common,
                    "400": problem("A limit or cursor that is not one.", ["invalid_parameter"]),
                },
            },
        },
        "/api/jobs/preview": {
            "post": {
                "operationId": "previewJob",
                "summary": "A list's kind, columns, email column and first rows; nothing kept",
                "security": _KEY,
                "requestBody": create["requestBody"],
                "responses": {
                    "200": _json("What the list is.", "JobPreview"),
                    **create["responses"],
                },
            },
        },
        "/api/jobs/{id}": {
            "get": {
                "operationId": "getJob",
                "summary": "A job's state, progress, time left; its summary once done",
                "security": _KEY,
                "parameters": [_ID],
                "responses": {"200": _json("The job.", "JobStatus"), "404": missing, **common},
            },
            "delete": {
                "operationId": "deleteJob",
                "summary": "Cancel a queued or running job; remove a finished one",
                "security": _KEY,
                "parameters": [_ID],
                "responses": {
                    "202": _json("Cancelled (its units given back).", "JobStatus"),
                    "204": {"description": "Removed with its files.", "headers": _headers()},
                    "404": missing,
                    **common,
                },
            },
        },
        "/api/jobs/{id}/files": {
            "get": {
                "operationId": "jobFiles",
                "summary": "Download links of a finished job, each with its own token",
                "security": _KEY,
                "parameters": [_ID],
                "responses": {
                    "200": _json("The links.", "JobFiles"),
                    "404": missing,
                    "409": not_done,
                    **common,
                },
            },
        },
        "/api/jobs/{id}/result": {
            "get": {
                "operationId": "jobResult",
                "summary": "The enriched list (or its rejects), as clean writes it",
                "security": _KEY_OR_TOKEN,
                "parameters": [
                    _ID,
                    {
                        "name": "format",
                        "in": "query",
                        "schema": {"enum": [*FORMATS, "rejects"], "default": "csv"},
                    },
                    {"name": "verdict", "in": "query", "schema": {"enum": list(VERDICTS)}},
                ],
                "responses": {
                    "200": {
                        "description": "The file.",
                        "headers": _headers(),
                        "content": {
                            "text/csv": binary,
                            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": binary,  # noqa: E501
                            "application/vnd.apache.parquet": binary,
                        },
                    },
                    **common,
                    **downloads,
                },
            },
        },
        "/api/jobs/{id}/report": {
            "get": {
                "operationId": "jobReport",
                "summary": "The job's report page, as clean writes it",
                "security": _KEY_OR_TOKEN,
                "parameters": [_ID],
                "responses": {
                    "200": {
                        "description": "The page.",
                        "headers": _headers(),
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    },
                    **common,
                    **downloads,
                },
            },
        },
        "/": {
            "get": {
                "operationId": "uploadPage",
                "summary": "The upload page (no key needed to load it)",
                "responses": {
                    "200": {
                        "description": "The page.",
                        "content": {"text/html": {"schema": {"type": "string"}}},
                    }
                },
            },
        },
    }


LINK_TOKEN: Final = {
    "type": "apiKey",
    "in": "query",
    "name": "token",
    "description": "A download link's token (GET /api/jobs/{id}/files): one file, for a while.",
}
