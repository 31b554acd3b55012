"""An instance's share of the bulk jobs: it claims queued jobs from the store and runs each in
a process of its own (:mod:`.worker`), at a lower priority and on the jobs' cores only.

- **Claiming.** Every ``[jobs] poll`` seconds (and at once when this instance queued a job) it
  takes the oldest queued job while it runs fewer than ``at_once``; the claim is one
  conditional statement, so two instances never take the same job.
- **Progress and heartbeats.** The process reports its stages; the instance records them with
  a heartbeat at least every third of ``[jobs] lease``. A job whose heartbeat is older than the
  lease lost its instance (a crash, a kill): any instance queues it again (:meth:`JobStore.sweep`),
  and it runs again from the start on the units it reserved, so nothing is charged twice. An
  instance that stops cleanly queues its running jobs again itself, at once.
- **Units.** When the process has read the list it says how many distinct addresses it will
  check; the instance reserves that many units of the key's ``/api/email`` counter (or refuses
  the job: 429 over quota, 413 over ``max_rows``) before any is checked. A job that does not
  finish gives them all back.
- **Cancelling.** A cancel is a flag on the job that the running instance reads with its next
  heartbeat; it stops the process (SIGTERM: nothing half-written stays) and gives the units back.
- **Short tasks** (a list read before a job is made, a download format made from the Parquet)
  run in a small pool of processes with the same priority and cores.
- **Retention.** Finished jobs older than ``[jobs] retention`` lose their files and records.
- **Callbacks.** A job that asked for one is told to its callback URL when it ends
  (:mod:`.callbacks`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import json
import logging
import multiprocessing
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from pipeline.core.clock import window_bounds
from pipeline.core.config import Config, JobsConfig
from pipeline.core.text import failure_line
from pipeline.service.accounts.quotas import Quotas
from pipeline.service.errors import InternalError, QuotaExceeded, TooLarge
from pipeline.service.jobs import tasks, worker
from pipeline.service.jobs.callbacks import call_back
from pipeline.service.jobs.storage import INPUT, OUTPUT, Storage
from pipeline.service.jobs.store import Jobs, JobStore
from pipeline.service.jobs.types import Job, JobState

log = logging.getLogger("listclean.service")
T = TypeVar("T")
_STDERR_LINES: Final = 40  # of a job process's standard error, kept for the log


def job_cpus(cores: int, available: set[int] | None = None) -> list[int]:
    """The CPUs jobs are pinned to: the last *cores* of those this process may use (0: all
    but one), the first left to the service."""
    cpus = sorted(available if available is not None else os.sched_getaffinity(0))
    wanted = len(cpus) - 1 if cores == 0 else cores
    return cpus[-max(1, min(wanted, len(cpus))) :]


@dataclass
class Engine:
    """What a job's process needs to build the engine the service runs on."""

    config: Config
    cache: Path  # the domain cache (the other stores beside it, as for the service)
    offline: bool = False
    loopback_only: bool = False
    api_keys: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Running:
    """A job this instance runs: its process and what it reported."""

    job: Job
    process: asyncio.subprocess.Process
    progress: dict[str, Any] = field(default_factory=dict)
    outcome: dict[str, Any] | None = None
    cancelled: bool = False
    lost: bool = False
    stderr: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=_STDERR_LINES)
    )

    def report(self, event: dict[str, Any]) -> None:
        stages = self.progress.setdefault("stages", {})
        stages[event["name"]] = {"done": event["done"], "total": event.get("total")}
        if event["name"] == "read":
            self.progress["rows_read"] = event["done"]


