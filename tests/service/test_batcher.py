"""Micro-batching: concurrent submissions share runs; failures reach every waiter."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from pipeline.service.batcher import SETTLE_TURNS, MicroBatcher


def test_concurrent_items_share_runs_and_get_their_own_results() -> None:
    runs: list[list[int]] = []

    async def double(items: Sequence[int]) -> list[int]:
        runs.append(list(items))
        await asyncio.sleep(0)
        return [2 * i for i in items]

    async def scenario() -> list[int]:
        batcher = MicroBatcher(double, max_size=10, max_wait=0.01)
        return await asyncio.gather(*(batcher.submit(i) for i in range(25)))

    assert asyncio.run(scenario()) == [2 * i for i in range(25)]
    assert [len(r) for r in runs] == [10, 10, 5]  # full batches leave at once, the rest waits


def test_a_failed_run_fails_every_waiter_of_that_batch() -> None:
    async def broken(items: Sequence[int]) -> list[int]:
        raise RuntimeError("engine down")

    async def scenario() -> list[object]:
        batcher = MicroBatcher(broken, max_size=4, max_wait=0.001)
        return await asyncio.gather(*(batcher.submit(i) for i in range(3)), return_exceptions=True)

    results = asyncio.run(scenario())
    assert all(isinstance(r, RuntimeError) for r in results)


def test_drain_waits_for_batches_in_flight() -> None:
    done: list[int] = []

    async def slow(items: Sequence[int]) -> list[int]:
        await asyncio.sleep(0.02)
        done.extend(items)
        return list(items)

    async def scenario() -> None:
        batcher = MicroBatcher(slow, max_size=100, max_wait=0.001)
        waiters = [asyncio.ensure_future(batcher.submit(i)) for i in range(5)]
        await asyncio.sleep(0)
        await batcher.drain()
        assert sorted(done) == list(range(5))
        await asyncio.gather(*waiters)

    asyncio.run(scenario())


@pytest.mark.parametrize("wait", [0.0, 0.005])
def test_a_lone_request_is_answered_within_the_wait(wait: float) -> None:
    async def echo(items: Sequence[str]) -> list[str]:
        return list(items)

    async def scenario() -> float:
        batcher = MicroBatcher(echo, max_size=10, max_wait=wait)
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await batcher.submit("x") == "x"
        return loop.time() - started

    assert asyncio.run(scenario()) < wait + 0.05


def test_a_batch_leaves_early_once_ready_says_nothing_more_can_come() -> None:
    async def echo(items: Sequence[int]) -> list[int]:
        return list(items)

    async def scenario() -> tuple[list[int], float]:
        batcher = MicroBatcher(echo, max_size=100, max_wait=5.0, ready=lambda waiting: waiting >= 3)
        loop = asyncio.get_running_loop()
        started = loop.time()
        results = await asyncio.gather(*(batcher.submit(i) for i in range(3)))
        return results, loop.time() - started

    results, took = asyncio.run(scenario())
    assert results == [0, 1, 2]
    assert took < 1.0  # not the 5 s wait


def test_a_batch_leaves_after_a_lull_before_the_full_wait() -> None:
    async def echo(items: Sequence[int]) -> list[int]:
        return list(items)

    async def scenario() -> tuple[list[int], float]:
        batcher = MicroBatcher(echo, max_size=100, max_wait=5.0, quiet=0.02)
        loop = asyncio.get_running_loop()
        started = loop.time()
        first = asyncio.ensure_future(batcher.submit(1))
        await asyncio.sleep(0.01)  # within the lull: joins the same batch
        second = asyncio.ensure_future(batcher.submit(2))
        results = await asyncio.gather(first, second)
        return results, loop.time() - started

    results, took = asyncio.run(scenario())
    assert results == [1, 2]
    assert 0.02 <= took < 1.0  # after the lull, far before the 5 s cap


def test_requests_read_as_the_wait_ends_still_join_the_batch() -> None:
    """A busy host: the loop gets the CPU after the wait is over, in the turn that also reads
    several requests, each of which reaches submit a few turns later (as aiohttp's do)."""
    runs: list[list[int]] = []

    async def echo(items: Sequence[int]) -> list[int]:
        runs.append(list(items))
        return list(items)

    async def scenario() -> list[int]:
        batcher = MicroBatcher(echo, max_size=100, max_wait=0.005, quiet=0.005)
        first = asyncio.ensure_future(batcher.submit(0))
        await asyncio.sleep(0)  # the first request waits; its wait's timer is set

        async def read_late(item: int) -> int:
            for _ in range(SETTLE_TURNS - 1):  # the turns from a request's bytes to submit
                await asyncio.sleep(0)
            return await batcher.submit(item)

        time.sleep(0.02)  # the loop has no CPU while the wait runs out
        late = [asyncio.ensure_future(read_late(i)) for i in range(1, 4)]
        return await asyncio.gather(first, *late)

    assert asyncio.run(scenario()) == [0, 1, 2, 3]
    assert runs == [[0, 1, 2, 3]]  # one batch: the late ones did not miss it
