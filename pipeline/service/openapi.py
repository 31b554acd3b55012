"""The OpenAPI 3.1 description of the service, served at ``/openapi.json``.

Schemas here are JSON Schema 2020-12 (what OpenAPI 3.1 uses); the tests validate real responses
against them, so the document cannot drift from the behaviour.
"""

from __future__ import annotations

from typing import Any

from pipeline import __version__
from pipeline.core.schema import SPEC_COLUMNS
from pipeline.core.verdict import Reason, Verdict
from pipeline.service.errors import ALL_PROBLEMS
from pipeline.service.settings import ServiceConfig

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
        "description": "Reason codes joined by ';' (extension): "
        + ", ".join(r.value for r in Reason)
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
            "code": {"type": "string", "enum": sorted({p.code for p in ALL_PROBLEMS})},
        },
    }


def _problem(description: str, *extra_headers: str) -> dict[str, Any]:
    headers = {h: {"$ref": f"#/components/headers/{h}"} for h in (*_RATE_HEADERS, *extra_headers)}
    return {
        "description": description,
        "headers": headers,
        "content": {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}
        },
    }


def _query(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "schema": {"type": "string"},
        "description": description,
    }


def _operation(
    method: str,
    operation_id: str,
    summary: str,
    description: str,
    parameters: list[tuple[str, str]],
    result: tuple[str, str],
    problems: dict[str, dict[str, Any]],
    body: dict[str, Any],
) -> dict[str, Any]:
    """One counted API operation: its parameters (the key last), its 200 with the rate-limit
    headers, the problem answers every counted endpoint shares, and on POST the same fields
    as a JSON or form body."""
    schema, described = result
    responses: dict[str, Any] = {
        "200": {
            "description": described,
            "headers": {h: {"$ref": f"#/components/headers/{h}"} for h in _RATE_HEADERS},
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
        },
        "401": _problem("Unknown or revoked API key (not counted).", "WWW-Authenticate"),
        "405": _problem("Method not allowed.", "Allow"),
        "429": _problem("Quota or burst limit exhausted.", "Retry-After"),
        "500": _problem("Unexpected failure."),
        **problems,
    }
    operation: dict[str, Any] = {
        "operationId": f"{operation_id}{method.title()}",
        "summary": summary,
        "description": description,
        "parameters": [
            *(_query(name, text) for name, text in parameters),
            _query("apikey", "API key, legacy; the Authorization header wins when both are sent."),
        ],
        "security": [{}, {"bearer": []}, {"apikey": []}],
        "responses": dict(sorted(responses.items())),
    }
    if method == "post":
        fields = {"type": "object", "properties": {**body, "apikey": {"type": "string"}}}
        operation["requestBody"] = {
            "required": False,
            "content": {
                "application/json": {"schema": fields},
                "application/x-www-form-urlencoded": {"schema": fields},
            },
        }
    return operation


def _email_operation(method: str) -> dict[str, Any]:
    return _operation(
        method,
        "verifyEmail",
        "Verify an email address, or a bare domain",
        "Exactly one of email or domain. A malformed address is a 200 with "
        "VERDICT Invalid. Counted against the caller's quota.",
        [("email", "The address to verify."), ("domain", "A bare domain to verify (domain mode).")],
        ("EmailResult", "The verification result."),
        {"400": _problem("Missing, conflicting or invalid parameters (not counted).")},
        {"email": {"type": "string"}, "domain": {"type": "string"}},
    )


def _find_operation(method: str) -> dict[str, Any]:
    return _operation(
        method,
        "findContact",
        "Find a contact by email, phone number or name",
        "find_Contact must be the text true (the name is case-sensitive). No "
        "match, an ambiguous match and an opted-out person all answer the same 404. Every "
        "search is counted against the caller's quota and written to the audit log.",
        [
            ("search_term", "An email address, a phone number, or a name (+ city/company)."),
            ("find_Contact", "Must be the text true."),
        ],
        ("Contact", "The matching contact."),
        {
            "400": _problem("Missing or invalid parameters (not counted)."),
            "404": _problem("No contact matches (also: ambiguous, or opted out)."),
        },
        {"search_term": {"type": "string"}, "find_Contact": {"type": ["string", "boolean"]}},
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
            f"Plans: {plans}.",
        },
        "paths": {
            "/api/email": {"get": _email_operation("get"), "post": _email_operation("post")},
            "/api/find": {"get": _find_operation("get"), "post": _find_operation("post")},
            "/healthz": {
                "get": {
                    "operationId": "health",
                    "summary": "Liveness for load balancers; not counted",
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
                        }
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
            },
            "headers": {
                **{
                    h: {"description": d, "schema": {"type": "string"}}
                    for h, d in _RATE_HEADERS.items()
                },
                "Retry-After": {
                    "description": "Seconds until a request can succeed.",
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
            },
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer"},
                "apikey": {"type": "apiKey", "in": "query", "name": "apikey"},
            },
        },
    }
