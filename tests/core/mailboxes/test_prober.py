"""SMTP probing against real mail servers on loopback: every scenario, budgets, care for hosts."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from pipeline.core.config import VerifyConfig
from pipeline.core.domains.dns import DnsStatus, Resolver
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.prober import Budget, MailboxResult, Prober, Target
from pipeline.core.mailboxes.smtp import Mailbox, Reply, SmtpSettings, classify, result_of
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from pipeline.sandbox.smtp_server import SandboxSMTP
from tests.conftest import fast_dns

HOSTS = {
    # domain -> (mx host, loopback address, smtp host settings)
    "good.test-mail.com": ("mx.good.test-mail.com", "127.0.0.21", {}),
    "catchall.test-mail.com": ("mx.catchall.test-mail.com", "127.0.0.22", {}),
    "grey.test-mail.com": ("mx.grey.test-mail.com", "127.0.0.23", {"greylist_seconds": 0.3}),
    "small.test-mail.com": ("mx.small.test-mail.com", "127.0.0.24", {"max_recipients": 3}),
    "blocked.test-mail.com": ("mx.blocked.test-mail.com", "127.0.0.25", {"block": True}),
    "busy.test-mail.com": ("mx.busy.test-mail.com", "127.0.0.26", {"throttle_sessions": 1}),
    "slow.test-mail.com": ("mx.slow.test-mail.com", "127.0.0.28", {"banner_delay_ms": 1500}),
}
MAILBOXES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace"]
MANY = [f"shop{i}.test-mail.com" for i in range(600)]  # many domains sharing one MX host


def world() -> dict[str, object]:
    zones: dict[str, object] = {
        "gmail.com": {"mx": [[5, "mx.good.test-mail.com"]]},
        "outlook.com": {"mx": [[5, "mx.good.test-mail.com"]]},
        "yahoo.com": {"mx": [[1, "mta5.am0.yahoodns.net"]]},
        "mta5.am0.yahoodns.net": {"a": ["127.0.0.29"]},
        # First MX refuses connections (nothing listens on .27), the second works.
        "fallback.test-mail.com": {
            "mx": [[10, "down.test-mail.com"], [20, "mx.good.test-mail.com"]]
        },
        "down.test-mail.com": {"a": ["127.0.0.27"]},
        "dead.test-mail.com": {"mx": [[10, "down.test-mail.com"]]},
    }
    smtp: dict[str, dict[str, object]] = {}
    for domain, (host, address, settings) in HOSTS.items():
        zones[domain] = {"mx": [[10, host]]}
        zones[host] = {"a": [address]}
        entry = smtp.setdefault(address, {"name": host, "domains": {}, **settings})
        mailboxes = {"mailboxes": MAILBOXES, "full": ["full"], "disabled": ["closed"]}
        if domain.startswith("catchall"):
            mailboxes = {"catch_all": True}
        entry["domains"][domain] = mailboxes  # type: ignore[index]
    good = smtp["127.0.0.21"]["domains"]
    for extra in ("fallback.test-mail.com", "gmail.com", "outlook.com", *MANY):
        good[extra] = {"mailboxes": MAILBOXES}  # type: ignore[index]
    for domain in MANY:
        zones[domain] = {"mx": [[10, "mx.good.test-mail.com"]]}
    return {"zones": zones, "smtp": smtp}


@dataclass
class Loopback:
    dns: SandboxDNS
    smtp: SandboxSMTP
    lists: DomainLists


@pytest.fixture(scope="module")
def loopback(lists: DomainLists) -> Iterator[Loopback]:
    w = world_from_dict(world())
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        yield Loopback(dns, smtp, lists)


def probe(
    loopback: Loopback,
    addresses: list[str],
    budget: int | None = None,
    smtp_timeout: float = 2.0,
    **overrides: object,
) -> tuple[dict[str, MailboxResult], Prober, list[str]]:
    settings: dict[str, object] = {
        "port": loopback.smtp.port,
        "timeout": 2.0,
        "greylist_delays": (0.5,),
        "backoff": 0.05,
        "rcpts_per_minute_per_host": 60_000,
        "rcpts_per_minute_per_provider": 60_000,
    }
    settings.update(overrides)
    config = VerifyConfig(**settings)  # type: ignore[arg-type]
    smtp = SmtpSettings(
        loopback.smtp.port, "probe.example.net", "bounce@example.net", smtp_timeout, True
    )
    committed: list[str] = []

    async def go() -> tuple[dict[str, MailboxResult], Prober]:
        resolver = Resolver(fast_dns(loopback.dns.address))
        try:
            prober = Prober(
                resolver,
                config,
                smtp,
                loopback.lists,
                Budget(budget),
                lambda k, r: committed.append(k),
            )
            targets = [Target(a.lower(), a, a.split("@")[1], DnsStatus.MX) for a in addresses]
            return await prober.run(targets), prober
        finally:
            await resolver.close()

    results, prober = asyncio.run(go())
    return results, prober, committed


@pytest.mark.parametrize(
    ("address", "outcome"),
    [
        ("alice@good.test-mail.com", Mailbox.OK),
        ("ALICE@good.test-mail.com", Mailbox.OK),
        ("nobody@good.test-mail.com", Mailbox.NO_SUCH_USER),
        ("full@good.test-mail.com", Mailbox.FULL),
        ("closed@good.test-mail.com", Mailbox.DISABLED),
        ("anyone@catchall.test-mail.com", Mailbox.CATCH_ALL),
        ("alice@grey.test-mail.com", Mailbox.OK),  # deferred first, accepted on the retry
        ("alice@blocked.test-mail.com", Mailbox.BLOCKED),
        ("alice@fallback.test-mail.com", Mailbox.OK),  # first MX refuses connections
        ("alice@dead.test-mail.com", Mailbox.UNREACHABLE),
        ("someone@yahoo.com", Mailbox.UNVERIFIABLE),
    ],
)
def test_each_scenario(loopback: Loopback, address: str, outcome: Mailbox) -> None:
    results, _, committed = probe(loopback, [address])
    assert results[address.lower()].outcome is outcome
    assert committed == [address.lower()]  # every final answer is handed over as it is known


def test_a_server_that_does_not_answer_in_time(loopback: Loopback) -> None:
    results, _, _ = probe(loopback, ["alice@slow.test-mail.com"], smtp_timeout=0.3)
    assert results["alice@slow.test-mail.com"].outcome is Mailbox.TIMEOUT


def test_replies_are_kept_for_the_record(loopback: Loopback) -> None:
    results, _, _ = probe(loopback, ["nobody@good.test-mail.com"])
    assert results["nobody@good.test-mail.com"].reply.startswith("550 5.1.1")


def test_greylisted_until_the_end_when_retries_come_too_soon(loopback: Loopback) -> None:
    results, _, _ = probe(loopback, ["bob@grey.test-mail.com"], greylist_delays=(0.01,))
    assert results["bob@grey.test-mail.com"].outcome is Mailbox.GREYLISTED


def test_catch_all_domains_cost_one_rcpt(loopback: Loopback) -> None:
    loopback.smtp.reset_counts()
    addresses = [f"user{i}@catchall.test-mail.com" for i in range(10)]
    results, prober, _ = probe(loopback, addresses)
    assert {r.outcome for r in results.values()} == {Mailbox.CATCH_ALL}
    assert loopback.smtp.rcpt_count() == 1 == prober.stats.rcpts
    assert prober.catch_all == {"catchall.test-mail.com": True}


def test_a_full_session_goes_on_in_a_new_one(loopback: Loopback) -> None:
    loopback.smtp.reset_counts()
    addresses = [f"{m}@small.test-mail.com" for m in MAILBOXES]
    results, prober, _ = probe(loopback, addresses, rcpts_per_session=20)
    assert {r.outcome for r in results.values()} == {Mailbox.OK}
    # 1 catch-all probe + 7 addresses, at most 3 per session: at least 3 sessions, 452s retried.
    assert loopback.smtp.sessions("127.0.0.24") >= 3
    per_address = [r for r in loopback.smtp.rcpts() if r[2] == 250]
    assert len(per_address) == 7
    # The first 452 tells how many the host takes: the later sessions ask no more.
    assert prober.session_limits == {"small.test-mail.com": 3}
    assert loopback.smtp.rcpt_count() == 1 + 7 + 1 == prober.stats.rcpts


def resumable(
    loopback: Loopback, targets: list[Target], allowance: int, stop: int | None = None, **run: Any
) -> list[tuple[str, bool, MailboxResult | None, int | None]]:
    """Probe *targets* (one domain) within *allowance*; stopped (as a killed run) at the reply
    *stop*. Each reply as a journal keeps it: recipient, asked again, answer, session limit."""
    config = VerifyConfig(
        port=loopback.smtp.port, timeout=2.0, greylist_delays=(0.5,),
        rcpts_per_minute_per_host=60_000, rcpts_per_minute_per_provider=60_000,
    )  # fmt: skip
    smtp = SmtpSettings(loopback.smtp.port, "probe.example.net", "bounce@example.net", 2.0, True)
    replies: list[tuple[str, bool, MailboxResult | None, int | None]] = []
    domain = targets[0].domain

    async def go() -> None:
        resolver = Resolver(fast_dns(loopback.dns.address))

        def replied(_: str, reply: Reply) -> None:
            again = classify(reply) in (Mailbox.DEFERRED, Mailbox.TOO_MANY)
            kept = None if again else result_of(reply)
            replies.append((reply.recipient, again, kept, prober.session_limits.get(domain)))
            if stop is not None and len(replies) >= stop:
                task.cancel()

        prober = Prober(
            resolver, config, smtp, loopback.lists, Budget(None), lambda *_: None,
            on_replied=replied,
        )  # fmt: skip
        task = asyncio.ensure_future(prober.run(targets, allowances={domain: allowance}, **run))
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await resolver.close()

    asyncio.run(go())
    return replies


def asked_of(loopback: Loopback) -> set[str]:
    return {r for _, r, _ in loopback.smtp.rcpts() if not r.startswith("lc-probe")}


@pytest.mark.parametrize("allowance", [14, 16, 17, 19, 21])
def test_a_run_resumed_mid_session_asks_what_an_uninterrupted_one_asks(
    loopback: Loopback, allowance: int
) -> None:
    """A run killed with an RCPT in flight, resumed with what it committed (the replies it
    got, charged, and the session limit it had learned), asks the addresses an uninterrupted
    run asks: the domain's sessions ask no more than its server takes, so an address costs one
    RCPT wherever a session starts, and neither an RCPT in flight that would have had a 452
    nor a session cut where the server would not have cut it leaves the resumed run an RCPT
    to spare for an address the uninterrupted run does not reach."""
    domain = "small.test-mail.com"
    targets = [
        Target(f"user{i}@{domain}", f"user{i}@{domain}", domain, DnsStatus.MX) for i in range(20)
    ]
    loopback.smtp.reset_counts()
    resumable(loopback, targets, allowance)
    uninterrupted = asked_of(loopback)
    assert len(uninterrupted) < len(targets)  # the allowance binds
    for stop in range(3, allowance):
        loopback.smtp.reset_counts()
        committed = resumable(loopback, targets, allowance, stop)[:-1]  # the last in flight
        earlier = {r: kept for r, _, kept, _ in committed if kept and "lc-probe" not in r}
        limits = [limit for *_, limit in committed if limit is not None]
        resumable(
            loopback, targets, allowance - len(committed), known_catch_all={domain: False},
            earlier=earlier, session_limits={domain: min(limits)} if limits else None,
        )  # fmt: skip
        assert asked_of(loopback) == uninterrupted, stop


def test_a_blocking_host_trips_the_breaker(loopback: Loopback) -> None:
    loopback.smtp.reset_counts()
    addresses = [f"user{i}@blocked.test-mail.com" for i in range(60)]
    results, _, _ = probe(loopback, addresses, rcpts_per_session=5, breaker_threshold=3)
    assert {r.outcome for r in results.values()} == {Mailbox.BLOCKED}
    # Three sessions of refusals, then no more probing: far fewer RCPTs than addresses.
    assert loopback.smtp.rcpt_count() <= 1 + 3 * 5


def test_sessions_per_host_are_capped(loopback: Loopback) -> None:
    loopback.smtp.reset_counts()
    domains = ["good.test-mail.com", "fallback.test-mail.com", "gmail.com", "outlook.com"]
    addresses = [f"{m}@{d}" for d in domains for m in MAILBOXES]
    results, _, _ = probe(loopback, addresses, sessions_per_host=2, rcpts_per_session=2)
    assert {r.outcome for r in results.values()} == {Mailbox.OK}
    assert loopback.smtp.max_concurrent_sessions("127.0.0.21") <= 2


def test_a_throttling_host_is_given_time(loopback: Loopback) -> None:
    addresses = [f"{m}@busy.test-mail.com" for m in MAILBOXES]
    results, _, _ = probe(loopback, addresses, sessions_per_host=3, rcpts_per_session=2)
    # The host answers 421 to the extra sessions; resting and retrying still gets answers.
    outcomes = {r.outcome for r in results.values()}
    assert outcomes <= {Mailbox.OK, Mailbox.BLOCKED}
    assert Mailbox.OK in outcomes


def test_the_budget_caps_rcpts_and_says_who_was_left_out(loopback: Loopback) -> None:
    loopback.smtp.reset_counts()
    addresses = [f"{m}@good.test-mail.com" for m in MAILBOXES]
    results, prober, committed = probe(loopback, addresses, budget=4)
    assert loopback.smtp.rcpt_count() == 4 == prober.budget.spent
    left_out = [k for k, r in results.items() if r.outcome is Mailbox.NOT_VERIFIED]
    assert len(left_out) == 4  # 1 catch-all probe + 3 addresses were affordable
    assert not set(left_out) & set(committed)  # "not reached" is never remembered


def test_many_domains_at_once_do_not_flood_the_resolver(loopback: Loopback) -> None:
    loopback.dns.reset_counts()
    results, _, _ = probe(loopback, [f"alice@{d}" for d in MANY])
    assert {r.outcome for r in results.values()} == {Mailbox.OK}
    # One MX question per domain, and the shared host's address asked once (A, then AAAA).
    host_lookups = [q for q in loopback.dns.queries() if q[0] == "mx.good.test-mail.com"]
    assert len(host_lookups) == 2


def test_never_data(loopback: Loopback) -> None:
    probe(loopback, [f"{m}@good.test-mail.com" for m in MAILBOXES])
    assert loopback.smtp.data_attempts() == 0


def test_pacing_spaces_rcpts_per_host() -> None:
    from pipeline.core.mailboxes.prober import Pacer

    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    async def go() -> None:
        pacer = Pacer(120, lambda: now[0], sleep)  # one every 0.5 s
        for _ in range(4):
            await pacer.wait()

    asyncio.run(go())
    assert slept == [0.5, 0.5, 0.5]
