"""Micro-batching: concurrent requests share one pass of the vectorized engine.

The engine is built for frames; a pass costs a few milliseconds of fixed overhead whatever the
number of rows. So requests are gathered and verified together, each waiting request getting
its own row back:

- the first request of a batch waits up to ``max_wait`` seconds for others to join, and a batch
  leaves early once ``max_size`` requests are waiting, or once no new request has come for
  ``quiet`` seconds (the burst of requests the clients sent is over).

The wait is short (milliseconds) next to a pass, and it is what lets batches grow under load:
without it, each pass's end would release just the few requests that arrived meanwhile. The
wait is cut short when *ready* says no more requests can come (the service: every open
connection has a request waiting here), since waiting longer would only add latency.

When the wait ends, the batch still lets the event loop turn :data:`SETTLE_TURNS` times before
it leaves. A request that has been read from its socket takes a few turns to reach
:meth:`MicroBatcher.submit` (aiohttp hands it to a task, which starts on the next turn). On a
busy host the loop gets the CPU late, and the wait's end comes in the same turn as the reads of
many requests. Without these turns the batch left without them: 32 to 42 requests a batch
instead of 63 under the service bench's load, each request bearing twice the pass's fixed
cost. The turns cost microseconds when nothing else is waiting.

Batches run as separate tasks, so a batch waiting on a slow DNS answer never holds up the next.

A failure touches only the request that caused it: when a pass fails, its batch is split in
halves and each half is run again, down to the single item that fails, which alone gets the
exception. One bad item among *n* costs about 2·log2(*n*) extra passes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

# Turns of the event loop a batch waits, once its wait is over, for the requests already read.
SETTLE_TURNS = 3

T = TypeVar("T")
R = TypeVar("R")


class MicroBatcher(Generic[T, R]):
    def __init__(
        self,
        run: Callable[[Sequence[T]], Awaitable[Sequence[R]]],
        max_size: int,
        max_wait: float = 0.002,
        ready: Callable[[int], bool] | None = None,
        quiet: float | None = None,
    ) -> None:
        self._run = run
        self._max_size = max_size
        self._max_wait = max_wait
        self._ready = ready  # (items waiting) -> whether to leave without waiting further
        self._quiet = quiet if quiet is not None else max_wait  # a lull this long ends the wait
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._first = 0.0  # when the oldest waiting item came
        self._last = 0.0  # when the newest one came
        self._running: set[asyncio.Task[None]] = set()

    async def submit(self, item: T) -> R:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        self._pending.append((item, future))
        self._last = loop.time()
        waiting = len(self._pending)
        if waiting >= self._max_size or (self._ready is not None and self._ready(waiting)):
            self._flush()
        elif self._timer is None:
            self._first = self._last
            self._timer = loop.call_at(self._last + min(self._quiet, self._max_wait), self._due)
        return await future

    def _due(self) -> None:
        """Leave once no item came for ``quiet`` seconds, or the oldest waited ``max_wait``."""
        self._timer = None
        if not self._pending:
            return
        deadline = min(self._last + self._quiet, self._first + self._max_wait)
        loop = asyncio.get_running_loop()
        if loop.time() >= deadline:
            loop.call_soon(self._flush_after, SETTLE_TURNS)
        else:  # items kept coming: wait for the lull (or the cap)
            self._timer = loop.call_at(deadline, self._due)

    def _flush_after(self, turns: int) -> None:
        """Flush once the event loop has turned *turns* more times (see the module's text)."""
        if turns > 0:
            asyncio.get_running_loop().call_soon(self._flush_after, turns - 1)
        else:
            self._flush()

    async def drain(self) -> None:
        """Wait for every batch in flight (used on shutdown)."""
        while self._pending or self._running:
            if self._pending:
                self._flush()
            await asyncio.gather(*self._running, return_exceptions=True)

    def _flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._pending:
            batch = self._pending[: self._max_size]
            del self._pending[: self._max_size]
            task = asyncio.get_running_loop().create_task(self._serve(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _serve(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._run([item for item, _ in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"{len(results)} results for a batch of {len(batch)}")
        except Exception as exc:
            if len(batch) > 1:
                half = len(batch) // 2
                await asyncio.gather(self._serve(batch[:half]), self._serve(batch[half:]))
                return
            if not batch[0][1].done():  # the one item that fails learns why; none hangs
                batch[0][1].set_exception(exc)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():  # the client may have gone away
                future.set_result(result)
