"""The jobs' records in the service's store, beside its keys and quota counters.

The jobs live in the same SQLite file or PostgreSQL database as the keys and counters
(:class:`~pipeline.service.accounts.store.ServiceStore`), so that a job's units are reserved
and given back in the same transaction that records them on the job: a crash between the two
can never charge a caller for nothing, nor free units twice. The store has its own connection,
used from one thread of its own (:class:`Jobs`), so the event loop never waits on it; on
SQLite its writes wait for the running service's grouped commit like any second process's.

Every read of a caller's job names the caller's key: a job of another key is not found.
"""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, ParamSpec, TypeVar

from pipeline.core.db.database import Where, dialect_of
from pipeline.core.db.postgres import PostgresDb
from pipeline.service.accounts.store import ServiceStore
from pipeline.service.jobs import sql
from pipeline.service.jobs.types import Job, JobOptions, JobState, Page, Units

P = ParamSpec("P")
T = TypeVar("T")
_SECRET: Final = "links"


def subject_of(job: Job) -> str:
    """Whose counter a job's units are taken from (the /api/email counter of its key)."""
    return f"key:{job.key_id}"


def job_of(row: Any) -> Job:
    """A Job from a row of :data:`sql.COLUMNS`."""
    (
        id_, key_id, plan, state, created_at, started_at, finished_at, name, stem, input_name,
        input_bytes, options, inspected, progress, needed, reserved, policy, window, returned,
        summary, error, owner, heartbeat_at, cancel_requested, attempts,
    ) = row  # fmt: skip
    return Job(
        id=id_,
        key_id=key_id,
        plan=plan,
        state=JobState(state),
        created_at=created_at,
        name=name,
        stem=stem,
        input_bytes=int(input_bytes),
        options=JobOptions.from_json(options),
        inspected=json.loads(inspected),
        progress=json.loads(progress),
        units=Units(needed, int(reserved), policy, window, int(returned)),
        started_at=started_at,
        finished_at=finished_at,
        summary=json.loads(summary) if summary else None,
        error=json.loads(error) if error else None,
        owner=owner,
        heartbeat_at=heartbeat_at,
        cancel_requested=bool(cancel_requested),
        attempts=int(attempts),
        input_name=input_name,
    )


def cursor_of(job: Job) -> str:
    return base64.urlsafe_b64encode(json.dumps([job.created_at, job.id]).encode()).decode()


def parse_cursor(text: str) -> tuple[float, str] | None:
    """The (created_at, id) a cursor holds, or None when it is not one of ours."""
    try:
        created, id_ = json.loads(base64.urlsafe_b64decode(text.encode("ascii")))
    except (ValueError, UnicodeError, TypeError):
        return None
    if isinstance(created, int | float) and isinstance(id_, str):
        return float(created), id_
    return None


