"""The service on a PostgreSQL database: what one instance does, the next reads; /healthz
tells the truth about the database; a wrong URL is one line; the commands work against it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aiohttp
import jsonschema
import pytest

from pipeline.cli import main
from pipeline.service.openapi import openapi_document
from tests import pg
from tests.core.contacts.common import SAMPLE
from tests.service.conftest import Env, Reply, fetch, run, serving

JANE = "jordan.ellery@quillfeather.madeup-biz.net"
REPO = Path(__file__).resolve().parents[2]


def find(term: str) -> dict[str, str]:
    return {"search_term": term, "find_Contact": "true"}


def test_an_erasure_through_one_instance_reaches_the_other(
    env: Env, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    env.url = pg_url
    assert main(["contacts", "import", str(SAMPLE), "--db", pg_url]) == 0
    _, secret = env.key("starter")
    auth = {"Authorization": f"Bearer {secret}"}

    async def scenario() -> list[Reply]:
        a_cache, b_cache = env.tmp / "a" / "domains.sqlite", env.tmp / "b" / "domains.sqlite"
        async with (
            serving(env.config(), pg_url, a_cache, env.clock) as a,
            serving(env.config(), pg_url, b_cache, env.clock) as b,
            aiohttp.ClientSession(headers=auth) as s,
        ):
            before = [await fetch(s, "GET", f"{url}/api/find", params=find(JANE)) for url in (a, b)]
            # Erased through instance A's database, with the command any host may run.
            assert main(["contacts", "erase", "--email", JANE, "--db", pg_url]) == 0
            after = [await fetch(s, "GET", f"{url}/api/find", params=find(JANE)) for url in (b, a)]
            return before + after

    replies = run(scenario())
    assert [r.status for r in replies] == [200, 200, 404, 404]
    assert replies[0].json["email"] == JANE
    assert replies[2].json == replies[3].json  # the uniform 404
    assert "Erased: 1 record(s)" in capsys.readouterr().out


def test_healthz_is_503_while_the_database_is_down(
    env: Env, pg_cluster: pg.Cluster, pg_url: str
) -> None:
    env.url = pg_url

    async def until(url: str, status: int) -> Reply:
        async with aiohttp.ClientSession() as s:
            for _ in range(100):
                reply = await fetch(s, "GET", f"{url}/healthz")
                if reply.status == status:
                    return reply
                await asyncio.sleep(0.1)
        return reply

    async def scenario() -> list[Reply]:
        async with env.serving() as url:
            up = await until(url, 200)
            pg_cluster.stop()
            try:
                down = await until(url, 503)
            finally:
                pg_cluster.start()
            return [up, down, await until(url, 200)]

    up, down, again = run(scenario())
    assert (up.status, up.json) == (200, {"status": "ok"})
    assert down.status == 503 and down.json["status"] == "unavailable"
    assert again.status == 200
    documented = openapi_document(env.config())["paths"]["/healthz"]["get"]["responses"]
    for reply in (up, down):
        schema = documented[str(reply.status)]["content"]["application/json"]["schema"]
        jsonschema.Draft202012Validator(schema).validate(reply.json)


@pytest.mark.parametrize(
    "argv",
    [
        ["keys", "list"],
        ["keys", "create", "--plan", "default"],
        ["db", "migrate"],
        ["contacts", "audit"],
        ["bounces", "list"],
        ["serve", "--offline", "--port", "0"],
    ],
)
def test_a_wrong_database_url_is_one_line_without_its_password(
    argv: list[str], pg_cluster: pg.Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"postgresql://listclean:s3cret-pw@127.0.0.1:{pg_cluster.port}/no_such_database"
    assert main([*argv, "--db", url]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "s3cret-pw" not in err
    assert f"postgresql://listclean:***@127.0.0.1:{pg_cluster.port}/no_such_database" in err


def test_an_unreachable_server_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keys", "list", "--db", "postgresql://me:pw@127.0.0.1:1/x"]) == 2
    err = capsys.readouterr().err
    assert "postgresql://me:***@127.0.0.1:1/x" in err and ":pw@" not in err


def test_migrate_keys_and_records_against_a_database(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "migrate", "--db", pg_url]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Up to date: keys and quota counters at postgresql://")
    assert "the contact store" in out and "the bounce ledger" in out
    assert main(["db", "migrate", "--db", pg_url]) == 0  # again: nothing to do, no error
    capsys.readouterr()
    assert main(["keys", "create", "--plan", "starter", "--db", pg_url]) == 0
    key_id = capsys.readouterr().out.split()[3]
    assert main(["keys", "revoke", key_id, "--db", pg_url]) == 0
    assert main(["keys", "list", "--db", pg_url]) == 0
    assert f"{key_id}" in capsys.readouterr().out
    bounces = REPO / "sample_data" / "bounces.csv"
    assert main(["bounces", "import", str(bounces), "--db", pg_url]) == 0
    assert "32 added" in capsys.readouterr().out
    assert main(["bounces", "list", "--limit", "3", "--db", pg_url]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 4
    assert main(["contacts", "import", str(SAMPLE), "--db", pg_url]) == 0
    assert main(["contacts", "suppress", "--email", JANE, "--db", pg_url]) == 0
    # The database's ledger is reached too, as `serve --db` reads it.
    assert main(["contacts", "erase", "--email", "lmartinez@outlook.com", "--db", pg_url]) == 0
    erased = capsys.readouterr().out.splitlines()[-1]
    assert re.search(r"[1-9]\d* bounce event\(s\)", erased), erased
    assert main(["bounces", "list", "--email", "lmartinez@outlook.com", "--db", pg_url]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1  # the header alone
    assert main(["contacts", "audit", "--format", "json", "--db", pg_url]) == 0
    assert capsys.readouterr().out.strip() == "[]"


def test_a_key_revoked_anywhere_is_refused_by_every_instance(env: Env, pg_url: str) -> None:
    env.url = pg_url
    key, secret = env.key("starter")
    auth = {"Authorization": f"Bearer {secret}"}

    async def scenario() -> list[int]:
        a_cache, b_cache = env.tmp / "a" / "domains.sqlite", env.tmp / "b" / "domains.sqlite"
        async with (
            serving(env.config(), pg_url, a_cache, env.clock) as a,
            serving(env.config(), pg_url, b_cache, env.clock) as b,
            aiohttp.ClientSession(headers=auth) as s,
        ):
            api = "/api/email?email=john.doe@gmail.com"
            before = [(await fetch(s, "GET", url + api)).status for url in (a, b)]
            assert main(["keys", "revoke", key.key_id, "--db", pg_url]) == 0
            return before + [(await fetch(s, "GET", url + api)).status for url in (b, a)]

    assert run(scenario()) == [200, 200, 401, 401]
