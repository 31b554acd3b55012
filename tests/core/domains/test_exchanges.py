"""Nowhere to deliver: MX sets with no usable host and implicit MX to unroutable addresses are
no_mail_host, each MX host is asked once and cached; and an implicit MX whose server accepted
the mailbox is Valid. Real DNS and mail servers on loopback, through the engine."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.assembly import build as assembly
from pipeline.core.assembly.build import EngineOptions
from pipeline.core.config import Config, load_config
from pipeline.core.domains.exchanges import Routing, is_address
from pipeline.core.engine import verify_many
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from pipeline.sandbox.files import SANDBOX_SETTINGS
from pipeline.sandbox.smtp_server import SandboxSMTP

FAST = SANDBOX_SETTINGS
ZONES: dict[str, object] = {
    "gmail.com": {"mx": [[5, "mx.shared.mailworld.org"]]},
    "outlook.com": {"mx": [[5, "mx.shared.mailworld.org"]]},
    "yahoo.com": {"mx": [[5, "mx.shared.mailworld.org"]]},
    "mx.shared.mailworld.org": {"a": ["127.0.7.2"]},
    "one.mailworld.org": {"mx": [[10, "mx.shared.mailworld.org"]]},
    "two.mailworld.org": {"mx": [[10, "mx.shared.mailworld.org"]]},
    # RFC 5321 §5.1: none of the MX records usable -> an error, not a delivery.
    "literal.mailworld.org": {"mx": [[10, "192.0.2.25"]]},
    "literals.mailworld.org": {"mx": [[10, "198.51.100.7"], [20, "203.0.113.9"]]},
    "ghost-hosts.mailworld.org": {
        "mx": [[10, "mx1.ghost-hosts.mailworld.org"], [20, "mx2.ghost-hosts.mailworld.org"]]
    },
    "bare-hosts.mailworld.org": {"mx": [[10, "mx1.bare-hosts.mailworld.org"]]},
    "mx1.bare-hosts.mailworld.org": {},
    "second-works.mailworld.org": {
        "mx": [[10, "mx1.ghost-hosts.mailworld.org"], [20, "mx.shared.mailworld.org"]]
    },
    "flaky-host.mailworld.org": {"mx": [[10, "mx.flaky.mailworld.org"]]},
    "mx.flaky.mailworld.org": {"rcode": "SERVFAIL"},
    # Implicit MX: only a routable address counts.
    "web-only.mailworld.org": {"a": ["127.0.7.3"]},
    "private.mailworld.org": {"a": ["10.20.30.40"]},
    "loopback.mailworld.org": {"a": ["127.0.0.1"]},
    "reserved.mailworld.org": {"a": ["240.0.0.1"]},
    "shared-space.mailworld.org": {"a": ["100.64.1.1"]},
    "v6-doc.mailworld.org": {"aaaa": ["2001:db8::25"]},
    "v4-private-v6-global.mailworld.org": {"a": ["192.168.1.10"], "aaaa": ["2001:67c:2e8::25"]},
}
SMTP = {
    "127.0.7.2": {
        "name": "mx.shared.mailworld.org",
        "domains": {"one.mailworld.org": {"mailboxes": ["ann"]}},
    },
    "127.0.7.3": {
        "name": "web-only.mailworld.org",
        "domains": {"web-only.mailworld.org": {"mailboxes": ["ann"]}},
    },
}


@dataclasses.dataclass
class World:
    dns: SandboxDNS
    smtp: SandboxSMTP


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    w = world_from_dict({"zones": ZONES, "smtp": SMTP})
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        yield World(dns, smtp)


def config(world: World, mode: str = "none") -> Config:
    base = load_config(FAST)
    dns = dataclasses.replace(base.dns, nameservers=(world.dns.address,))
    verify = dataclasses.replace(base.verify, mode=mode, port=world.smtp.port)  # type: ignore[arg-type]
    return dataclasses.replace(base, dns=dns, verify=verify)


def verify(
    world: World, cache: Path, values: list[str], mode: str = "none"
) -> list[dict[str, object]]:
    with contextlib.ExitStack() as stack:
        options = EngineOptions(loopback_only=True)
        engine = assembly.open_engine(stack, config(world, mode), cache, options)

        async def go() -> list[dict[str, object]]:
            try:
                return await verify_many(engine, values)
            finally:
                await engine.dns.close()

        return asyncio.run(go())


@pytest.mark.parametrize(
    ("domain", "verdict", "reason"),
    [
        ("one.mailworld.org", "Valid", ""),
        ("literal.mailworld.org", "Invalid", "no_mail_host"),
        ("literals.mailworld.org", "Invalid", "no_mail_host"),
        ("ghost-hosts.mailworld.org", "Invalid", "no_mail_host"),
        ("bare-hosts.mailworld.org", "Invalid", "no_mail_host"),
        ("second-works.mailworld.org", "Valid", ""),  # the first exchange is gone, the second works
        ("flaky-host.mailworld.org", "Risky", "dns_servfail"),  # temporary trouble is never Invalid
        ("web-only.mailworld.org", "Risky", "implicit_mx"),
        ("private.mailworld.org", "Invalid", "no_mail_host"),
        ("loopback.mailworld.org", "Invalid", "no_mail_host"),
        ("reserved.mailworld.org", "Invalid", "no_mail_host"),
        ("shared-space.mailworld.org", "Invalid", "no_mail_host"),
        ("v6-doc.mailworld.org", "Invalid", "no_mail_host"),
        ("v4-private-v6-global.mailworld.org", "Risky", "implicit_mx"),
    ],
)
def test_domains_with_nowhere_to_deliver(
    world: World, tmp_path: Path, domain: str, verdict: str, reason: str
) -> None:
    (row,) = verify(world, tmp_path / "domains.sqlite", [f"ann@{domain}"])
    assert (row["VERDICT"], row["REASON"]) == (verdict, reason)


def test_each_mx_host_is_asked_once_and_remembered(world: World, tmp_path: Path) -> None:
    cache = tmp_path / "domains.sqlite"
    world.dns.reset_counts()
    verify(
        world,
        cache,
        ["ann@one.mailworld.org", "bob@two.mailworld.org", "cy@second-works.mailworld.org"],
    )
    asked = [q for q in world.dns.queries() if q[0] == "mx.shared.mailworld.org"]
    assert asked == [("mx.shared.mailworld.org", "A")]
    # A new domain on the same host, tomorrow: the host's answer comes from the cache.
    world.dns.reset_counts()
    verify(world, cache, ["ann@literal.mailworld.org", "dan@gmail.com"])
    assert not [q for q in world.dns.queries() if q[0] == "mx.shared.mailworld.org"]


def test_an_implicit_mx_whose_server_accepted_the_mailbox_is_valid(
    world: World, tmp_path: Path
) -> None:
    rows = verify(
        world,
        tmp_path / "domains.sqlite",
        ["ann@web-only.mailworld.org", "zed@web-only.mailworld.org"],
        "smtp",
    )
    accepted, refused = rows
    assert (accepted["VERDICT"], accepted["REASON"]) == ("Valid", "mailbox_ok")
    assert accepted["DOMAIN_VERDICT"] == "Risky"  # the domain alone still looks web-only
    assert (refused["VERDICT"], refused["REASON"]) == ("Invalid", "implicit_mx;no_such_user")


@pytest.mark.parametrize(
    ("address", "sandbox", "routable"),
    [
        ("203.0.114.10", False, True),
        ("10.0.0.5", False, False),
        ("127.0.0.9", False, False),
        ("127.0.0.9", True, True),  # the sandbox's internet
        ("127.0.0.1", True, False),  # and its loopback
        ("2001:db8::1", True, False),
        ("not an address", False, False),
    ],
)
def test_routing(address: str, sandbox: bool, routable: bool) -> None:
    assert Routing(sandbox).routable(address) is routable


def test_ip_literals_are_no_host_names() -> None:
    assert is_address("192.0.2.25") and is_address("[192.0.2.25]") and is_address("2001:db8::1")
    assert not is_address("mx.example.net")
