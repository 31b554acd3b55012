"""The contact store's SQLite schema and statements, and the upgrade of an earlier schema."""

from __future__ import annotations

import sqlite3

from pipeline.core.contacts.names import first_token, parse_name

# Schema versions (PRAGMA user_version): 0 is a store from before names were read into parts;
# 1 adds contacts.parts and contacts.hidden and indexes parts, address and company.
VERSION = 1

# The email and phone indexes leave out records without one; queries repeat the "!= ''" term
# so SQLite may use them (sqlite.org/partialindex.html §2.1).
SCHEMA = """
CREATE TABLE IF NOT EXISTS secret (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value BLOB NOT NULL             -- the HMAC key of suppressions and audit terms
);
CREATE TABLE IF NOT EXISTS contacts (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    address     TEXT NOT NULL,      -- street, city, state postcode, country
    place       TEXT NOT NULL,      -- the city; the whole address when the file had no city
    phone       TEXT NOT NULL,      -- E.164
    email       TEXT NOT NULL,
    email_key   TEXT NOT NULL,      -- parse_address(email).key
    company     TEXT NOT NULL,
    title       TEXT NOT NULL,
    source      TEXT NOT NULL,      -- the import that last wrote the record
    imported_at REAL NOT NULL,      -- and its Unix time
    parts       TEXT NOT NULL DEFAULT '',   -- NameParts.encode(): given|middle|surname|suffix
    hidden      INTEGER NOT NULL DEFAULT 0  -- 1: the person opted out, or may be one who did
);
CREATE INDEX IF NOT EXISTS contacts_by_email ON contacts (email_key) WHERE email_key != '';
CREATE INDEX IF NOT EXISTS contacts_by_phone ON contacts (phone) WHERE phone != '';
CREATE TABLE IF NOT EXISTS suppressed (
    digest TEXT PRIMARY KEY,        -- hex HMAC-SHA256 of an identifier, never the identifier
    kind   TEXT NOT NULL,           -- email | phone | person
    at     REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS audit (
    at        REAL NOT NULL,
    key_id    TEXT NOT NULL,        -- API key id, or "anonymous"
    client_ip TEXT NOT NULL,        -- only for anonymous requests
    kind      TEXT NOT NULL,        -- email | phone | name
    term_hmac TEXT NOT NULL,        -- hex HMAC-SHA256 of the normalized term; "" once erased
    record_id INTEGER,              -- the record answered, NULL for anything but a match
    outcome   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at);
"""

# The full-text index reads its text from the contacts table (an external content table) and is
# kept in step by the triggers of the FTS5 documentation, §4.4.3 (sqlite.org/fts5.html). It
# holds the name's folded parts (the tokens the name rules compare), the address and employer.
FULL_TEXT = """
CREATE VIRTUAL TABLE IF NOT EXISTS contacts_fts USING fts5 (
    parts, address, company,
    content = 'contacts', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2', detail = none, columnsize = 0
);
CREATE TRIGGER IF NOT EXISTS contacts_fts_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contacts_fts (rowid, parts, address, company)
    VALUES (new.id, new.parts, new.address, new.company);
END;
CREATE TRIGGER IF NOT EXISTS contacts_fts_delete AFTER DELETE ON contacts BEGIN
    INSERT INTO contacts_fts (contacts_fts, rowid, parts, address, company)
    VALUES ('delete', old.id, old.parts, old.address, old.company);
END;
CREATE TRIGGER IF NOT EXISTS contacts_fts_update AFTER UPDATE OF parts, address, company
ON contacts BEGIN
    INSERT INTO contacts_fts (contacts_fts, rowid, parts, address, company)
    VALUES ('delete', old.id, old.parts, old.address, old.company);
    INSERT INTO contacts_fts (rowid, parts, address, company)
    VALUES (new.id, new.parts, new.address, new.company);
END;
"""

# From version 0: the new columns, and the index rebuilt over them (parts are filled in first).
UPGRADE_COLUMNS = """
ALTER TABLE contacts ADD COLUMN parts TEXT NOT NULL DEFAULT '';
ALTER TABLE contacts ADD COLUMN hidden INTEGER NOT NULL DEFAULT 0;
DROP TRIGGER IF EXISTS contacts_fts_insert;
DROP TRIGGER IF EXISTS contacts_fts_delete;
DROP TRIGGER IF EXISTS contacts_fts_update;
DROP TABLE IF EXISTS contacts_fts;
"""
REBUILD_FULL_TEXT = "INSERT INTO contacts_fts (contacts_fts) VALUES ('rebuild')"
NAMES = "SELECT id, name FROM contacts"
SET_PARTS = "UPDATE contacts SET parts = ? WHERE id = ?"

