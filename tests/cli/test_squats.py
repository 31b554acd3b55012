"""Squatted typo domains through both fronts, `listclean clean` and `/api/email`, against a
loopback DNS world: each piece of evidence (the provider's own exchanges, a parking host, a mail
host under the typo's own name, a domain known to be real, the operator's own list, the lists
alone offline) gives the same answer on both."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import polars as pl
import pytest

from pipeline.cli import main
from pipeline.core.config import Config, DnsConfig, ListsConfig
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from pipeline.sandbox.files import SANDBOX_SETTINGS, SANDBOX_WORLD
from pipeline.service.settings import AnonymousConfig, ServiceConfig
from tests.service.conftest import fetch, run, serving

# domain -> its MX host
SQUAT_ZONES = {
    "gmaio.com": "mx.gmaio.com",  # a mail host under its own name
    "yahpo.com": "park-mx.above.com",  # a parking service's catch-all host
    "hotmaik.com": "hotmaik-com.olc.protection.outlook.com",  # Microsoft's own exchanges
    "cloud.com": "mx.cloud.com",  # known to be real (near_providers.txt)
    "comcasst.net": "mx.comcasst.net",  # real to the operator who lists it
}
# What each front suggests, online and offline (the lists alone).
ONLINE = {
    "gmaio.com": "gmail.com",
    "yahpo.com": "yahoo.com",
    "hotmaik.com": "",
    "cloud.com": "",
    "comcasst.net": "comcast.net",
}
OFFLINE = {**ONLINE, "hotmaik.com": "hotmail.com"}  # offline nobody asked where its mail goes
OPERATORS_OWN = "comcasst.net"


@pytest.fixture(scope="module")
def squat_dns() -> Iterator[SandboxDNS]:
    data = json.loads(SANDBOX_WORLD.read_text(encoding="utf-8"))
    for i, (domain, host) in enumerate(SQUAT_ZONES.items()):
        data["zones"][domain] = {"mx": [[10, host]]}
        data["zones"][host] = {"a": [f"127.0.9.{i + 2}"]}
    with SandboxDNS(world_from_dict(data)) as server:
        yield server


def settings_file(tmp_path: Path, legitimate: tuple[str, ...]) -> Path:
    text = SANDBOX_SETTINGS.read_text(encoding="utf-8")
    path = tmp_path / "settings.toml"
    path.write_text(f"{text}\n[lists]\nextra_legitimate = {json.dumps(list(legitimate))}\n")
    return path


def cleaned(
    tmp_path: Path, dns: SandboxDNS, *extra: str, legitimate: tuple[str, ...] = ()
) -> pl.DataFrame:
    source = tmp_path / "list.csv"
    source.write_text("email\n" + "".join(f"ann.lee@{d}\n" for d in SQUAT_ZONES))
    config = settings_file(tmp_path, legitimate)
    out = tmp_path / "out.parquet"
    argv = ["clean", str(source), "-o", str(out), "--resolver", dns.address, "--quiet"]
    argv += ["--cache-dir", str(tmp_path / "cache"), "--config", str(config), *extra]
    assert main(argv) == 0
    return pl.read_parquet(out)


def answers(dns: SandboxDNS, tmp_path: Path, legitimate: tuple[str, ...] = ()) -> dict[str, Any]:
    engine = replace(
        Config(),
        dns=DnsConfig(nameservers=(dns.address,), timeout=0.3, attempts=2, backoff=0.05),
        lists=ListsConfig(extra_legitimate=legitimate),
    )
    config = ServiceConfig(engine=engine, anonymous=AnonymousConfig(email_per_day=100))

    async def scenario() -> dict[str, Any]:
        found = {}
        db, cache = tmp_path / "service.sqlite", tmp_path / "domains.sqlite"
        async with serving(config, db, cache) as url, aiohttp.ClientSession() as session:
            for domain in SQUAT_ZONES:
                reply = await fetch(session, "GET", f"{url}/api/email?email=ann.lee@{domain}")
                assert reply.status == 200
                found[domain] = reply.json
        return found

    return run(scenario())


def check_squat_row(row: dict[str, Any], expected: str) -> None:
    """A suggested squat is Risky typo_suspected with the full address, never Invalid."""
    if expected:
        assert row["VERDICT"] == "Risky"
        assert "typo_suspected" in row["REASON"].split(";")
        assert row["SUGGESTION"] == f"ann.lee@{expected}"
    else:
        assert "typo_suspected" not in row["REASON"].split(";")
        assert row["SUGGESTION"] == ""


def test_clean_online(tmp_path: Path, squat_dns: SandboxDNS) -> None:
    rows = cleaned(tmp_path, squat_dns).iter_rows(named=True)
    for row in rows:
        domain = row["DOMAIN"]
        check_squat_row(row, ONLINE[domain])
        if ONLINE[domain]:
            assert row["SAFE_TO_SEND"] is False
            assert ONLINE[domain] in row["DETAIL"] and SQUAT_ZONES[domain] in row["DETAIL"]
        else:
            assert row["VERDICT"] == "Valid" and row["DETAIL"] == ""


def test_clean_offline(tmp_path: Path, squat_dns: SandboxDNS) -> None:
    for row in cleaned(tmp_path, squat_dns, "--offline").iter_rows(named=True):
        check_squat_row(row, OFFLINE[row["DOMAIN"]])
        assert row["VERDICT"] != "Invalid"


def test_service_online(tmp_path: Path, squat_dns: SandboxDNS) -> None:
    for domain, body in answers(squat_dns, tmp_path).items():
        check_squat_row(body, ONLINE[domain])


def test_the_operators_own_list_on_both_fronts(tmp_path: Path, squat_dns: SandboxDNS) -> None:
    own = (OPERATORS_OWN,)
    (tmp_path / "clean").mkdir()
    frame = cleaned(tmp_path / "clean", squat_dns, legitimate=own)
    row = frame.filter(pl.col("DOMAIN") == OPERATORS_OWN).row(0, named=True)
    check_squat_row(row, "")
    body = answers(squat_dns, tmp_path, legitimate=own)[OPERATORS_OWN]
    check_squat_row(body, "")
    assert body["VERDICT"] == row["VERDICT"] == "Valid"


def test_the_lists_versions_are_in_the_run_metadata(tmp_path: Path, squat_dns: SandboxDNS) -> None:
    cleaned(tmp_path, squat_dns)
    run_ = json.loads((tmp_path / "out.summary.json").read_text())["run"]
    assert set(run_["lists"]) == {"mail_providers.txt", "near_providers.txt"}
    assert all(run_["lists"].values())
    assert run_["settings"]["lists"]["extra_legitimate"] == []
