"""Address-level answers kept across runs, so tomorrow's run only probes new or expired ones.

Each answer is committed the moment it is known: a run killed at any point keeps everything it
had learned, and a run started again finds those answers here instead of asking the mail
servers twice. The cache also keeps each domain's catch-all finding and, for a remote API, the
requests spent and the quota learned per key and window (the quota ledger).

It lives where the domain cache lives (:mod:`pipeline.core.domains.cache`):

- :class:`MailboxCache`: ``mailboxes.sqlite`` beside the domain cache, or the PostgreSQL
  database ``[cache] db`` names, which every host and every Dask worker shares;
- :class:`MailboxBuckets`: bucketed tables on the shared storage of a Dask run that names no
  database (:mod:`pipeline.core.db.buckets`), which the worker owning a provider writes as its
  answers arrive.

What is kept, and for how long, is decided once, in :class:`_Kept`. Each answer gets its
lifetime when it is learned: a share of its TTL between ``verify.ttl_floor`` and 1
(:func:`~pipeline.core.mailboxes.types.lifetime`), so the answers of a list verified in one
night fall due over many. An answer past its lifetime is *due*: it is kept, and handed out as
due (:meth:`MailboxStore.with_due`), so a run whose budget does not reach it still shows it,
with its age.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterable
from typing import Final, Protocol, TypeVar

import polars as pl

from pipeline.core.config import VerifyConfig
from pipeline.core.db.buckets import BucketTable, OnShelf, Shelf
from pipeline.core.db.database import OwnsDatabase, Where, dialect_of, open_database
from pipeline.core.mailboxes.types import Mailbox, MailboxResult, RemoteAnswer, lifetime
from pipeline.core.verdict import Verdict

Kept = tuple[dict[str, MailboxResult], dict[str, MailboxResult]]  # (fresh, due) by key
KeptRemote = tuple[dict[str, RemoteAnswer], dict[str, RemoteAnswer]]  # (fresh, due) by key

T = TypeVar("T")

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS {p}mailboxes (
    key        TEXT PRIMARY KEY,   -- the address's dedupe key
    outcome    TEXT NOT NULL,
    reply      TEXT NOT NULL,
    checked_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {p}remote_answers (
    key        TEXT NOT NULL,
    api        TEXT NOT NULL,      -- the service that answered
    verdict    TEXT NOT NULL,
    score      REAL NOT NULL,
    known      INTEGER NOT NULL,   -- HAS_KNOWN_BOUNCES
    suspected  INTEGER NOT NULL,   -- HAS_SUSPECTED_BOUNCES
    expires_at REAL NOT NULL,
    checked_at REAL,               -- when it was answered (null in caches from before it)
    PRIMARY KEY (key, api)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {p}api_quota (
    api          TEXT NOT NULL,
    key_fp       TEXT NOT NULL,    -- a fingerprint of the API key, never the key
    window_start INTEGER NOT NULL,
    spent        INTEGER NOT NULL,
    PRIMARY KEY (api, key_fp, window_start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {p}api_limits (
    api          TEXT NOT NULL,
    key_fp       TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    quota        INTEGER NOT NULL,  -- the window's quota, as the service's headers said
    PRIMARY KEY (api, key_fp, window_start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {p}catch_all (
    domain     TEXT PRIMARY KEY,
    catch_all  INTEGER NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
"""
_PG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS {p}mailboxes (
        key TEXT PRIMARY KEY, outcome TEXT NOT NULL, reply TEXT NOT NULL,
        checked_at DOUBLE PRECISION NOT NULL, expires_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS {p}remote_answers (
        key TEXT NOT NULL, api TEXT NOT NULL, verdict TEXT NOT NULL,
        score DOUBLE PRECISION NOT NULL, known INTEGER NOT NULL, suspected INTEGER NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL, checked_at DOUBLE PRECISION,
        PRIMARY KEY (key, api)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}api_quota (
        api TEXT NOT NULL, key_fp TEXT NOT NULL, window_start BIGINT NOT NULL,
        spent BIGINT NOT NULL, PRIMARY KEY (api, key_fp, window_start)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}api_limits (
        api TEXT NOT NULL, key_fp TEXT NOT NULL, window_start BIGINT NOT NULL,
        quota BIGINT NOT NULL, PRIMARY KEY (api, key_fp, window_start)
    )""",
    """CREATE TABLE IF NOT EXISTS {p}catch_all (
        domain TEXT PRIMARY KEY, catch_all INTEGER NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL
    )""",
)

# Answers about the mailbox itself last long; answers about our access to the server do not.
_LASTING = frozenset(
    {Mailbox.OK, Mailbox.NO_SUCH_USER, Mailbox.DISABLED, Mailbox.CATCH_ALL, Mailbox.UNVERIFIABLE}
)


class MailboxStore(Protocol):
    """What the address checkers keep their answers in, wherever it lives."""

    def now(self) -> float: ...
    def get_many(self, keys: Iterable[str]) -> dict[str, MailboxResult]: ...
    def with_due(self, keys: Iterable[str]) -> Kept: ...
    def put(self, key: str, result: MailboxResult) -> None: ...
    def put_many(self, results: dict[str, MailboxResult]) -> None: ...
    def catch_all(self, domains: Iterable[str]) -> dict[str, bool]: ...
    def put_catch_all(self, learned: dict[str, bool]) -> None: ...
    def remote_answers(self, keys: Iterable[str], api: str) -> dict[str, RemoteAnswer]: ...
    def remote_with_due(self, keys: Iterable[str], api: str) -> KeptRemote: ...
    def put_remote_answer(self, key: str, api: str, answer: RemoteAnswer) -> None: ...
    def quota_spent(self, api: str, key_fp: str, window_start: int) -> int: ...
    def add_quota_spent(self, api: str, key_fp: str, window_start: int, requests: int) -> None: ...
    def quota_limit(self, api: str, key_fp: str, window_start: int) -> int | None: ...
    def set_quota_limit(self, api: str, key_fp: str, window_start: int, quota: int) -> None: ...


class _Kept:
    """Which answers are kept and until when: an answer about *key* learned now lasts a
    lifetime drawn from its TTL (:func:`~pipeline.core.mailboxes.types.lifetime`)."""

    def __init__(self, config: VerifyConfig, clock: Callable[[], float]) -> None:
        self._config = config
        self.clock = clock

    def expires(self, key: str, result: MailboxResult, now: float) -> float:
        lasting = result.outcome in _LASTING
        ttl = self._config.ttl_good if lasting else self._config.ttl_temporary
        return now + lifetime(ttl, key, now, self._config.ttl_floor)

    def lasting(self, key: str, now: float) -> float:
        return now + lifetime(self._config.ttl_good, key, now, self._config.ttl_floor)

    def catch_all(self) -> float:
        """A domain's catch-all finding lasts the whole TTL of a mailbox answer."""
        return self.clock() + self._config.ttl_good

    @property
    def ttl_good(self) -> int:
        return self._config.ttl_good


def _result(outcome: str, reply: str, at: float) -> MailboxResult:
    return MailboxResult(Mailbox(outcome), reply, at)


def _remote(
    verdict: str, score: float, known: object, suspected: object, at: float | None = None
) -> RemoteAnswer:
    return RemoteAnswer(Verdict(verdict), score, bool(known), bool(suspected), at=at)


def _split(rows: Iterable[tuple[str, float, T]], now: float) -> tuple[dict[str, T], dict[str, T]]:
    """(key, expires_at, answer) rows as the answers within their lifetime and those past it."""
    fresh: dict[str, T] = {}
    due: dict[str, T] = {}
    for key, expires, answer in rows:
        (fresh if expires > now else due)[key] = answer
    return fresh, due


class MailboxCache(OwnsDatabase):
    """The mailbox cache in a SQLite file or a PostgreSQL database (*family*: as
    :class:`~pipeline.core.domains.cache.DomainCache`'s)."""

    def __init__(
        self,
        where: Where,
        config: VerifyConfig,
        clock: Callable[[], float] = time.time,
        family: str = "",
    ) -> None:
        self._db = open_database(
            where,
            what="the mailbox cache",
            remedy="Choose a writable directory with --cache-dir, "
            "or delete the file if it is corrupt.",
            broken_remedy="Delete the file to start afresh, or choose another --cache-dir.",
            sqlite_schema=_SCHEMA.format(p=family),
            postgres_schema=[s.format(p=family) for s in _PG_SCHEMA],
        )
        self.where = self._db.where
        self._kept = _Kept(config, clock)
        d, q, p = dialect_of(self._db), dialect_of(self._db).q, family
        window = f"api = {q} AND key_fp = {q} AND window_start = {q}"
        self._sql = {
            "get": f"SELECT key, outcome, reply, checked_at FROM {p}mailboxes "
            f"WHERE key IN {d.values()} AND expires_at > {q}",
            "with_due": f"SELECT key, outcome, reply, checked_at, expires_at FROM {p}mailboxes "
            f"WHERE key IN {d.values()}",
            "put": f"INSERT INTO {p}mailboxes VALUES ({q}, {q}, {q}, {q}, {q}) ON CONFLICT (key) "
            "DO UPDATE SET outcome = excluded.outcome, reply = excluded.reply, "
            "checked_at = excluded.checked_at, expires_at = excluded.expires_at",
            "catch_all": f"SELECT domain, catch_all FROM {p}catch_all "
            f"WHERE domain IN {d.values()} AND expires_at > {q}",
            "put_catch_all": f"INSERT INTO {p}catch_all VALUES ({q}, {q}, {q}) ON CONFLICT "
            "(domain) DO UPDATE SET catch_all = excluded.catch_all, "
            "expires_at = excluded.expires_at",
            "remote": f"SELECT key, verdict, score, known, suspected FROM {p}remote_answers "
            f"WHERE key IN {d.values()} AND api = {q} AND expires_at > {q}",
            # An answer from before answers kept their time: learned a whole TTL before it
            # expires.
            "remote_due": "SELECT key, verdict, score, known, suspected, expires_at, "
            f"coalesce(checked_at, expires_at - {q}) FROM {p}remote_answers "
            f"WHERE key IN {d.values()} AND api = {q}",
            "put_remote": f"INSERT INTO {p}remote_answers (key, api, verdict, score, known, "
            f"suspected, expires_at, checked_at) VALUES ({q}, {q}, {q}, {q}, {q}, {q}, {q}, {q}) "
            "ON CONFLICT (key, api) DO UPDATE SET verdict = excluded.verdict, "
            "score = excluded.score, known = excluded.known, suspected = excluded.suspected, "
            "expires_at = excluded.expires_at, checked_at = excluded.checked_at",
            "forget": f"DELETE FROM {p}mailboxes WHERE key IN {d.values()}",
            "forget_remote": f"DELETE FROM {p}remote_answers WHERE key IN {d.values()}",
            "spent": f"SELECT spent FROM {p}api_quota WHERE {window}",
            "add_spent": f"INSERT INTO {p}api_quota VALUES ({q}, {q}, {q}, {q}) ON CONFLICT "
            f"(api, key_fp, window_start) DO UPDATE SET spent = {p}api_quota.spent + "
            "excluded.spent",
            "limit": f"SELECT quota FROM {p}api_limits WHERE {window}",
            "set_limit": f"INSERT INTO {p}api_limits VALUES ({q}, {q}, {q}, {q}) ON CONFLICT "
            "(api, key_fp, window_start) DO UPDATE SET quota = excluded.quota",
        }
        self._add_checked_at(family)

    def _add_checked_at(self, family: str) -> None:
        """A cache from before remote answers kept their time gets the column (null in its
        rows: they count as learned a whole TTL before they expire)."""
        table = f"{family}remote_answers"
        if self._db.dialect == "sqlite":
            # Looked at under the write lock: two processes opening one old cache at once
            # would otherwise both add the column, and the second fail.
            with self._db.transaction(write=True):
                found = {row[1] for row in self._db.query(f"PRAGMA table_info({table})")}
                if "checked_at" not in found:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN checked_at REAL")
            return
        found = {
            row[0]
            for row in self._db.query(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = %s AND table_schema = current_schema()",
                (table,),
            )
        }
        if "checked_at" not in found:
            self._db.execute(
                f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS checked_at DOUBLE PRECISION"
            )

    def now(self) -> float:
        """The cache's clock: what an answer's age is measured against."""
        return self._kept.clock()

    def with_due(self, keys: Iterable[str]) -> Kept:
        """The answers kept for *keys*: those within their lifetime, and those past it (due)."""
        rows = self._db.query(self._sql["with_due"], (json.dumps(list(keys)),))
        now = self._kept.clock()
        return _split(((k, e, _result(o, r, at)) for k, o, r, at, e in rows), now)

    def remote_with_due(self, keys: Iterable[str], api: str) -> KeptRemote:
        """:meth:`remote_answers`, and the answers past their lifetime (due) beside them."""
        wanted = (self._kept.ttl_good, json.dumps(list(keys)), api)
        rows = self._db.query(self._sql["remote_due"], wanted)
        now = self._kept.clock()
        return _split(((k, e, _remote(v, s, kn, su, at)) for k, v, s, kn, su, e, at in rows), now)

    def get_many(self, keys: Iterable[str]) -> dict[str, MailboxResult]:
        rows = self._db.query(self._sql["get"], (json.dumps(list(keys)), self._kept.clock()))
        return {key: _result(outcome, reply, at) for key, outcome, reply, at in rows}

    def put(self, key: str, result: MailboxResult) -> None:
        """Commit one answer now (autocommit), with a lifetime from the TTL its kind
        deserves."""
        now = self._kept.clock()
        row = (key, result.outcome.value, result.reply, now)
        self._db.execute(self._sql["put"], (*row, self._kept.expires(key, result, now)))

    def put_many(self, results: dict[str, MailboxResult]) -> None:
        """Commit answers together, in one transaction."""
        now = self._kept.clock()
        rows = [
            (key, r.outcome.value, r.reply, now, self._kept.expires(key, r, now))
            for key, r in results.items()
        ]
        with self._db.transaction(write=True):
            self._db.executemany(self._sql["put"], rows)

    def catch_all(self, domains: Iterable[str]) -> dict[str, bool]:
        wanted = (json.dumps(list(domains)), self._kept.clock())
        rows = self._db.query(self._sql["catch_all"], wanted)
        return {domain: bool(flag) for domain, flag in rows}

    def put_catch_all(self, learned: dict[str, bool]) -> None:
        expires = self._kept.catch_all()
        rows = [(domain, int(flag), expires) for domain, flag in learned.items()]
        self._db.executemany(self._sql["put_catch_all"], rows)

    def remote_answers(self, keys: Iterable[str], api: str) -> dict[str, RemoteAnswer]:
        wanted = (json.dumps(list(keys)), api, self._kept.clock())
        return {key: _remote(*rest) for key, *rest in self._db.query(self._sql["remote"], wanted)}

    def put_remote_answer(self, key: str, api: str, answer: RemoteAnswer) -> None:
        """Keep an answer (errors are not kept: the next run asks again)."""
        if answer.verdict is None:
            return
        flags = (int(answer.known_bounces), int(answer.suspected_bounces))
        now = self._kept.clock()
        row = (key, api, answer.verdict.value, answer.score, *flags, self._kept.lasting(key, now))
        self._db.execute(self._sql["put_remote"], (*row, now))

    def forget(self, keys: Iterable[str]) -> int:
        """Delete every answer kept about the addresses *keys* (an erasure or opt-out: see
        :mod:`pipeline.core.assembly.forget`); how many went."""
        wanted = (json.dumps(sorted(set(keys))),)
        with self._db.transaction(write=True):
            gone = self._db.execute(self._sql["forget"], wanted)
            return gone + self._db.execute(self._sql["forget_remote"], wanted)

    def quota_spent(self, api: str, key_fp: str, window_start: int) -> int:
        rows = self._db.query(self._sql["spent"], (api, key_fp, window_start))
        return int(rows[0][0]) if rows else 0

    def add_quota_spent(self, api: str, key_fp: str, window_start: int, requests: int) -> None:
        """Count requests the moment they are answered: a killed run's spending is kept."""
        self._db.execute(self._sql["add_spent"], (api, key_fp, window_start, requests))

    def quota_limit(self, api: str, key_fp: str, window_start: int) -> int | None:
        rows = self._db.query(self._sql["limit"], (api, key_fp, window_start))
        return int(rows[0][0]) if rows else None

    def set_quota_limit(self, api: str, key_fp: str, window_start: int, quota: int) -> None:
        self._db.execute(self._sql["set_limit"], (api, key_fp, window_start, quota))


class MailboxBuckets(OnShelf):
    """The mailbox cache as bucketed tables on a :class:`~pipeline.core.db.buckets.Shelf`."""

    def __init__(
        self, shelf: Shelf, config: VerifyConfig, clock: Callable[[], float] = time.time
    ) -> None:
        self.where = shelf.shown()
        self._kept = _Kept(config, clock)
        s, f, i = pl.String, pl.Float64, pl.Int64
        # Answers past their lifetime are kept (due), as the database keeps them.
        self._answers = BucketTable(
            shelf, "mailboxes", ("key",), {"outcome": s, "reply": s, "at": f, "expires_at": f},
            clock=clock, forget_expired=False,
        )  # fmt: skip
        self._catch_all = BucketTable(
            shelf, "catch_all", ("domain",), {"catch_all": pl.Boolean, "expires_at": f},
            clock=clock,
        )  # fmt: skip
        remote = {"verdict": s, "score": f, "known": pl.Boolean, "suspected": pl.Boolean}
        self._remote = BucketTable(
            shelf, "remote_answers", ("key", "api"), {**remote, "expires_at": f, "at": f},
            clock=clock, forget_expired=False,
        )  # fmt: skip
        window = ("api", "key_fp", "window_start")
        self._spent = BucketTable(shelf, "api_quota", window, {"spent": i}, combine="sum")
        self._limits = BucketTable(shelf, "api_limits", window, {"quota": i})

    def now(self) -> float:
        return self._kept.clock()

    def get_many(self, keys: Iterable[str]) -> dict[str, MailboxResult]:
        return self.with_due(keys)[0]

    def with_due(self, keys: Iterable[str]) -> Kept:
        found = self._answers.get(keys).select("key", "expires_at", "outcome", "reply", "at")
        rows = ((key, expires, _result(*rest)) for key, expires, *rest in found.iter_rows())
        return _split(rows, self._kept.clock())

    def put(self, key: str, result: MailboxResult) -> None:
        self.put_many({key: result})

    def put_many(self, results: dict[str, MailboxResult]) -> None:
        """Commit answers together (one segment per bucket they fall in)."""
        now = self._kept.clock()
        rows = [
            (key, r.outcome.value, r.reply, now, self._kept.expires(key, r, now))
            for key, r in results.items()
        ]
        columns = ["key", "outcome", "reply", "at", "expires_at"]
        self._answers.put(pl.DataFrame(rows, schema=columns, orient="row"))

    def catch_all(self, domains: Iterable[str]) -> dict[str, bool]:
        found = self._catch_all.get(domains).select("domain", "catch_all")
        return dict(found.iter_rows())

    def put_catch_all(self, learned: dict[str, bool]) -> None:
        expires = self._kept.catch_all()
        rows = [(domain, flag, expires) for domain, flag in learned.items()]
        columns = ["domain", "catch_all", "expires_at"]
        self._catch_all.put(pl.DataFrame(rows, schema=columns, orient="row"))

    def remote_answers(self, keys: Iterable[str], api: str) -> dict[str, RemoteAnswer]:
        found = self.remote_with_due(keys, api)[0]  # as the database's: without their time
        return {key: dataclasses.replace(answer, at=None) for key, answer in found.items()}

    def remote_with_due(self, keys: Iterable[str], api: str) -> KeptRemote:
        found = self._remote.get(keys).filter(pl.col("api") == api)
        learned = pl.col("at").fill_null(pl.col("expires_at") - self._kept.ttl_good)
        columns = ("key", "expires_at", "verdict", "score", "known", "suspected", learned)
        rows = ((key, e, _remote(*rest)) for key, e, *rest in found.select(columns).iter_rows())
        return _split(rows, self._kept.clock())

    def put_remote_answer(self, key: str, api: str, answer: RemoteAnswer) -> None:
        if answer.verdict is None:
            return
        row = (key, api, answer.verdict.value, answer.score, answer.known_bounces)
        columns = ["key", "api", "verdict", "score", "known", "suspected", "expires_at", "at"]
        now = self._kept.clock()
        rows = [(*row, answer.suspected_bounces, self._kept.lasting(key, now), now)]
        self._remote.put(pl.DataFrame(rows, schema=columns, orient="row"))

    def forget(self, keys: Iterable[str]) -> int:
        wanted = sorted(set(keys))
        gone = self._answers.get(wanted).height + self._remote.get(wanted).height
        self._answers.delete(wanted)
        self._remote.delete(wanted)
        return gone

    def quota_spent(self, api: str, key_fp: str, window_start: int) -> int:
        return int(self._window(self._spent, api, key_fp, window_start, "spent") or 0)

    def add_quota_spent(self, api: str, key_fp: str, window_start: int, requests: int) -> None:
        self._spent.put(self._row(api, key_fp, window_start, spent=requests))

    def quota_limit(self, api: str, key_fp: str, window_start: int) -> int | None:
        return self._window(self._limits, api, key_fp, window_start, "quota")

    def set_quota_limit(self, api: str, key_fp: str, window_start: int, quota: int) -> None:
        self._limits.put(self._row(api, key_fp, window_start, quota=quota))

    @staticmethod
    def _row(api: str, key_fp: str, window_start: int, **value: int) -> pl.DataFrame:
        return pl.DataFrame(
            {"api": [api], "key_fp": [key_fp], "window_start": [str(window_start)]}
            | {k: [v] for k, v in value.items()}
        )

    @staticmethod
    def _window(
        table: BucketTable, api: str, key_fp: str, window_start: int, column: str
    ) -> int | None:
        found = table.get([api]).filter(
            (pl.col("key_fp") == key_fp) & (pl.col("window_start") == str(window_start))
        )
        return int(found.get_column(column).item()) if found.height else None
