"""The paid-answer cache: what vendors answered, and the bulk jobs runs have paid for.

One store beside the caches (``vendor-answers.sqlite``), or a PostgreSQL database every host and
container shares (``[vendor] db`` a ``postgresql://`` URL): a nightly job that starts on an
empty disk still finds what was paid for yesterday. On a Dask cluster that names no database,
the same tables are bucketed tables on the run's shared storage (:class:`PaidBuckets`), which
the worker owning the vendor writes as each answer and each job id arrives.

``answers``
    One row per address (its dedupe key): the latest vendor's answer as a reason code, the
    vendor's own words, and when it expires: a lifetime drawn when it is bought, between
    ``verify.ttl_floor`` and 1 times ``[vendor] ttl`` (``ttl_unknown`` for an answer that could
    not decide), so answers bought in one night fall due over many. Any vendor's answer
    serves: an address is paid for once per lifetime, whichever vendor a route sends it to.
    An answer past its lifetime stays, handed out as due (:meth:`PaidAnswers.with_due`), so a
    run whose budget does not buy it again still shows it. Failures are never kept: the next
    run asks again.
``jobs``
    Each bulk job from the moment the vendor gives its id, with the addresses it holds, until
    its answers are in. A run killed while a job runs finds it here and collects it instead of
    submitting (and paying for) its addresses again. Keys are kept as fingerprints only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

import polars as pl

from pipeline.core.config import VendorConfig
from pipeline.core.db.buckets import BucketTable, OnShelf, Shelf
from pipeline.core.db.database import Dialect, OwnsDatabase, Where, dialect_of, open_database
from pipeline.core.mailboxes.types import lifetime
from pipeline.core.mailboxes.vendors.types import UNDECIDED, Job, VendorAnswer
from pipeline.core.verdict import Reason

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS answers (
    key         TEXT PRIMARY KEY,  -- the address's dedupe key
    vendor      TEXT NOT NULL,
    reason      TEXT NOT NULL,     -- the answer as a reason code (verdicts.py)
    status      TEXT NOT NULL,     -- the vendor's own words
    billed      INTEGER NOT NULL,
    answered_at REAL NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS jobs (
    vendor     TEXT NOT NULL,
    key_fp     TEXT NOT NULL,      -- a fingerprint of the API key, never the key
    job_id     TEXT NOT NULL,
    targets    TEXT NOT NULL,      -- JSON [[dedupe key, address sent], ...]
    created_at REAL NOT NULL,
    state      TEXT NOT NULL,      -- open | collected | failed | abandoned
    PRIMARY KEY (vendor, key_fp, job_id)
);
"""
_PG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS answers (
        key TEXT PRIMARY KEY, vendor TEXT NOT NULL, reason TEXT NOT NULL,
        status TEXT NOT NULL, billed INTEGER NOT NULL,
        answered_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS jobs (
        vendor TEXT NOT NULL, key_fp TEXT NOT NULL, job_id TEXT NOT NULL,
        targets TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, state TEXT NOT NULL,
        PRIMARY KEY (vendor, key_fp, job_id)
    )""",
)


class _Statements:
    """The store's statements, written once, spelled for *d*'s database."""

    def __init__(self, d: Dialect) -> None:
        q = d.q
        self.answers = (
            "SELECT key, vendor, reason, status, billed, answered_at FROM answers "
            f"WHERE key IN {d.values()} AND expires_at > {q}"
        )
        self.with_due = (
            "SELECT key, vendor, reason, status, billed, answered_at, expires_at FROM answers "
            f"WHERE key IN {d.values()}"
        )
        self.put = (
            "INSERT INTO answers (key, vendor, reason, status, billed, answered_at, expires_at) "
            f"VALUES ({q}, {q}, {q}, {q}, {q}, {q}, {q}) ON CONFLICT (key) DO UPDATE SET "
            "vendor = excluded.vendor, reason = excluded.reason, status = excluded.status, "
            "billed = excluded.billed, answered_at = excluded.answered_at, "
            "expires_at = excluded.expires_at"
        )
        self.open_jobs = (
            "SELECT vendor, key_fp, job_id, targets, created_at FROM jobs "
            f"WHERE vendor = {q} AND key_fp = {q} AND state = 'open' ORDER BY created_at"
        )
        self.add_job = (
            "INSERT INTO jobs (vendor, key_fp, job_id, targets, created_at, state) "
            f"VALUES ({q}, {q}, {q}, {q}, {q}, 'open') ON CONFLICT DO NOTHING"
        )
        self.close_job = (
            f"UPDATE jobs SET state = {q} WHERE vendor = {q} AND key_fp = {q} AND job_id = {q}"
        )
        self.forget = f"DELETE FROM answers WHERE key IN {d.values()}"


Kept = tuple[dict[str, VendorAnswer], dict[str, VendorAnswer]]  # (fresh, due) by key


class PaidStore(Protocol):
    """The paid-answer cache and its jobs, wherever they live."""

    where: str
    remote: bool  # a database across a socket: callers on an event loop call it off the loop

    def answers(self, keys: Iterable[str]) -> dict[str, VendorAnswer]: ...
    def with_due(self, keys: Iterable[str]) -> Kept: ...
    def now(self) -> float: ...
    def put(self, key: str, answer: VendorAnswer) -> None: ...
    def open_jobs(self, vendor: str, key_fp: str) -> list[Job]: ...
    def add_job(self, job: Job) -> None: ...
    def close_job(self, job: Job, state: str) -> None: ...
    def forget(self, keys: Iterable[str]) -> int: ...


def _ttl(config: VendorConfig, answer: VendorAnswer) -> int:
    return config.ttl_unknown if answer.reason in UNDECIDED else config.ttl


class PaidAnswers(OwnsDatabase):
    """The paid-answer cache and the bulk jobs' ledger (SQLite file or PostgreSQL)."""

    def __init__(
        self,
        where: Where,
        config: VendorConfig,
        clock: Callable[[], float] = time.time,
        floor: float = 1.0,
    ) -> None:
        """*floor*: ``verify.ttl_floor``, the shortest lifetime of an answer as a share of its
        TTL (1.0: every answer lives its whole TTL)."""
        self._db = open_database(
            where,
            what="the paid-answer cache",
            remedy="Choose a writable file with vendor.db or --cache-dir.",
            broken_remedy="Delete the file to start afresh (its answers are paid for again), "
            "or choose another one with vendor.db.",
            sqlite_schema=_SCHEMA,
            postgres_schema=_PG_SCHEMA,
        )
        self._sql = _Statements(dialect_of(self._db))
        self._config = config
        self._clock = clock
        self._floor = floor
        self.where = self._db.where
        # A database across a socket: callers on an event loop call it off the loop.
        self.remote = self._db.dialect != "sqlite"

    def answers(self, keys: Iterable[str]) -> dict[str, VendorAnswer]:
        """The unexpired answers kept for *keys*."""
        wanted = json.dumps(sorted(set(keys)))
        rows = self._db.query(self._sql.answers, (wanted, self._clock()))
        return {
            key: VendorAnswer(Reason(reason), status, vendor, bool(billed), at)
            for key, vendor, reason, status, billed, at in rows
        }

    def with_due(self, keys: Iterable[str]) -> Kept:
        """The answers kept for *keys*: within their lifetime, and past it (due)."""
        wanted = json.dumps(sorted(set(keys)))
        return _kept(self._db.query(self._sql.with_due, (wanted,)), self._clock())

    def now(self) -> float:
        return self._clock()

    def put(self, key: str, answer: VendorAnswer) -> None:
        """Keep an answer now (each is committed as it comes: a killed run keeps it)."""
        if not answer.answered:
            return
        ttl = _ttl(self._config, answer)
        now = self._clock()
        lasts = lifetime(ttl, key, now, self._floor)
        row = (key, answer.vendor, answer.reason.value, answer.status, int(answer.billed))
        self._db.execute(self._sql.put, (*row, answer.at, now + lasts))

    def open_jobs(self, vendor: str, key_fp: str) -> list[Job]:
        rows = self._db.query(self._sql.open_jobs, (vendor, key_fp))
        return [
            Job(v, fp, job_id, tuple((k, a) for k, a in json.loads(targets)), created)
            for v, fp, job_id, targets, created in rows
        ]

    def add_job(self, job: Job) -> None:
        """Keep a job the moment the vendor named it."""
        targets = json.dumps([list(t) for t in job.targets])
        self._db.execute(
            self._sql.add_job, (job.vendor, job.key_fp, job.job_id, targets, job.created_at)
        )

    def close_job(self, job: Job, state: str) -> None:
        """The job's answers are in (``collected``), or it will never give them."""
        self._db.execute(self._sql.close_job, (state, job.vendor, job.key_fp, job.job_id))

    def forget(self, keys: Iterable[str]) -> int:
        """Delete the answers kept about *keys* (an erasure or an opt-out); how many went."""
        return self._db.execute(self._sql.forget, (json.dumps(sorted(set(keys))),))


class PaidBuckets(OnShelf):
    """The paid-answer cache and its jobs as bucketed tables on a
    :class:`~pipeline.core.db.buckets.Shelf` (a job's latest state is its state)."""

    remote = False

    def __init__(
        self,
        shelf: Shelf,
        config: VendorConfig,
        clock: Callable[[], float] = time.time,
        floor: float = 1.0,
    ) -> None:
        """*floor*: as :class:`PaidAnswers`'s."""
        self.where = shelf.shown()
        self._config = config
        self._clock = clock
        self._floor = floor
        s, f = pl.String, pl.Float64
        values = {"vendor": s, "reason": s, "status": s, "billed": pl.Boolean, "answered_at": f}
        # Answers past their lifetime are kept (due), as the database keeps them.
        self._answers = BucketTable(
            shelf, "paid_answers", ("key",), {**values, "expires_at": f}, clock=clock,
            forget_expired=False,
        )  # fmt: skip
        job = {"targets": s, "created_at": f, "state": s}
        self._jobs = BucketTable(shelf, "paid_jobs", ("vendor", "key_fp", "job_id"), job)

    def answers(self, keys: Iterable[str]) -> dict[str, VendorAnswer]:
        return self.with_due(keys)[0]

    def with_due(self, keys: Iterable[str]) -> Kept:
        columns = ("key", "vendor", "reason", "status", "billed", "answered_at", "expires_at")
        found = self._answers.get(sorted(set(keys))).select(columns)
        return _kept(found.iter_rows(), self._clock())

    def now(self) -> float:
        return self._clock()

    def put(self, key: str, answer: VendorAnswer) -> None:
        if not answer.answered:
            return
        now = self._clock()
        expires = now + lifetime(_ttl(self._config, answer), key, now, self._floor)
        row: dict[str, object] = {"key": key, "vendor": answer.vendor}
        row |= {"reason": answer.reason.value, "status": answer.status, "billed": answer.billed}
        self._answers.put(pl.DataFrame([row | {"answered_at": answer.at, "expires_at": expires}]))

    def open_jobs(self, vendor: str, key_fp: str) -> list[Job]:
        found = self._jobs.get([vendor]).filter(
            (pl.col("key_fp") == key_fp) & (pl.col("state") == "open")
        )
        rows = found.sort("created_at").select("job_id", "targets", "created_at").iter_rows()
        return [
            Job(vendor, key_fp, job_id, tuple((k, a) for k, a in json.loads(targets)), created)
            for job_id, targets, created in rows
        ]

    def add_job(self, job: Job) -> None:
        self._job(job, "open")

    def close_job(self, job: Job, state: str) -> None:
        self._job(job, state)

    def forget(self, keys: Iterable[str]) -> int:
        wanted = sorted(set(keys))
        gone = self._answers.get(wanted).height
        self._answers.delete(wanted)
        return gone

    def _job(self, job: Job, state: str) -> None:
        targets = json.dumps([list(t) for t in job.targets])
        row = {"vendor": job.vendor, "key_fp": job.key_fp, "job_id": job.job_id}
        self._jobs.put(
            pl.DataFrame([row | {"targets": targets, "created_at": job.created_at, "state": state}])
        )


def _kept(rows: Iterable[tuple[Any, ...]], now: float) -> Kept:
    """Rows of (key, vendor, reason, status, billed, answered_at, expires_at) as the answers
    within their lifetime at *now*, and those past it (due)."""
    fresh: dict[str, VendorAnswer] = {}
    due: dict[str, VendorAnswer] = {}
    for key, vendor, reason, status, billed, at, expires in rows:
        answer = VendorAnswer(Reason(reason), status, vendor, bool(billed), at)
        (fresh if expires > now else due)[key] = answer
    return fresh, due
