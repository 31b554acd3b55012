"""A job's process: ``clean`` of one list, run as the command line runs it, reporting to the
instance that started it.

    python -m pipeline.service.jobs.worker --cpus 1,2,3 --nice 10

The instance (:mod:`.runner`) starts it ahead of need: it lowers its own priority, pins itself
to the jobs' cores, asks to die with its parent (Linux's ``PR_SET_PDEATHSIG``), imports the
pipeline and waits, so that a job starts without an interpreter's start-up. It then reads one
job as a JSON line on standard input and runs it through ``open_job`` and the local runner,
exactly as ``clean`` does; what it has to say goes to standard output, one JSON object a line:

    {"event": "stage", "name": "read", "done": 250000, "total": 1000000}
    {"event": "count", "rows": 1000000, "distinct": 965840, "units": 960929}   then waits:
                                                   {"go": true}, or {"stop": {<problem>}}
    {"event": "done", "summary": {...}}
    {"event": "failed", "problem": {...}}

``count`` comes after the list was read and before any address is checked: the instance
reserves the units (or refuses the job) before a unit is spent. SIGTERM stops the run at
once, leaving nothing half-written (:mod:`pipeline.stages.signals`); standard input closing
(the instance gone) does too.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Final

from pipeline.core.environment import prepare_polars
from pipeline.service.jobs.types import STAGE_OF_METER

# Seconds between two reports of one stage's meter.
REPORT_EVERY: Final = 0.25
_PR_SET_PDEATHSIG: Final = 1


class Refused(Exception):
    """The instance refused the job once it was counted (over quota, over the row limit)."""

    def __init__(self, problem: dict[str, Any]) -> None:
        super().__init__(problem.get("detail", ""))
        self.problem = problem


class Channel:
    """The process's line to its instance: events out, answers in."""

    def __init__(self, out: IO[str], answers: IO[str]) -> None:
        self._out = out
        self._answers = answers
        self._lock = threading.Lock()

    def send(self, **event: Any) -> None:
        line = json.dumps(event, ensure_ascii=False, default=str)
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()

    def answer(self) -> dict[str, Any]:
        line = self._answers.readline()
        if not line:  # the instance is gone: nobody will collect what this run makes
            raise Refused({"detail": "The instance that started the job stopped."})
        answer: dict[str, Any] = json.loads(line)
        return answer


class Meter:
    """A progress meter (:class:`pipeline.core.progress.Progress`) that reports its stage."""

    def __init__(self, channel: Channel, stage: str, total: int | None) -> None:
        self._channel = channel
        self._stage = stage
        self._total = total
        self._done = 0.0
        self._last = 0.0
        self._report()

    def update(self, n: float | None = 1) -> bool | None:
        self._done += n or 0
        if time.monotonic() - self._last >= REPORT_EVERY:
            self._report()
        return None

    def close(self) -> None:
        self._report()

    def _report(self) -> None:
        self._last = time.monotonic()
        done = int(self._done)
        self._channel.send(event="stage", name=self._stage, done=done, total=self._total)


def meters(channel: Channel) -> Any:
    """The engine's progress factory: each meter reports the job stage it belongs to (an
    address checker's meter, whatever its label, is the verify stage)."""

    def factory(total: int | None, label: str, unit: str) -> Meter:
        return Meter(channel, STAGE_OF_METER.get(label, "verify"), total)

    return factory


def limit_self(cpus: Sequence[int], nice: int) -> None:
    """Run on *cpus* only, *nice* lower than the instance, and die with it."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setaffinity(0, set(cpus))
    with contextlib.suppress(OSError):
        os.nice(nice)
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:  # the instance died before the line above
        raise SystemExit(1)


def run(spec: dict[str, Any], channel: Channel) -> None:
    """Run the job *spec* (see :class:`pipeline.service.jobs.runner.Spec`), reporting on
    *channel*; a refusal or an error is reported as the job's failure."""
    from pipeline.service.jobs.tasks import problem_of

    try:
        summary = _clean(spec, channel)
    except Refused as refused:
        channel.send(event="failed", problem=refused.problem)
    except KeyboardInterrupt:  # SIGTERM (a cancel, the instance stopping): nothing published
        channel.send(event="stopped")
    except Exception as exc:  # every failure is reported; the instance logs what was not
        channel.send(event="failed", problem=problem_of(exc), error=type(exc).__name__)
    else:
        channel.send(event="done", summary=summary)


def _clean(spec: dict[str, Any], channel: Channel) -> dict[str, Any]:
    from pipeline.core.assembly.build import EngineOptions, open_engine
    from pipeline.core.mailboxes.vendors.checker import unpaid
    from pipeline.service.jobs.tasks import clean_request, config_of
    from pipeline.service.jobs.types import JobOptions
    from pipeline.stages.job import open_job
    from pipeline.stages.runner import run_clean
    from pipeline.stages.signals import handled

    if spec.get("cwd"):
        os.chdir(spec["cwd"])
    config = config_of(spec["config"])
    options = JobOptions.from_json(spec["options"])
    request = clean_request(spec["input"], spec["output"], options, config, spec["name"])

    async def admit(rows: int, distinct: int, units: int) -> None:
        channel.send(event="count", rows=rows, distinct=distinct, units=units)
        import asyncio

        answer = await asyncio.to_thread(channel.answer)
        if "stop" in answer:
            raise Refused(answer["stop"])

    engine_options = EngineOptions(
        offline=spec.get("offline", False),
        loopback_only=spec.get("loopback_only", False),
        progress=meters(channel),
        api_key=spec.get("api_keys", {}).get(config.verify.mode),
        api_keys=spec.get("api_keys", {}),
        spent=0,
    )
    with handled(), contextlib.ExitStack() as stack:
        job = stack.enter_context(open_job(request, config.storage, config.read))
        engine = open_engine(stack, config, Path(spec["cache"]), engine_options)
        if not spec.get("paid", False):
            engine = dataclasses.replace(engine, checker=unpaid(engine.checker))
        work = Path(spec["work"])
        work.mkdir(parents=True, exist_ok=True)
        summary = run_clean(job, engine, work, admit=admit)
    return summary.as_dict()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pipeline.service.jobs.worker")
    parser.add_argument("--cpus", default="")
    parser.add_argument("--nice", type=int, default=0)
    args = parser.parse_args(argv)
    cpus = [int(c) for c in args.cpus.split(",") if c.strip()]
    limit_self(cpus or sorted(os.sched_getaffinity(0)), args.nice)
    prepare_polars()  # before polars is imported, as `clean` does
    # Everything a job needs, imported while the process waits for one.
    import pipeline.service.jobs.tasks
    import pipeline.stages.runner  # noqa: F401

    # The channel gets standard output to itself: whatever else writes there goes to stderr.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    channel = Channel(out, sys.stdin)
    line = sys.stdin.readline()
    if not line:  # the instance stopped before it had a job for this process
        return 0
    run(json.loads(line), channel)
    out.flush()
    # Gone at once: a thread still reading the instance's answer (a job stopped while it was
    # counted) must not keep the process alive; every file was closed on the way out.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
