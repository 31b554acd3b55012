"""A job through each of its states, and what each state lets a caller do.

A job is kept running by a domain whose DNS answers the test holds back (SandboxDNS.hold): it
stays in its domain stage while the test sees it running, queues another behind it and cancels
both, however busy the machine."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from pipeline.core.config import DnsConfig, VerifyConfig
from pipeline.sandbox.dns_server import SandboxDNS, load_world, world_from_dict
from pipeline.sandbox.files import SANDBOX_WORLD
from pipeline.sandbox.smtp_server import SandboxSMTP
from pipeline.service.app import Paths, create_app
from pipeline.service.settings import ServiceConfig
from tests.service.conftest import Env, fetch, run
from tests.service.jobs.conftest import (
    HELD_WAIT,
    SAMPLE_UNITS,
    Live,
    bearer,
    csv_rows,
    download,
    form,
    held,
    held_list,
    held_world,
    post_job,
    session,
    status,
    wait_for,
    with_jobs,
)


@pytest.fixture(scope="module")
def held_dns() -> Iterator[SandboxDNS]:
    with SandboxDNS(world_from_dict(held_world())) as server:
        yield server


def held_config(env: Env, dns: SandboxDNS, tmp: Path, **jobs: Any) -> ServiceConfig:
    config = env.config()
    wait = DnsConfig(nameservers=(dns.address,), timeout=HELD_WAIT, attempts=1)
    return with_jobs(replace(config, engine=replace(config.engine, dns=wait)), tmp, **jobs)


@pytest.fixture(scope="module")
def live(held_dns: SandboxDNS, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One service with the held world for the module's tests, running one job at a time."""
    root = tmp_path_factory.mktemp("live")
    env = Env(held_dns, root)
    with Live(env, held_config(env, held_dns, root, at_once=1)) as running:
        yield running


def test_queued_running_cancelled_and_removed(live: Live, tmp_path: Path) -> None:
    secret, url = live.key(), live.url
    keyed = bearer(secret)
    jobs = Path(live.config.jobs.storage)

    async def scenario() -> dict[str, Any]:
        async with session() as s:
            first = (await post_job(s, url, secret, form(held_list(tmp_path)))).json["id"]
            running = await wait_for(s, url, secret, first, ("running",))
            second = (await post_job(s, url, secret, form())).json["id"]
            seen: dict[str, Any] = {"running": running}
            seen["queued"] = await status(s, url, secret, second)
            seen["queued_files"] = await fetch(
                s, "GET", f"{url}/api/jobs/{second}/files", headers=keyed
            )
            seen["cancel_queued"] = await fetch(
                s, "DELETE", f"{url}/api/jobs/{second}", headers=keyed
            )
            await wait_for(s, url, secret, first, ("running",))
            seen["counting"] = await _counted(s, url, secret, first)
            seen["cancel_running"] = await fetch(
                s, "DELETE", f"{url}/api/jobs/{first}", headers=keyed
            )
            seen["cancelled"] = await wait_for(s, url, secret, first, ("cancelled",))
            seen["result"] = await fetch(s, "GET", f"{url}/api/jobs/{first}/result", headers=keyed)
            seen["email"] = await fetch(
                s, "GET", f"{url}/api/email?email=a@gmail.com", headers=keyed
            )
            seen["remove"] = await fetch(s, "DELETE", f"{url}/api/jobs/{first}", headers=keyed)
            seen["gone"] = await fetch(s, "GET", f"{url}/api/jobs/{first}", headers=keyed)
            seen["second_gone"] = await fetch(
                s, "DELETE", f"{url}/api/jobs/{second}", headers=keyed
            )
            return seen | {"first": first, "second": second}

    with held(live.env.dns):
        seen = run(scenario())
    assert seen["running"]["state"] == "running"
    assert seen["queued"]["state"] == "queued" and seen["queued"]["started_at"] is None
    assert (seen["queued_files"].status, seen["queued_files"].json["code"]) == (409, "job_not_done")
    cancelled_queued = seen["cancel_queued"]
    assert cancelled_queued.status == 202 and cancelled_queued.json["state"] == "cancelled"
    counting = seen["counting"]
    assert counting["rows_read"] == 298 and counting["units"]["needed"] == SAMPLE_UNITS + 1
    assert counting["units"]["reserved"] == SAMPLE_UNITS + 1  # reserved before the checks
    assert [s["name"] for s in counting["stages"]][:2] == ["read", "domains"]
    assert seen["cancel_running"].status == 202
    assert seen["cancel_running"].json["cancel_requested"] is True
    cancelled = seen["cancelled"]
    assert cancelled["units"] == {
        "needed": SAMPLE_UNITS + 1,
        "reserved": SAMPLE_UNITS + 1,
        "charged": 0,
        "returned": SAMPLE_UNITS + 1,
    }
    assert (seen["result"].status, seen["result"].json["code"]) == (409, "job_not_done")
    assert seen["email"].remaining == 10_000 - 1  # every unit of the job came back
    assert seen["remove"].status == 204
    assert (seen["gone"].status, seen["gone"].json["code"]) == (404, "not_found")
    assert seen["second_gone"].status == 204
    assert not (jobs / seen["first"]).exists()
    assert not (jobs / seen["second"]).exists()


async def _counted(s: aiohttp.ClientSession, url: str, secret: str, job: str) -> dict[str, Any]:
    """The running job's status once its list is read and its units reserved."""
    while True:
        found = await status(s, url, secret, job)
        if found["units"]["reserved"]:
            return found


