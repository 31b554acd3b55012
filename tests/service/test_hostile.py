"""Hand-made hostile requests: each is answered in the one problem shape, never with a 5xx.

Every case is written as raw bytes (many are bytes aiohttp's own client refuses to send) to a
real server on 127.0.0.1. For each answer the table checks the status and ``code``, the problem
document's shape, the rate-limit headers, and that nothing secret (an API key, a search term, a
local part) comes back. Then the log is checked: nothing secret in any line, and one line per
request, whatever the request held.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

import pytest

from pipeline.service.settings import PlanConfig
from tests.service.conftest import PROBLEM_KEYS, RATE_HEADERS, Env, run
from tests.service.rawhttp import RawReply, request_bytes, send_raw

# Words that must never come back in an answer or show up in a log line.
SECRET = "lc_SECRETnotAkeyButLooksLikeOne0000000000000"
LOCAL = "hostile.person"
TERM = "Secretperson"
JSON_TYPE = ("Content-Type", "application/json")
FORM_TYPE = ("Content-Type", "application/x-www-form-urlencoded")


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes
    status: int
    code: str | None  # None: a 200 answer
    counted: bool = True  # the answer carries the rate-limit headers


def get(target: bytes | str, *headers: tuple[bytes | str, bytes | str]) -> bytes:
    return request_bytes("GET", target, list(headers))


def post(
    target: str, body: bytes, *headers: tuple[bytes | str, bytes | str], length: bool = True
) -> bytes:
    return request_bytes("POST", target, list(headers), body, content_length=length)


def json_body(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


DEEP = 100_000
BAD = "invalid_parameter"


def cases(key: str) -> list[Case]:
    auth = ("Authorization", f"Bearer {key}")
    address = f"{LOCAL}@gmail.com"
    return [
        # --- text that is not text, in every encoding of a parameter
        Case(
            "percent-encoded invalid UTF-8",
            get("/api/email?email=%ff%fe%40gmail.com", auth),
            400,
            BAD,
        ),
        Case(
            "percent-encoded surrogate (CESU-8)",
            get(f"/api/email?email=%ed%a0%80{address}", auth),
            400,
            BAD,
        ),
        Case(
            "raw byte 0xff in the query",
            get(b"/api/email?email=\xff" + address.encode(), auth),
            400,
            BAD,
        ),
        Case(
            "invalid UTF-8 in a parameter name",
            get(f"/api/email?%ff=1&email={address}", auth),
            400,
            BAD,
        ),
        Case(
            "invalid UTF-8 search term",
            get("/api/find?search_term=%ff&find_Contact=true", auth),
            400,
            BAD,
        ),
        Case(
            "form: percent-encoded invalid UTF-8",
            post("/api/email", b"email=%ff%fe%40gmail.com", auth, FORM_TYPE),
            400,
            BAD,
        ),
        Case(
            "form: raw invalid UTF-8",
            post("/api/email", b"email=\xff" + address.encode(), auth, FORM_TYPE),
            400,
            BAD,
        ),
        Case(
            "json: lone high surrogate",
            post("/api/email", json_body('{"email":"\\ud800@gmail.com"}'), auth, JSON_TYPE),
            400,
            BAD,
        ),
        Case(
            "json: lone low surrogate",
            post("/api/email", json_body('{"email":"\\udfff@gmail.com"}'), auth, JSON_TYPE),
            400,
            BAD,
        ),
        Case(
            "json: surrogate in the domain",
            post("/api/email", json_body('{"email":"a@\\ud800.com"}'), auth, JSON_TYPE),
            400,
            BAD,
        ),
        Case(
            "json: surrogate in a name",
            post(
                "/api/email", json_body(f'{{"\\ud800":"x","email":"{address}"}}'), auth, JSON_TYPE
            ),
            400,
            BAD,
        ),
        Case(
            "json: surrogate in apikey",
            post("/api/email", json_body(f'{{"email":"{address}","apikey":"\\ud800"}}'), JSON_TYPE),
            400,
            BAD,
        ),
        Case(
            "json: raw invalid UTF-8",
            post("/api/email", b'{"email":"\xff' + address.encode() + b'"}', auth, JSON_TYPE),
            400,
            BAD,
        ),
        Case(
            "json: unknown charset",
            post(
                "/api/email",
                json.dumps({"email": address}).encode(),
                auth,
                ("Content-Type", "application/json; charset=nope"),
            ),
            200,
            None,
        ),
        # --- absurd nesting and sizes
        Case(
            "json: 100,000 nested arrays",
            post("/api/email", b'{"email":' + b"[" * DEEP + b"]" * DEEP + b"}", auth, JSON_TYPE),
            400,
            BAD,
        ),
        Case(
            "json: 100,000 nested objects",
            post("/api/email", b'{"a":' * DEEP + b"1" + b"}" * DEEP, auth, JSON_TYPE),
            400,
            BAD,
        ),
        Case(
            "json: a 5,000-digit number",
            post("/api/email", b'{"email":' + b"7" * 5000 + b"}", auth, JSON_TYPE),
            400,
            BAD,
        ),
        Case(
            "1,000 parameters",
            get(
                "/api/email?" + "&".join(f"p{i}=1" for i in range(1000)) + f"&email={address}", auth
            ),
            400,
            BAD,
        ),
        # --- repeated parameters and duplicate keys
        Case(
            "json: duplicate key",
            post(
                "/api/email",
                f'{{"email":"{address}","email":"b@gmail.com"}}'.encode(),
                auth,
                JSON_TYPE,
            ),
            400,
            "conflicting_parameters",
        ),
        Case(
            "json: duplicate key, same value",
            post(
                "/api/email",
                f'{{"email":"{address}","email":"{address}"}}'.encode(),
                auth,
                JSON_TYPE,
            ),
            400,
            "conflicting_parameters",
        ),
        Case(
            "json: 50,000 names, the last one twice",
            post(
                "/api/email",
                ("{" + "".join(f'"k{i}":"",' for i in range(50_000)) + '"k0":""}').encode(),
                auth,
                JSON_TYPE,
            ),
            400,
            "conflicting_parameters",
        ),
        Case(
            "query: repeated, same value",
            get(f"/api/email?email={address}&email={address}", auth),
            400,
            "conflicting_parameters",
        ),
        Case(
            "form: repeated, same value",
            post("/api/email", f"email={address}&email={address}".encode(), auth, FORM_TYPE),
            400,
            "conflicting_parameters",
        ),
        # --- keys that are not text
        Case(
            "bearer: raw bytes",
            get(f"/api/email?email={address}", ("Authorization", b"Bearer \xff\xfe")),
            401,
            "invalid_api_key",
        ),
        Case(
            "bearer: key then a raw byte",
            get(f"/api/email?email={address}", ("Authorization", SECRET.encode() + b"\x80")),
            401,
            "invalid_api_key",
        ),
        Case(
            "bearer: bad token characters",
            get(f"/api/email?email={address}", ("Authorization", f"Bearer {SECRET}<>")),
            401,
            "invalid_api_key",
        ),
        Case(
            "authorization: raw bytes only",
            get(f"/api/email?email={address}", ("Authorization", b"\xff")),
            401,
            "invalid_api_key",
        ),
        Case(
            "apikey: over-long",
            get(f"/api/email?email={address}&apikey={'k' * 400}"),
            401,
            "invalid_api_key",
        ),
        # --- what aiohttp's parser refuses: our shape, never the request echoed
        Case(
            "request line over 8 KiB",
            get(f"/api/email?email={address}&x={'a' * 9000}&apikey={SECRET}"),
            400,
            BAD,
            counted=True,
        ),
        Case(
            "header over 8 KiB",
            get(
                f"/api/find?search_term={TERM}&find_Contact=true",
                ("Authorization", f"Bearer {SECRET}"),
                ("X-Pad", "a" * 9000),
            ),
            400,
            BAD,
        ),
        Case(
            "control character in a header",
            get(
                f"/api/email?email={address}",
                ("Authorization", f"Bearer {SECRET}"),
                ("X-Note", b"a\x01b"),
            ),
            400,
            BAD,
        ),
        Case(
            "NUL in the target",
            get(b"/api/email?email=a\x00b@gmail.com&apikey=" + SECRET.encode()),
            400,
            BAD,
        ),
        Case(
            "space in a header name",
            get(f"/api/email?email={address}", ("Bad Header", SECRET)),
            400,
            BAD,
        ),
        Case(
            "200 headers",
            get(f"/api/email?email={address}", *((f"X-H{i}", SECRET) for i in range(200))),
            400,
            BAD,
        ),
        Case(
            "bad method",
            request_bytes("GE(T", f"/api/email?email={address}&apikey={SECRET}"),
            400,
            BAD,
        ),
        Case(
            "content-length and chunked",
            post(
                "/api/email",
                b"0\r\n\r\n",
                ("Transfer-Encoding", "chunked"),
                ("Content-Length", "5"),
            ),
            400,
            BAD,
        ),
        Case(
            "bad chunk size",
            post(
                f"/api/email?apikey={SECRET}",
                b"zz\r\nemail=x\r\n0\r\n\r\n",
                FORM_TYPE,
                ("Transfer-Encoding", "chunked"),
                length=False,
            ),
            400,
            BAD,
        ),
        Case(
            "content-length not a number",
            post("/api/email", b"", ("Content-Length", f"12{SECRET}"), length=False),
            400,
            BAD,
        ),
        # --- values that try to forge log lines
        Case(
            "encoded CRLF in a value",
            get("/api/email?email=x%0d%0a127.0.0.1%20%22GET%20/forged%22%20200%20@gmail.com", auth),
            200,
            None,
        ),
        Case(
            "encoded LF in the path",
            get("/api/%0a127.0.0.1%20forged"),
            404,
            "not_found",
            counted=False,
        ),
    ]


def problem_mismatches(case: Case, reply: RawReply) -> list[str]:
    found: list[str] = []
    if reply.status != case.status:
        found.append(f"status {reply.status}, want {case.status}: {reply.body[:200]!r}")
    if case.code is not None:
        if reply.content_type != "application/problem+json":
            return [*found, f"content type {reply.content_type!r}"]
        body = reply.json
        if set(body) != PROBLEM_KEYS:
            found.append(f"problem keys {sorted(body)}")
        elif (body["code"], body["status"], body["type"]) != (
            case.code,
            reply.status,
            "/problems/" + case.code,
        ):
            found.append(f"problem {body}")
    missing = [h for h in RATE_HEADERS if h not in reply.headers]
    if case.counted and missing:
        found.append(f"missing headers {missing}")
    if case.code == "invalid_api_key" and "WWW-Authenticate" not in reply.headers:
        found.append("no WWW-Authenticate")
    return found


def echoed(reply: RawReply) -> list[str]:
    text = reply.body.decode("utf-8", "replace") + str(list(reply.headers.items()))
    return [word for word in (SECRET, TERM, LOCAL, "lc_", "\ufffd") if word in text]


def test_every_hostile_request_gets_one_problem_shape(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    _, key = env.key("big")
    config = env.config(plans={"big": PlanConfig(email_per_month=10_000, find_per_month=10_000)})
    table = cases(key)

    async def scenario() -> list[RawReply]:
        async with env.serving(config) as url:
            return [await send_raw(url, case.raw) for case in table]

    replies = run(scenario())
    wrong = {}
    for case, reply in zip(table, replies, strict=True):
        found = problem_mismatches(case, reply)
        if case.code is not None:  # an error answer says what was wrong, never what was sent
            found += [f"echoes {w!r}" for w in echoed(reply)]
        if found:
            wrong[case.name] = found
    assert not wrong, json.dumps(wrong, indent=1)

    lines = [r for r in caplog.records if r.name.startswith(("aiohttp", "listclean"))]
    access = [r for r in lines if r.name == "aiohttp.access"]
    assert len(access) == len(table)  # one line per request, the unreadable ones included
    for record in lines:
        text = record.getMessage()
        assert "\n" not in text and "\r" not in text, text
        assert record.exc_info is None and record.exc_text is None, text
        for word in (SECRET, key, TERM, LOCAL):
            assert word not in text, (word, text)
