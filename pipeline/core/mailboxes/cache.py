"""Address-level answers kept across runs, so tomorrow's run only probes new or expired ones.

A separate SQLite file beside the domain cache (``mailboxes.sqlite``). Each answer is committed
the moment it is known: a run killed at any point keeps everything it had learned, and a run
started again finds those answers here instead of asking the mail servers twice.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from pipeline.core.config import VerifyConfig
from pipeline.core.db.sqlite import SqliteFile
from pipeline.core.mailboxes.types import Mailbox, MailboxResult, RemoteAnswer
from pipeline.core.verdict import Verdict

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

    def get_many(self, keys: Iterable[str]) -> dict[str, MailboxResult]:
        rows = self._query(
            "SELECT m.key, m.outcome, m.reply, m.checked_at FROM json_each(?) AS w "
            "JOIN mailboxes AS m ON m.key = w.value WHERE m.expires_at > ?",
            (json.dumps(list(keys)), self._clock()),
        )
        return {key: MailboxResult(Mailbox(outcome), reply, at) for key, outcome, reply, at in rows}

    def put(self, key: str, result: MailboxResult) -> None:
        """Commit one answer now (autocommit), with the TTL its kind deserves."""
        now = self._clock()
        ttl = self._config.ttl_good if result.outcome in _LASTING else self._config.ttl_temporary
        self._query(
            "INSERT OR REPLACE INTO mailboxes VALUES (?, ?, ?, ?, ?)",
            (key, result.outcome.value, result.reply, now, now + ttl),
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

    def put_remote_answer(self, key: str, api: str, answer: RemoteAnswer) -> None:
        """Keep an answer (errors are not kept: the next run asks again)."""
        if answer.verdict is None:
            return
        self._query(
            "INSERT OR REPLACE INTO remote_answers VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                key,
                api,
                answer.verdict.value,
                answer.score,
                int(answer.known_bounces),
                int(answer.suspected_bounces),
                self._clock() + self._config.ttl_good,
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
