"""The jobs' tables (SQLite and PostgreSQL) and their statements, written once.

``jobs`` holds one row per job: who asked (the key's id and plan), its state, what it was asked
and what the list turned out to be (JSON texts), its progress, its units, and who runs it (the
instance's id and its last heartbeat). ``job_secrets`` holds the key download links are signed
with, made by the first instance that starts and read by every other.
"""

from __future__ import annotations

from typing import Final

from pipeline.core.db.database import Dialect

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS jobs (
    id               TEXT PRIMARY KEY,
    key_id           TEXT NOT NULL,
    plan             TEXT NOT NULL,
    state            TEXT NOT NULL,
    created_at       REAL NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    name             TEXT NOT NULL,
    stem             TEXT NOT NULL,
    input_name       TEXT NOT NULL,
    input_bytes      INTEGER NOT NULL,
    options          TEXT NOT NULL,
    inspected        TEXT NOT NULL,
    progress         TEXT NOT NULL DEFAULT '{}',
    units_needed     INTEGER,
    units_reserved   INTEGER NOT NULL DEFAULT 0,
    units_policy     TEXT,
    units_window     INTEGER,
    units_returned   INTEGER NOT NULL DEFAULT 0,
    summary          TEXT,
    error            TEXT,
    owner            TEXT,
    heartbeat_at     REAL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_by_key ON jobs (key_id, created_at, id);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, created_at);
CREATE TABLE IF NOT EXISTS job_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""

PG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS jobs (
        id               TEXT PRIMARY KEY,
        key_id           TEXT NOT NULL,
        plan             TEXT NOT NULL,
        state            TEXT NOT NULL,
        created_at       DOUBLE PRECISION NOT NULL,
        started_at       DOUBLE PRECISION,
        finished_at      DOUBLE PRECISION,
        name             TEXT NOT NULL,
        stem             TEXT NOT NULL,
        input_name       TEXT NOT NULL,
        input_bytes      BIGINT NOT NULL,
        options          TEXT NOT NULL,
        inspected        TEXT NOT NULL,
        progress         TEXT NOT NULL DEFAULT '{}',
        units_needed     BIGINT,
        units_reserved   BIGINT NOT NULL DEFAULT 0,
        units_policy     TEXT,
        units_window     BIGINT,
        units_returned   BIGINT NOT NULL DEFAULT 0,
        summary          TEXT,
        error            TEXT,
        owner            TEXT,
        heartbeat_at     DOUBLE PRECISION,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        attempts         INTEGER NOT NULL DEFAULT 0
    )""",
    "CREATE INDEX IF NOT EXISTS jobs_by_key ON jobs (key_id, created_at, id)",
    "CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, created_at)",
    "CREATE TABLE IF NOT EXISTS job_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL)",
)

# The columns a Job is read from, in this order (store.job_of).
COLUMNS: Final = (
    "id, key_id, plan, state, created_at, started_at, finished_at, name, stem, input_name, "
    "input_bytes, options, inspected, progress, units_needed, units_reserved, units_policy, "
    "units_window, units_returned, summary, error, owner, heartbeat_at, cancel_requested, attempts"
)


class Statements:
    """The jobs' statements, written once, spelled for *d*'s database."""

    def __init__(self, d: Dialect) -> None:
        q = d.q
        self.insert = (
            "INSERT INTO jobs (id, key_id, plan, state, created_at, name, stem, input_name, "
            f"input_bytes, options, inspected) VALUES ({', '.join([q] * 11)})"
        )
        self.get = f"SELECT {COLUMNS} FROM jobs WHERE id = {q} AND key_id = {q}"
        self.get_any = f"SELECT {COLUMNS} FROM jobs WHERE id = {q}"
        # Newest first; the cursor is the last row's (created_at, id): rows strictly after it.
        self.page = (
            f"SELECT {COLUMNS} FROM jobs WHERE key_id = {q} ORDER BY created_at DESC, id DESC "
            f"LIMIT {q}"
        )
        self.page_after = (
            f"SELECT {COLUMNS} FROM jobs WHERE key_id = {q} AND (created_at < {q} OR "
            f"(created_at = {q} AND id < {q})) ORDER BY created_at DESC, id DESC LIMIT {q}"
        )
        # Whether a claim is worth a write (a read does not wait for the service's writes).
        self.any_queued = (
            "SELECT 1 FROM jobs WHERE state = 'queued' AND cancel_requested = 0 LIMIT 1"
        )
        # The oldest queued job, taken by this instance: the outer WHERE is checked again on
        # the row as another instance's committed claim left it, so only one claim wins.
        self.claim = (
            f"UPDATE jobs SET state = 'running', owner = {q}, heartbeat_at = {q}, "
            f"started_at = COALESCE(started_at, {q}), attempts = attempts + 1 "
            "WHERE id = (SELECT id FROM jobs WHERE state = 'queued' AND cancel_requested = 0 "
            "ORDER BY created_at, id LIMIT 1) AND state = 'queued' AND cancel_requested = 0 "
            f"RETURNING {COLUMNS}"
        )
        mine = f"id = {q} AND owner = {q} AND state = 'running'"
        self.heartbeat = (
            f"UPDATE jobs SET heartbeat_at = {q}, progress = {q} WHERE {mine} "
            "RETURNING cancel_requested"
        )
        self.needed = f"UPDATE jobs SET units_needed = {q}, progress = {q} WHERE {mine}"
        self.reserved = (
            f"UPDATE jobs SET units_needed = {q}, units_reserved = {q}, units_policy = {q}, "
            f"units_window = {q}, progress = {q} WHERE {mine}"
        )
        self.finish = (
            f"UPDATE jobs SET state = {q}, finished_at = {q}, summary = {q}, error = {q}, "
            f"units_returned = {q}, progress = {q}, owner = NULL WHERE {mine}"
        )
        self.requeue_mine = (
            f"UPDATE jobs SET state = 'queued', owner = NULL WHERE {mine} RETURNING id"
        )
        self.stale = f"SELECT {COLUMNS} FROM jobs WHERE state = 'running' AND heartbeat_at < {q}"
        self.requeue = (
            f"UPDATE jobs SET state = 'queued', owner = NULL WHERE id = {q} AND owner = {q} "
            f"AND state = 'running' AND heartbeat_at < {q}"
        )
        self.cancel_queued = (
            f"UPDATE jobs SET state = 'cancelled', finished_at = {q}, cancel_requested = 1, "
            "units_returned = units_reserved "
            f"WHERE id = {q} AND key_id = {q} AND state = 'queued' RETURNING {COLUMNS}"
        )
        self.cancel_running = (
            f"UPDATE jobs SET cancel_requested = 1 WHERE id = {q} AND key_id = {q} "
            f"AND state = 'running' RETURNING {COLUMNS}"
        )
        # A stale job that was asked to stop: cancelled where it stands, its units back.
        self.cancel_stale = (
            f"UPDATE jobs SET state = 'cancelled', finished_at = {q}, units_returned = "
            f"units_reserved, owner = NULL WHERE id = {q} AND owner = {q} AND state = 'running' "
            f"AND heartbeat_at < {q}"
        )
        self.delete = f"DELETE FROM jobs WHERE id = {q}"
        self.expired = (
            f"SELECT id FROM jobs WHERE finished_at IS NOT NULL AND finished_at < {q} LIMIT 100"
        )
        self.secret = f"SELECT value FROM job_secrets WHERE name = {q}"
        self.add_secret = f"INSERT INTO job_secrets VALUES ({q}, {q}) ON CONFLICT (name) DO NOTHING"
