"""Address-level verification by SMTP: many addresses, carefully, within budgets.

Addresses are grouped by domain and each domain's addresses are asked of its mail hosts in
preference order, several recipients per session. Care for other people's servers is built in:

- at most ``sessions_per_host`` sessions open to one host, and RCPTs paced per host and per
  provider (all hosts under one registrable domain: every ``*.google.com`` is one provider);
- the next MX host is tried only when a host cannot be reached or answers 4xx at connect,
  never after a 5xx (RFC 5321 §5.1: a 5xx is the domain's answer, not one host's trouble);
- a 421 or a 4.7.x makes the host rest (``backoff``, doubling), and ``breaker_threshold`` policy
  refusals in a row stop probing it: its addresses become Risky ``smtp_blocked``;
- one random local part per domain tells whether it accepts everything (catch-all), and then
  none of its addresses is asked;
- deferred (greylisted) addresses are asked again after ``greylist_delays`` while the other
  domains go on;
- a run never sends more RCPTs than its budget; addresses it did not reach say so.

Each final answer is handed to ``on_result`` as soon as it is known, so a killed run loses
nothing it had learned.
"""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from pipeline.core.config import VerifyConfig
from pipeline.core.dns import Resolver, host_addresses, mail_hosts
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.smtp import (
    Reply,
    SessionResult,
    SmtpSettings,
    classify,
    probe_session,
    result_of,
)
from pipeline.core.mailboxes.types import Budget, Mailbox, MailboxResult, Target


class Pacer:
    """Spaces events at most *per_minute* a minute."""

    def __init__(
        self,
        per_minute: int,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[object]],
    ) -> None:
        self._gap = 60.0 / per_minute
        self._next = 0.0
        self._clock = clock
        self._sleep = sleep

    async def wait(self) -> None:
        now = self._clock()
        at = max(now, self._next)
        self._next = at + self._gap
        if at > now:
            await self._sleep(at - now)


@dataclass
class HostState:
    sessions: asyncio.Semaphore
    pacer: Pacer
    strikes: int = 0  # policy refusals in a row
    rest_until: float = 0.0
    sessions_opened: int = 0

    def tripped(self, threshold: int) -> bool:
        return self.strikes >= threshold


@dataclass
class ProbeStats:
    rcpts: int = 0
    sessions: int = 0
    sessions_per_host: dict[str, int] = field(default_factory=dict)


ResultSink = Callable[[str, MailboxResult], None]
_NOT_VERIFIED = MailboxResult(Mailbox.NOT_VERIFIED, "the run's RCPT budget is spent")


