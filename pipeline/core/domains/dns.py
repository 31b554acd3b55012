"""Domain-level mail DNS checks with aiodns: one lookup per distinct domain.

What a domain's DNS says about mail, in the order we ask:

1. MX. The lowest preference wins (RFC 5321 §5.1); a lone ``0 .`` record is a null MX
   (RFC 7505 §3): the domain declares that it accepts no mail at all.
2. No MX records (NODATA): RFC 5321 §5.1 says to treat the domain's own A/AAAA address as an
   implicit MX of preference 0, so we ask A, then AAAA.
3. NXDOMAIN: the domain does not exist.

SERVFAIL, REFUSED and timeouts say nothing about the domain, only about the path to its
servers: they are retried with exponential backoff, and if they persist the domain is reported
as a temporary failure (a Risky reason downstream), never as a missing domain.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiodns
import aiodns.error
import pycares

from pipeline.core.config import DnsConfig
from pipeline.core.errors import ResolverUnhealthyError

log = logging.getLogger("listclean.dns")


class DnsStatus(enum.StrEnum):
    MX = "mx"
    IMPLICIT_MX = "implicit_mx"
    NULL_MX = "null_mx"
    NO_DOMAIN = "no_domain"
    NO_MAIL_HOST = "no_mail_host"
    TIMEOUT = "dns_timeout"
    SERVFAIL = "dns_servfail"
    OFFLINE = "offline"
    # Looked up while the resolver was failing its health check (see SharedResolver.watch):
    # the answer is not believed, and never cached.
    UNTRUSTED = "resolver_unhealthy"


TEMPORARY = frozenset({DnsStatus.TIMEOUT, DnsStatus.SERVFAIL})
NEGATIVE = frozenset({DnsStatus.NULL_MX, DnsStatus.NO_DOMAIN, DnsStatus.NO_MAIL_HOST})


@dataclass(frozen=True)
class DnsAnswer:
    status: DnsStatus
    # Lowest-preference exchange, lower case, no trailing dot; the domain itself for implicit MX.
    mx: str = ""
    # What a fresh lookup saw, for judging whether mail can go anywhere
    # (pipeline.core.domains.exchanges); not part of the answer's identity, and not cached.
    exchanges: tuple[str, ...] = field(default=(), compare=False)  # MX hosts, best first
    addresses: tuple[str, ...] = field(default=(), compare=False)  # an implicit MX's A records


class _Outcome(enum.Enum):
    RECORDS = enum.auto()
    NODATA = enum.auto()
    NXDOMAIN = enum.auto()
    SERVFAIL = enum.auto()
    TIMEOUT = enum.auto()


# c-ares error numbers, grouped by what they tell us about the domain.
_NXDOMAIN_CODES = frozenset({aiodns.error.ARES_ENOTFOUND})
_NODATA_CODES = frozenset({aiodns.error.ARES_ENODATA})
_TIMEOUT_CODES = frozenset({aiodns.error.ARES_ETIMEOUT})

# c-ares (1.22 on) times each try from the server's recent latency: five times the average, at
# least 250 ms, at most 5 s, doubled on each retransmission, with jitter down to half. With one
# try it would give up after 250 ms on any fast resolver, whatever dns.timeout says. So it may
# retransmit as often as its shortest schedule needs to cover dns.timeout, and the wait for an
# answer is ended here, at dns.timeout. SERVFAIL and REFUSED come back at once
# (ARES_FLAG_NOCHECKRESP) rather than spending those tries: they are retried with backoff here.
_SHORTEST_CARES_TRY = 0.125


def cares_tries(timeout: float) -> int:
    """How many times c-ares sends one query so that its shortest waits add up to *timeout*."""
    tries, covered = 1, _SHORTEST_CARES_TRY
    while covered < timeout:
        covered += _SHORTEST_CARES_TRY * 2**tries
        tries += 1
    return tries


_MX_TYPE = 15


class Resolver:
    """aiodns with our retry policy and a count of the queries actually sent."""

    def __init__(self, config: DnsConfig, sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep):
        self._config = config
        self._sleep = sleep
        self._dns = aiodns.DNSResolver(
            nameservers=list(config.nameservers) or None,
            timeout=config.timeout,
            tries=cares_tries(config.timeout),
            flags=pycares.ARES_FLAG_NOCHECKRESP,
        )
        self.queries_sent = 0

    @property
    def description(self) -> str:
        servers = self._config.nameservers
        return ", ".join(servers) if servers else "the system resolver (/etc/resolv.conf)"

    async def close(self) -> None:
        await self._dns.close()

    async def query(self, name: str, qtype: str) -> tuple[_Outcome, list[Any]]:
        """Ask once, retrying SERVFAIL/timeouts with exponential backoff."""
        outcome: _Outcome = _Outcome.TIMEOUT
        for attempt in range(self._config.attempts):
            if attempt:
                await self._sleep(self._config.backoff * 2 ** (attempt - 1))
            outcome, records = await self._query_once(name, qtype)
            if outcome not in (_Outcome.SERVFAIL, _Outcome.TIMEOUT):
                return outcome, records
        return outcome, []

    async def _query_once(self, name: str, qtype: str) -> tuple[_Outcome, list[Any]]:
        self.queries_sent += 1
        try:
            result = await asyncio.wait_for(self._dns.query_dns(name, qtype), self._config.timeout)
        except TimeoutError:
            return _Outcome.TIMEOUT, []
        except aiodns.error.DNSError as exc:
            code = exc.args[0] if exc.args else None
            if code in _NXDOMAIN_CODES:
                return _Outcome.NXDOMAIN, []
            if code in _NODATA_CODES:
                return _Outcome.NODATA, []
            if code in _TIMEOUT_CODES:
                return _Outcome.TIMEOUT, []
            # SERVFAIL, REFUSED, connection refused, malformed answers: the path is broken.
            return _Outcome.SERVFAIL, []
        records = list(result.answer)
        return (_Outcome.RECORDS, records) if records else (_Outcome.NODATA, [])


_FAILURE = {_Outcome.SERVFAIL: DnsStatus.SERVFAIL, _Outcome.TIMEOUT: DnsStatus.TIMEOUT}


async def lookup_domain(resolver: Resolver, domain: str) -> DnsAnswer:
    """The mail DNS answer for one ASCII domain."""
    outcome, records = await resolver.query(domain, "MX")
    if outcome is _Outcome.RECORDS:
        mx_records = [r.data for r in records if r.type == _MX_TYPE]
        if mx_records:
            return _pick_mx(mx_records)
        outcome = _Outcome.NODATA  # only a CNAME chain without MX data
    if outcome is _Outcome.NXDOMAIN:
        return DnsAnswer(DnsStatus.NO_DOMAIN)
    if outcome in _FAILURE:
        return DnsAnswer(_FAILURE[outcome])
    return await _implicit_mx(resolver, domain)


def _pick_mx(records: Sequence[Any]) -> DnsAnswer:
    hosts = [(r.priority, r.exchange.rstrip(".").lower()) for r in records]
    real = [h for h in hosts if h[1]]
    if not real:
        # RFC 7505 §3: a single MX with an empty (root) exchange means "no mail here".
        return DnsAnswer(DnsStatus.NULL_MX)
    # A null MX beside real ones is a misconfiguration; the real hosts still receive mail.
    # Ties on preference are broken by name so the MX column is stable across runs.
    ranked = tuple(dict.fromkeys(host for _, host in sorted(real)))
    return DnsAnswer(DnsStatus.MX, ranked[0], exchanges=ranked)


async def _implicit_mx(resolver: Resolver, domain: str) -> DnsAnswer:
    # RFC 5321 §5.1: with no MX records, the domain's own address is the mail host.
    for qtype in ("A", "AAAA"):
        outcome, records = await resolver.query(domain, qtype)
        if outcome is _Outcome.RECORDS:
            found = tuple(r.data.addr for r in records if hasattr(r.data, "addr"))
            return DnsAnswer(DnsStatus.IMPLICIT_MX, domain, addresses=found)
        if outcome is _Outcome.NXDOMAIN:
            return DnsAnswer(DnsStatus.NO_DOMAIN)
        if outcome in _FAILURE:
            return DnsAnswer(_FAILURE[outcome])
    return DnsAnswer(DnsStatus.NO_MAIL_HOST)


async def mail_hosts(resolver: Resolver, domain: str, status: DnsStatus) -> list[str]:
    """The domain's mail hosts in preference order (RFC 5321 §5.1); [] when there are none."""
    if status is DnsStatus.IMPLICIT_MX:
        return [domain]
    outcome, records = await resolver.query(domain, "MX")
    if outcome is not _Outcome.RECORDS:
        return []
    ranked = sorted(
        (r.data.priority, r.data.exchange.rstrip(".").lower())
        for r in records
        if r.type == _MX_TYPE and r.data.exchange.strip(".")
    )
    return [host for _, host in ranked]


