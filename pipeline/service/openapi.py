"""The OpenAPI 3.1 description of the service, served at ``/openapi.json``.

Schemas here are JSON Schema 2020-12 (what OpenAPI 3.1 uses); the tests validate real responses
against them, so the document cannot drift from the behaviour.
"""

from __future__ import annotations

from typing import Any

from pipeline.core.schema import SPEC_COLUMNS
from pipeline.core.verdict import HELD_BACK, Reason, Verdict
from pipeline.service.connections.protocol import MAX_HEADERS, MAX_LINE_BYTES
from pipeline.service.errors import ALL_PROBLEMS, JOB_PROBLEMS
from pipeline.service.jobs.http.openapi import LINK_TOKEN, jobs_paths
from pipeline.service.jobs.http.openapi import schemas as job_schemas
from pipeline.service.settings import ServiceConfig
from pipeline.version import __version__

_JSON_TYPES = {"String": "string", "Float64": "number", "Boolean": "boolean"}
_VERDICTS = [v.value for v in Verdict]

_FIELD_DOCS = {
    "EMAIL": "The normalized address; empty in domain mode.",
    "VERDICT": "Deliverability verdict.",
    "SCORE": "Estimated probability that mail is accepted: Invalid < 0.3 <= Risky < 0.7 <= Valid.",
    "LOCAL": "Local part; empty in domain mode.",
    "DOMAIN": "Domain, ASCII (IDNA) form.",
    "DOMAIN_VERDICT": "Verdict for the domain alone.",
    "MX": "Lowest-preference MX host; the domain itself for an implicit MX; empty when none.",
    "HAS_SUSPECTED_BOUNCES": "Repeated soft bounces, a domain whose mailboxes bounce, or an SMTP "
    "answer of disabled/full.",
    "LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS": "The local part names a role (info, admin, ...).",
    "HAS_KNOWN_BOUNCES": "A hard bounce is on record with no delivery since.",
    "DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS": "The domain is a disposable mailbox provider.",
    "SUGGESTION": "Corrected address (domain in domain mode) for a likely typo; empty when none.",
}

_RATE_HEADERS = {
    "RateLimit-Policy": 'Quota policies, e.g. "email-month";q=100;w=2592000.',
    "RateLimit": 'Remaining units and seconds to reset, e.g. "email-month";r=97;t=1234.',
    "X-RateLimit-Limit": "Requests allowed in the current window.",
    "X-RateLimit-Remaining": "Requests left in the current window.",
    "X-RateLimit-Reset": "Unix time (seconds) at which the window renews.",
}


def email_result_schema() -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for name, dtype in SPEC_COLUMNS.items():
        prop: dict[str, Any] = {
            "type": _JSON_TYPES[dtype.__name__],
            "description": _FIELD_DOCS[name],
        }
        if name in ("VERDICT", "DOMAIN_VERDICT"):
            prop["enum"] = _VERDICTS
        if name == "SCORE":
            prop.update(minimum=0, maximum=1)
        properties[name] = prop
    properties["REASON"] = {
        "type": "string",
        # The consent codes come from a list's own columns: a single address never has them.
        "description": "Reason codes joined by ';' (extension): "
        + ", ".join(r.value for r in Reason if r not in HELD_BACK)
        + ".",
    }
    return {
        "type": "object",
        "required": [*SPEC_COLUMNS, "REASON"],
        "properties": properties,
        "additionalProperties": False,
    }


def problem_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", "title", "status", "detail", "code"],
        "properties": {
            "type": {"type": "string"},
            "title": {"type": "string"},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "code": {
                "type": "string",
                "enum": sorted({p.code for p in (*ALL_PROBLEMS, *JOB_PROBLEMS)}),
            },
        },
    }


def _problem(description: str, codes: list[str], *extra_headers: str) -> dict[str, Any]:
    """A problem answer whose ``code`` is one of *codes*, with the rate-limit headers."""
    headers = {h: {"$ref": f"#/components/headers/{h}"} for h in (*_RATE_HEADERS, *extra_headers)}
    schema = {
        "allOf": [
            {"$ref": "#/components/schemas/Problem"},
            {"properties": {"code": {"enum": codes}}},
        ]
    }
    return {
        "description": description,
        "headers": headers,
        "content": {"application/problem+json": {"schema": schema}},
    }


