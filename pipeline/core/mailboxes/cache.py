"""Address-level answers kept across runs, so tomorrow's run only probes new or expired ones.

A separate SQLite file beside the domain cache (``mailboxes.sqlite``). Each answer is committed
the moment it is known: a run killed at any point keeps everything it had learned, and a run
started again finds those answers here instead of asking the mail servers twice.

Each answer gets its lifetime when it is learned: a share of its TTL between ``verify.ttl_floor``
and 1 (:func:`~pipeline.core.mailboxes.types.lifetime`), so the answers of a list verified in one
night fall due over many. An answer past its lifetime is *due*: it is kept, and handed out as
due (:meth:`MailboxCache.with_due`), so a run whose budget does not reach it still shows it,
with its age.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from pipeline.core.config import VerifyConfig
from pipeline.core.db.sqlite import SqliteFile
from pipeline.core.mailboxes.types import Mailbox, MailboxResult, RemoteAnswer, lifetime
from pipeline.core.verdict import Verdict

Kept = tuple[dict[str, MailboxResult], dict[str, MailboxResult]]  # (fresh, due) by key

_SCHEMA = """
CREATE TABLE IF NOT EXISTS mailboxes (
    key        TEXT PRIMARY KEY,   -- the address's dedupe key
    outcome    TEXT NOT NULL,
    reply      TEXT NOT NULL,
    checked_at REAL NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS remote_answers (
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
CREATE TABLE IF NOT EXISTS api_quota (
    api          TEXT NOT NULL,
    key_fp       TEXT NOT NULL,    -- a fingerprint of the API key, never the key
    window_start INTEGER NOT NULL,
    spent        INTEGER NOT NULL,
    PRIMARY KEY (api, key_fp, window_start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS api_limits (
    api          TEXT NOT NULL,
    key_fp       TEXT NOT NULL,
    window_start INTEGER NOT NULL,
    quota        INTEGER NOT NULL,  -- the window's quota, as the service's headers said
    PRIMARY KEY (api, key_fp, window_start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS catch_all (
    domain     TEXT PRIMARY KEY,
    catch_all  INTEGER NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
"""

# Answers about the mailbox itself last long; answers about our access to the server do not.
_LASTING = frozenset(
    {Mailbox.OK, Mailbox.NO_SUCH_USER, Mailbox.DISABLED, Mailbox.CATCH_ALL, Mailbox.UNVERIFIABLE}
)


class MailboxCache(SqliteFile):
    def __init__(
        self, path: Path, config: VerifyConfig, clock: Callable[[], float] = time.time
    ) -> None:
        super().__init__(
            path,
            _SCHEMA,
            what="the mailbox cache",
            remedy="Choose a writable directory with --cache-dir, "
            "or delete the file if it is corrupt.",
            broken_remedy="Delete the file to start afresh, or choose another --cache-dir.",
        )
        self._config = config
        self._clock = clock
        columns = {row[1] for row in self._query("PRAGMA table_info(remote_answers)")}
        if "checked_at" not in columns:  # a cache from before answers kept their time
            self._query("ALTER TABLE remote_answers ADD COLUMN checked_at REAL")

    def now(self) -> float:
        """The cache's clock: what an answer's age is measured against."""
        return self._clock()

    def with_due(self, keys: Iterable[str]) -> Kept:
        """The answers kept for *keys*: those within their lifetime, and those past it (due)."""
        rows = self._query(
            "SELECT m.key, m.outcome, m.reply, m.checked_at, m.expires_at FROM json_each(?) AS w "
            "JOIN mailboxes AS m ON m.key = w.value",
            (json.dumps(list(keys)),),
        )
        now = self._clock()
        fresh: dict[str, MailboxResult] = {}
        due: dict[str, MailboxResult] = {}
        for key, outcome, reply, at, expires in rows:
            (fresh if expires > now else due)[key] = MailboxResult(Mailbox(outcome), reply, at)
        return fresh, due

    def get_many(self, keys: Iterable[str]) -> dict[str, MailboxResult]:
        rows = self._query(
            "SELECT m.key, m.outcome, m.reply, m.checked_at FROM json_each(?) AS w "
            "JOIN mailboxes AS m ON m.key = w.value WHERE m.expires_at > ?",
            (json.dumps(list(keys)), self._clock()),
        )
        return {key: MailboxResult(Mailbox(outcome), reply, at) for key, outcome, reply, at in rows}

    def put(self, key: str, result: MailboxResult) -> None:
        """Commit one answer now (autocommit), with a lifetime from the TTL its kind deserves."""
        now = self._clock()
        ttl = self._config.ttl_good if result.outcome in _LASTING else self._config.ttl_temporary
        lasts = lifetime(ttl, key, now, self._config.ttl_floor)
        self._query(
            "INSERT OR REPLACE INTO mailboxes VALUES (?, ?, ?, ?, ?)",
            (key, result.outcome.value, result.reply, now, now + lasts),
        )

    def catch_all(self, domains: Iterable[str]) -> dict[str, bool]:
        rows = self._query(
            "SELECT c.domain, c.catch_all FROM json_each(?) AS w "
            "JOIN catch_all AS c ON c.domain = w.value WHERE c.expires_at > ?",
            (json.dumps(list(domains)), self._clock()),
        )
        return {domain: bool(flag) for domain, flag in rows}

    def put_catch_all(self, learned: dict[str, bool]) -> None:
        expires = self._clock() + self._config.ttl_good
        for domain, flag in learned.items():
            self._query(
                "INSERT OR REPLACE INTO catch_all VALUES (?, ?, ?)", (domain, int(flag), expires)
            )

    def remote_answers(self, keys: Iterable[str], api: str) -> dict[str, RemoteAnswer]:
        rows = self._query(
            "SELECT r.key, r.verdict, r.score, r.known, r.suspected FROM json_each(?) AS w "
            "JOIN remote_answers AS r ON r.key = w.value WHERE r.api = ? AND r.expires_at > ?",
            (json.dumps(list(keys)), api, self._clock()),
        )
        return {
            key: RemoteAnswer(Verdict(verdict), score, bool(known), bool(suspected))
            for key, verdict, score, known, suspected in rows
        }

    def remote_with_due(
        self, keys: Iterable[str], api: str
    ) -> tuple[dict[str, RemoteAnswer], dict[str, RemoteAnswer]]:
        """:meth:`remote_answers`, and the answers past their lifetime (due) beside them."""
        rows = self._query(
            "SELECT r.key, r.verdict, r.score, r.known, r.suspected, r.expires_at, "
            "coalesce(r.checked_at, r.expires_at - ?) FROM json_each(?) AS w "
            "JOIN remote_answers AS r ON r.key = w.value WHERE r.api = ?",
            (self._config.ttl_good, json.dumps(list(keys)), api),
        )
        now = self._clock()
        fresh: dict[str, RemoteAnswer] = {}
        due: dict[str, RemoteAnswer] = {}
        for key, verdict, score, known, suspected, expires, at in rows:
            answer = RemoteAnswer(Verdict(verdict), score, bool(known), bool(suspected), at=at)
            (fresh if expires > now else due)[key] = answer
        return fresh, due

    def put_remote_answer(self, key: str, api: str, answer: RemoteAnswer) -> None:
        """Keep an answer (errors are not kept: the next run asks again)."""
        if answer.verdict is None:
            return
        now = self._clock()
        lasts = lifetime(self._config.ttl_good, key, now, self._config.ttl_floor)
        self._query(
            "INSERT OR REPLACE INTO remote_answers "
            "(key, api, verdict, score, known, suspected, expires_at, checked_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                api,
                answer.verdict.value,
                answer.score,
                int(answer.known_bounces),
                int(answer.suspected_bounces),
                now + lasts,
                now,
            ),
        )

    def forget(self, keys: Iterable[str]) -> int:
        """Delete every answer kept about the addresses *keys* (an erasure or opt-out: see
        :mod:`pipeline.core.assembly.forget`); how many went."""
        wanted = (json.dumps(sorted(set(keys))),)
        with self._transaction("BEGIN IMMEDIATE"):
            gone: int = self._run(
                lambda db: (
                    db.execute(
                        "DELETE FROM mailboxes WHERE key IN (SELECT value FROM json_each(?))",
                        wanted,
                    ).rowcount
                )
            )
            gone += self._run(
                lambda db: (
                    db.execute(
                        "DELETE FROM remote_answers WHERE key IN (SELECT value FROM json_each(?))",
                        wanted,
                    ).rowcount
                )
            )
        return gone

    def quota_spent(self, api: str, key_fp: str, window_start: int) -> int:
        rows = self._query(
            "SELECT spent FROM api_quota WHERE api = ? AND key_fp = ? AND window_start = ?",
            (api, key_fp, window_start),
        )
        return int(rows[0][0]) if rows else 0

    def add_quota_spent(self, api: str, key_fp: str, window_start: int, requests: int) -> None:
        """Count requests the moment they are answered: a killed run's spending is kept."""
        self._query(
            "INSERT INTO api_quota VALUES (?, ?, ?, ?) ON CONFLICT (api, key_fp, window_start) "
            "DO UPDATE SET spent = spent + excluded.spent",
            (api, key_fp, window_start, requests),
        )

    def quota_limit(self, api: str, key_fp: str, window_start: int) -> int | None:
        rows = self._query(
            "SELECT quota FROM api_limits WHERE api = ? AND key_fp = ? AND window_start = ?",
            (api, key_fp, window_start),
        )
        return int(rows[0][0]) if rows else None

    def set_quota_limit(self, api: str, key_fp: str, window_start: int, quota: int) -> None:
        self._query(
            "INSERT OR REPLACE INTO api_limits VALUES (?, ?, ?, ?)",
            (api, key_fp, window_start, quota),
        )
