"""The contact store's SQLite schema and statements."""

from __future__ import annotations

# The full-text index reads its text from the contacts table (an external content table) and is
# kept in step by the triggers of the FTS5 documentation, §4.4.3 (sqlite.org/fts5.html).
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
    imported_at REAL NOT NULL       -- and its Unix time
);
CREATE INDEX IF NOT EXISTS contacts_by_email ON contacts (email_key) WHERE email_key != '';
CREATE INDEX IF NOT EXISTS contacts_by_phone ON contacts (phone) WHERE phone != '';
CREATE VIRTUAL TABLE IF NOT EXISTS contacts_fts USING fts5 (
    name, place, company,
    content = 'contacts', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS contacts_fts_insert AFTER INSERT ON contacts BEGIN
    INSERT INTO contacts_fts (rowid, name, place, company)
    VALUES (new.id, new.name, new.place, new.company);
END;
CREATE TRIGGER IF NOT EXISTS contacts_fts_delete AFTER DELETE ON contacts BEGIN
    INSERT INTO contacts_fts (contacts_fts, rowid, name, place, company)
    VALUES ('delete', old.id, old.name, old.place, old.company);
END;
CREATE TRIGGER IF NOT EXISTS contacts_fts_update AFTER UPDATE OF name, place, company
ON contacts BEGIN
    INSERT INTO contacts_fts (contacts_fts, rowid, name, place, company)
    VALUES ('delete', old.id, old.name, old.place, old.company);
    INSERT INTO contacts_fts (rowid, name, place, company)
    VALUES (new.id, new.name, new.place, new.company);
END;
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
    term_hmac TEXT NOT NULL,        -- hex HMAC-SHA256 of the normalized term
    record_id INTEGER,              -- the record answered, NULL for anything but a match
    outcome   TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at);
"""

FIELDS = "c.id, c.name, c.address, c.place, c.phone, c.email, c.email_key, c.company, c.title"
SELECT = f"SELECT {FIELDS}, c.imported_at FROM contacts AS c"
BY_EMAIL = f"{SELECT} WHERE c.email_key = ? AND c.email_key != ''"
BY_PHONE = f"{SELECT} WHERE c.phone = ? AND c.phone != ''"
BY_IDENTIFIERS = f"""
{SELECT} WHERE c.email_key IN (SELECT value FROM json_each(:keys)) AND c.email_key != ''
UNION
{SELECT} WHERE c.phone IN (SELECT value FROM json_each(:phones)) AND c.phone != ''
ORDER BY 1
"""
# All words: any order will do, everyone found is scored. Any word: the best by bm25.
FTS_EVERY = f"""
WITH hits(id) AS (SELECT rowid FROM contacts_fts WHERE contacts_fts MATCH :q LIMIT :n)
{SELECT} JOIN hits ON c.id = hits.id
"""
FTS_ANY = f"""
WITH hits(id) AS (
    SELECT rowid FROM contacts_fts WHERE contacts_fts MATCH :q ORDER BY rank LIMIT :n
)
{SELECT} JOIN hits ON c.id = hits.id
"""
INSERT = (
    "INSERT INTO contacts (name, address, place, phone, email, email_key, company, title, "
    "source, imported_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
UPDATE = (
    "UPDATE contacts SET name = ?, address = ?, place = ?, phone = ?, email = ?, email_key = ?, "
    "company = ?, title = ?, source = ?, imported_at = ? WHERE id = ?"
)
ANY_SUPPRESSED = (
    "SELECT EXISTS (SELECT 1 FROM suppressed WHERE digest IN (SELECT value FROM json_each(?)))"
)
SUPPRESSED_AMONG = "SELECT digest FROM suppressed WHERE digest IN (SELECT value FROM json_each(?))"
AUDIT_COLUMNS = ("at", "key_id", "client_ip", "kind", "term_hmac", "record_id", "outcome")
