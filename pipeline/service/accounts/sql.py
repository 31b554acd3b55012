"""The service store's schemas (SQLite and PostgreSQL) and its statements, spelled for each.

The tables are the same in both: ``api_keys`` (a key's public id, the SHA-256 of its secret,
its plan and label, when it was made and revoked) and ``usage`` (one counter per subject,
policy and window start). The statements are written once; only their placeholders differ.
"""

from __future__ import annotations

from typing import Final

from pipeline.core.db.database import Dialect

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS api_keys (
    key_id     TEXT PRIMARY KEY,
    secret_sha TEXT NOT NULL UNIQUE,
    plan       TEXT NOT NULL,
    label      TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    revoked_at REAL
);
CREATE TABLE IF NOT EXISTS usage (
    subject      TEXT NOT NULL,     -- "key:<key_id>" or "ip:<address>"
    policy       TEXT NOT NULL,     -- e.g. "email-month"
    window_start INTEGER NOT NULL,  -- Unix time the counting window began
    used         INTEGER NOT NULL,
    PRIMARY KEY (subject, policy, window_start)
) WITHOUT ROWID;
"""

PG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS api_keys (
        key_id     TEXT PRIMARY KEY,
        secret_sha TEXT NOT NULL UNIQUE,
        plan       TEXT NOT NULL,
        label      TEXT NOT NULL DEFAULT '',
        created_at DOUBLE PRECISION NOT NULL,
        revoked_at DOUBLE PRECISION
    )""",
    """CREATE TABLE IF NOT EXISTS usage (
        subject      TEXT NOT NULL,     -- "key:<key_id>" or "ip:<address>"
        policy       TEXT NOT NULL,     -- e.g. "email-month"
        window_start BIGINT NOT NULL,   -- Unix time the window (UTC day or month) began
        used         INTEGER NOT NULL,
        PRIMARY KEY (subject, policy, window_start)
    )""",
)

_KEY: Final = "key_id, plan, label, created_at, revoked_at"


class Statements:
    """The store's statements, written once, spelled for *d*'s database."""

    def __init__(self, d: Dialect) -> None:
        q = d.q
        counter = f"subject = {q} AND policy = {q} AND window_start = {q}"
        self.create_key = f"INSERT INTO api_keys VALUES ({q}, {q}, {q}, {q}, {q}, NULL)"
        self.list_keys = f"SELECT {_KEY} FROM api_keys ORDER BY created_at, key_id"
        # Revoking again keeps the first revocation time.
        self.revoke_key = (
            f"UPDATE api_keys SET revoked_at = COALESCE(revoked_at, {q}) WHERE key_id = {q} "
            f"RETURNING {_KEY}"
        )
        self.find_key = f"SELECT {_KEY} FROM api_keys WHERE secret_sha = {q}"
        # Whether another connection wrote to the file since this one last asked: SQLite only
        # (a PostgreSQL database is shared by instances that cannot tell one another).
        self.data_version = "PRAGMA data_version" if d.name == "sqlite" else None
        # One unit is taken by this one statement, or none: the WHERE is evaluated on the row
        # as it is when the statement runs (after another's committed take, in PostgreSQL).
        self.consume = (
            f"INSERT INTO usage AS u VALUES ({q}, {q}, {q}, 1) "
            "ON CONFLICT (subject, policy, window_start) DO UPDATE SET used = u.used + 1 "
            f"WHERE u.used < {q} RETURNING used"
        )
        self.refund = f"UPDATE usage SET used = used - 1 WHERE {counter} AND used > 0"
        # Units already taken under this connection's write lock, written at its commit
        # (a SQLite file's turn of requests, see state.py): no limit to check again.
        self.add_used = f"UPDATE usage SET used = used + {q} WHERE {counter}"
        # Several units at once (a bulk job's reservation), all or none, by the same rule: the
        # conflict's WHERE sees the row as another's committed take left it. A first row is
        # inserted whole: its caller has checked that the units fit the limit.
        self.consume_units = (
            f"INSERT INTO usage AS u VALUES ({q}, {q}, {q}, {q}) "
            "ON CONFLICT (subject, policy, window_start) DO UPDATE SET used = u.used + "
            f"excluded.used WHERE u.used + excluded.used <= {q} RETURNING used"
        )
        self.refund_units = (
            f"UPDATE usage SET used = CASE WHEN used > {q} THEN used - {q} ELSE 0 END "
            f"WHERE {counter}"
        )
        self.used = f"SELECT used FROM usage WHERE {counter}"
        self.purge_usage = f"DELETE FROM usage WHERE window_start < {q}"