def _text(description: str, max_length: int, **rules: Any) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length, "description": description, **rules}


def _fields(config: ServiceConfig, fields: dict[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
    """An object of parameters: *fields*, the legacy key, and *rule* (which are required);
    unknown parameters, of any value, are ignored."""
    key = {
        "type": "string",
        "description": "API key, legacy; the Authorization header wins when both are sent. A "
        "key that is unknown, revoked or not a token is a 401.",
    }
    return {
        "type": "object",
        "properties": {**fields, "apikey": key},
        # Unknown parameters are ignored; each is one name=value pair (a list or an object
        # would repeat a name, or make up several).
        "additionalProperties": {"type": ["string", "number", "integer", "boolean", "null"]},
        "maxProperties": config.service.max_parameters,
        **rule,
    }


def _operation(
    method: str,
    operation_id: str,
    text: tuple[str, str],
    fields: tuple[dict[str, Any], dict[str, Any], dict[str, Any]],
    result: tuple[str, str],
    problems: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    """One counted API operation. On GET the parameters are the query string, one object
    (``style: form, explode: true``: each property is a ``name=value`` pair) so that rules
    across parameters (exactly one of email and domain) can be stated; on POST they may come
    from the query string, a JSON object body or a form body, together. *fields* are the query
    object, the JSON body and the form body."""
    (summary, description), (query, json_body, form_body) = text, fields
    schema, described = result
    responses: dict[str, Any] = {
        "200": {
            "description": described,
            "headers": {h: {"$ref": f"#/components/headers/{h}"} for h in _RATE_HEADERS},
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
        },
        "401": _problem(
            "Unknown, revoked or malformed API key (not counted).",
            ["invalid_api_key"],
            "WWW-Authenticate",
        ),
        "405": _problem("Method not allowed.", ["method_not_allowed"], "Allow"),
        "413": _problem("A request body over 1 MiB (not counted).", ["invalid_parameter"]),
        "429": _problem(
            "Quota or burst limit used up (quota_exceeded), or too many failed "
            "authentications from this client address (too_many_auth_failures).",
            ["quota_exceeded", "too_many_auth_failures"],
            "Retry-After",
        ),
        "408": _problem(
            "The request's headers or body did not arrive in time; the connection closes.",
            ["request_timeout"],
        ),
        "500": _problem("Unexpected failure (not counted).", ["internal_error"]),
        "503": _problem(
            "Too many connections that have not finished sending a request, from this client "
            "address or in all; answered as the connection opens, before any request is read.",
            ["too_many_connections"],
            "Retry-After",
        ),
        **problems,
    }
    get = method == "get"
    operation: dict[str, Any] = {
        "operationId": f"{operation_id}{method.title()}",
        "summary": summary,
        "description": description + _REQUEST_RULES,
        "parameters": [
            {
                "name": "parameters",
                "in": "query",
                "style": "form",
                "explode": True,
                "required": get,
                "schema": query if get else _without_rule(query),
            }
        ],
        "security": [{}, {"bearer": []}, {"apikey": []}],
        "responses": dict(sorted(responses.items())),
    }
    if get:
        return operation
    operation["requestBody"] = {
        "required": True,
        "content": {
            # JSON keeps a value's type: an unknown parameter too must be a string.
            "application/json": {
                "schema": {**_without_key(json_body), "additionalProperties": {"type": "string"}}
            },
            "application/x-www-form-urlencoded": {"schema": _without_key(form_body)},
        },
    }
    return operation


def _without_key(schema: dict[str, Any]) -> dict[str, Any]:
    """A POST body's object: the key goes in the query string (the apikey security scheme)
    or the Authorization header; a body may carry it too, but one sent in both places must
    be the same, which a schema cannot state across the two."""
    properties = {k: v for k, v in schema["properties"].items() if k != "apikey"}
    return {**schema, "properties": properties}


def _without_rule(schema: dict[str, Any]) -> dict[str, Any]:
    """The query string of a POST: the body carries the parameters; a parameter sent in
    both must have the same value there (a 400 conflicting_parameters else), which a schema
    cannot state across the two, so the document keeps them apart: on POST the query string
    carries none of the operation's parameters, only unknown ones (ignored)."""
    names = sorted(set(schema["properties"]) - {"apikey"})  # apikey: a security scheme
    return {
        "type": "object",
        "propertyNames": {"not": {"enum": names}},
        "additionalProperties": schema["additionalProperties"],
        "maxProperties": schema["maxProperties"],
    }


# What every counted operation shares, stated once (docs/service.md#requests).
_REQUEST_RULES = (
    " Every name and value must be UTF-8 text once percent-decoded (JSON: no lone surrogate "
    "escapes). A parameter repeated in the query string or the form body, or a name repeated "
    "in the JSON object, is a 400 conflicting_parameters, even with the same value; one sent "
    "in both the query string and the body must have the same value. The JSON body is one "
    "flat object of strings. Unknown parameters are ignored. Rejected requests (400, 401, "
    "413, 429, 5xx) are not counted."
)


def _one_of(first: str, second: str) -> dict[str, Any]:
    """Exactly one of two parameters given with a value (an empty value counts as absent)."""

    def given(name: str) -> dict[str, Any]:
        return {"required": [name], "properties": {name: {"minLength": 1}}}

    return {
        "oneOf": [
            {**given(first), "not": given(second)},
            {**given(second), "not": given(first)},
        ]
    }


def _email_operation(method: str, config: ServiceConfig) -> dict[str, Any]:
    limit = config.service.max_value_length
    fields = {
        "email": _text("The address to verify.", limit),
        "domain": _text("A bare domain to verify (domain mode).", limit),
    }
    schema = _fields(config, fields, _one_of("email", "domain"))
    return _operation(
        method,
        "verifyEmail",
        (
            "Verify an email address, or a bare domain",
            "Exactly one of email or domain. A malformed address is a 200 with "
            "VERDICT Invalid. Counted against the caller's quota.",
        ),
        (schema, schema, schema),
        ("EmailResult", "The verification result."),
        {
            "400": _problem(
                "Missing, conflicting or invalid parameters (not counted).",
                ["missing_parameter", "conflicting_parameters", "invalid_parameter"],
            )
        },
    )


def _find_operation(method: str, config: ServiceConfig) -> dict[str, Any]:
    term = _text(
        "An email address, a phone number, or a name (+ city/company); not blank.",
        config.service.max_value_length,
        # Not blank: a character that is neither white space (ECMA-262's nor Python's) nor a
        # byte-order mark, which the service strips.
        pattern="[^\\s\\x1c-\\x1f\\x85\\ufeff]",
    )
    flag = {"type": "string", "enum": ["true"], "description": "Must be the text true."}
    required = {"required": ["search_term", "find_Contact"]}
    as_text = _fields(config, {"search_term": term, "find_Contact": flag}, required)
    json_flag = {**flag, "type": ["string", "boolean"], "enum": ["true", True]}
    as_json = _fields(config, {"search_term": term, "find_Contact": json_flag}, required)
    return _operation(
        method,
        "findContact",
        (
            "Find a contact by email, phone number or name",
            "find_Contact must be the text true (the name is case-sensitive; in a JSON body, "
            "true also). No match, an ambiguous match and an opted-out person all answer the "
            "same 404. Every search is counted against the caller's quota and written to the "
            "audit log.",
        ),
        (as_text, as_json, as_text),
        ("Contact", "The matching contact."),
        {
            "400": _problem(
                "Missing or invalid parameters (not counted).",
                ["missing_parameter", "conflicting_parameters", "invalid_parameter"],
            ),
            "404": _problem("No contact matches (also: ambiguous, or opted out).", ["not_found"]),
        },
    )


def contact_schema() -> dict[str, Any]:
    text = {"type": "string"}
    return {
        "type": "object",
        "description": "A contact record (spec §2.2); unavailable fields are empty strings.",
        "required": ["name", "address", "phone", "email", "employment"],
        "properties": {
            "name": text,
            "address": text,
            "phone": {"type": "string", "description": "E.164, e.g. +15555550123"},
            "email": text,
            "employment": {
                "type": "object",
                "required": ["company", "title"],
                "properties": {"company": text, "title": text},
            },
        },
    }


def _limits(config: ServiceConfig) -> str:
    http = config.service
    return (
        f"Request limits: the request line and each header at most {MAX_LINE_BYTES} bytes, at "
        f"most {MAX_HEADERS} headers, a body of at most 1 MiB, at most {http.max_parameters} "
        f"parameters of at most {http.max_value_length} characters each. A request that "
        "cannot be read as HTTP/1.1 is a 400 invalid_parameter carrying the rate-limit headers "
        "of the client address's anonymous email-day policy. After "
        f"{http.auth_failures} failed authentications within {http.auth_window:g} seconds, "
        "a client address's further failures are a 429 too_many_auth_failures with "
        "Retry-After; a valid key is always served."
    )


def _jobs(config: ServiceConfig) -> dict[str, Any]:
    mode = config.engine.verify.mode
    modes = ("none",) if mode == "none" else ("none", mode)
    longest = config.service.max_value_length
    return jobs_paths(_problem, config.jobs, modes, longest)


def openapi_document(config: ServiceConfig) -> dict[str, Any]:
    plans = ", ".join(
        f"{name}: {plan.email_per_month:,} email / {plan.find_per_month:,} find per month"
        for name, plan in config.plans.items()
    )
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "listclean verification and contact lookup service",
            "version": __version__,
            "description": "Email verification and contact lookup. Without a key: "
            f"{config.anonymous.email_per_day} request(s) per client IP per UTC day. "
            f"Plans: {plans}. " + _limits(config) + " Bulk jobs (/api/jobs) need a key and "
            "charge the /api/email counter one unit per distinct address they check.",
        },
        "paths": {
            **_jobs(config),
            "/api/email": {
                "get": _email_operation("get", config),
                "post": _email_operation("post", config),
            },
            "/api/find": {
                "get": _find_operation("get", config),
                "post": _find_operation("post", config),
            },
            "/healthz": {
                "get": {
                    "operationId": "health",
                    "summary": "Health for load balancers; not counted",
                    "responses": {
                        "200": {
                            "description": "Serving.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["status"],
                                        "properties": {"status": {"const": "ok"}},
                                    }
                                }
                            },
                        },
                        "503": {
                            "description": "The service database does not answer: take this "
                            "instance out of rotation until it is 200 again.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "required": ["status", "detail"],
                                        "properties": {
                                            "status": {"const": "unavailable"},
                                            "detail": {"type": "string"},
                                        },
                                    }
                                }
                            },
                        },
                    },
                }
            },
            "/openapi.json": {
                "get": {
                    "operationId": "openapi",
                    "summary": "This document",
                    "responses": {
                        "200": {
                            "description": "OpenAPI 3.1 document.",
                            "content": {"application/json": {"schema": {"type": "object"}}},
                        }
                    },
                }
            },
        },
        "components": {
            "schemas": {
                "EmailResult": email_result_schema(),
                "Contact": contact_schema(),
                "Problem": problem_schema(),
                **job_schemas(),
            },
            "headers": {
                **{
                    h: {"description": d, "required": True, "schema": {"type": "string"}}
                    for h, d in _RATE_HEADERS.items()
                },
                "Retry-After": {
                    "description": "Seconds until a request can succeed.",
                    "required": True,
                    "schema": {"type": "string"},
                },
                "WWW-Authenticate": {
                    "description": 'Bearer error="invalid_token".',
                    "schema": {"type": "string"},
                },
                "Allow": {
                    "description": "Methods allowed on this path.",
                    "schema": {"type": "string"},
                },
                "Location": {
                    "description": "Where the new job is (GET it for its state).",
                    "required": True,
                    "schema": {"type": "string"},
                },
            },
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apikey": {"type": "apiKey", "in": "query", "name": "apikey"},
                "linkToken": LINK_TOKEN,
            },
        },
    }