async def host_addresses(resolver: Resolver, host: str) -> list[str]:
    """IPv4 addresses of a mail host, then IPv6 ones."""
    found: list[str] = []
    for qtype in ("A", "AAAA"):
        outcome, records = await resolver.query(host, qtype)
        if outcome is _Outcome.RECORDS:
            found.extend(r.data.addr for r in records if hasattr(r.data, "addr"))
    return found


class HostStatus(enum.StrEnum):
    """What DNS says about a host name's addresses (an MX host's, or an implicit MX's)."""

    ADDRESS = "address"  # an A or AAAA record
    NO_ADDRESS = "no_address"  # the name exists, with neither record
    NO_HOST = "no_host"  # NXDOMAIN
    TEMPORARY = "temporary"  # SERVFAIL or timeouts after retries


@dataclass(frozen=True)
class HostAnswer:
    status: HostStatus
    addresses: tuple[str, ...] = ()


async def lookup_host(
    resolver: Resolver, host: str, qtypes: Sequence[str] = ("A", "AAAA")
) -> HostAnswer:
    """The addresses of *host*: A records first, AAAA only when there is no A record."""
    status = HostStatus.NO_ADDRESS
    for qtype in qtypes:
        outcome, records = await resolver.query(host, qtype)
        found = tuple(r.data.addr for r in records if hasattr(r.data, "addr"))
        if found:  # (a CNAME chain alone is no address)
            return HostAnswer(HostStatus.ADDRESS, found)
        if outcome is _Outcome.NXDOMAIN:
            return HostAnswer(HostStatus.NO_HOST)
        if outcome in _FAILURE:
            status = HostStatus.TEMPORARY
    return HostAnswer(status)


