"""Real reply texts served at each stage by the sandbox's mail servers, asked by the real prober.

Every non-accepting reply of the corpus (pipeline/sandbox/replies) is sent where real servers
send it: at the greeting, in answer to EHLO/HELO or MAIL FROM (one host each), or at RCPT (one
local part each, beside mailboxes that exist, or one host each for a 421 that closes the
connection). Whatever the words, only a reply that means "no such user" or "disabled" may make an
address Invalid, and never one that came before RCPT.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from pipeline.core.config import VerifyConfig
from pipeline.core.domains.dns import DnsStatus, Resolver
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.prober import Budget, MailboxResult, Prober, Target
from pipeline.core.mailboxes.smtp import Mailbox, SmtpSettings
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from pipeline.sandbox.smtp_server import SandboxSMTP
from tests.conftest import fast_dns
from worlds.replies.corpus import CORPUS, CorpusReply, Meaning, Stage, by_key

INVALID = frozenset({Mailbox.NO_SUCH_USER, Mailbox.DISABLED})
# Replies that mean "no such user" or "disabled" but say so too vaguely to be trusted (Risky).
VAGUE = {"generic.address_rejected": Mailbox.REJECTED, "gmail.over_quota_inactive": Mailbox.FULL}
# Provider quirks (pipeline.core.mailboxes.replies.QUIRKS) hold on the provider's own hosts only;
# from any other host these words are a policy refusal.
QUIRKS = {
    "eop.dbeb_access_denied": "tenant-test.mail.protection.outlook.com",
    "eop.dbeb_access_denied_old": "tenant-test.mail.protection.outlook.com",
    "yandex.no_such_user": "mx.yandex.ru",
}
# A full transaction (452 4.5.3) is about the session, not a recipient: the prober's own tests
# cover it with a host that counts recipients.
SESSION_LEVEL = frozenset({Meaning.TOO_MANY_RECIPIENTS})
SENDER = "bounce@probe.example.net"


def refusals(stage: Stage) -> list[CorpusReply]:
    return [
        r
        for r in CORPUS
        if r.stage is stage and r.meaning is not Meaning.ACCEPTED and r.meaning not in SESSION_LEVEL
    ]


RCPT = [r for r in refusals(Stage.RCPT) if r.code != 421]
RCPT_CLOSING = [r for r in refusals(Stage.RCPT) if r.code == 421]
BEFORE_RCPT = refusals(Stage.GREETING) + refusals(Stage.EHLO) + refusals(Stage.MAIL)


def local_of(reply: CorpusReply) -> str:
    return reply.key.replace(".", "-").replace("_", "-")


def domain_of(reply: CorpusReply) -> str:
    return f"{local_of(reply)}.stages.test"


def _stage_setting(reply: CorpusReply) -> dict[str, Any]:
    if reply.stage is Stage.GREETING:
        return {"greeting": reply.text}
    if reply.stage is Stage.EHLO:
        return {"ehlo": reply.text, "helo": reply.text}
    if reply.stage is Stage.MAIL:
        return {"mail_from": [["*", reply.text]]}
    return {"block": True, "rcpt_text": {"blocked": reply.text}}  # a 421 to every RCPT


def world() -> dict[str, Any]:
    """One domain whose local parts each get one RCPT reply, and one host per other reply."""
    zones: dict[str, Any] = {"rcpt.stages.test": {"mx": [[10, "mx.rcpt.stages.test"]]}}
    replies = {local_of(r): r.text for r in RCPT}
    domain = {"mailboxes": ["alice", "bob"], "replies": replies}
    smtp: dict[str, Any] = {
        "127.0.1.2": {"name": "mx.rcpt.stages.test", "domains": {"rcpt.stages.test": domain}}
    }
    zones["mx.rcpt.stages.test"] = {"a": ["127.0.1.2"]}
    for i, reply in enumerate(BEFORE_RCPT + RCPT_CLOSING):
        name, address = f"mx.{domain_of(reply)}", f"127.0.1.{i + 3}"
        zones[domain_of(reply)] = {"mx": [[10, name]]}
        zones[name] = {"a": [address]}
        served = {domain_of(reply): {"mailboxes": ["alice"]}}
        smtp[address] = {"name": name, "domains": served, **_stage_setting(reply)}
    return {"zones": zones, "smtp": smtp}


@dataclass
class Servers:
    dns: SandboxDNS
    smtp: SandboxSMTP
    lists: DomainLists


@pytest.fixture(scope="module")
def servers(lists: DomainLists) -> Iterator[Servers]:
    w = world_from_dict(world())
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        yield Servers(dns, smtp, lists)


def probe(
    servers: Servers,
    addresses: Sequence[str],
    sender: str = SENDER,
    known: Collection[str] = (),
    **overrides: Any,
) -> dict[str, MailboxResult]:
    """The prober's answers; *known* are addresses the bounce ledger saw delivered to."""
    settings: dict[str, Any] = {
        "port": servers.smtp.port,
        "timeout": 2.0,
        "greylist_delays": (0.05,),
        "backoff": 0.01,
        "breaker_threshold": 3,
        "rcpts_per_minute_per_host": 600_000,
        "rcpts_per_minute_per_provider": 600_000,
        **overrides,
    }
    smtp = SmtpSettings(servers.smtp.port, "probe.example.net", sender, 2.0, True)

    async def go() -> dict[str, MailboxResult]:
        resolver = Resolver(fast_dns(servers.dns.address))
        try:
            prober = Prober(
                resolver,
                VerifyConfig(**settings),
                smtp,
                servers.lists,
                Budget(None),
                lambda key, result: None,
            )
            targets = [
                Target(a, a, a.split("@")[1], DnsStatus.MX, known_to_exist=a in known)
                for a in addresses
            ]
            return await prober.run(targets)
        finally:
            await resolver.close()

    return asyncio.run(go())