class JobStore:
    """The jobs' records (see the module's doc); its methods block, :class:`Jobs` awaits them."""

    def __init__(self, where: Where, clock: Callable[[], float] = time.time) -> None:
        self.accounts = ServiceStore(where, clock, size=2)
        self._db = self.accounts.db
        self.sql = sql.Statements(dialect_of(self._db))
        self._clock = clock
        try:
            self._migrate()
        except BaseException:
            self.accounts.close()
            raise

    def _migrate(self) -> None:
        if isinstance(self._db, PostgresDb):
            self._db.migrate(sql.PG_SCHEMA)
            return
        with self._db.transaction(write=True):
            for statement in sql.SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)

    def close(self) -> None:
        self.accounts.close()

    def ping(self) -> None:
        self._db.ping()

    def secret(self) -> bytes:
        """The key download links are signed with: made once, shared by every instance."""
        rows = self._db.query(self.sql.secret, (_SECRET,))
        if not rows:
            self._db.execute(self.sql.add_secret, (_SECRET, secrets.token_hex(32)))
            rows = self._db.query(self.sql.secret, (_SECRET,))
        return bytes.fromhex(rows[0][0])

    def create(self, job: Job) -> None:
        self._db.execute(
            self.sql.insert,
            (
                job.id, job.key_id, job.plan, job.state.value, job.created_at, job.name,
                job.stem, job.input_name, job.input_bytes, job.options.as_json(),
                json.dumps(job.inspected),
            ),
        )  # fmt: skip

    def get(self, job_id: str, key_id: str | None) -> Job | None:
        """The job *job_id* of the key *key_id* (None: whoever's, for the instances)."""
        if key_id is None:
            rows = self._db.query(self.sql.get_any, (job_id,))
        else:
            rows = self._db.query(self.sql.get, (job_id, key_id))
        return job_of(rows[0]) if rows else None

    def page(self, key_id: str, limit: int, cursor: tuple[float, str] | None) -> Page:
        if cursor is None:
            rows = self._db.query(self.sql.page, (key_id, limit + 1))
        else:
            created, after = cursor
            rows = self._db.query(self.sql.page_after, (key_id, created, created, after, limit + 1))
        jobs = [job_of(row) for row in rows[:limit]]
        more = len(rows) > limit and jobs
        return Page(jobs, cursor_of(jobs[-1]) if more else None)

    def claim(self, owner: str) -> Job | None:
        """The oldest queued job, now running on *owner*; None when none is queued."""
        if not self._db.query(self.sql.any_queued):
            return None
        now = self._clock()
        rows = self._db.query(self.sql.claim, (owner, now, now))
        return job_of(rows[0]) if rows else None

    def heartbeat(self, job: Job, owner: str, progress: dict[str, Any]) -> bool | None:
        """Record that *owner* still runs *job*: whether it was asked to stop since, or None
        when it is no longer *owner*'s (its heartbeat was late and another took it)."""
        now = self._clock()
        rows = self._db.query(self.sql.heartbeat, (now, json.dumps(progress), job.id, owner))
        return bool(rows[0][0]) if rows else None

    def reserve(
        self,
        job: Job,
        owner: str,
        units: int,
        policy: tuple[str, int, int],
        progress: dict[str, Any] | None = None,
    ) -> tuple[bool, int]:
        """Reserve *units* of the key's counter (*policy*: name, window start, limit) for
        *job* and record them on it, with its *progress*, in one transaction: (reserved,
        used in the window)."""
        name, window, limit = policy
        shown = json.dumps(progress if progress is not None else job.progress)
        with self._db.transaction(write=True):
            taken, used = self.accounts.consume_units(subject_of(job), name, window, units, limit)
            if taken:
                values = (units, units, name, window, shown, job.id, owner)
                self._db.execute(self.sql.reserved, values)
            else:
                self._db.execute(self.sql.needed, (units, shown, job.id, owner))
        return taken, used

    def finish(
        self,
        job: Job,
        owner: str,
        state: JobState,
        summary: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
        progress: dict[str, Any] | None = None,
    ) -> bool:
        """End *job* on *owner* in *state*, with its last *progress* (default: as last
        recorded); a job that did not finish gives every unit it reserved back, in the same
        transaction. False when it was not *owner*'s to end."""
        now = self._clock()
        current = self.get(job.id, None)
        if current is None:
            return False
        units = current.units
        back = units.reserved if state is not JobState.DONE else 0
        values = (
            state.value, now, json.dumps(summary) if summary is not None else None,
            json.dumps(error) if error is not None else None, back,
            json.dumps(progress if progress is not None else current.progress), job.id, owner,
        )  # fmt: skip
        with self._db.transaction(write=True):
            if not self._db.execute(self.sql.finish, values):
                return False
            self._give_back(current, back)
        return True

    def _give_back(self, job: Job, units: int) -> None:
        policy, window = job.units.policy, job.units.window
        if units and policy is not None and window is not None:
            self.accounts.refund_units(subject_of(job), policy, window, units)

    def requeue_mine(self, job: Job, owner: str) -> bool:
        """*owner* stops: its running *job* goes back to the queue (its units stay reserved)."""
        return bool(self._db.query(self.sql.requeue_mine, (job.id, owner)))

    def sweep(self, lease: float) -> list[str]:
        """Running jobs whose instance sent no heartbeat for *lease* seconds: queued again,
        or cancelled (their units back) when they were asked to stop. Their ids."""
        cutoff = self._clock() - lease
        swept = []
        for job in (job_of(row) for row in self._db.query(self.sql.stale, (cutoff,))):
            with self._db.transaction(write=True):
                if job.cancel_requested:
                    values = (self._clock(), job.id, job.owner, cutoff)
                    if self._db.execute(self.sql.cancel_stale, values):
                        self._give_back(job, job.units.reserved)
                        swept.append(job.id)
                elif self._db.execute(self.sql.requeue, (job.id, job.owner, cutoff)):
                    swept.append(job.id)
        return swept

    def cancel(self, job_id: str, key_id: str) -> Job | None:
        """Cancel a queued job at once (units it reserved before a restart given back), or
        ask the instance running it to stop; the job as it then is (None: not queued or
        running)."""
        with self._db.transaction(write=True):
            rows = self._db.query(self.sql.cancel_queued, (self._clock(), job_id, key_id))
            if rows:
                job = job_of(rows[0])
                self._give_back(job, job.units.reserved)
                return job
            rows = self._db.query(self.sql.cancel_running, (job_id, key_id))
        return job_of(rows[0]) if rows else None

    def delete(self, job_id: str) -> None:
        self._db.execute(self.sql.delete, (job_id,))

    def expired(self, finished_before: float) -> list[str]:
        return [row[0] for row in self._db.query(self.sql.expired, (finished_before,))]


class Jobs:
    """:class:`JobStore` awaited from the event loop: every call runs on the store's one
    thread, so the loop never waits on the database and the store's use stays serial."""

    def __init__(self, store: JobStore) -> None:
        self.store = store
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="jobs-store")

    async def call(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._thread, lambda: work(*args, **kwargs))

    def close(self) -> None:
        self._thread.shutdown(wait=True)
        self.store.close()
