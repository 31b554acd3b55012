"""/openapi.json is a valid OpenAPI 3.1 document, and real responses match its schemas."""

from __future__ import annotations

import io
from typing import Any

import aiohttp
import jsonschema
import openapi_spec_validator

from pipeline.service.settings import PlanConfig
from tests.service.conftest import Env, Reply, fetch, run


def validator(document: dict[str, Any], schema: str) -> jsonschema.Draft202012Validator:
    """A 2020-12 validator of components.schemas[schema], its $refs resolved in *document*."""
    return inline_validator(document, {"$ref": f"#/components/schemas/{schema}"})


def inline_validator(
    document: dict[str, Any], schema: dict[str, Any]
) -> jsonschema.Draft202012Validator:
    """A 2020-12 validator of a schema found inside *document*. Its ``#/components/...`` refs
    resolve against the root, so the root carries the document's keys too: keywords JSON Schema
    does not know (openapi, paths, components) are ignored by it."""
    return jsonschema.Draft202012Validator({**document, **schema})


async def exercise(env: Env) -> tuple[dict[str, Any], dict[str, list[Reply]], list[Reply]]:
    """The served document, /api/email replies by status, and /healthz replies."""
    _, tiny = env.key("tiny")
    config = env.config(plans={"tiny": PlanConfig(email_per_month=1)})
    async with env.serving(config) as url, aiohttp.ClientSession() as s:
        api = f"{url}/api/email"
        document = (await fetch(s, "GET", f"{url}/openapi.json")).json
        keyed = {"Authorization": f"Bearer {tiny}"}
        replies = [
            await fetch(s, "GET", api),
            await fetch(s, "POST", api, json=["x"]),
            await fetch(s, "GET", f"{api}?email=a@gmail.com&domain=gmail.com"),
            await fetch(s, "GET", f"{api}?email=a@gmail.com&apikey=lc_nope"),
            await fetch(s, "PATCH", api),
            await fetch(s, "GET", f"{api}?email=info@parkedsite.net"),  # anonymous
            await fetch(s, "GET", f"{api}?domain=gmial.com"),  # 429
            await fetch(s, "POST", api, json={"domain": "gmial.com"}, headers=keyed),
            await fetch(s, "POST", api, data={"email": "x@gmail.com"}, headers=keyed),  # 429
            await fetch(s, "POST", api, data=io.BytesIO(b"e=" + b"a" * 2**21), headers=keyed),
        ]
        health = [await fetch(s, "GET", f"{url}/healthz")]
    by_status: dict[str, list[Reply]] = {}
    for reply in replies:
        by_status.setdefault(str(reply.status), []).append(reply)
    return document, by_status, health


def test_the_document_is_valid_openapi(env: Env) -> None:
    async def scenario() -> Reply:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            return await fetch(s, "GET", f"{url}/openapi.json")

    reply = run(scenario())
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json; charset=utf-8"
    assert "X-RateLimit-Limit" not in reply.headers
    document = reply.json
    openapi_spec_validator.validate(document)
    assert document["openapi"] == "3.1.0"
    jobs = {
        "/",
        "/api/jobs",
        "/api/jobs/preview",
        "/api/jobs/{id}",
        "/api/jobs/{id}/files",
        "/api/jobs/{id}/result",
        "/api/jobs/{id}/report",
    }
    assert set(document["paths"]) == {"/api/email", "/api/find", "/healthz", "/openapi.json", *jobs}
    assert set(document["paths"]["/api/email"]) == {"get", "post"}
    # The plans of the running configuration are described.
    assert "default: 100 email / 5 find per month" in document["info"]["description"]
    assert "1 request(s) per client IP per UTC day" in document["info"]["description"]


