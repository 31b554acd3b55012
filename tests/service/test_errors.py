"""Every error the API answers is one RFC 9457 problem document, whatever went wrong."""

from __future__ import annotations

import io
import warnings
from dataclasses import replace

import aiohttp
import pytest
from aiohttp.web_exceptions import NotAppKeyWarning
from aiohttp.web_request import BaseRequest

from pipeline.core.config import JobsConfig
from pipeline.service.errors import ALL_PROBLEMS
from tests.service.conftest import PROBLEM_KEYS, Env, Reply, fetch, run
from tests.service.rawhttp import RawReply, answer, connect, slow

TITLES = {problem.code: problem.title for problem in ALL_PROBLEMS}
STATUSES = {
    "missing_parameter": 400,
    "conflicting_parameters": 400,
    "invalid_parameter": 400,
    "invalid_api_key": 401,
    "quota_exceeded": 429,
    "too_many_auth_failures": 429,
    "method_not_allowed": 405,
    "not_found": 404,
    "request_timeout": 408,
    "too_many_connections": 503,
    "internal_error": 500,
    "unsupported_media_type": 415,
    "unreadable_list": 422,
    "too_large": 413,
    "invalid_token": 401,
    "job_not_done": 409,
}


async def provoke(env: Env, *, internal: bool) -> dict[str, Reply]:
    """One real request down each error path (internal_error only when asked)."""
    _, retired = env.key("retired")  # a plan the configuration does not have
    async with env.serving(env.config(auth_failures=1)) as url, aiohttp.ClientSession() as s:
        api = f"{url}/api/email"
        replies = {
            "missing_parameter": await fetch(s, "GET", api),
            "conflicting_parameters": await fetch(s, "GET", f"{api}?email=a@gmail.com&domain=b"),
            "invalid_parameter": await fetch(s, "GET", api, params={"email": "a" * 513}),
            "invalid_api_key": await fetch(
                s, "GET", f"{api}?email=a@gmail.com", headers={"Authorization": "Bearer lc_x"}
            ),
            "method_not_allowed": await fetch(s, "PUT", f"{api}?email=a@gmail.com"),
            "not_found": await fetch(s, "GET", f"{url}/nope"),
            # The second failed authentication from this address, past auth_failures = 1.
            "too_many_auth_failures": await fetch(s, "GET", f"{api}?email=a@gmail.com&apikey=x"),
        }
        await fetch(s, "GET", f"{api}?email=a@gmail.com")  # the day's one anonymous request
        replies["quota_exceeded"] = await fetch(s, "GET", f"{api}?email=a@gmail.com")
        if internal:
            replies["internal_error"] = await fetch(
                s, "GET", f"{api}?email=a@gmail.com", headers={"Authorization": f"Bearer {retired}"}
            )
    replies.update(await provoke_slow(env))
    replies.update(await provoke_jobs(env))
    return replies


async def provoke_jobs(env: Env) -> dict[str, Reply]:
    """The bulk jobs' own refusals."""
    jobs = JobsConfig(storage=str(env.tmp / "jobs"), max_upload_bytes=20_000, poll=0.05)
    config = replace(env.config(), jobs=jobs)
    _, secret = env.key("starter")
    keyed = {"Authorization": f"Bearer {secret}"}
    async with env.serving(config) as url, aiohttp.ClientSession() as s:
        api = f"{url}/api/jobs"

        def upload(data: bytes) -> aiohttp.FormData:
            body = aiohttp.FormData()
            body.add_field("file", data, filename="list.csv")
            return body

        replies = {
            "unsupported_media_type": await fetch(s, "POST", api, data=b"a", headers=keyed),
            "unreadable_list": await fetch(s, "POST", api, data=upload(b""), headers=keyed),
            "too_large": await fetch(s, "POST", api, data=upload(b"e\n" * 20_000), headers=keyed),
        }
        job = (
            await fetch(s, "POST", api, data=upload(b"email\na@gmail.com\n"), headers=keyed)
        ).json["id"]
        await fetch(s, "DELETE", f"{api}/{job}", headers=keyed)  # cancelled: no result
        replies["job_not_done"] = await fetch(s, "GET", f"{api}/{job}/files", headers=keyed)
        replies["invalid_token"] = await fetch(s, "GET", f"{api}/{job}/result?token=1.x")
    return replies


async def provoke_slow(env: Env) -> dict[str, Reply]:
    """A body that never ends (408), then a connection over the per-client cap (503)."""
    config = env.config(header_timeout=30, body_timeout=0.3, max_unfinished_per_client=1)
    async with env.serving(config) as url:
        late = await connect(url)
        late[1].write(b"POST /api/email HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\n{")
        replies = {"request_timeout": as_reply(await answer(late))}
        async with slow(url, 1):
            busy = await connect(url)
            replies["too_many_connections"] = as_reply(await answer(busy))
        for conn in (late, busy):
            conn[1].close()
        return replies


def as_reply(raw: RawReply) -> Reply:
    return Reply(raw.status, raw.headers, raw.body.decode())


def assert_problem_document(code: str, reply: Reply) -> None:
    assert reply.status == STATUSES[code], (code, reply.text)
    assert reply.headers["Content-Type"].split(";")[0] == "application/problem+json", code
    assert "Traceback" not in reply.text, code
    body = reply.json
    assert set(body) == PROBLEM_KEYS, code
    assert body["status"] == reply.status
    assert body["code"] == code
    assert body["type"] == "/problems/" + code
    assert body["title"] == TITLES[code]
    assert isinstance(body["detail"], str)
    assert body["detail"].strip(), code


