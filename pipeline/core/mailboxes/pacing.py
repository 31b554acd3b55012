"""Care for other people's mail servers: pacing, per-host session limits, rest and breakers."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from pipeline.core.config import VerifyConfig
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.types import Pace


def provider_of(host: str, lists: DomainLists) -> str:
    """The unit paced beside each host: every host under one registrable domain (all of
    ``*.google.com`` is one provider, however many MX hosts it names)."""
    return lists.registrable_domain(host) or host


def pace_of(
    reached: Sequence[tuple[str, int]],
    known_catch_all: Collection[str],
    mx: Mapping[str, str],
    config: VerifyConfig,
    lists: DomainLists,
) -> Pace | None:
    """How long the pacing settings make probing *reached* ((domain, addresses) in priority
    order) take at the least (server replies, greylisting and rests come on top); *mx* is each
    domain's best mail host."""
    reached = [(d, n) for d, n in reached if n]
    if not reached:
        return None
    rcpts: Counter[str] = Counter()
    hosts: defaultdict[str, set[str]] = defaultdict(set)
    asked: set[str] = set()  # domains whose catch-all probe is counted
    for domain, n in reached:
        host = mx.get(domain) or domain  # implicit MX: the domain itself
        provider = provider_of(host, lists)
        hosts[provider].add(host)
        rcpts[provider] += n
        if domain not in known_catch_all and domain not in asked:
            asked.add(domain)
            rcpts[provider] += 1

    def rate(provider: str) -> int:
        per_hosts = config.rcpts_per_minute_per_host * len(hosts[provider])
        return min(config.rcpts_per_minute_per_provider, per_hosts)

    busiest = max(rcpts, key=lambda p: (rcpts[p] / rate(p), p))
    minutes = rcpts[busiest] / rate(busiest)
    greylist = sum(config.greylist_delays)
    return Pace(minutes * 60, busiest, rcpts[busiest], rate(busiest), greylist)


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