async def lookup_domains(
    resolver: Resolver,
    domains: Iterable[str],
    concurrency: int,
    on_answer: Callable[[str, DnsAnswer], object] | None = None,
) -> dict[str, DnsAnswer]:
    """Look up every domain, at most *concurrency* at a time; *on_answer* hears each answer
    as it arrives."""
    pending = iter(domains)
    answers: dict[str, DnsAnswer] = {}

    async def worker() -> None:
        for domain in pending:
            answers[domain] = await lookup_domain(resolver, domain)
            if on_answer is not None:
                on_answer(domain, answers[domain])

    await asyncio.gather(*(worker() for _ in range(max(1, concurrency))))
    return answers


async def check_health(resolver: Resolver, canaries: Sequence[str]) -> list[DnsAnswer]:
    """Refuse to trust a resolver that cannot resolve well-known mail domains; the canaries'
    answers, so that what else needs them (the outbound SMTP check) does not ask again.

    A broken resolver answers everything with timeouts or NXDOMAIN; trusting it would turn a
    whole list Invalid. A majority of the canaries must resolve to a real MX.
    """
    if not canaries:
        return []
    answers = await asyncio.gather(*(lookup_domain(resolver, c) for c in canaries))
    good = sum(a.status is DnsStatus.MX for a in answers)
    if good * 2 > len(canaries):
        return list(answers)
    seen = ", ".join(f"{c}: {a.status.value}" for c, a in zip(canaries, answers, strict=True))
    raise ResolverUnhealthyError(
        f"The DNS resolver {resolver.description} could not resolve well-known mail domains "
        f"({seen}), so its answers cannot be trusted and no list was written. "
        "Point listclean at a working resolver with --resolver HOST[:PORT], "
        "or run with --offline to skip DNS checks."
    )


_MISSING = frozenset({DnsStatus.NO_DOMAIN, DnsStatus.NO_MAIL_HOST})


def mostly_missing(answers: Mapping[str, DnsAnswer]) -> bool:
    """Whether most *answers* say "no such domain" (NXDOMAIN) or "no mail host" (NODATA):
    what a captive or broken resolver answers for everything."""
    missing = sum(a.status in _MISSING for a in answers.values())
    return missing * 2 > len(answers) > 0