def assert_extra_headers(replies: dict[str, Reply]) -> None:
    assert replies["invalid_api_key"].headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    assert replies["method_not_allowed"].headers["Allow"] == "GET, POST"
    assert replies["method_not_allowed"].json["detail"] == (
        "This method is not allowed here; use GET, POST."
    )
    assert replies["not_found"].json["detail"] == (
        "There is nothing at this path. The API is under /api/."
    )
    assert replies["quota_exceeded"].headers["Retry-After"] == "43200"
    assert replies["too_many_auth_failures"].headers["Retry-After"] == "60"
    assert replies["too_many_connections"].headers["Retry-After"] == "30"
    for code, reply in replies.items():
        assert ("Retry-After" in reply.headers) == (reply.status in (429, 503)), code
    assert replies["invalid_token"].headers.get("WWW-Authenticate") is None


def test_every_client_error_path_answers_a_problem_document(env: Env) -> None:
    """All paths but internal_error; that one is walked in the test below."""
    replies = run(provoke(env, internal=False))
    assert set(replies) == set(STATUSES) - {"internal_error"}
    for code, reply in replies.items():
        assert_problem_document(code, reply)
    assert_extra_headers(replies)


def test_every_error_path_answers_a_problem_document(env: Env) -> None:
    replies = run(provoke(env, internal=True))
    assert set(replies) == set(STATUSES) == {problem.code for problem in ALL_PROBLEMS}
    for code, reply in replies.items():
        assert_problem_document(code, reply)
    assert_extra_headers(replies)
    assert replies["internal_error"].json["detail"] == (
        "The service failed to answer this request. Try again; if it persists, report it."
    )


def test_an_unknown_path_has_no_rate_limit_headers(env: Env) -> None:
    async def scenario() -> list[Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            return [
                await fetch(s, "GET", f"{url}/nope"),
                await fetch(s, "GET", f"{url}/api/email/"),
                await fetch(s, "POST", f"{url}/healthz"),
            ]

    not_found, trailing_slash, post_health = run(scenario())
    assert_problem_document("not_found", not_found)
    assert_problem_document("not_found", trailing_slash)
    assert_problem_document("method_not_allowed", post_health)
    assert post_health.headers["Allow"] == "GET, HEAD"
    for reply in (not_found, trailing_slash, post_health):
        assert "X-RateLimit-Limit" not in reply.headers


def test_serving_raises_no_warning(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    # aiohttp warns once per key and process: forget which keys earlier tests already used.
    monkeypatch.setattr(BaseRequest, "_seen_str_keys", set())

    async def scenario() -> Reply:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            return await fetch(s, "GET", f"{url}/api/email?email=john.doe@gmail.com")

    with warnings.catch_warnings():
        warnings.simplefilter("error", NotAppKeyWarning)
        reply = run(scenario())
    assert reply.status == 200, reply.text


def test_head_is_not_allowed_on_the_counted_endpoint(env: Env) -> None:
    async def scenario() -> Reply:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            return await fetch(s, "HEAD", f"{url}/api/email?email=john@gmail.com")

    reply = run(scenario())
    assert reply.status == 405
    assert reply.headers["Allow"] == "GET, POST"
    assert reply.headers["X-RateLimit-Remaining"] == "1"  # nothing was spent


def test_a_body_over_aiohttp_s_limit_is_a_problem_document(env: Env) -> None:
    async def scenario() -> Reply:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            body = io.BytesIO(b"email=" + b"a" * (2 * 1024 * 1024))
            return await fetch(
                s,
                "POST",
                f"{url}/api/email",
                data=body,
                headers={"Content-Type": "application/x-www-form-urlencoded"},
            )

    reply = run(scenario())
    assert reply.status == 413
    assert reply.headers["Content-Type"].startswith("application/problem+json")
    assert reply.json["code"] == "invalid_parameter"
    assert reply.json["status"] == 413


def test_no_detail_repeats_a_name_or_value_sent(env: Env) -> None:
    """Each 400 (and the 404, 405) names only the API's own parameters, never what was sent:
    a made-up name, a value, a content type, a path or a method."""
    mark = "Zq9mark"

    async def scenario() -> list[Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api, find = f"{url}/api/email", f"{url}/api/find"
            return [
                await fetch(s, "GET", f"{api}?{mark}=1&{mark}=2&email=a@gmail.com"),
                await fetch(s, "GET", f"{api}?email={mark}&email=b@gmail.com"),
                await fetch(s, "GET", f"{api}?email={mark * 80}"),
                await fetch(s, "POST", api, json={mark: 5, "email": "a@gmail.com"}),
                await fetch(s, "POST", api, json={"email": 5.25e300}),
                await fetch(
                    s,
                    "POST",
                    api,
                    data=f'{{"{mark}": "\\ud800"}}'.encode(),
                    headers={"Content-Type": "application/json"},
                ),
                await fetch(s, "POST", api, data=mark, headers={"Content-Type": f"text/{mark}"}),
                await fetch(s, "POST", api, params={"email": mark}, json={"email": "b@gmail.com"}),
                await fetch(s, "GET", find, params={"search_term": "x", "find_Contact": mark}),
                await fetch(s, "GET", f"{url}/{mark}"),
                await fetch(s, "PATCH", api),
            ]

    replies = run(scenario())
    assert [r.status for r in replies] == [400] * 9 + [404, 405]
    for reply in replies:
        detail = reply.json["detail"]
        for sent in (mark, "5.25e", "text/", "PATCH"):
            assert sent not in detail, (sent, detail)