@pytest.fixture(scope="module")
def rcpt_answers(servers: Servers) -> dict[str, MailboxResult]:
    # Mailboxes that exist come first in each session: the host plainly tells them apart.
    addresses = ["alice@rcpt.stages.test", *(f"{local_of(r)}@rcpt.stages.test" for r in RCPT)]
    return probe(servers, addresses, breaker_threshold=1000)


def expected_at_rcpt(reply: CorpusReply) -> set[Mailbox]:
    if reply.key in QUIRKS:
        return {Mailbox.REJECTED, Mailbox.BLOCKED}
    if reply.key in VAGUE:
        return {VAGUE[reply.key]}
    if reply.meaning is Meaning.NO_SUCH_USER:
        return {Mailbox.NO_SUCH_USER}
    if reply.meaning is Meaning.DISABLED:
        return {Mailbox.DISABLED}
    if reply.meaning is Meaning.FULL:
        return {Mailbox.FULL}
    if reply.meaning is Meaning.SENDER_REFUSED:
        return {Mailbox.SENDER_REFUSED}
    if reply.meaning in (Meaning.GREYLISTED, Meaning.TRANSIENT, Meaning.RATE_LIMITED):
        return {Mailbox.GREYLISTED, Mailbox.BLOCKED}  # deferred until the retries ran out
    return {Mailbox.BLOCKED, Mailbox.SENDER_REFUSED, Mailbox.REJECTED}


@pytest.mark.parametrize("reply", RCPT, ids=lambda r: r.key)
def test_each_rcpt_reply(rcpt_answers: dict[str, MailboxResult], reply: CorpusReply) -> None:
    answer = rcpt_answers[f"{local_of(reply)}@rcpt.stages.test"]
    assert answer.outcome in expected_at_rcpt(reply), answer.reply
    assert rcpt_answers["alice@rcpt.stages.test"].outcome is Mailbox.OK


@pytest.fixture(scope="module")
def early_answers(servers: Servers) -> dict[str, MailboxResult]:
    addresses = [
        f"{local}@{domain_of(r)}" for r in BEFORE_RCPT + RCPT_CLOSING for local in ("alice", "zed")
    ]
    return probe(servers, addresses)


