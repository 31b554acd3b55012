"""Where a local `clean` spends its time, step by step: the run's steps timed in its own process.

    python bench/bench_stages.py [--one-core] -- clean LIST -o OUT [clean's options...]

Runs ``listclean`` with the arguments after ``--`` in this process, with timers around the
steps of the local engine (reading a batch, normalizing, the spill, the duplicate marker, the
domain stage between the passes with what it awaits, deciding, the summary's counts, the
history, encoding and writing the output), and prints the seconds spent in each, summed over
the batches, with the number of calls. Steps that run on the pool of threads overlap, so on
several cores the sums exceed the wall time. With ``--one-core`` (``run.cores = 1`` through
``LISTCLEAN_RUN_CORES`` and ``POLARS_MAX_THREADS=1``) everything runs one step after another
on one thread, and each sum is that step's share of the work. Nothing is changed but the
timers; the run writes what it always writes.
"""

from __future__ import annotations

import collections
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any


def main() -> None:
    args = sys.argv[1:]
    one_core = "--one-core" in args[: args.index("--")] if "--" in args else False
    if "--" not in args:
        raise SystemExit(__doc__)
    if one_core:
        os.environ["POLARS_MAX_THREADS"] = "1"
        os.environ["LISTCLEAN_RUN_CORES"] = "1"
    spent: dict[str, float] = collections.defaultdict(float)
    calls: collections.Counter[str] = collections.Counter()
    lock = threading.Lock()

    def count(label: str, started: float) -> None:
        with lock:
            spent[label] += time.perf_counter() - started
            calls[label] += 1

    def timed(owner: Any, name: str) -> None:
        function = getattr(owner, name)

        @functools.wraps(function)
        def wrapper(*a: Any, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                count(f"{getattr(owner, '__name__', owner)}.{name}", started)

        setattr(owner, name, wrapper)

    def timed_async(owner: Any, name: str) -> None:
        function = getattr(owner, name)

        @functools.wraps(function)
        async def wrapper(*a: Any, **k: Any) -> Any:
            started = time.perf_counter()
            try:
                return await function(*a, **k)
            finally:  # the time awaited too: DNS on a cold run
                count(f"{getattr(owner, '__name__', owner)}.{name}", started)

        setattr(owner, name, wrapper)

    from pipeline.stages import history, runner, summary
    from pipeline.stages.read import csv_source, reader
    from pipeline.stages.state import dedupe, spill
    from pipeline.stages.write import outputs

    for name in ("normalize", "list_domains", "decide_work", "rows_of"):
        timed(runner, name)
    timed_async(runner, "check_domains")  # the domain stage, between the passes
    for owner, name in (
        (summary.Tally, "add"),
        (history.LocalMemory, "__init__"),
        (history.LocalMemory, "prepare"),
        (history.LocalMemory, "add_prepared"),
        (history, "remembered"),
        (history, "compare"),
        (history, "packed"),
        (dedupe.DuplicateMarker, "cut"),
        (dedupe.DuplicateMarker, "add_cut"),
        (dedupe.DuplicateMarker, "finish"),
        (spill.Spill, "put"),
        (spill.Spill, "work"),
        (csv_source.CsvSource, "__init__"),
        (outputs.ParquetSink, "ready"),
    ):
        timed(owner, name)

    ready = outputs.ParquetSink.ready

    def ready_timed(self: Any, frame: Any) -> Callable[[], None]:
        write = ready(self, frame)

        def written() -> None:
            started = time.perf_counter()
            write()
            count("ParquetSink write (in turn)", started)

        return written

    outputs.ParquetSink.ready = ready_timed  # type: ignore[method-assign]
    batches = reader.ListReader.batches

    def batches_timed(self: Any, rows: int) -> Iterator[Any]:
        them = batches(self, rows)
        while True:
            started = time.perf_counter()
            batch = next(them, None)
            count("ListReader.batches (reading a batch)", started)
            if batch is None:
                return
            yield batch

    reader.ListReader.batches = batches_timed  # type: ignore[method-assign]

    from pipeline.cli import main as listclean

    started = time.perf_counter()
    code = listclean(args[args.index("--") + 1 :])
    wall = time.perf_counter() - started
    cores = "one core" if one_core else "every core"
    print(f"exit {code}, {wall:.2f} s from the command's start ({cores})")
    print("| step | seconds | calls |\n|---|---:|---:|")
    for label, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"| {label} | {seconds:.2f} | {calls[label]} |")


if __name__ == "__main__":
    main()
