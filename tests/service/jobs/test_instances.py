"""Jobs across ``listclean serve`` processes: an instance killed mid-job (kill -9) loses it only
until another takes it up, and several instances on one PostgreSQL database and one storage
folder answer for every job, whichever runs it.

Each instance is its own process (``tests/service/instances.py``) whose clock the test moves:
a heartbeat is late once the clock has moved past the lease."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from tests.service.conftest import NOON, fetch
from tests.service.instances import Instances, instances
from tests.service.jobs.conftest import (
    HELD_WAIT,
    SAMPLE_UNITS,
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
)

JANUARY = 1767225600  # the month of NOON, the instances' clock


def jobs_env(tmp: Path) -> dict[str, str]:
    """Settings every instance shares: one storage folder, a short lease, quick polls, and DNS
    answers waited for as long as a test holds them."""
    return {
        "LISTCLEAN_JOBS_STORAGE": str(tmp / "jobs"),
        "LISTCLEAN_JOBS_LEASE": "2",
        "LISTCLEAN_JOBS_POLL": "0.1",
        "LISTCLEAN_DNS_TIMEOUT": str(HELD_WAIT),
        "LISTCLEAN_DNS_ATTEMPTS": "1",
    }


@pytest.fixture
def dns() -> Iterator[SandboxDNS]:
    """The DNS server every instance asks: the test holds HELD_DOMAIN's answers on it."""
    with SandboxDNS(world_from_dict(held_world())) as server:
        yield server


def test_a_job_whose_instance_is_killed_runs_again_elsewhere_on_its_units(
    tmp_path: Path, dns: SandboxDNS
) -> None:
    """On one host's SQLite file (the store's part is the same on PostgreSQL: its sweep is
    tests/service/jobs/test_store.py's, on both)."""
    db = tmp_path / "service.sqlite"
    env = jobs_env(tmp_path)
    with instances(db, tmp_path, NOON, 1, env, nameserver=dns.address) as group:
        key_id, secret = group.key("starter")
        first = group.running[0]
        with held(dns):  # the job cannot end before its instance is killed
            job = asyncio.run(_reserved(first.url, secret, held_list(tmp_path)))
            first.kill()  # kill -9: no goodbye, its job process dies with it
        (second,) = group.start(1)
        group.set_clock(NOON + 30)  # the killed instance's heartbeat is now late
        done, rows = asyncio.run(_finished(second.url, secret, job))
        used = group.used(f"key:{key_id}", "email-month", JANUARY)
    assert done["state"] == "done", done
    assert rows == 298
    assert done["units"]["charged"] == SAMPLE_UNITS + 1
    assert used == SAMPLE_UNITS + 1  # reserved once, by the instance that was killed


async def _reserved(url: str, secret: str, path: Path) -> str:
    """A job of the list at *path*, once its units are reserved."""
    async with session() as s:
        job = str((await post_job(s, url, secret, form(path))).json["id"])
        while not (await status(s, url, secret, job))["units"]["reserved"]:
            await asyncio.sleep(0.05)
        return job


async def _finished(url: str, secret: str, job: str) -> tuple[dict[str, Any], int]:
    async with session() as s:
        done = await wait_for(s, url, secret, job, timeout=90)
        _, data, _ = await download(s, url, secret, f"/api/jobs/{job}/result")
        return done, len(csv_rows(data))


@pytest.fixture
def three(pg_url: str, tmp_path: Path, dns: SandboxDNS) -> Iterator[Instances]:
    env = jobs_env(tmp_path)
    with instances(pg_url, tmp_path, NOON, 3, env, nameserver=dns.address) as group:
        yield group


def test_instances_on_postgresql_answer_for_every_job(
    three: Instances, dns: SandboxDNS, tmp_path: Path
) -> None:
    """A job posted to one instance is seen, cancelled and downloaded through the others."""
    _, secret = three.key("starter")
    a, b, c = (i.url for i in three.running)

    async def scenario() -> dict[str, Any]:
        async with session() as s:
            slow = (await post_job(s, a, secret, form(held_list(tmp_path)))).json["id"]
            seen: dict[str, Any] = {"running": await wait_for(s, c, secret, slow, ("running",))}
            seen["cancel"] = await fetch(
                s, "DELETE", f"{b}/api/jobs/{slow}", headers=bearer(secret)
            )
            seen["cancelled"] = await wait_for(s, a, secret, slow, ("cancelled",), timeout=60)
            quick = (await post_job(s, b, secret, form())).json["id"]
            seen["done"] = await wait_for(s, c, secret, quick, timeout=60)
            seen["files"] = [
                await download(s, url, secret, f"/api/jobs/{quick}/result") for url in (a, b, c)
            ]
            seen["lists"] = [
                (await fetch(s, "GET", f"{url}/api/jobs", headers=bearer(secret))).json
                for url in (a, b, c)
            ]
            seen["removed"] = await fetch(
                s, "DELETE", f"{c}/api/jobs/{quick}", headers=bearer(secret)
            )
            seen["gone"] = await fetch(s, "GET", f"{a}/api/jobs/{quick}", headers=bearer(secret))
            return seen

    with held(dns):  # the slow job runs until it is cancelled
        seen = asyncio.run(scenario())
    assert seen["running"]["state"] == "running"
    assert seen["cancel"].status == 202
    assert seen["cancelled"]["units"]["charged"] == 0
    assert seen["done"]["state"] == "done"
    codes = {code for code, _, _ in seen["files"]}
    assert codes == {200} and len({data for _, data, _ in seen["files"]}) == 1
    assert len(csv_rows(seen["files"][0][1])) == 297
    ids = [sorted(j["id"] for j in page["jobs"]) for page in seen["lists"]]
    assert ids[0] == ids[1] == ids[2] and len(ids[0]) == 2
    assert seen["removed"].status == 204 and seen["gone"].status == 404
