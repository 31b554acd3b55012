"""/api/email over real HTTP: the result document, the ways to send parameters, authentication,
the access log and a graceful stop."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import pytest
from yarl import URL

from tests.service.conftest import (
    SPEC_FIELDS,
    Env,
    Reply,
    fetch,
    run,
    serving,
    start,
)

GMAIL = {
    "EMAIL": "john.doe@gmail.com",
    "VERDICT": "Valid",
    "SCORE": 0.9,
    "LOCAL": "john.doe",
    "DOMAIN": "gmail.com",
    "DOMAIN_VERDICT": "Valid",
    "MX": "gmail-smtp-in.l.google.com",
    "HAS_SUSPECTED_BOUNCES": False,
    "LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS": False,
    "HAS_KNOWN_BOUNCES": False,
    "DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS": False,
    "SUGGESTION": "",
    "REASON": "",
}
SPEC_TYPES = {
    "EMAIL": str,
    "VERDICT": str,
    "SCORE": float,
    "LOCAL": str,
    "DOMAIN": str,
    "DOMAIN_VERDICT": str,
    "MX": str,
    "HAS_SUSPECTED_BOUNCES": bool,
    "LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS": bool,
    "HAS_KNOWN_BOUNCES": bool,
    "DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS": bool,
    "SUGGESTION": str,
    "REASON": str,
}


def problem(reply: Reply, status: int, code: str, detail: str | None = None) -> None:
    assert reply.status == status, reply.text
    body = reply.json
    assert body["code"] == code, body
    if detail is not None:
        assert body["detail"] == detail


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


# --- the result document ----------------------------------------------------------------------


def test_get_email_answers_the_twelve_spec_fields_plus_reason(env: Env) -> None:
    async def scenario() -> Reply:
        async with env.serving() as url, aiohttp.ClientSession() as session:
            return await fetch(session, "GET", f"{url}/api/email?email=john.doe@gmail.com")

    reply = run(scenario())
    assert reply.status == 200
    assert reply.headers["Content-Type"] == "application/json; charset=utf-8"
    body = reply.json
    assert list(body) == [*SPEC_FIELDS, "REASON"]
    assert {name: type(value) for name, value in body.items()} == SPEC_TYPES
    assert body == GMAIL


def test_domain_mode_malformed_and_url_encoded_values(env: Env) -> None:
    _, secret = env.key("starter")

    async def scenario() -> dict[str, Reply]:
        async with env.serving() as url, aiohttp.ClientSession(headers=bearer(secret)) as s:
            targets = {
                "gmail": f"{url}/api/email?domain=gmail.com",
                "gmial": f"{url}/api/email?domain=gmial.com",
                "parked": f"{url}/api/email?domain=parkedsite.net",
                "malformed": f"{url}/api/email?email=no-at-sign",
                "encoded": f"{url}/api/email?email=John.Doe%40gmial.com",
                "plus": f"{url}/api/email?email=a%2Bb%40gmail.com",
            }
            return {
                name: await fetch(s, "GET", URL(target, encoded=True))
                for name, target in targets.items()
            }

    replies = run(scenario())
    assert {name: r.status for name, r in replies.items()} == dict.fromkeys(replies, 200)
    gmail = replies["gmail"].json
    assert gmail == {**GMAIL, "EMAIL": "", "LOCAL": ""}
    assert gmail["VERDICT"] == gmail["DOMAIN_VERDICT"]

    gmial = replies["gmial"].json
    assert gmial["EMAIL"] == gmial["LOCAL"] == ""
    assert gmial["DOMAIN"] == "gmial.com"
    assert gmial["SUGGESTION"] == "gmail.com"  # a domain, not an address
    assert gmial["VERDICT"] == gmial["DOMAIN_VERDICT"] == "Risky"
    assert gmial["REASON"] == "disposable;typo_suspected"

    parked = replies["parked"].json
    assert (parked["VERDICT"], parked["DOMAIN_VERDICT"], parked["MX"]) == ("Invalid", "Invalid", "")
    assert parked["REASON"] == "null_mx"

    assert replies["malformed"].json == {
        "EMAIL": "no-at-sign",
        "VERDICT": "Invalid",
        "SCORE": 0.0,
        "LOCAL": "",
        "DOMAIN": "",
        "DOMAIN_VERDICT": "Invalid",
        "MX": "",
        "HAS_SUSPECTED_BOUNCES": False,
        "LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS": False,
        "HAS_KNOWN_BOUNCES": False,
        "DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS": False,
        "SUGGESTION": "",
        "REASON": "syntax_invalid",
    }

    encoded = replies["encoded"].json
    assert (encoded["EMAIL"], encoded["LOCAL"], encoded["DOMAIN"]) == (
        "John.Doe@gmial.com",
        "John.Doe",
        "gmial.com",
    )
    assert encoded["SUGGESTION"] == "John.Doe@gmail.com"
    assert (replies["plus"].json["EMAIL"], replies["plus"].json["LOCAL"]) == (
        "a+b@gmail.com",
        "a+b",
    )


# --- how parameters may be sent -----------------------------------------------------------------


def test_post_json_form_and_query_string(env: Env) -> None:
    _, secret = env.key("starter")

    async def scenario() -> dict[str, Reply]:
        async with env.serving() as url, aiohttp.ClientSession(headers=bearer(secret)) as s:
            api = f"{url}/api/email"
            address = "john.doe@gmail.com"
            return {
                "json": await fetch(s, "POST", api, json={"email": address}),
                "form": await fetch(s, "POST", api, data={"email": address}),
                "query": await fetch(s, "POST", api, params={"email": address}),
                "same twice": await fetch(
                    s, "POST", api, params={"email": address}, json={"email": address}
                ),
                "empty json": await fetch(
                    s,
                    "POST",
                    api,
                    params={"email": address},
                    data=b"",
                    headers={"Content-Type": "application/json"},
                ),
            }

    replies = run(scenario())
    for name, reply in replies.items():
        assert (name, reply.status, reply.json) == (name, 200, GMAIL)


def test_post_bodies_that_cannot_be_read(env: Env) -> None:
    _, secret = env.key("starter")

    async def scenario() -> dict[str, Reply]:
        async with env.serving() as url, aiohttp.ClientSession(headers=bearer(secret)) as s:
            api = f"{url}/api/email"
            as_json = {"Content-Type": "application/json"}
            return {
                "bad json": await fetch(s, "POST", api, data=b'{"email": ', headers=as_json),
                "array": await fetch(s, "POST", api, json=["john.doe@gmail.com"]),
                "null": await fetch(s, "POST", api, json=None, data=b"null", headers=as_json),
                "number": await fetch(s, "POST", api, json={"email": 5}),
                "nested": await fetch(s, "POST", api, json={"email": {"a": 1}}),
                "text": await fetch(
                    s,
                    "POST",
                    api,
                    data=b"email=john.doe@gmail.com",
                    headers={"Content-Type": "text/plain"},
                ),
                "conflict json": await fetch(
                    s, "POST", api, params={"email": "a@gmail.com"}, json={"email": "b@gmail.com"}
                ),
                "conflict form": await fetch(
                    s, "POST", api, params={"email": "a@gmail.com"}, data={"email": "b@gmail.com"}
                ),
                "remaining": await fetch(s, "GET", api),
            }

    replies = run(scenario())
    assert replies["bad json"].json["detail"].startswith("The JSON body cannot be parsed: ")
    problem(replies["bad json"], 400, "invalid_parameter")
    must_be_object = 'The JSON body must be an object, like {"email": "a@b.org"}.'
    problem(replies["array"], 400, "invalid_parameter", must_be_object)
    problem(replies["null"], 400, "invalid_parameter", must_be_object)
    problem(
        replies["number"],
        400,
        "invalid_parameter",
        "email must be a string in the JSON body, got a number.",
    )
    problem(
        replies["nested"],
        400,
        "invalid_parameter",
        "email must be a string in the JSON body, got an object.",
    )
    problem(
        replies["text"],
        400,
        "invalid_parameter",
        "A POST body of this Content-Type cannot be read; send application/json or "
        "application/x-www-form-urlencoded, or put the parameters in the query string.",
    )
    twice = "email is given twice, differently, in the query string and the body. Send it once."
    problem(replies["conflict json"], 400, "conflicting_parameters", twice)
    problem(replies["conflict form"], 400, "conflicting_parameters", twice)
    # None of these counted against the starter plan's 10,000.
    problem(replies["remaining"], 400, "missing_parameter")
    assert replies["remaining"].remaining == 10_000


def test_parameter_rules(env: Env) -> None:
    _, secret = env.key("starter")

    async def scenario() -> dict[str, Reply]:
        async with env.serving() as url, aiohttp.ClientSession(headers=bearer(secret)) as s:
            api = f"{url}/api/email"
            local_512 = "a" * (512 - len("@gmail.com"))
            return {
                "neither": await fetch(s, "GET", api),
                "empty": await fetch(s, "GET", f"{api}?email=&domain="),
                "both": await fetch(s, "GET", api, params={"email": "a@gmail.com", "domain": "x"}),
                "too long": await fetch(s, "GET", api, params={"email": "a" * 513}),
                "too long domain": await fetch(s, "POST", api, json={"domain": "d" * 600}),
                "longest": await fetch(s, "GET", api, params={"email": f"{local_512}@gmail.com"}),
                "repeated": await fetch(s, "GET", f"{api}?email=a@gmail.com&email=b@gmail.com"),
                "repeated form": await fetch(
                    s, "POST", api, data=[("email", "a@gmail.com"), ("email", "b@gmail.com")]
                ),
                "repeated same": await fetch(
                    s, "GET", f"{api}?email=a@gmail.com&email=a@gmail.com"
                ),
                "repeated apart": await fetch(
                    s,
                    "POST",
                    f"{api}?email=a@gmail.com",
                    data=b"email=a@gmail.com",
                    headers={"Content-Type": "application/x-www-form-urlencoded"},
                ),
            }

    replies = run(scenario())
    one_of = "Send exactly one of email (an address) or domain (a domain name)."
    problem(replies["neither"], 400, "missing_parameter", one_of)
    problem(replies["empty"], 400, "missing_parameter", one_of)
    problem(
        replies["both"], 400, "conflicting_parameters", "Send either email or domain, not both."
    )
    problem(
        replies["too long"],
        400,
        "invalid_parameter",
        "email is 513 characters long; the limit is 512.",
    )
    problem(
        replies["too long domain"],
        400,
        "invalid_parameter",
        "domain is 600 characters long; the limit is 512.",
    )
    assert replies["longest"].status == 200
    assert replies["longest"].json["VERDICT"] == "Invalid"  # 512 is accepted, and verified
    twice = "email appears 2 times; send it once."
    problem(replies["repeated"], 400, "conflicting_parameters", twice)
    problem(replies["repeated form"], 400, "conflicting_parameters", twice)
    # Repeated in one place is refused even with the same value (parameter pollution: two
    # readers of one request must never disagree); the same value in the query and the body
    # is one parameter sent twice, and allowed.
    problem(replies["repeated same"], 400, "conflicting_parameters", twice)
    assert replies["repeated apart"].status == 200
    assert replies["repeated apart"].json["EMAIL"] == "a@gmail.com"


# --- authentication -----------------------------------------------------------------------------


def test_keys_by_header_query_form_and_json(env: Env) -> None:
    _, secret = env.key("default")

    async def scenario() -> list[Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email"
            address = {"email": "john.doe@gmail.com"}
            return [
                await fetch(s, "GET", api, params=address, headers=bearer(secret)),
                await fetch(s, "GET", api, params={**address, "apikey": secret}),
                await fetch(s, "POST", api, data={**address, "apikey": secret}),
                await fetch(s, "POST", api, json={**address, "apikey": secret}),
            ]

    replies = run(scenario())
    assert [r.status for r in replies] == [200, 200, 200, 200]
    assert [r.json for r in replies] == [GMAIL] * 4
    # All four counted on the key's monthly quota, none on the anonymous daily one.
    assert [r.headers["X-RateLimit-Limit"] for r in replies] == ["100"] * 4
    assert [r.remaining for r in replies] == [99, 98, 97, 96]
    assert {r.headers["RateLimit-Policy"] for r in replies} == {'"email-month";q=100;w=2678400'}


def test_header_wins_over_apikey(env: Env) -> None:
    _, secret = env.key("default")

    async def scenario() -> tuple[Reply, Reply, Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email"
            good_header = await fetch(
                s,
                "GET",
                api,
                params={"email": "john.doe@gmail.com", "apikey": "lc_bogus"},
                headers=bearer(secret),
            )
            bad_header = await fetch(
                s,
                "GET",
                api,
                params={"email": "john.doe@gmail.com", "apikey": secret},
                headers=bearer("lc_bogus"),
            )
            anonymous = await fetch(s, "GET", api, params={"email": "john.doe@gmail.com"})
            return good_header, bad_header, anonymous

    good_header, bad_header, anonymous = run(scenario())
    assert good_header.status == 200
    assert (good_header.headers["X-RateLimit-Limit"], good_header.remaining) == ("100", 99)
    problem(bad_header, 401, "invalid_api_key")
    # Neither touched the client address's anonymous quota.
    assert (anonymous.status, anonymous.headers["X-RateLimit-Limit"], anonymous.remaining) == (
        200,
        "1",
        0,
    )


def test_rejected_keys_are_401_with_a_bearer_challenge(env: Env) -> None:
    revoked, revoked_secret = env.key("default")
    with env.store() as store:
        store.revoke_key(revoked.key_id)

    async def scenario() -> dict[str, Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email?email=john.doe@gmail.com"
            return {
                "unknown": await fetch(s, "GET", api, headers=bearer("lc_unknown")),
                "unknown apikey": await fetch(s, "GET", f"{api}&apikey=lc_unknown"),
                "revoked": await fetch(s, "GET", api, headers=bearer(revoked_secret)),
                "revoked apikey": await fetch(s, "GET", f"{api}&apikey={revoked_secret}"),
                "basic": await fetch(s, "GET", api, headers={"Authorization": "Basic x"}),
                "bearer nothing": await fetch(s, "GET", api, headers={"Authorization": "Bearer "}),
                "empty apikey": await fetch(s, "GET", f"{api}&apikey="),
                "anonymous": await fetch(s, "GET", api),
            }

    replies = run(scenario())
    unknown = "The API key is not known. Check it, or send no key at all."
    bad_scheme = "The Authorization header must be 'Bearer <API key>'."
    expected = {
        "unknown": unknown,
        "unknown apikey": unknown,
        "revoked": f"The API key {revoked.key_id} has been revoked.",
        "revoked apikey": f"The API key {revoked.key_id} has been revoked.",
        "basic": bad_scheme,
        "bearer nothing": bad_scheme,
        "empty apikey": unknown,
    }
    for name, detail in expected.items():
        reply = replies[name]
        problem(reply, 401, "invalid_api_key", detail)
        assert reply.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"', name
        assert reply.remaining == 1, name  # not counted
    # Seven 401s later the client address still has its one anonymous request.
    assert (replies["anonymous"].status, replies["anonymous"].remaining) == (200, 0)
    assert "WWW-Authenticate" not in replies["anonymous"].headers


def test_400_and_401_do_not_count(env: Env) -> None:
    _, secret = env.key("default")

    async def scenario() -> list[Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email"
            keyed = bearer(secret)
            return [
                await fetch(s, "GET", api, headers=keyed),  # 400 missing
                await fetch(s, "GET", f"{api}?email=a@gmail.com&domain=x", headers=keyed),
                await fetch(s, "GET", api, params={"email": "x" * 600}, headers=keyed),
                await fetch(s, "GET", f"{api}?email=john.doe@gmail.com", headers=keyed),  # 200
                await fetch(s, "GET", api, headers=keyed),  # 400 again
                await fetch(s, "GET", f"{api}?email=j@gmail.com", headers=bearer("lc_no")),
                await fetch(s, "GET", f"{api}?email=j@gmail.com&apikey=lc_no"),
                await fetch(s, "GET", f"{api}?email=john.doe@gmail.com"),  # anonymous 200
            ]

    replies = run(scenario())
    assert [r.status for r in replies] == [400, 400, 400, 200, 400, 401, 401, 200]
    assert [r.headers["X-RateLimit-Limit"] for r in replies] == ["100"] * 5 + ["1"] * 3
    assert [r.remaining for r in replies] == [100, 100, 100, 99, 99, 1, 1, 0]


# --- /healthz -----------------------------------------------------------------------------------


def test_healthz_is_ok_and_not_counted(env: Env) -> None:
    async def scenario() -> list[Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            health = [await fetch(s, "GET", f"{url}/healthz") for _ in range(3)]
            head = await fetch(s, "HEAD", f"{url}/healthz")
            email = await fetch(s, "GET", f"{url}/api/email?email=john.doe@gmail.com")
            return [*health, head, email]

    *health, head, email = run(scenario())
    for reply in health:
        assert (reply.status, reply.json) == (200, {"status": "ok"})
        assert "X-RateLimit-Remaining" not in reply.headers
    assert head.status == 200
    assert (email.status, email.remaining) == (200, 0)  # the day's one request was still there


# --- the access log -----------------------------------------------------------------------------


def test_access_log_never_shows_the_apikey(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    _, secret = env.key("default")
    caplog.set_level(logging.INFO)

    async def scenario() -> list[int]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email"
            return [
                (
                    await fetch(s, "GET", api, params={"email": "a@gmail.com", "apikey": secret})
                ).status,
                (await fetch(s, "GET", api, params={"apikey": secret})).status,
                (await fetch(s, "GET", api, params={"apikey": "lc_SECRETunknown"})).status,
                (await fetch(s, "GET", f"{api}?apikey={secret}&apikey={secret}x")).status,
                (
                    await fetch(s, "POST", api, json={"email": "a@gmail.com", "apikey": secret})
                ).status,
                (await fetch(s, "GET", api, headers=bearer(secret))).status,
            ]

    assert run(scenario()) == [200, 400, 401, 400, 200, 400]  # the server has stopped: all logged
    access = [r for r in caplog.records if r.name == "aiohttp.access"]
    assert len(access) == 6
    for record in caplog.records:
        text = record.getMessage() + repr(record.args) + str(record.exc_text)
        assert secret not in text
        assert "SECRETunknown" not in text
    messages = [r.getMessage() for r in access]
    # The address shows only its domain: a log line never holds a full address.
    assert '127.0.0.1 "GET /api/email?email=***@gmail.com&apikey=***" 200 ' in messages[0]
    assert '127.0.0.1 "GET /api/email?apikey=***" 400 ' in messages[1]
    assert '127.0.0.1 "GET /api/email?apikey=***" 401 ' in messages[2]
    assert '127.0.0.1 "GET /api/email?apikey=***&apikey=***" 400 ' in messages[3]
    assert '127.0.0.1 "POST /api/email" 200 ' in messages[4]


# --- graceful stop ------------------------------------------------------------------------------


def test_request_in_flight_finishes_during_shutdown(env: Env) -> None:
    far = "faraway-isp.com.au"  # a domain this cache has never seen

    async def scenario() -> tuple[bool, Reply]:
        runner, url = await start(env.config(), env.db, env.cache, env.clock)
        env.dns.reset_counts()  # an earlier test's question about it is not this one's
        async with aiohttp.ClientSession() as s:
            request = asyncio.create_task(fetch(s, "GET", f"{url}/api/email?email=someone@{far}"))
            # In flight: the engine has asked about the domain, and its answer is held back.
            while not any(name == far for name, _ in env.dns.queries()):
                await asyncio.sleep(0.01)
            in_flight = not request.done()
            stopping = asyncio.create_task(runner.cleanup())
            await asyncio.sleep(0)  # the stop has begun: the answer comes during it
            env.dns.release(far)
            await stopping
            return in_flight, await request

    env.dns.hold(far)
    try:
        in_flight, reply = run(scenario())
    finally:
        env.dns.release(far)
    assert in_flight
    assert reply.status == 200
    body = reply.json
    assert (body["EMAIL"], body["VERDICT"], body["MX"]) == (
        "someone@faraway-isp.com.au",
        "Valid",
        "mx.faraway-isp.com.au",
    )


def test_a_new_server_answers_on_the_same_files_after_a_stop(env: Env) -> None:
    async def scenario() -> list[int]:
        statuses = []
        for _ in range(2):
            async with (
                serving(env.config(), env.db, env.cache, env.clock) as url,
                aiohttp.ClientSession() as s,
            ):
                statuses.append((await fetch(s, "GET", f"{url}/healthz")).status)
        return statuses

    assert run(scenario()) == [200, 200]


def test_a_batch_leaves_as_soon_as_every_open_connection_waits_on_it(env: Env) -> None:
    """With a long batch_wait, four clients on four connections are still answered at once:
    once all four wait on the engine, no other request can arrive, so waiting is pointless."""
    _, secret = env.key("starter")
    config = env.config(batch_wait=3.0)

    async def scenario() -> tuple[list[int], float]:
        async with env.serving(config) as url:
            sessions = [aiohttp.ClientSession(headers=bearer(secret)) for _ in range(4)]
            try:
                # One warm-up request per session: the domain is cached and the connections
                # are open (the first lone request waits the whole batch_wait).
                await asyncio.gather(
                    *(
                        fetch(s, "GET", f"{url}/api/email?email=w{i}@gmail.com")
                        for i, s in enumerate(sessions)
                    )
                )
                started = asyncio.get_running_loop().time()
                replies = await asyncio.gather(
                    *(
                        fetch(s, "GET", f"{url}/api/email?email=u{i}@gmail.com")
                        for i, s in enumerate(sessions)
                    )
                )
                took = asyncio.get_running_loop().time() - started
            finally:
                for s in sessions:
                    await s.close()
            return [r.status for r in replies], took

    statuses, took = run(scenario())
    assert statuses == [200] * 4
    assert took < 1.5, f"answered after {took:.2f} s: the batch waited for nothing"