def test_a_job_stopped_with_the_service_runs_again_on_its_units(
    env: Env, held_dns: SandboxDNS, tmp_path: Path
) -> None:
    """The service stops (SIGTERM, a deploy) while a job runs: the job goes back to the queue,
    and the service started again runs it to the end; its units are taken once."""
    config = held_config(env, held_dns, tmp_path)
    key, secret = env.key("starter")

    async def first_life() -> str:
        async with env.serving(config) as url, session() as s:
            job = (await post_job(s, url, secret, form(held_list(tmp_path)))).json["id"]
            await _counted(s, url, secret, job)
            return str(job)

    with held(held_dns):
        job = run(first_life())
    with env.store() as store:
        window = 1767225600  # January 2026, the test clock's month
        assert store.used(f"key:{key.key_id}", "email-month", window) == SAMPLE_UNITS + 1

    async def second_life() -> tuple[dict[str, Any], dict[str, Any], Any]:
        async with env.serving(config) as url, session() as s:
            queued = await status(s, url, secret, job)
            done = await wait_for(s, url, secret, job)
            code, data, _ = await download(s, url, secret, f"/api/jobs/{job}/result")
            return queued, done, (code, data)

    queued, done, (code, data) = run(second_life())
    assert queued["state"] in ("queued", "running")
    assert done["state"] == "done" and done["rows_read"] == 298
    assert done["units"]["charged"] == SAMPLE_UNITS + 1
    assert code == 200 and len(csv_rows(data)) == 298
    with env.store() as store:
        assert store.used(f"key:{key.key_id}", "email-month", window) == SAMPLE_UNITS + 1


def test_a_callback_hears_of_the_end(live: Live) -> None:
    secret, url = live.key(), live.url
    heard: list[dict[str, Any]] = []
    arrived = asyncio.Event()

    async def listen(request: web.Request) -> web.Response:
        heard.append(await request.json())
        arrived.set()
        return web.Response(status=204)

    async def scenario() -> str:
        hook = web.Application()
        hook.router.add_post("/hook", listen)
        runner = web.AppRunner(hook)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with session() as s:
                body = form(callback_url=f"http://127.0.0.1:{port}/hook")
                job = (await post_job(s, url, secret, body)).json["id"]
                await wait_for(s, url, secret, job)
                await asyncio.wait_for(arrived.wait(), 60)  # sent after the job is done
                return str(job)
        finally:
            await runner.cleanup()

    job = run(scenario())
    assert heard == [{"id": job, "state": "done", "url": f"/api/jobs/{job}"}]


def test_a_finished_job_is_removed_after_the_retention(live: Live) -> None:
    """Its record and its files, by the instance's upkeep, once jobs.retention has passed."""
    secret, url = live.key(), live.url
    jobs = Path(live.config.jobs.storage)

    async def scenario() -> tuple[str, bool, Any]:
        async with session() as s:
            job = (await post_job(s, url, secret, {"addresses": ["a@gmail.com"]})).json["id"]
            await wait_for(s, url, secret, job)
            kept = (jobs / job).exists()
            live.env.clock.advance(live.config.jobs.retention + 1)
            try:
                for _ in range(200):  # the upkeep runs every lease / 2 seconds
                    gone = await fetch(s, "GET", f"{url}/api/jobs/{job}", headers=bearer(secret))
                    if gone.status == 404:
                        break
                    await asyncio.sleep(0.1)
            finally:
                live.env.clock.advance(-(live.config.jobs.retention + 1))
            return job, kept, gone

    job, kept, gone = run(scenario())
    assert kept
    assert (gone.status, gone.json["code"]) == (404, "not_found")
    assert not (jobs / job).exists()


def test_a_job_that_checks_mailboxes_has_a_verify_stage(
    sample_dns: SandboxDNS, tmp_path: Path
) -> None:
    """With [verify] mode = "smtp" a job asks the mail servers (the sandbox's, on loopback), as
    clean --verify smtp does, and reports the verify stage; verify=none asks them nothing."""
    world = load_world(SANDBOX_WORLD)
    with SandboxSMTP(world.smtp) as mail:
        env = Env(sample_dns, tmp_path)
        verify = VerifyConfig(mode="smtp", port=mail.port, timeout=2.0, helo="probe.example.net")
        config = env.config()
        config = with_jobs(replace(config, engine=replace(config.engine, verify=verify)), tmp_path)
        _, secret = env.key("starter")
        addresses = ["dlopez@gmail.com", "thomas.robinson+lists@outlook.com"]

        async def scenario() -> tuple[dict[str, Any], dict[str, Any], bytes]:
            app = create_app(config, Paths(env.db, env.cache), loopback_only=True)
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            url = f"http://127.0.0.1:{runner.addresses[0][1]}"
            try:
                async with session() as s:
                    asked = await post_job(s, url, secret, {"addresses": addresses})
                    checked = await wait_for(s, url, secret, asked.json["id"])
                    plain = await post_job(
                        s, url, secret, {"addresses": addresses, "verify": "none"}
                    )
                    domains_only = await wait_for(s, url, secret, plain.json["id"])
                    _, data, _ = await download(s, url, secret, f"{checked['url']}/result")
                    return checked, domains_only, data
            finally:
                await runner.cleanup()

        checked, domains_only, data = run(scenario())
    assert [s["name"] for s in checked["stages"]] == ["read", "domains", "verify", "write"]
    assert [s["name"] for s in domains_only["stages"]] == ["read", "domains", "write"]
    rows = {r["Email Address"]: r for r in csv_rows(data)}
    assert rows["dlopez@gmail.com"]["REASON"] == "no_such_user"
    assert rows["dlopez@gmail.com"]["VERDICT"] == "Invalid"
    assert checked["summary"]["rcpts_sent"] >= 2 and domains_only["summary"]["rcpts_sent"] == 0
