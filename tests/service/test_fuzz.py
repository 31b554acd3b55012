"""Fuzzing the live service: requests generated from its own OpenAPI document, then mangled.

Hypothesis builds requests for each documented operation from the served ``/openapi.json``:
the documented parameter names (and unknown ones), values of any text, any bytes
percent-encoded, lone-surrogate JSON escapes, repeated names, keys good, made up and
malformed, in the query string, a form body or a JSON body, and sometimes a broken body. Each
is sent as raw bytes to the real server on 127.0.0.1, which runs in a thread of its own.

Whatever was sent: never a 5xx; an error is the one problem shape with a ``code`` the
document lists for its status; the rate-limit headers are there; the key never comes back;
and every log line is one line without the key.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.service.settings import PlanConfig
from tests.service.conftest import PROBLEM_KEYS, RATE_HEADERS, Env, start
from tests.service.rawhttp import RawReply, request_bytes, send_raw

SECRET_MARK = "FUZZSECRET"


class LiveServer:
    """The service on 127.0.0.1 in a thread with its own event loop, for a synchronous test."""

    def __init__(self, env: Env) -> None:
        self._env = env
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self.url = ""

    def __enter__(self) -> LiveServer:
        self._thread.start()
        config = self._env.config(plans={"fuzz": PlanConfig(10**9, 10**9)})
        started = self._call(start(config, self._env.db, self._env.cache, self._env.clock))
        self._runner, self.url = started
        return self

    def __exit__(self, *exc: object) -> None:
        self._call(self._runner.cleanup())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def send(self, raw: bytes) -> RawReply:
        return self._call(send_raw(self.url, raw))

    def _call(self, work: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(30)


@pytest.fixture
def live(env: Env) -> Iterator[tuple[LiveServer, dict[str, Any], str]]:
    _, secret = env.key("fuzz")
    with LiveServer(env) as server:
        reply = server.send(request_bytes("GET", "/openapi.json"))
        yield server, reply.json, secret


# --- what a request is made of ----------------------------------------------------------------

texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=600),
    st.sampled_from(["a@gmail.com", "gmail.com", "true", "Jane Roe", "+1 614 555 0177", ""]),
)
raw_bytes = st.binary(max_size=40)


@st.composite
def parameters(draw: st.DrawFn, names: list[str]) -> list[tuple[str, str | bytes]]:
    """Pairs: documented names (sometimes twice, sometimes cased wrong) and unknown ones, with
    text values or raw bytes (sent percent-encoded, so any byte can be tried)."""
    name = st.one_of(
        st.sampled_from(names),
        st.sampled_from([n.upper() for n in names]),
        st.text(max_size=10),
    )
    value: st.SearchStrategy[str | bytes] = st.one_of(texts, raw_bytes)
    return draw(st.lists(st.tuples(name, value), max_size=6))


def urlencoded(pairs: list[tuple[str, str | bytes]]) -> bytes:
    def quote(part: str | bytes) -> str:
        return urllib.parse.quote_from_bytes(
            part if isinstance(part, bytes) else part.encode("utf-8", "surrogatepass"), safe=""
        )

    return "&".join(f"{quote(n)}={quote(v)}" for n, v in pairs).encode("ascii")


def json_object(pairs: list[tuple[str, str | bytes]], surrogates: bool) -> bytes:
    """A JSON object of the pairs (duplicate names kept as written); bytes become numbers, and
    with *surrogates* a value gets a lone ``\\ud800`` escape."""
    members = []
    for name, value in pairs:
        text = json.dumps(value) if isinstance(value, str) else str(len(value))
        if surrogates and isinstance(value, str):
            text = text[:-1] + '\\ud800"'
        members.append(f"{json.dumps(name)}:{text}")
    return ("{" + ",".join(members) + "}").encode("utf-8", "surrogatepass")


@st.composite
def requests(draw: st.DrawFn, document: dict[str, Any], secret: str) -> bytes:
    path = draw(st.sampled_from(["/api/email", "/api/find"]))
    operation = document["paths"][path]["get"]
    names = sorted(operation["parameters"][0]["schema"]["properties"])
    method = draw(st.sampled_from(["GET", "POST", "POST", "PUT"]))
    query = draw(parameters(names))
    headers: list[tuple[str, str | bytes]] = []
    key = draw(
        st.sampled_from([None, secret, f"lc_{SECRET_MARK}made_up", "", f"{secret}\x7f", "Basic x"])
    )
    if key is not None:
        headers.append(("Authorization", key if key.startswith("Basic") else f"Bearer {key}"))
    body = b""
    if method == "POST":
        kind = draw(st.sampled_from(["form", "json", "json-bad", "none", "text"]))
        pairs = draw(parameters(names))
        if kind == "form":
            body, ctype = urlencoded(pairs), "application/x-www-form-urlencoded"
        elif kind.startswith("json"):
            body = json_object(pairs, surrogates=kind == "json-bad")
            ctype = "application/json"
        else:
            body, ctype = draw(raw_bytes), "text/plain"
        if kind != "none":
            headers.append(("Content-Type", ctype))
    target = path + (f"?{urlencoded(query).decode()}" if query else "")
    return request_bytes(method, target, [(n, v) for n, v in headers], body)


# --- the checks ---------------------------------------------------------------------------------


def documented_codes(document: dict[str, Any], path: str, status: int) -> list[str]:
    responses = document["paths"][path]["get"]["responses"]
    schema = responses[str(status)]["content"]["application/problem+json"]["schema"]
    return list(schema["allOf"][1]["properties"]["code"]["enum"])


def check(document: dict[str, Any], raw: bytes, reply: RawReply, secret: str) -> None:
    path = raw.split(b" ")[1].split(b"?")[0].decode()
    assert reply.status < 500, (raw[:300], reply.body)
    assert all(h in reply.headers for h in RATE_HEADERS), (raw[:300], reply.headers)
    text = reply.body.decode("utf-8", "replace")
    if reply.status != 200:
        assert reply.content_type == "application/problem+json", (raw[:300], reply.body)
        body = reply.json
        assert set(body) == PROBLEM_KEYS and body["status"] == reply.status
        assert body["code"] in documented_codes(document, path, reply.status), body
        assert secret not in text and SECRET_MARK not in text, text
    else:
        assert reply.content_type == "application/json"


@settings(
    max_examples=250,
    deadline=None,
    derandomize=True,  # the same requests every run: a failure can be reproduced
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_generated_requests_get_documented_answers(
    live: tuple[LiveServer, dict[str, Any], str],
    caplog: pytest.LogCaptureFixture,
    data: st.DataObject,
) -> None:
    server, document, secret = live
    caplog.set_level(logging.INFO)
    raw = data.draw(requests(document, secret))
    check(document, raw, server.send(raw), secret)
    for record in caplog.records:
        line = record.getMessage()
        assert "\n" not in line and secret not in line and SECRET_MARK not in line, line
        assert record.exc_info is None, line
    caplog.clear()
