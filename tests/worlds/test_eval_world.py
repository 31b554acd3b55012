"""The evaluation world: deterministic, loadable, and its truth agrees with its DNS and servers."""

from __future__ import annotations

import asyncio
import csv
import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.sandbox.smtp_server import SandboxSMTP
from pipeline.sandbox.world import World, world_from_dict
from worlds.evaluation.builder import TruthRow
from worlds.evaluation.world import EvalWorld, generate
from worlds.replies.corpus import by_key

NOWHERE = {
    "nxdomain", "null_mx", "no_mail_records", "mx_ip_literal", "mx_nxdomain_hosts",
    "mx_no_address", "implicit_mx_private", "implicit_mx_loopback", "implicit_mx_reserved",
}  # fmt: skip
TYPOS = {
    "typo_squatted", "typo_squatted_known", "typo_unregistered", "typo_unregistered_known",
    "typo_tld_misspelt",
}  # fmt: skip
# Classes whose rows are deliverable exactly when the domain's server knows the mailbox.
BY_MAILBOX = {
    "ok", "no_such_user", "disabled", "full", "full_552", "rate_limited_rcpt", "transient_rcpt",
    "exo_dbeb", "sender_refused_rcpt", "sender_refused_mail", "helo_refused_rcpt",
    "host_blocked_rcpt", "ehlo_refused", "greeting_5xx", "greeting_421", "rcpt_421_close",
    "rate_limited_host", "greylisted", "unverifiable_provider", "catch_all", "implicit_mx",
    "near_provider",
}  # fmt: skip


@pytest.fixture(scope="module")
def evaluation() -> EvalWorld:
    return generate()


@pytest.fixture(scope="module")
def world(evaluation: EvalWorld) -> World:
    return world_from_dict(evaluation.world)


def test_same_seed_same_world_other_seed_other_world(evaluation: EvalWorld) -> None:
    again = generate()
    assert again.rows == evaluation.rows
    assert json.dumps(again.world, sort_keys=True) == json.dumps(evaluation.world, sort_keys=True)
    assert generate(seed=7).rows != evaluation.rows


def test_size_and_coverage(evaluation: EvalWorld) -> None:
    rows = evaluation.rows
    domains = {row.email.rpartition("@")[2] for row in rows}
    assert 6000 <= len(rows) <= 7000
    assert 200 <= len(domains) <= 350
    assert sum(not row.deliverable for row in rows) > 1000
    assert len({row.email.lower() for row in rows}) == len(rows)
    assert set(evaluation.counts()) == NOWHERE | TYPOS | BY_MAILBOX | {
        "relay_denied",
        "dns_temporary",
    }


def test_every_reply_named_in_the_truth_is_in_the_corpus(evaluation: EvalWorld) -> None:
    for key in {row.reply for row in evaluation.rows if row.reply}:
        by_key(key)


def test_truth_agrees_with_the_mail_hosts(evaluation: EvalWorld, world: World) -> None:
    for row in evaluation.rows:
        if row.cls not in BY_MAILBOX:
            continue
        local, _, domain = row.email.rpartition("@")
        served = _served(world, domain)
        folded = local.casefold()
        exists = served.catch_all or folded in served.mailboxes or folded in served.full
        assert exists == row.deliverable, row


def test_truth_agrees_with_the_dns(evaluation: EvalWorld, world: World) -> None:
    loopback = {address for address in world.smtp}
    for row in evaluation.rows:
        domain = row.email.rpartition("@")[2]
        zone = world.lookup(domain)
        if row.cls in NOWHERE | TYPOS:
            assert not row.deliverable, row
        if row.cls in {"nxdomain", "typo_unregistered", "typo_unregistered_known"}:
            assert zone is None, row
        elif row.cls in {"typo_squatted", "typo_squatted_known"}:
            assert zone is not None and _served(world, domain).catch_all, row
        elif row.cls.startswith("implicit_mx_"):
            assert zone is not None and not zone.mx and zone.a, row
            assert all(a not in loopback for a in zone.a), row
            assert all(not ipaddress.ip_address(a).is_global for a in zone.a), row
        elif row.cls == "mx_nxdomain_hosts":
            assert zone is not None and all(world.lookup(h) is None for _, h in zone.mx), row
        elif row.cls == "mx_no_address":
            assert zone is not None and all(world.lookup(h) is not None for _, h in zone.mx)
            assert all(not world.lookup(h).a for _, h in zone.mx), row  # type: ignore[union-attr]
        elif row.cls == "mx_ip_literal":
            assert zone is not None and all(_is_ip(h) for _, h in zone.mx), row
        if row.cls in TYPOS:
            assert row.intended and row.intended != domain, row


def test_files_are_written_in_list_order(evaluation: EvalWorld, tmp_path: Path) -> None:
    evaluation.write(tmp_path)
    with (tmp_path / "list.csv").open(encoding="utf-8") as listed:
        emails = [r["email"] for r in csv.DictReader(listed)]
    with (tmp_path / "truth.csv").open(encoding="utf-8") as truth:
        rows = list(csv.DictReader(truth))
    assert emails == [row.email for row in evaluation.rows] == [r["email"] for r in rows]
    assert {r["deliverable"] for r in rows} == {"true", "false"}
    assert json.loads((tmp_path / "world.json").read_text(encoding="utf-8")) == evaluation.world


@pytest.fixture(scope="module")
def servers(world: World) -> Iterator[SandboxSMTP]:
    with SandboxSMTP(world.smtp) as smtp:
        yield smtp


@pytest.mark.parametrize("cls", ["ok", "no_such_user", "disabled", "exo_dbeb", "full_552"])
def test_servers_send_the_reply_the_truth_names(
    evaluation: EvalWorld, world: World, servers: SandboxSMTP, cls: str
) -> None:
    rows = [row for row in evaluation.rows if row.cls == cls][:5]
    for row, answer in zip(rows, asyncio.run(_probe(world, servers.port, rows)), strict=True):
        expected = by_key(row.reply).scripted
        assert answer.startswith(f"{expected.code}"), (row, answer)
        assert expected.lines[-1].split("{")[0].strip() in answer, (row, answer)


async def _probe(world: World, port: int, rows: list[TruthRow]) -> list[str]:
    answers = []
    for row in rows:
        domain = row.email.rpartition("@")[2]
        address = _address(world, domain)
        reader, writer = await asyncio.open_connection(address, port)
        lines = [b"EHLO probe.example.org", b"MAIL FROM:<probe@example.org>"]
        lines.append(f"RCPT TO:<{row.email}>".encode())
        replies = [await _reply(reader)]
        for line in lines:
            writer.write(line + b"\r\n")
            replies.append(await _reply(reader))
        writer.close()
        await writer.wait_closed()
        answers.append(replies[-1])
    return answers


async def _reply(reader: asyncio.StreamReader) -> str:
    lines = []
    while True:
        line = (await asyncio.wait_for(reader.readline(), 2)).decode().rstrip()
        lines.append(line)
        if line[3:4] != "-":
            return "\n".join(lines)


def _address(world: World, domain: str) -> str:
    zone = world.lookup(domain)
    assert zone is not None
    host = min(zone.mx)[1] if zone.mx else domain
    host_zone = world.lookup(host)
    assert host_zone is not None and host_zone.a
    return host_zone.a[0]


def _served(world: World, domain: str) -> Any:
    address = _address(world, domain)
    return world.smtp[address].domains[domain]


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True