@pytest.mark.parametrize("reply", BEFORE_RCPT + RCPT_CLOSING, ids=lambda r: r.key)
def test_refusals_of_us_are_never_about_the_mailbox(
    early_answers: dict[str, MailboxResult], reply: CorpusReply
) -> None:
    # alice exists and zed does not: a refusal of us says nothing about either.
    for local in ("alice", "zed"):
        outcome = early_answers[f"{local}@{domain_of(reply)}"].outcome
        assert outcome not in INVALID | {Mailbox.OK}, (local, outcome)
    if reply.meaning is Meaning.SENDER_REFUSED or reply.stage is Stage.EHLO:
        assert outcome is Mailbox.SENDER_REFUSED  # the sign to fix --helo / --mail-from


@pytest.mark.parametrize(("key", "exchange"), sorted(QUIRKS.items()))
def test_provider_quirks_on_the_providers_hosts(
    lists: DomainLists, key: str, exchange: str
) -> None:
    reply = by_key(key)
    w = world_from_dict(
        {
            "zones": {"quirk.test": {"mx": [[10, exchange]]}, exchange: {"a": ["127.0.2.9"]}},
            "smtp": {
                "127.0.2.9": {
                    "name": exchange,
                    "rcpt_text": {"unknown": reply.text},
                    "domains": {"quirk.test": {"mailboxes": ["ann"]}},
                }
            },
        }
    )
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        answers = probe(Servers(dns, smtp, lists), ["ann@quirk.test", "nobody@quirk.test"])
    assert answers["ann@quirk.test"].outcome is Mailbox.OK
    assert answers["nobody@quirk.test"].outcome is Mailbox.NO_SUCH_USER


def test_a_5xx_greeting_ends_the_domain_without_shopping_for_another_mx(lists: DomainLists) -> None:
    w = world_from_dict(
        {
            "zones": {
                "two.test": {"mx": [[10, "mx1.two.test"], [20, "mx2.two.test"]]},
                "mx1.two.test": {"a": ["127.0.2.2"]},
                "mx2.two.test": {"a": ["127.0.2.3"]},
            },
            "smtp": {
                "127.0.2.2": {"name": "mx1.two.test", "greeting": "554 No SMTP service here"},
                "127.0.2.3": {"name": "mx2.two.test", "domains": {"two.test": {"catch_all": True}}},
            },
        }
    )
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        answers = probe(Servers(dns, smtp, lists), ["ann@two.test"])
        assert answers["ann@two.test"].outcome is Mailbox.BLOCKED
        assert smtp.sessions("127.0.2.3") == 0


def test_a_421_at_rcpt_makes_the_host_rest_then_go_on(lists: DomainLists) -> None:
    # Two RCPTs a second, then "421 ... closing connection": the rest comes after a pause.
    limit = {"rcpts": 2, "seconds": 0.3, "reply": "421 4.7.0 Try again later, closing connection."}
    w = world_from_dict(
        {
            "zones": {
                "slow.test": {"mx": [[10, "mx.slow.test"]]},
                "mx.slow.test": {"a": ["127.0.3.2"]},
            },
            "smtp": {
                "127.0.3.2": {
                    "name": "mx.slow.test",
                    "rate_limit": limit,
                    "domains": {"slow.test": {"mailboxes": ["a", "b", "c", "d"]}},
                }
            },
        }
    )
    addresses = [f"{local}@slow.test" for local in ("a", "b", "c", "d", "x", "y")]
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        answers = probe(Servers(dns, smtp, lists), addresses, backoff=0.35, breaker_threshold=3)
        assert smtp.sessions("127.0.3.2") >= 3
    outcomes = [answers[a].outcome for a in addresses]
    assert outcomes == [Mailbox.OK] * 4 + [Mailbox.NO_SUCH_USER] * 2


