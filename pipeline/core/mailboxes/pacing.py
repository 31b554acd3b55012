"""Care for other people's mail servers: pacing, per-host session limits, rest and breakers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


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