def test_real_responses_match_the_documented_schemas(env: Env) -> None:
    document, by_status, health = run(exercise(env))
    results = validator(document, "EmailResult")
    problems = validator(document, "Problem")
    assert [r.status for r in by_status["200"]] == [200, 200]
    for reply in by_status["200"]:
        results.validate(reply.json)
    for status in ("400", "401", "405", "429"):
        for reply in by_status[status]:
            problems.validate(reply.json)
            assert reply.json["status"] == int(status)
    # The schema is strict enough to catch drift: an extra or a missing field fails.
    good = by_status["200"][0].json
    assert not results.is_valid({**good, "EXTRA": 1})
    assert not results.is_valid({k: v for k, v in good.items() if k != "MX"})
    assert not results.is_valid({**good, "VERDICT": "Maybe"})
    assert not problems.is_valid({**by_status["400"][0].json, "code": "no_such_code"})

    health_schema = document["paths"]["/healthz"]["get"]["responses"]["200"]["content"][
        "application/json"
    ]["schema"]
    jsonschema.Draft202012Validator(health_schema).validate(health[0].json)


def test_documented_codes_and_headers_are_the_ones_produced(env: Env) -> None:
    document, by_status, _ = run(exercise(env))
    for method in ("get", "post"):
        responses = document["paths"]["/api/email"][method]["responses"]
        assert set(responses) == {"200", "400", "401", "405", "408", "413", "429", "500", "503"}
        # 500, 408 and 503 are produced (and checked) by test_errors.py's walk of every path.
        assert set(responses) - {"500", "408", "503"} == set(by_status)
        for status, replies in by_status.items():
            documented = set(responses[status].get("headers", {}))
            ((media_type, content),) = responses[status]["content"].items()
            schema = inline_validator(document, content["schema"])
            for reply in replies:
                assert documented <= set(reply.headers), (status, documented)
                assert reply.headers["Content-Type"].split(";")[0] == media_type
                schema.validate(reply.json)  # the problem codes documented for this status


def test_the_document_states_the_parameter_rules(env: Env) -> None:
    """Exactly one of email and domain, find_Contact's one value, repeated parameters and
    duplicate JSON names: said in the schemas and descriptions, not only in docs/service.md."""

    async def scenario() -> dict[str, Any]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            return dict((await fetch(s, "GET", f"{url}/openapi.json")).json)

    document = run(scenario())
    email = document["paths"]["/api/email"]
    query = inline_validator(document, email["get"]["parameters"][0]["schema"])
    assert email["get"]["parameters"][0]["style"] == "form"
    assert email["get"]["parameters"][0]["explode"] is True
    for ok in ({"email": "a@b.org"}, {"domain": "b.org"}, {"email": "", "domain": "b.org"}):
        assert query.is_valid(ok), ok
    for wrong in ({}, {"email": "a@b.org", "domain": "b.org"}, {"email": "", "domain": ""}):
        assert not query.is_valid(wrong), wrong
    assert not query.is_valid({"email": "a" * 513})
    body = email["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert not inline_validator(document, body).is_valid({"email": "a@b.org", "domain": "b.org"})

    find = document["paths"]["/api/find"]
    find_query = inline_validator(document, find["get"]["parameters"][0]["schema"])
    assert find_query.is_valid({"search_term": "Jane Roe", "find_Contact": "true"})
    for wrong in ("True", "1", "yes"):
        assert not find_query.is_valid({"search_term": "Jane Roe", "find_Contact": wrong})
    assert not find_query.is_valid({"search_term": "   ", "find_Contact": "true"})
    json_body = inline_validator(
        document, find["post"]["requestBody"]["content"]["application/json"]["schema"]
    )
    assert json_body.is_valid({"search_term": "Jane Roe", "find_Contact": True})

    for path in ("/api/email", "/api/find"):
        for method in ("get", "post"):
            text = document["paths"][path][method]["description"]
            assert "repeated in the query string or the form body" in text
            assert "name repeated in the JSON object, is a 400 conflicting_parameters" in text
    assert "too_many_auth_failures" in str(email["get"]["responses"]["429"])
    assert "at most 16 parameters" in document["info"]["description"]
