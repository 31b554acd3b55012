"""Slow and broken clients: cut off in time, capped per client address, and logged as counts.

Every scenario runs the real service on 127.0.0.1; a second client address is another
loopback address (127.0.0.2), which the test binds its sockets to. Every wait is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from pathlib import Path

import aiohttp
import pytest

from pipeline.core.config import HttpConfig
from pipeline.service.connections.admission import ConnectionLimits
from tests.service.conftest import NOON, PROBLEM_KEYS, RATE_HEADERS, Env, fetch, run
from tests.service.instances import instances
from tests.service.rawhttp import HEAD, RawReply, answer, closed, connect, request_bytes, slow

OTHER = "127.0.0.2"  # another client address on the loopback
PROXY = "127.0.0.3"


def assert_problem(reply: RawReply, status: int, code: str) -> None:
    assert reply.status == status, reply
    assert reply.content_type == "application/problem+json"
    assert set(reply.json) == PROBLEM_KEYS
    assert reply.json["code"] == code
    assert reply.headers["Connection"] == "close"


async def send_whole(url: str, source: str = "127.0.0.1") -> int:
    conn = await connect(url, source)
    try:
        conn[1].write(request_bytes("GET", "/healthz"))
        return (await answer(conn)).status
    finally:
        conn[1].close()


def test_a_request_whose_headers_never_end_is_cut_off(env: Env) -> None:
    async def scenario() -> None:
        async with env.serving(env.config(header_timeout=0.5)) as url:
            async with slow(url, 1) as [conn]:
                started = asyncio.get_running_loop().time()
                reply = await answer(conn)
                waited = asyncio.get_running_loop().time() - started
                assert_problem(reply, 408, "request_timeout")
                assert all(h in reply.headers for h in RATE_HEADERS)
                assert await closed(conn)
            assert 0.3 < waited < 8
            # A connection that sends nothing at all is cut off too.
            conn = await connect(url)
            assert_problem(await answer(conn), 408, "request_timeout")
            conn[1].close()

    run(scenario())


def test_a_body_that_never_ends_is_cut_off(env: Env) -> None:
    async def scenario() -> None:
        async with env.serving(env.config(body_timeout=0.5)) as url:
            conn = await connect(url)
            head = request_bytes(
                "POST", "/api/email", [("Content-Type", "application/json")], b"{}"
            )
            conn[1].write(head.replace(b"Content-Length: 2", b"Content-Length: 100")[:-1])
            reply = await answer(conn)
            assert_problem(reply, 408, "request_timeout")
            assert all(h in reply.headers for h in RATE_HEADERS)
            assert await closed(conn)
            conn[1].close()

    run(scenario())


def test_over_the_per_client_cap_a_connection_is_answered_503(env: Env) -> None:
    config = env.config(header_timeout=30, max_unfinished_per_client=4)

    async def scenario() -> None:
        async with env.serving(config) as url:
            async with slow(url, 4):
                conn = await connect(url)
                reply = await answer(conn)
                conn[1].close()
                assert_problem(reply, 503, "too_many_connections")
                assert reply.headers["Retry-After"] == "30"
                assert all(h in reply.headers for h in RATE_HEADERS)
                # Another client address is served meanwhile.
                assert await send_whole(url, OTHER) == 200
            # The slow ones gone, the first address is served again.
            for _ in range(50):
                status = await send_whole(url)
                if status == 200:
                    break
                await asyncio.sleep(0.1)  # the server has yet to see the slow ones close
            assert status == 200

    run(scenario())


def test_a_trusted_proxy_counts_only_toward_the_total(env: Env) -> None:
    config = env.config(
        header_timeout=30,
        max_unfinished_per_client=2,
        max_unfinished_total=6,
        trusted_proxies=[PROXY],
    )

    async def scenario() -> None:
        async with env.serving(config) as url, slow(url, 4, PROXY), slow(url, 2):
            conn = await connect(url, OTHER)
            reply = await answer(conn)
            conn[1].close()
            assert_problem(reply, 503, "too_many_connections")
            assert "total" in reply.json["detail"]

    run(scenario())


def test_complete_keep_alive_connections_are_untouched(env: Env) -> None:
    """300 kept-alive connections of one client, each with a request done: a new connection
    of the same client is served, and each of the 300 still serves another request."""

    async def scenario() -> None:
        async with env.serving(env.config(header_timeout=2)) as url:
            conns = [await connect(url) for _ in range(300)]
            try:
                again = request_bytes("GET", "/healthz").replace(b"close", b"keep-alive")
                for _, writer in conns:
                    writer.write(again)
                assert {(await answer(c)).status for c in conns} == {200}
                await asyncio.sleep(2.5)  # past the header timeout: idle is not slow
                assert await send_whole(url) == 200
                for _, writer in conns:
                    writer.write(again)
                assert {(await answer(c)).status for c in conns} == {200}
            finally:
                for _, writer in conns:
                    writer.close()

    run(scenario())


def test_a_flood_is_one_counted_log_line(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    config = env.config(header_timeout=30, max_unfinished_per_client=2, flood_log_interval=0.3)

    async def scenario() -> list[int]:
        async with env.serving(config) as url, slow(url, 2):
            conns = [await connect(url) for _ in range(50)]
            statuses = [(await answer(c)).status for c in conns]
            for _, writer in conns:
                writer.close()
            await asyncio.sleep(0.6)  # one interval and more
            return statuses

    assert run(scenario()) == [503] * 50
    lines = [r for r in caplog.records if r.name.startswith(("aiohttp", "listclean", "asyncio"))]
    assert all(r.exc_info is None for r in lines)
    flood = [r.getMessage() for r in lines if "refused" in r.getMessage()]
    assert len(flood) == 1, flood
    assert "refused 50 connections with 503 (50 over the per-client cap)" in flood[0]
    assert "the busiest 127.0.0.1 (50)" in flood[0]


def test_a_burst_from_one_address_never_sees_503(env: Env) -> None:
    _, secret = env.key("scale")

    async def scenario() -> list[int]:
        async with env.serving() as url:
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as s:
                replies = await asyncio.gather(
                    *(
                        fetch(
                            s,
                            "GET",
                            f"{url}/api/email?email=b{i}@gmail.com",
                            headers={"Authorization": f"Bearer {secret}"},
                        )
                        for i in range(300)
                    )
                )
        return [r.status for r in replies]

    assert set(run(scenario())) == {200}


def test_a_client_that_leaves_mid_body_is_no_server_error(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)

    async def scenario() -> None:
        async with env.serving() as url:
            conn = await connect(url)
            head = request_bytes("POST", "/api/email", [("Content-Type", "application/json")])
            conn[1].write(head.replace(b"\r\n\r\n", b"\r\nContent-Length: 100\r\n\r\n{"))
            await conn[1].drain()
            await asyncio.sleep(0.2)  # the handler is reading the body
            conn[1].close()
            for _ in range(100):  # until the access log has the request
                if any(r.name == "aiohttp.access" for r in caplog.records):
                    break
                await asyncio.sleep(0.05)

    run(scenario())
    access = [r.getMessage() for r in caplog.records if r.name == "aiohttp.access"]
    assert len(access) == 1
    assert '"POST /api/email" 499' in access[0]
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


@pytest.mark.parametrize(
    ("files", "ceiling", "total", "per_client"),
    [(1024, 784, 588, 441), (256, 16, 12, 9), (20_000, 19_760, 4096, 512)],
)
def test_the_caps_stay_below_the_open_file_limit(
    files: int, ceiling: int, total: int, per_client: int
) -> None:
    """With 80 files in use at start: what one accept() burst (the backlog) and a margin
    need stays free, and one client never holds more than three quarters of the total."""
    limits = ConnectionLimits.from_settings(HttpConfig(), files, in_use=80)
    assert (limits.open_ceiling, limits.total, limits.per_client) == (ceiling, total, per_client)


def test_a_flood_under_a_low_open_file_limit_leaves_others_served(tmp_path: Path) -> None:
    """One instance under a 1,024 open-file limit; one client opens 1,100 connections that never
    finish a request: another client is still served, and the log holds no traceback."""

    async def flood(url: str) -> list[int]:
        conns = []
        for _ in range(1100):
            with contextlib.suppress(ConnectionError, OSError):
                conn = await connect(url)
                conn[1].write(HEAD)
                conns.append(conn)
        try:
            return [await send_whole(url, OTHER) for _ in range(3)]
        finally:
            for _, writer in conns:
                writer.close()

    with instances(tmp_path / "service.sqlite", tmp_path, NOON, 1, open_files=1024) as group:
        instance = group.running[0]
        assert run(flood(instance.url)) == [200, 200, 200]
    log = instance.log.read_text()
    assert "Too many open files" not in log
    assert "Traceback" not in log
    assert "refused" in log