class SharedResolver:
    """The one resolver of a run or of a service: made on first use, health-checked once.

    Nothing is sent until a lookup needs the network, so a run whose answers all come from the
    caches sends no query at all, canaries included. Every query it sends, the canaries' too, is
    counted in :attr:`queries_sent`. An aiodns resolver belongs to the event loop it was made
    in: :meth:`close` it before that loop ends (a later loop then gets a fresh one).
    """

    def __init__(self, config: DnsConfig, *, check: bool = True) -> None:
        self._config = config
        self._check = check  # False: trust it unchecked (tests of the checks themselves)
        self._resolver: Resolver | None = None
        self._retired: list[Resolver] = []  # replaced, maybe still answering lookups
        self._lock = asyncio.Lock()
        self._closed_count = 0
        self._watched = False
        self._trusted = True
        self._checks = 0  # canary checks done by recheck()
        self.canaries: list[DnsAnswer] = []  # the canaries' answers, once checked

    @property
    def config(self) -> DnsConfig:
        return self._config

    @property
    def queries_sent(self) -> int:
        live = [*self._retired, *([self._resolver] if self._resolver else [])]
        return self._closed_count + sum(r.queries_sent for r in live)

    async def get(self) -> Resolver:
        """The resolver, made and checked against the canaries on the first call."""
        async with self._lock:
            if self._resolver is None:
                resolver = Resolver(self._config)
                try:
                    if self._check:
                        self.canaries = await check_health(resolver, self._config.canaries)
                except BaseException:
                    self._closed_count += resolver.queries_sent
                    await resolver.close()
                    raise
                self._resolver = resolver
            return self._resolver

    async def close(self) -> None:
        self._lock = asyncio.Lock()  # a lock, like the resolver, belongs to one event loop
        resolvers = [*self._retired, *([self._resolver] if self._resolver else [])]
        self._resolver, self._retired = None, []
        for resolver in resolvers:
            self._closed_count += resolver.queries_sent
            await resolver.close()

    # --- watching its health while serving ------------------------------------------------
    #
    # A run checks its resolver once; a service runs for months, and a resolver can turn bad
    # under it (a captive portal, a broken forwarder answering NXDOMAIN for everything). So a
    # service watches: the canaries are asked again every *interval* seconds, and at once when
    # a batch's new domains come back mostly missing (see mostly_missing). While the last check
    # failed, the resolver is not trusted: new lookups are not made, their domains are answered
    # UNTRUSTED (Risky, never cached), and nothing it said in that window is kept.

    @property
    def watched(self) -> bool:
        return self._watched

    @property
    def trusted(self) -> bool:
        """False from a failed canary check until one passes (only while watched)."""
        return self._trusted

    def watch(self, interval: float) -> Coroutine[Any, Any, None]:
        """Start watching: from now on answers are only believed while the canaries resolve.
        Returns the coroutine that checks them every *interval* seconds (run it as a task;
        cancel it before :meth:`close`)."""
        self._watched = True
        return self._watch_loop(interval)

    async def _watch_loop(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            await self.recheck()

    async def recheck(self) -> bool:
        """Ask the canaries now; whether the resolver is trusted. Callers that arrive while a
        check runs share its outcome instead of starting another."""
        asked = self._checks
        async with self._lock:
            if self._checks == asked:
                await self._check_canaries()
            return self._trusted

    async def _check_canaries(self) -> None:
        # A channel of its own, so c-ares's cache cannot answer for the resolver as it was.
        probe = Resolver(self._config)
        try:
            await check_health(probe, self._config.canaries)
            healthy = True
        except ResolverUnhealthyError:
            healthy = False
        finally:
            self._closed_count += probe.queries_sent
            await probe.close()
        self._checks += 1
        if healthy != self._trusted:
            self._trusted = healthy
            self._renew()
            if healthy:
                log.warning("The resolver passes its health check again; answers are trusted.")
            else:
                log.error(
                    "The DNS resolver %s failed its health check while serving; until it "
                    "passes again, new domains are answered Risky (resolver_unhealthy).",
                    probe.description,
                )

    def _renew(self) -> None:
        """A fresh channel: whatever c-ares cached from the resolver in its bad spell must not
        be answered later. The old one may still serve lookups in flight; it closes with us."""
        if self._resolver is not None:
            self._retired.append(self._resolver)
            self._resolver = Resolver(self._config)
