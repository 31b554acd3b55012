"""Time the service's engine pass in process: a batch of plain addresses at cached domains,
answered by the engine's steps and from the domains' answer shapes.

    python bench/bench_service_pass.py [--batch 64] [--passes 1000]

Polars runs on one thread, as ``listclean serve`` runs it. Three domains are put in a domain
cache in a temporary folder (nothing is resolved); every pass asks about *batch* addresses
never asked before, so nothing per address is reused. Both ways are first run on the same
batches and their answers compared (they must be equal, byte for byte); then each is timed
over *passes* passes, and the medians printed.
"""

from __future__ import annotations

import os

os.environ.setdefault("POLARS_MAX_THREADS", "1")  # before polars is imported, as serve does

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pipeline.core.assembly.build import EngineOptions, open_engine
from pipeline.core.config import Config
from pipeline.core.domains.dns import DnsAnswer, DnsStatus
from pipeline.core.domains.shapes import AnswerShapes
from pipeline.core.engine import Engine, verify_many_json

DOMAINS = ("gmail.com", "outlook.com", "yahoo.com")


def batches(size: int) -> Iterator[list[str]]:
    n = 0
    while True:
        n += 1
        yield [f"user{n}x{i}@{DOMAINS[i % len(DOMAINS)]}" for i in range(size)]


async def timed(engine: Engine, shapes: AnswerShapes | None, size: int, passes: int) -> float:
    made = batches(size)
    seconds = []
    for _ in range(passes):
        values = next(made)
        start = time.perf_counter()
        await verify_many_json(engine, values, shapes=shapes)
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


async def main(size: int, passes: int) -> int:
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        engine = open_engine(stack, Config(), folder / "domains.sqlite", EngineOptions())
        assert engine.cache is not None
        engine.cache.put_many({d: DnsAnswer(DnsStatus.MX, f"mx.{d}") for d in DOMAINS})
        shapes = AnswerShapes()
        made = batches(size)
        for _ in range(100):  # warm both ways, and check that they agree
            values = next(made)
            steps = await verify_many_json(engine, values)
            if await verify_many_json(engine, values, shapes=shapes) != steps:
                print("the answers from shapes differ from the steps'", file=sys.stderr)
                return 1
        by_steps = await timed(engine, None, size, passes)
        by_shapes = await timed(engine, shapes, size, passes)
    print(f"| way | pass of {size} plain addresses (median of {passes}) |")
    print("|---|---:|")
    print(f"| the engine's steps | {by_steps * 1e3:.3f} ms |")
    print(f"| answer shapes | {by_shapes * 1e3:.3f} ms ({by_shapes / by_steps:.2f} of it) |")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--passes", type=int, default=1000)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.batch, args.passes)))
