"""Address-level verification by SMTP: many addresses, carefully, within budgets.

Addresses are grouped by domain and each domain's addresses are asked of its mail hosts in
preference order, several recipients per session. Care for other people's servers is built in
(:mod:`pipeline.core.mailboxes.pacing`):

- at most ``sessions_per_host`` sessions open to one host, and RCPTs paced per host and per
  provider (all hosts under one registrable domain: every ``*.google.com`` is one provider);
- the next MX host is tried only when a host cannot be reached or answers 4xx at connect,
  never after a 5xx greeting or a refusal later on (RFC 5321 §5.1: a 5xx is the domain's
  answer, not one host's trouble);
- a 421 (at any stage) or a 4.7.x makes the host rest (``backoff``, doubling) before the
  addresses it did not answer are asked again, and ``breaker_threshold`` policy refusals in a
  row stop probing it: its addresses become Risky ``smtp_blocked``;
- one random local part per domain tells whether it accepts everything (catch-all), and then
  none of its addresses is asked; if that probe is refused because of our sender, every address
  would be, and none is asked either;
- deferred (greylisted) addresses are asked again after ``greylist_delays`` while the other
  domains go on;
- a run never sends more RCPTs than its budget, and a domain never more than its allowance
  (:func:`pipeline.core.mailboxes.step.allowances`); addresses it did not reach say so.

Each final answer is handed to ``on_result`` as soon as it is known, so a killed run loses
nothing it had learned; "no such user" answers wait until the domain shows it tells mailboxes
apart (:mod:`pipeline.core.mailboxes.refusals`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import time
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence

from pipeline.core.config import VerifyConfig
from pipeline.core.domains.dns import Resolver, host_addresses, mail_hosts
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.pacing import HostState, Pacer, ProbeStats, provider_of
from pipeline.core.mailboxes.refusals import DomainAnswers, Finish
from pipeline.core.mailboxes.smtp import (
    Reply,
    SessionResult,
    SmtpSettings,
    Stage,
    classify,
    probe_session,
    result_of,
)
from pipeline.core.mailboxes.types import Budget, Mailbox, MailboxResult, Target

__all__ = ["Budget", "MailboxResult", "Pacer", "ProbeStats", "Prober", "Target"]


ResultSink = Callable[[str, MailboxResult], None]
_NOT_VERIFIED = MailboxResult(Mailbox.NOT_VERIFIED, "the run's RCPT budget is spent")
_OF_US = frozenset({Mailbox.BLOCKED, Mailbox.SENDER_REFUSED})  # refusals that count as strikes


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
        on_replied: Callable[[str, Reply], None] | None = None,
    ) -> None:
        self._resolver = resolver
        self._config = config
        self._settings = settings
        self._lists = lists
        self.budget = budget
        self._on_result = on_result
        self._on_catch_all = on_catch_all  # each domain's catch-all answer, as it is learned
        # Each RCPT's reply (and its domain) the moment it arrives, whatever it is: a caller
        # that keeps them knows what was spent on each address, what is in flight excluded.
        self._on_replied = on_replied
        self._clock = clock
        self._sleep = sleep
        self._hosts: dict[str, HostState] = {}
        self._providers: dict[str, Pacer] = {}
        self._addresses: dict[str, asyncio.Future[list[str]]] = {}
        # Thousands of domains start at once; their DNS questions go out a bounded few at a time.
        self._dns = asyncio.Semaphore(dns_concurrency)
        self.stats = ProbeStats()
        self.catch_all: dict[str, bool] = {}  # learned this run, for the caller to cache
        self._probes: dict[str, str] = {}  # each domain's random catch-all probe address
        self._left: dict[str, int] | None = None  # what each domain may still spend
        self._earlier: dict[str, MailboxResult] = {}
        self.spent: Counter[str] = Counter()  # RCPTs sent per domain
        self.replied: Counter[str] = Counter()  # RCPTs answered per domain (any reply)

    async def run(
        self,
        targets: Sequence[Target],
        known_catch_all: dict[str, bool] | None = None,
        allowances: Mapping[str, int] | None = None,
        earlier: Mapping[str, MailboxResult] | None = None,
    ) -> dict[str, MailboxResult]:
        """Final answers for *targets*, keyed by ``Target.key``. Targets come in priority order;
        *allowances*: what each domain may spend (None: the budget alone limits); *earlier*:
        replies a run before this one got and did not keep (a "no such user" held back until
        its domain tells mailboxes apart), which count as this run's and are not asked again."""
        self.catch_all.update(known_catch_all or {})
        self._left = dict(allowances) if allowances is not None else None
        self._earlier = dict(earlier or {})
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

    async def _domain(self, domain: str, targets: list[Target], finish: Finish) -> None:
        async with self._dns:
            hosts = await mail_hosts(self._resolver, domain, targets[0].dns_status)
        answers = DomainAnswers(finish, {t.key for t in targets if t.known_to_exist})
        early = self._unaskable(domain, hosts)
        if early is None:
            early = await self._learn_catch_all(domain, hosts, answers)
        if early is not None or self.catch_all.get(domain):
            result = early or MailboxResult(Mailbox.CATCH_ALL, f"{domain} accepts any address")
            for t in targets:
                finish(t, result)
            return
        for t in targets:
            if t.key in self._earlier:
                answers.add(t, self._earlier[t.key])
        unasked = [t for t in targets if t.key not in self._earlier]
        deferred = await self._ask_all(hosts, unasked, answers.add) if unasked else []
        for delay in self._config.greylist_delays:
            if not deferred and not answers.awaiting_catch_all:
                break
            await self._sleep(delay)
            if not answers.catch_all_known:
                await self._learn_catch_all(domain, hosts, answers)
            if deferred:
                deferred = await self._ask_all(hosts, deferred, answers.add)
        for t in deferred:
            answers.add(t, MailboxResult(Mailbox.GREYLISTED, "still deferred after every retry"))
        answers.close()

    def _unaskable(self, domain: str, hosts: list[str]) -> MailboxResult | None:
        if not hosts:
            return MailboxResult(Mailbox.UNREACHABLE, "no reachable mail host")
        if self._lists.registrable_domain(hosts[0]) in self._config.unverifiable_providers:
            return MailboxResult(Mailbox.UNVERIFIABLE, f"{hosts[0]} accepts every RCPT")
        return None

    async def _learn_catch_all(
        self, domain: str, hosts: list[str], answers: DomainAnswers
    ) -> MailboxResult | None:
        """Ask for a local part nobody has; an answer that holds for every address (a failure
        to ask, a refusal of our sender) is returned."""
        if domain in self.catch_all:
            return None
        # The same probe address on every round: greylisting remembers (sender, recipient).
        probe = self._probes.setdefault(domain, f"lc-probe-{secrets.token_hex(6)}@{domain}")
        replies, failure, _ = await self._ask(domain, hosts, [probe])
        if probe not in replies:
            if failure is None or failure.outcome is Mailbox.DEFERRED:
                answers.catch_all_known = False  # not asked yet (a 421): learn it later
                return None
            return failure
        reply = replies[probe]
        outcome = classify(reply)
        if outcome is Mailbox.SENDER_REFUSED:
            return result_of(reply, outcome)  # about us: every address would get it
        if outcome is Mailbox.DEFERRED:
            answers.catch_all_known = False  # greylisting: learn it on a later round
            return None
        self.catch_all[domain] = outcome is Mailbox.OK
        if self._on_catch_all is not None:
            self._on_catch_all(domain, outcome is Mailbox.OK)
        answers.catch_all_learned(outcome is Mailbox.OK)
        return None

    async def _ask_all(
        self, hosts: list[str], targets: list[Target], finish: Finish
    ) -> list[Target]:
        """Ask about every target; returns the deferred ones."""
        by_address = {t.address: t for t in targets}
        pending = list(by_address)
        deferred: list[Target] = []
        domain = targets[0].domain if targets else ""
        while pending:
            if self._exhausted(domain):
                for address in pending:
                    finish(by_address[address], _NOT_VERIFIED)
                break
            chunk = pending[: self._config.rcpts_per_session]

            def answered(address: str, reply: Reply) -> None:
                # Handed on the moment it arrives: a run killed mid-session loses only what is
                # in flight (RFC 5321 has no way to ask a server "what did you say?").
                outcome = classify(reply)
                if outcome is Mailbox.DEFERRED:
                    deferred.append(by_address[address])
                else:
                    finish(by_address[address], result_of(reply, outcome))

            _, failure, unasked = await self._ask(domain, hosts, chunk, answered)
            left = unasked + pending[len(chunk) :]
            if failure is None and unasked and self._exhausted(domain):
                failure = _NOT_VERIFIED
            if failure is None:
                pending = left  # a full session (452 4.5.3) or a 421: go on in a new one
                continue
            if failure.outcome is Mailbox.DEFERRED:
                deferred.extend(by_address[a] for a in left)
            else:
                for address in left:
                    finish(by_address[address], failure)
            break
        return deferred

    def _exhausted(self, domain: str) -> bool:
        left = self._left
        return self.budget.exhausted or (left is not None and left.get(domain, 0) <= 0)

    def _take(self, domain: str) -> bool:
        """One RCPT of *domain*'s, if its allowance and the budget allow it."""
        if self._exhausted(domain) or not self.budget.take():
            return False
        if self._left is not None:
            self._left[domain] -= 1
        self.spent[domain] += 1
        return True

    async def _ask(
        self,
        domain: str,
        hosts: list[str],
        recipients: list[str],
        on_reply: Callable[[str, Reply], None] | None = None,
    ) -> tuple[dict[str, Reply], MailboxResult | None, list[str]]:
        """One session with the first host that lets us in: replies, a failure, the unasked.

        Without a failure, the unasked recipients (a full session, a 421, the budget) are the
        caller's to ask again or to give up on.
        """
        failure = MailboxResult(Mailbox.UNREACHABLE, "no mail host could be reached")
        closed = False  # a 421 closed the last session: rest, then ask again
        for host in hosts:
            state = self._host(host)
            if state.tripped(self._config.breaker_threshold):
                return {}, MailboxResult(Mailbox.BLOCKED, f"{host} keeps refusing us"), recipients
            addresses = await self._host_addresses(host)
            if not addresses:
                continue
            session = await self._session(domain, host, state, addresses[0], recipients, on_reply)
            self._judge_host(state, session)
            if session.replies or session.failure is None:
                return session.replies, None, session.unasked(recipients)
            closing = session.closing_reply
            closed = closing is not None and closing.code == 421
            outcome = Mailbox.BLOCKED if session.failure is Mailbox.TOO_MANY else session.failure
            failure = (
                result_of(closing, outcome)
                if closing
                else MailboxResult(outcome, f"{host}: {outcome.value}")
            )
            if closing is not None and (closing.code >= 500 or closing.stage is not Stage.GREETING):
                break  # the domain's answer, or one about us: another MX would say the same
        if closed:
            return {}, None, recipients
        return {}, failure, recipients

    async def _session(
        self,
        domain: str,
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
                if not self._take(domain):
                    return False
                await state.pacer.wait()
                await provider.wait()
                self.stats.rcpts += 1
                return True

            def replied(recipient: str, reply: Reply) -> None:
                self._replied(domain, reply)
                if on_reply is not None:
                    on_reply(recipient, reply)

            session = await probe_session(address, recipients, self._settings, pace, host, replied)
            closing = session.closing_reply
            if closing is not None and closing.stage is Stage.RCPT:  # a 452 or 421 to a RCPT
                self._replied(domain, closing)
            return session

    def _replied(self, domain: str, reply: Reply) -> None:
        self.replied[domain] += 1
        if self._on_replied is not None:
            self._on_replied(domain, reply)

    def _judge_host(self, state: HostState, session: SessionResult) -> None:
        """Count refusals of us in a row; a 421 or 4.7.x also makes the host rest.

        A session that got answers about mailboxes starts the count again: a host that takes a
        few RCPTs and then asks us to slow down (421) rests and goes on, and never trips.
        """
        closing = session.closing_reply
        answered = any(classify(r) not in _OF_US for r in session.replies.values())
        blocked = closing is not None and classify(closing) in _OF_US
        if answered or not (blocked or session.replies):
            state.strikes = 0
        if not blocked and (answered or not session.replies):
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
        provider = provider_of(host, self._lists)
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