FIELDS = (
    "c.id, c.name, c.address, c.place, c.phone, c.email, c.email_key, c.company, c.title, c.parts"
)
SELECT = f"SELECT {FIELDS}, c.imported_at, c.hidden FROM contacts AS c"
BY_EMAIL = f"{SELECT} WHERE c.email_key = ? AND c.email_key != ''"
BY_PHONES = f"{SELECT} WHERE c.phone IN (SELECT value FROM json_each(?)) AND c.phone != ''"
BY_IDENTIFIERS = f"""
{SELECT} WHERE c.email_key IN (SELECT value FROM json_each(:keys)) AND c.email_key != ''
UNION
{SELECT} WHERE c.phone IN (SELECT value FROM json_each(:phones)) AND c.phone != ''
ORDER BY 1
"""
# Every record the query matches: no limit, so no namesake is left out of a decision.
BY_WORDS = f"""
WITH hits(id) AS (SELECT rowid FROM contacts_fts WHERE contacts_fts MATCH :q)
{SELECT} JOIN hits ON c.id = hits.id
"""
# The given names stored records start with (the first of the parts).
KNOWN_GIVEN = (
    "SELECT DISTINCT substr(parts, 1, instr(parts, '|') - 1) FROM contacts "
    "WHERE parts LIKE '_%|%|_%|%'"
)
INSERT = (
    "INSERT INTO contacts (name, address, place, phone, email, email_key, company, title, "
    "parts, source, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
UPDATE = (
    "UPDATE contacts SET name = ?, address = ?, place = ?, phone = ?, email = ?, email_key = ?, "
    "company = ?, title = ?, parts = ?, source = ?, imported_at = ? WHERE id = ?"
)
SUPPRESSED_AMONG = "SELECT digest FROM suppressed WHERE digest IN (SELECT value FROM json_each(?))"
ADD_SUPPRESSED = "INSERT OR IGNORE INTO suppressed (digest, kind, at) VALUES (?, ?, ?)"
_IDS = "(SELECT value FROM json_each(?))"
HIDE = f"UPDATE contacts SET hidden = 1 WHERE id IN {_IDS}"
DELETE = f"DELETE FROM contacts WHERE id IN {_IDS}"
# Another person's record keeps nothing of an erased person: a shared mailbox or number goes.
BLANK_EMAILS = f"UPDATE contacts SET email = '', email_key = '' WHERE email_key IN {_IDS}"
BLANK_PHONES = f"UPDATE contacts SET phone = '' WHERE phone IN {_IDS}"
ADD_SECRET = "INSERT OR IGNORE INTO secret (id, value) VALUES (1, ?)"
SECRET = "SELECT value FROM secret WHERE id = 1"
SCHEMA_VERSION = "PRAGMA user_version"
ANY_SUPPRESSED = "SELECT EXISTS (SELECT 1 FROM suppressed)"
AUDIT_COLUMNS = ("at", "key_id", "client_ip", "kind", "term_hmac", "record_id", "outcome")
ADD_AUDIT = f"INSERT INTO audit ({', '.join(AUDIT_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)"
AUDIT_SINCE = f"SELECT {', '.join(AUDIT_COLUMNS)} FROM audit WHERE at >= ? ORDER BY at, rowid"
PURGE_AUDIT = "DELETE FROM audit WHERE at < ?"
# The audit keeps that a lookup happened, not whom it was about.
SCRUB_AUDIT = (
    f"UPDATE audit SET term_hmac = '', record_id = NULL "
    f"WHERE record_id IN {_IDS} OR term_hmac IN {_IDS}"
)


def upgrade(db: sqlite3.Connection) -> None:
    """From an earlier version to :data:`VERSION`, inside the caller's transaction."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(contacts)")}
    if "parts" not in columns:
        _execute_all(db, UPGRADE_COLUMNS)
        named = db.execute(NAMES).fetchall()
        known = frozenset(first_token(name) for _, name in named)
        db.executemany(SET_PARTS, [(parse_name(n, known).encode(), rid) for rid, n in named])
    # The index is made after the parts are in: its triggers must not see them change.
    _execute_all(db, FULL_TEXT)
    db.execute(REBUILD_FULL_TEXT)
    db.execute(f"PRAGMA user_version = {VERSION}")


def _execute_all(db: sqlite3.Connection, script: str) -> None:
    # executescript would commit the open transaction first; one statement at a time does not.
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""
