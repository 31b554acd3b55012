"""`clean --verify api` against real HTTP servers on loopback: our own service, and one that
misbehaves on purpose. Call counts are asserted exactly."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pytest
from aiohttp import web

from pipeline.cli import main
from pipeline.core.mailboxes.remote import read_quota
from pipeline.sandbox.files import SANDBOX_SETTINGS
from pipeline.sandbox.loop_thread import LoopThreadServer
from pipeline.service.accounts.store import ServiceStore
from tests.conftest import SAMPLE_CSV

FAST = str(SANDBOX_SETTINGS)
SECRET = "lc_test-secret-key-0123456789"
GOOD = {
    "EMAIL": "x@gmail.com",
    "VERDICT": "Valid",
    "SCORE": 0.95,
    "LOCAL": "x",
    "DOMAIN": "gmail.com",
    "DOMAIN_VERDICT": "Valid",
    "MX": "gmail-smtp-in.l.google.com",
    "HAS_SUSPECTED_BOUNCES": False,
    "LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS": False,
    "HAS_KNOWN_BOUNCES": True,
    "DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS": False,
    "SUGGESTION": "",
}


@dataclass(frozen=True)
class _Running:
    loop: asyncio.AbstractEventLoop
    thread: threading.Thread
    port: int
    runner: web.AppRunner


@dataclass
class Behaviour:
    """What the fake service does; tests change it between runs."""

    mode: str = "ok"  # ok | noheaders | storm | error | flaky | slow | truncated | partial | denied
    quota: int = 1000
    requests: list[tuple[str, str]] = field(default_factory=list)  # (query string, auth header)
    failures_left: int = 0


class FakeApi(LoopThreadServer[_Running]):
    """A loopback /api/email that behaves as told."""

    _thread_name = "fake-api"

    def __init__(self) -> None:
        super().__init__()
        self.behaviour = Behaviour()

    async def _bind(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> _Running:
        app = web.Application()
        app.router.add_get("/api/email", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return _Running(loop, thread, runner.addresses[0][1], runner)

    async def _close(self, running: _Running) -> None:
        await running.runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        b = self.behaviour
        b.requests.append((request.query_string, request.headers.get("Authorization", "")))
        used = len(b.requests)
        headers = {
            "X-RateLimit-Limit": str(b.quota),
            "X-RateLimit-Remaining": str(max(0, b.quota - used)),
            "RateLimit-Policy": f'"email-month";q={b.quota};w=2592000',
            "RateLimit": f'"email-month";r={max(0, b.quota - used)};t=1000',
        }
        body = {**GOOD, "EMAIL": request.query.get("email", "")}
        if b.mode == "noheaders":
            return web.json_response(body)
        if b.mode == "storm":
            return web.json_response({}, status=429, headers={**headers, "Retry-After": "3600"})
        if b.mode == "error" or (b.mode == "flaky" and b.failures_left > 0):
            b.failures_left -= 1
            return web.Response(status=503, text="busy")
        if b.mode == "slow":
            await asyncio.sleep(2)
        if b.mode == "truncated":
            return web.Response(text=json.dumps(body)[:40], content_type="application/json")
        if b.mode == "partial":
            return web.json_response({"EMAIL": body["EMAIL"], "VERDICT": "Valid"}, headers=headers)
        if b.mode == "denied":
            return web.json_response({}, status=401)
        return web.json_response(body, headers=headers)


@pytest.fixture
def api() -> Iterator[FakeApi]:
    with FakeApi() as server:
        yield server


def write_list(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "list.csv"
    path.write_text("email\n" + "\n".join(f"person{i}@gmail.com" for i in range(n)) + "\n")
    return path


def clean_api(
    tmp_path: Path, source: Path, url: str, *extra: str, out: str = "out"
) -> tuple[int, dict[str, object]]:
    config = tmp_path / "api.toml"
    config.write_text("[api]\ntimeout = 0.5\nretries = 2\nbackoff = 0.01\nhorizon = 60\n")
    code = main(
        [
            "clean",
            str(source),
            "-o",
            str(tmp_path / f"{out}.parquet"),
            "--sandbox",
            "--config",
            str(config),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--verify",
            "api",
            "--api-url",
            url,
            "--api-key",
            SECRET,
            "--quiet",
            *extra,
        ]
    )
    summary_path = tmp_path / f"{out}.summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    return code, summary


def url(api: FakeApi) -> str:
    return f"http://127.0.0.1:{api.port}"


def test_answers_are_taken_and_the_key_only_travels_in_the_header(
    api: FakeApi, tmp_path: Path
) -> None:
    code, summary = clean_api(tmp_path, write_list(tmp_path, 20), url(api))
    assert code == 0 and summary["api_requests"] == 20 == len(api.behaviour.requests)
    assert all(auth == f"Bearer {SECRET}" for _, auth in api.behaviour.requests)
    assert all(SECRET not in query for query, _ in api.behaviour.requests)
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert set(out["VERDICT"]) == {"Valid"}
    assert set(out["SCORE"]) == {0.95}  # the remote's score: it weighed the address
    assert out["HAS_KNOWN_BOUNCES"].all()  # the remote's flag is taken
    assert out["REASON"].str.contains("api_verified").all()


def test_a_budget_of_50_sends_at_most_50(api: FakeApi, tmp_path: Path) -> None:
    code, summary = clean_api(tmp_path, write_list(tmp_path, 80), url(api), "--budget", "50")
    assert code == 0 and len(api.behaviour.requests) == 50 == summary["api_requests"]
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out["REASON"].str.contains("not_verified_budget").sum() == 30


def test_two_runs_in_a_month_stay_within_a_100_quota(api: FakeApi, tmp_path: Path) -> None:
    api.behaviour.quota = 100
    source = write_list(tmp_path, 80)
    clean_api(tmp_path, source, url(api))
    (tmp_path / "more.csv").write_text(
        "email\n" + "\n".join(f"other{i}@gmail.com" for i in range(80)) + "\n"
    )
    clean_api(tmp_path, tmp_path / "more.csv", url(api), out="more")
    assert len(api.behaviour.requests) == 100


def test_without_headers_the_local_ledger_keeps_the_quota(api: FakeApi, tmp_path: Path) -> None:
    api.behaviour.mode = "noheaders"
    (tmp_path / "a.csv").write_text(
        "email\n" + "\n".join(f"a{i}@gmail.com" for i in range(70)) + "\n"
    )
    (tmp_path / "b.csv").write_text(
        "email\n" + "\n".join(f"b{i}@gmail.com" for i in range(70)) + "\n"
    )
    config = tmp_path / "quota.toml"
    for name in ("a", "b"):
        config.write_text("[api]\nquota = 100\ntimeout = 0.5\nretries = 0\n")
        code = main(
            [
                "clean",
                str(tmp_path / f"{name}.csv"),
                "-o",
                str(tmp_path / f"{name}.parquet"),
                "--sandbox",
                "--config",
                str(config),
                "--cache-dir",
                str(tmp_path / "cache"),
                "--verify",
                "api",
                "--api-url",
                url(api),
                "--api-key",
                SECRET,
                "--quiet",
            ]
        )
        assert code == 0
    assert len(api.behaviour.requests) == 100


def test_a_429_storm_beyond_the_horizon_stops_cleanly(api: FakeApi, tmp_path: Path) -> None:
    api.behaviour.mode = "storm"
    code, _ = clean_api(tmp_path, write_list(tmp_path, 40), url(api), "--concurrency", "1")
    assert code == 0
    assert len(api.behaviour.requests) == 1  # it stopped at the first 429, as it cannot wait
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out["REASON"].str.contains("not_verified_budget").all()
    assert set(out["VERDICT"]) == {"Valid"}  # the domain-level verdict stands


@pytest.mark.parametrize(
    ("mode", "requests_per_address"),
    [("error", 3), ("truncated", 1), ("partial", 1), ("slow", 3)],
)
def test_bad_answers_are_api_error_rows(
    api: FakeApi, tmp_path: Path, mode: str, requests_per_address: int
) -> None:
    api.behaviour.mode = mode
    code, _ = clean_api(tmp_path, write_list(tmp_path, 3), url(api))
    assert code == 0
    assert len(api.behaviour.requests) == 3 * requests_per_address  # 1 try + 2 retries on 5xx
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert set(out["VERDICT"]) == {"Risky"}
    assert out["REASON"].str.contains("api_error").all()


def test_a_flaky_service_is_retried(api: FakeApi, tmp_path: Path) -> None:
    api.behaviour.mode, api.behaviour.failures_left = "flaky", 2
    code, _ = clean_api(tmp_path, write_list(tmp_path, 1), url(api))
    assert code == 0 and len(api.behaviour.requests) == 3
    assert pl.read_parquet(tmp_path / "out.parquet")["REASON"].str.contains("api_verified").all()


def test_a_refused_key_stops_the_run(
    api: FakeApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.behaviour.mode = "denied"
    code, _ = clean_api(tmp_path, write_list(tmp_path, 5), url(api), "--concurrency", "1")
    assert code == 2
    err = capsys.readouterr().err
    assert "refused the API key" in err and SECRET not in err


def test_answers_are_cached_and_a_rerun_sends_nothing(api: FakeApi, tmp_path: Path) -> None:
    source = write_list(tmp_path, 10)
    _, first = clean_api(tmp_path, source, url(api))
    _, again = clean_api(tmp_path, source, url(api), out="again")
    assert len(api.behaviour.requests) == 10
    assert first["api_requests"] == 10 and first["dns_queries"] > 0  # type: ignore[operator]
    # Domains and answers all cached: no request, and no DNS query (canaries included).
    assert again["api_requests"] == 0 and again["dns_queries"] == 0


def test_the_api_key_is_never_recorded(api: FakeApi, tmp_path: Path) -> None:
    clean_api(tmp_path, write_list(tmp_path, 3), url(api))
    written = [p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("out.")]
    assert len(written) == 4  # output, rejects, summary, report
    assert not any(SECRET.encode() in data for data in written)


def test_against_our_own_service(tmp_path: Path) -> None:
    """The real `listclean serve` (sandbox world) as the remote: quota headers obeyed exactly."""
    from pipeline.sandbox.dns_server import SandboxDNS, load_world
    from pipeline.service.app import Paths, create_app
    from tests.conftest import SAMPLE_WORLD
    from tests.service.conftest import service_config

    class OwnService(FakeApi):
        def __init__(self, dns: str) -> None:
            super().__init__()
            self._dns = dns

        async def _bind(
            self, loop: asyncio.AbstractEventLoop, thread: threading.Thread
        ) -> _Running:
            app = create_app(
                service_config(self._dns),
                Paths(tmp_path / "svc.sqlite", tmp_path / "svc-domains.sqlite"),
            )
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            return _Running(loop, thread, runner.addresses[0][1], runner)

    with ServiceStore(tmp_path / "svc.sqlite") as store:
        _, secret = store.create_key("default")  # 100 requests a month
    with SandboxDNS(load_world(SAMPLE_WORLD)) as dns, OwnService(dns.address) as service:
        base = [
            "--sandbox",
            "--config",
            FAST,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--verify",
            "api",
            "--api-url",
            f"http://127.0.0.1:{service.port}",
            "--api-key",
            secret,
            "--quiet",
        ]
        assert main(["clean", str(SAMPLE_CSV), "-o", str(tmp_path / "one.parquet"), *base]) == 0
        assert main(["clean", str(SAMPLE_CSV), "-o", str(tmp_path / "two.parquet"), *base]) == 0
        with ServiceStore(tmp_path / "svc.sqlite") as store:
            key = store.find_key(secret)
            assert key is not None
            import time as _time

            from pipeline.core.clock import Window, window_bounds

            start, _ = window_bounds(Window.MONTH, _time.time())
            assert store.used(f"key:{key.key_id}", "email-month", start) == 100
    one = json.loads((tmp_path / "one.summary.json").read_text())
    two = json.loads((tmp_path / "two.summary.json").read_text())
    assert one["api_requests"] == 100 and two["api_requests"] == 0


def test_read_quota_understands_both_header_families() -> None:
    now = 1_800_000_000.0
    view = read_quota(
        {
            "RateLimit": '"email-month";r=7;t=120',
            "RateLimit-Policy": '"email-month";q=100;w=2592000',
        },
        now,
    )
    assert (view.limit, view.remaining, view.reset_in) == (100, 7, 120.0)
    legacy = read_quota(
        {
            "X-RateLimit-Limit": "50",
            "X-RateLimit-Remaining": "3",
            "X-RateLimit-Reset": str(int(now) + 60),
        },
        now,
    )
    assert (legacy.limit, legacy.remaining, legacy.reset_in) == (50, 3, 60.0)
    both = read_quota({"X-RateLimit-Remaining": "9", "RateLimit": '"a";r=4;t=5, "b";r=2;t=9'}, now)
    assert both.remaining == 2  # the most constraining policy wins
    assert read_quota({"Retry-After": "30"}, now).retry_after == 30.0
    assert read_quota({}, now) == read_quota({"X-RateLimit-Remaining": "soon"}, now)