class JobRunner:
    """This instance's scheduler (see the module's doc)."""

    def __init__(
        self,
        settings: JobsConfig,
        jobs: Jobs,
        storage: Storage,
        quotas: Quotas,
        engine: Engine,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.jobs = jobs
        self.storage = storage
        self.quotas = quotas
        self.engine = engine
        self.clock = clock
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.cpus = job_cpus(settings.cores)
        self.running: dict[str, Running] = {}
        self._wake = asyncio.Event()
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._runs: set[asyncio.Task[None]] = set()
        self._spare: asyncio.Task[asyncio.subprocess.Process] | None = None
        self._warmed = False
        self._pool: ProcessPoolExecutor | None = None
        self._making: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}
        self._work = Path(tempfile.gettempdir()) / "listclean-jobs" / self.owner.replace(":", "-")
        self.spool = self._work / "uploads"  # uploads land here when the storage is remote

    @property
    def store(self) -> JobStore:
        return self.jobs.store

    async def start(self) -> None:
        self._tasks += [asyncio.create_task(self._claim_loop()), asyncio.create_task(self._tend())]

    def warm(self) -> None:
        """Start the processes jobs and their short tasks run in, ahead of need, if they are
        not started: on the first request to the jobs API, so an instance that serves no job
        starts none."""
        if self._warmed or self._stopping:
            return
        self._warmed = True
        if self._spare is None:
            self._spare = asyncio.create_task(self._spawn())
        self._tasks.append(asyncio.create_task(self._warm()))

    def wake(self) -> None:
        """A job was queued here: look for it now rather than at the next poll."""
        self._wake.set()

    async def stop(self) -> None:
        """Stop claiming, stop the running jobs' processes, and queue those jobs again."""
        self._stopping = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for run in self.running.values():
            with contextlib.suppress(ProcessLookupError):
                run.process.send_signal(signal.SIGTERM)
        await asyncio.gather(*self._runs, return_exceptions=True)
        if self._spare is not None:
            spare = await asyncio.gather(self._spare, return_exceptions=True)
            if isinstance(spare[0], asyncio.subprocess.Process):
                await _close(spare[0])
        if self._pool is not None:
            # A task under way (a conversion) ends on its own; nothing waits for it.
            self._pool.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self._work, ignore_errors=True)

    # --- short tasks in the pool -------------------------------------------------------------

    async def task(self, work: Callable[[Any], T], argument: Any = None) -> T:
        """*work(argument)* in one of the jobs' pool processes."""
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(
                max(1, self.settings.at_once),
                mp_context=context,
                initializer=worker.limit_self,
                initargs=(self.cpus, self.settings.nice),
            )
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, work, argument)
        except BrokenProcessPool:  # a process of it died (killed, out of memory): a new pool
            self._pool = None
            raise

    async def _warm(self) -> None:
        """The pool's processes started and imported before the first upload needs one."""
        try:
            await self.task(tasks.ready)
        except Exception as exc:
            log.error("jobs: the task processes do not start: %s", failure_line(exc))

    async def inspect(self, task: tasks.InspectTask) -> dict[str, Any]:
        return await self.task(tasks.inspect, task)

    async def converted(self, job: Job, source: str, target: str, fmt: str) -> dict[str, Any]:
        """*target* made in *fmt* from *source* (both in the job's out folder), once: every
        download that asks for it meanwhile waits for the same conversion."""
        key = (job.id, target)
        making = self._making.get(key)
        if making is None:
            storage = dataclasses.asdict(self.storage.config)
            work = tasks.ConvertTask(self.storage.root, storage, job.id, source, target, fmt)
            making = asyncio.ensure_future(self.task(tasks.convert, work))
            self._making[key] = making
            making.add_done_callback(lambda _: self._making.pop(key, None))
        return await asyncio.shield(making)

    # --- claiming and running ----------------------------------------------------------------

    async def _claim_loop(self) -> None:
        while True:
            try:
                while len(self.running) < self.settings.at_once:
                    job = await self.jobs.call(self.store.claim, self.owner)
                    if job is None:
                        break
                    self.warm()
                    self._start(job)
            except Exception as exc:  # the store is down a moment: try again at the next poll
                log.error("jobs: cannot claim a queued job: %s", failure_line(exc))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.settings.poll)

    def _start(self, job: Job) -> None:
        task = asyncio.create_task(self._run(job))
        self._runs.add(task)
        task.add_done_callback(self._runs.discard)

    async def _spawn(self) -> asyncio.subprocess.Process:
        """A job process, started ahead: it waits, imported, for its job on standard input."""
        env = {**os.environ, "POLARS_MAX_THREADS": str(len(self.cpus))}
        cpus = ",".join(map(str, self.cpus))
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", worker.__name__, "--cpus", cpus,
            "--nice", str(self.settings.nice),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True,
            limit=2**24,
        )  # fmt: skip

    async def _process(self) -> asyncio.subprocess.Process:
        """The process started ahead (and another started ahead for the next job)."""
        spare, self._spare = self._spare, asyncio.create_task(self._spawn())
        process = await spare if spare is not None else await self._spawn()
        if process.returncode is not None:  # it died waiting: start one now
            process = await self._spawn()
        return process

    async def _run(self, job: Job) -> None:
        try:
            process = await self._process()
        except Exception as exc:
            log.error("jobs: cannot start a process for job %s: %s", job.id, failure_line(exc))
            await self.jobs.call(self.store.requeue_mine, job, self.owner)
            return
        run = self.running[job.id] = Running(job, process)
        run.progress = {"rows_read": 0, "attempt_started": self.clock(), "stages": {}}
        work = self._work / job.id
        beat = asyncio.create_task(self._beat(run))
        drain = asyncio.create_task(_drain(process, run.stderr))
        try:
            await self._talk(run, self._spec(job, work))
            await process.wait()
            await drain
        finally:
            beat.cancel()
            await asyncio.gather(beat, return_exceptions=True)
            del self.running[job.id]
            shutil.rmtree(work, ignore_errors=True)
        try:
            final = await self._settle(run)
        except Exception as exc:
            log.error("jobs: cannot record the end of job %s: %s", job.id, failure_line(exc))
            return
        if final is not None and final.options.callback_url:
            await call_back(final, self.settings.callbacks)

    def _spec(self, job: Job, work: Path) -> dict[str, Any]:
        config = self.engine.config
        settings = tasks.settings_of(config)
        settings["verify"]["mode"] = job.options.verify or config.verify.mode
        folder = self.storage.local_folder(job.id)
        local = folder is not None
        plan = self.quotas.plan(job.plan)
        return {
            "cwd": str(folder) if local else None,
            "input": f"{INPUT}/{job.input_name}"
            if local
            else self.storage.location(job.id, INPUT, job.input_name),
            "output": f"{OUTPUT}/{job.output_name}"
            if local
            else self.storage.location(job.id, OUTPUT, job.output_name),
            "name": job.name,
            "options": job.options.as_json(),
            "config": settings,
            "cache": str(self.engine.cache),
            "work": str(work),
            "offline": self.engine.offline,
            "loopback_only": self.engine.loopback_only,
            "api_keys": dict(self.engine.api_keys),
            "paid": plan is not None and plan.vendor,
        }

    async def _talk(self, run: Running, spec: dict[str, Any]) -> None:
        process = run.process
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(json.dumps(spec).encode() + b"\n")
        await process.stdin.drain()
        async for line in process.stdout:
            event = json.loads(line)
            kind = event.get("event")
            if kind == "stage":
                run.report(event)
            elif kind == "count":
                answer = await self._gate(run, event)
                process.stdin.write(json.dumps(answer).encode() + b"\n")
                await process.stdin.drain()
            elif kind in ("done", "failed", "stopped"):
                run.outcome = event
        process.stdin.close()

    async def _gate(self, run: Running, event: dict[str, Any]) -> dict[str, Any]:
        """The units of a job whose list was read: reserved, or the job refused."""
        rows, units = int(event["rows"]), int(event["units"])
        run.progress.update(rows_read=rows, distinct_addresses=event["distinct"], units=units)
        job, limit = run.job, self.settings.max_rows
        if rows > limit:
            detail = f"The list holds {rows:,} rows; a job may hold {limit:,} ([jobs] max_rows)."
            return {"stop": TooLarge(detail).body()}
        if job.units.policy is not None:  # reserved by an earlier run of the job: kept
            return {"go": True}
        policy = self.quotas.plan_quota(job.plan, "email", job.key_id)
        start, end = window_bounds(policy.window, self.clock())
        reserve = (policy.name, start, policy.limit)
        progress = dict(run.progress)
        taken, used = await self.jobs.call(
            self.store.reserve, job, self.owner, units, reserve, progress
        )
        if taken:
            return {"go": True}
        renews = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end))
        detail = (
            f"This list needs {units:,} units of the {policy.name} quota (one per distinct "
            f"address to check) and {max(0, policy.limit - used):,} of {policy.limit:,} are "
            f"left; it renews at {renews}. Nothing was checked or charged."
        )
        return {"stop": QuotaExceeded(detail).body()}

    async def _beat(self, run: Running) -> None:
        every = min(self.settings.poll, self.settings.lease / 3)
        while True:
            await asyncio.sleep(every)
            try:
                asked = await self.jobs.call(
                    self.store.heartbeat, run.job, self.owner, dict(run.progress)
                )
            except Exception as exc:
                log.error("jobs: no heartbeat for job %s: %s", run.job.id, failure_line(exc))
                continue
            if asked is None:  # late: another instance took it
                run.lost = True
                _signal(run.process, signal.SIGKILL)
            elif asked and not run.cancelled:
                run.cancelled = True
                _signal(run.process, signal.SIGTERM)

    async def _settle(self, run: Running) -> Job | None:
        """Record how *run* ended; the job as it now is (None: not this instance's to end)."""
        job, outcome = run.job, run.outcome or {}
        kind = outcome.get("event")
        if run.lost:
            return None

        async def finish(state: JobState, summary: Any = None, error: Any = None) -> None:
            # With the progress as the process last reported it, not as the last heartbeat did.
            progress = dict(run.progress)
            await self.jobs.call(
                self.store.finish, job, self.owner, state, summary, error, progress
            )

        if kind == "done":
            await finish(JobState.DONE, outcome["summary"])
        elif kind == "failed":
            if outcome.get("error"):
                log.error("jobs: job %s failed: %s", job.id, outcome["error"])
            await finish(JobState.FAILED, None, outcome["problem"])
        elif run.cancelled:
            await finish(JobState.CANCELLED)
        elif self._stopping:
            await self.jobs.call(self.store.requeue_mine, job, self.owner)
            return None
        else:
            tail = " | ".join(run.stderr) or f"exit {run.process.returncode}"
            log.error("jobs: the process of job %s ended without an outcome: %s", job.id, tail)
            problem = InternalError("The job failed on the service's side; it was not charged.")
            await finish(JobState.FAILED, None, problem.body())
        return await self.jobs.call(self.store.get, job.id, None)

    # --- upkeep: stale jobs, retention -------------------------------------------------------

    async def _tend(self) -> None:
        every = max(self.settings.poll, min(self.settings.lease / 2, 60.0))
        while True:
            try:
                swept = await self.jobs.call(self.store.sweep, self.settings.lease)
                if swept:
                    log.warning("jobs: queued again after their instance stopped: %s", swept)
                    self.wake()
                await self._expire()
            except Exception as exc:
                log.error("jobs: upkeep failed: %s", failure_line(exc))
            await asyncio.sleep(every)

    async def _expire(self) -> None:
        before = self.clock() - self.settings.retention
        for job_id in await self.jobs.call(self.store.expired, before):
            await asyncio.to_thread(self.storage.remove, job_id)
            await self.jobs.call(self.store.delete, job_id)


async def _drain(process: asyncio.subprocess.Process, into: collections.deque[str]) -> None:
    assert process.stderr is not None
    async for line in process.stderr:
        into.append(line.decode("utf-8", "replace").rstrip())


def _signal(process: asyncio.subprocess.Process, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(sig)


async def _close(process: asyncio.subprocess.Process) -> None:
    """A spare process nobody gave a job: it holds nothing, so it is stopped where it is."""
    _signal(process, signal.SIGKILL)
    await process.wait()