class Prober:
    """Verifies mailboxes by SMTP for one run."""

    def __init__(
        self,
        resolver: Resolver,
        config: VerifyConfig,
        settings: SmtpSettings,
        lists: DomainLists,
        budget: Budget,
        on_result: ResultSink,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        dns_concurrency: int = 100,
        on_catch_all: Callable[[str, bool], None] | None = None,
    ) -> None:
        self._resolver = resolver
        self._config = config
        self._settings = settings
        self._lists = lists
        self.budget = budget
        self._on_result = on_result
        self._on_catch_all = on_catch_all  # each domain's catch-all answer, as it is learned
        self._clock = clock
        self._sleep = sleep
        self._hosts: dict[str, HostState] = {}
        self._providers: dict[str, Pacer] = {}
        self._addresses: dict[str, asyncio.Future[list[str]]] = {}
        # Thousands of domains start at once; their DNS questions go out a bounded few at a time.
        self._dns = asyncio.Semaphore(dns_concurrency)
        self.stats = ProbeStats()
        self.catch_all: dict[str, bool] = {}  # learned this run, for the caller to cache

    async def run(
        self, targets: Sequence[Target], known_catch_all: dict[str, bool] | None = None
    ) -> dict[str, MailboxResult]:
        """Final answers for *targets*, keyed by ``Target.key``. Targets come in priority order."""
        self.catch_all.update(known_catch_all or {})
        results: dict[str, MailboxResult] = {}
        by_domain: dict[str, list[Target]] = defaultdict(list)
        for target in targets:
            by_domain[target.domain].append(target)

        def finish(target: Target, result: MailboxResult) -> None:
            results[target.key] = result
            if result.outcome is not Mailbox.NOT_VERIFIED:
                self._on_result(target.key, result)

        # Domains start in priority order; the budget is taken in that order too.
        await asyncio.gather(*(self._domain(d, ts, finish) for d, ts in by_domain.items()))
        return results

    async def _domain(
        self, domain: str, targets: list[Target], finish: Callable[[Target, MailboxResult], None]
    ) -> None:
        async with self._dns:
            hosts = await mail_hosts(self._resolver, domain, targets[0].dns_status)
        if not hosts:
            for t in targets:
                finish(t, MailboxResult(Mailbox.UNREACHABLE, "no reachable mail host"))
            return
        if self._lists.registrable_domain(hosts[0]) in self._config.unverifiable_providers:
            for t in targets:
                finish(t, MailboxResult(Mailbox.UNVERIFIABLE, f"{hosts[0]} accepts every RCPT"))
            return
        failure = await self._learn_catch_all(domain, hosts)
        if failure is not None or self.catch_all.get(domain):
            result = failure or MailboxResult(Mailbox.CATCH_ALL, f"{domain} accepts any address")
            for t in targets:
                finish(t, result)
            return
        deferred = await self._ask_all(hosts, targets, finish)
        for delay in self._config.greylist_delays:
            if not deferred:
                return
            await self._sleep(delay)
            deferred = await self._ask_all(hosts, deferred, finish)
        for t in deferred:
            finish(t, MailboxResult(Mailbox.GREYLISTED, "still deferred after every retry"))

    async def _learn_catch_all(self, domain: str, hosts: list[str]) -> MailboxResult | None:
        """Ask for a local part nobody has; a failure to ask is returned for every address."""
        if domain in self.catch_all:
            return None
        probe = f"lc-probe-{secrets.token_hex(6)}@{domain}"
        replies, failure, _ = await self._ask(hosts, [probe])
        if probe in replies:
            outcome = classify(replies[probe])
            if outcome is not Mailbox.DEFERRED:  # deferred: learn nothing, ask the addresses
                self.catch_all[domain] = outcome is Mailbox.OK
                if self._on_catch_all is not None:
                    self._on_catch_all(domain, outcome is Mailbox.OK)
            return None
        return failure

    async def _ask_all(
        self,
        hosts: list[str],
        targets: list[Target],
        finish: Callable[[Target, MailboxResult], None],
    ) -> list[Target]:
        """Ask about every target; returns the deferred ones."""
        by_address = {t.address: t for t in targets}
        pending = list(by_address)
        deferred: list[Target] = []
        while pending:
            if self.budget.exhausted:
                for address in pending:
                    finish(by_address[address], _NOT_VERIFIED)
                break
            chunk = pending[: self._config.rcpts_per_session]

            def answered(address: str, reply: Reply) -> None:
                # Kept the moment it arrives: a run killed mid-session loses only what is in
                # flight (RFC 5321 has no way to ask the same server "what did you say?").
                outcome = classify(reply)
                if outcome is Mailbox.DEFERRED:
                    deferred.append(by_address[address])
                else:
                    finish(by_address[address], result_of(reply, outcome))

            _, failure, unasked = await self._ask(hosts, chunk, answered)
            rest = pending[len(chunk) :]
            if failure is None and unasked and self.budget.exhausted:
                failure = _NOT_VERIFIED
            if failure is None:
                pending = unasked + rest  # a session that filled up (452 4.5.3): go on in a new one
                continue
            for address in unasked + rest:
                finish(by_address[address], failure)
            break
        return deferred

    async def _ask(
        self,
        hosts: list[str],
        recipients: list[str],
        on_reply: Callable[[str, Reply], None] | None = None,
    ) -> tuple[dict[str, Reply], MailboxResult | None, list[str]]:
        """One session with the first host that lets us in: replies, a failure, the unasked.

        Without a failure, the unasked recipients (a full session, a 421 midway, the budget)
        are the caller's to ask again or to give up on.
        """
        failure = MailboxResult(Mailbox.UNREACHABLE, "no mail host could be reached")
        for host in hosts:
            state = self._host(host)
            if state.tripped(self._config.breaker_threshold):
                return {}, MailboxResult(Mailbox.BLOCKED, f"{host} keeps refusing us"), recipients
            addresses = await self._host_addresses(host)
            if not addresses:
                continue
            session = await self._session(host, state, addresses[0], recipients, on_reply)
            self._judge_host(state, session)
            if session.replies or session.failure is None:
                return session.replies, None, session.unasked(recipients)
            closing = session.closing_reply
            outcome = Mailbox.BLOCKED if session.failure is Mailbox.TOO_MANY else session.failure
            failure = (
                result_of(closing, outcome)
                if closing
                else MailboxResult(outcome, f"{host}: {outcome.value}")
            )
            if closing is not None and closing.code >= 500:
                break  # a 5xx is the domain's answer: do not shop around for a better one
        return {}, failure, recipients

    async def _session(
        self,
        host: str,
        state: HostState,
        address: str,
        recipients: list[str],
        on_reply: Callable[[str, Reply], None] | None,
    ) -> SessionResult:
        async with state.sessions:
            rest = state.rest_until - self._clock()
            if rest > 0:
                await self._sleep(rest)
            state.sessions_opened += 1
            self.stats.sessions += 1
            self.stats.sessions_per_host[host] = state.sessions_opened
            provider = self._provider(host)

            async def pace() -> bool:
                if not self.budget.take():
                    return False
                await state.pacer.wait()
                await provider.wait()
                self.stats.rcpts += 1
                return True

            return await probe_session(address, recipients, self._settings, pace, on_reply)

    def _judge_host(self, state: HostState, session: SessionResult) -> None:
        """Count policy refusals in a row; a 421 or 4.7.x also makes the host rest."""
        closing = session.closing_reply
        refused = [r for r in session.replies.values() if classify(r) is Mailbox.BLOCKED]
        blocked = closing is not None and classify(closing) is Mailbox.BLOCKED
        if not blocked and not (refused and len(refused) == len(session.replies)):
            state.strikes = 0
            return
        state.strikes += 1
        if blocked and closing is not None and closing.code < 500:
            state.rest_until = self._clock() + self._config.backoff * 2 ** (state.strikes - 1)

    def _host(self, host: str) -> HostState:
        if host not in self._hosts:
            self._hosts[host] = HostState(
                asyncio.Semaphore(self._config.sessions_per_host),
                Pacer(self._config.rcpts_per_minute_per_host, self._clock, self._sleep),
            )
        return self._hosts[host]

    def _provider(self, host: str) -> Pacer:
        provider = self._lists.registrable_domain(host) or host
        if provider not in self._providers:
            self._providers[provider] = Pacer(
                self._config.rcpts_per_minute_per_provider, self._clock, self._sleep
            )
        return self._providers[provider]

    async def _host_addresses(self, host: str) -> list[str]:
        # One lookup per host however many domains share it: later askers await the first.
        if host not in self._addresses:
            self._addresses[host] = asyncio.ensure_future(self._lookup_host(host))
        found = await self._addresses[host]
        if not found:  # a failed lookup is not remembered: the next domain asks again
            self._addresses.pop(host, None)
        return found

    async def _lookup_host(self, host: str) -> list[str]:
        async with self._dns:
            found = await host_addresses(self._resolver, host)
        if self._settings.loopback_only:
            found = [a for a in found if ipaddress.ip_address(a).is_loopback]
        return found