SENDER_POLICY_WORLD: dict[str, Any] = {
    "zones": {
        "shop.test": {"mx": [[10, "mx.shop.test"]]},
        "mx.shop.test": {"a": ["127.0.4.2"]},
        "sender.test": {"mx": [[10, "mx.shop.test"]]},
    },
    "smtp": {
        "127.0.4.2": {
            "name": "mx.shop.test",
            # Postfix reject_unknown_sender_domain with smtpd_delay_reject = yes: at RCPT.
            "sender_policy": {"check": "unknown_domain"},
            "domains": {"shop.test": {"mailboxes": ["ann"]}, "sender.test": {"catch_all": True}},
        }
    },
}


@pytest.mark.parametrize(
    ("sender", "ann", "nobody"),
    [
        # No dot: the default sender on a host without a fully qualified name.
        ("postmaster@localhost", Mailbox.SENDER_REFUSED, Mailbox.SENDER_REFUSED),
        ("postmaster@vm", Mailbox.SENDER_REFUSED, Mailbox.SENDER_REFUSED),
        ("verify@sender.test", Mailbox.OK, Mailbox.NO_SUCH_USER),
    ],
)
def test_a_refused_sender_refuses_every_recipient_alike(
    lists: DomainLists, sender: str, ann: Mailbox, nobody: Mailbox
) -> None:
    w = world_from_dict(SENDER_POLICY_WORLD)
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        servers = Servers(dns, smtp, lists)
        answers = probe(servers, ["ann@shop.test", "nobody@shop.test"], sender)
        if ann is Mailbox.SENDER_REFUSED:
            assert smtp.rcpt_count() == 1  # the catch-all probe's refusal spoke for everyone
    assert answers["ann@shop.test"].outcome is ann
    assert answers["nobody@shop.test"].outcome is nobody


# A server that answers every RCPT in "no such user" words, real mailboxes included (a refusal
# of us in words of its own), beside one that tells mailboxes apart.
ALIKE = "550 5.1.1 <{rcpt}>: Recipient address rejected: User unknown in local recipient table"
ALIKE_WORLD: dict[str, Any] = {
    "zones": {
        "alike.test": {"mx": [[10, "mx.alike.test"]]},
        "mx.alike.test": {"a": ["127.0.5.2"]},
        "honest.test": {"mx": [[10, "mx.honest.test"]]},
        "mx.honest.test": {"a": ["127.0.5.3"]},
    },
    "smtp": {
        "127.0.5.2": {
            "name": "mx.alike.test",
            "block": True,
            "rcpt_text": {"blocked": ALIKE},
            "domains": {"alike.test": {"mailboxes": ["ann", "bob", "cy"]}},
        },
        "127.0.5.3": {
            "name": "mx.honest.test",
            "rcpt_text": {"unknown": ALIKE},
            "domains": {"honest.test": {"mailboxes": ["ann"]}},
        },
    },
}


@pytest.mark.parametrize(
    ("addresses", "known", "outcome"),
    [
        # Three listed addresses refused alike and none accepted: the server refuses us.
        (["ann@alike.test", "bob@alike.test", "cy@alike.test"], [], Mailbox.REFUSES_ALL),
        # Two could be two people who left; the catch-all probe's refusal does not count.
        (["ann@alike.test", "bob@alike.test"], [], Mailbox.NO_SUCH_USER),
        # An address the ledger saw delivered to, refused: the refusal is of us.
        (["ann@alike.test"], ["ann@alike.test"], Mailbox.REFUSES_ALL),
        # A server that accepts someone tells mailboxes apart: its refusals stand.
        (["x@honest.test", "y@honest.test", "z@honest.test", "ann@honest.test"], [], None),
    ],
)
def test_refusals_every_address_gets_are_not_about_mailboxes(
    lists: DomainLists, addresses: list[str], known: list[str], outcome: Mailbox | None
) -> None:
    w = world_from_dict(ALIKE_WORLD)
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        answers = probe(Servers(dns, smtp, lists), addresses, known=known)
    if outcome is not None:
        assert {answers[a].outcome for a in addresses} == {outcome}
    else:
        assert [answers[a].outcome for a in addresses] == [Mailbox.NO_SUCH_USER] * 3 + [Mailbox.OK]
