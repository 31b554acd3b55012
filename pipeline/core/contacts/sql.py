"""The contact store's schemas (SQLite and PostgreSQL), its statements for each, and the
upgrade of an earlier SQLite schema."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from pipeline.core.contacts.identity import words
from pipeline.core.contacts.names import first_token, parse_name
from pipeline.core.contacts.types import Clause, Option, Row
from pipeline.core.db.database import Dialect

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
SCHEMA_VERSION = "PRAGMA user_version"

# The same store in PostgreSQL. Its full-text index is a tsvector of the words the Python side
# reads from the parts, address and employer (:func:`index_words`), kept verbatim
# (array_to_tsvector) so that PostgreSQL's parser and dictionaries play no part: a search finds
# the records SQLite's FTS5 finds. No trigram index: fuzzy similarity plays no part in an
# answer (matching rule 4), so there is nothing for one to serve.
PG_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS secret (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        value BYTEA NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS contacts (
        id          BIGSERIAL PRIMARY KEY,
        name        TEXT NOT NULL,
        address     TEXT NOT NULL,
        place       TEXT NOT NULL,
        phone       TEXT NOT NULL,
        email       TEXT NOT NULL,
        email_key   TEXT NOT NULL,
        company     TEXT NOT NULL,
        title       TEXT NOT NULL,
        source      TEXT NOT NULL,
        imported_at DOUBLE PRECISION NOT NULL,
        parts       TEXT NOT NULL DEFAULT '',
        hidden      INTEGER NOT NULL DEFAULT 0,
        words       TSVECTOR NOT NULL DEFAULT ''::tsvector  -- index_words(parts address company)
    )""",
    "CREATE INDEX IF NOT EXISTS contacts_by_email ON contacts (email_key) WHERE email_key != ''",
    "CREATE INDEX IF NOT EXISTS contacts_by_phone ON contacts (phone) WHERE phone != ''",
    "CREATE INDEX IF NOT EXISTS contacts_by_words ON contacts USING GIN (words)",
    """CREATE TABLE IF NOT EXISTS suppressed (
        digest TEXT PRIMARY KEY,
        kind   TEXT NOT NULL,
        at     DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS audit (
        id        BIGSERIAL PRIMARY KEY,
        at        DOUBLE PRECISION NOT NULL,
        key_id    TEXT NOT NULL,
        client_ip TEXT NOT NULL,
        kind      TEXT NOT NULL,
        term_hmac TEXT NOT NULL,
        record_id BIGINT,
        outcome   TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS audit_by_time ON audit (at)",
)

AUDIT_COLUMNS = ("at", "key_id", "client_ip", "kind", "term_hmac", "record_id", "outcome")
_FIELDS = (
    "c.id, c.name, c.address, c.place, c.phone, c.email, c.email_key, c.company, c.title, c.parts"
)
_WRITTEN = (
    "name, address, place, phone, email, email_key, company, title, parts, source, imported_at"
)


def index_words(row: Row) -> list[str]:
    """The words PostgreSQL's full-text index holds for *row*: those FTS5's index holds, folded
    the way the search folds its terms (:func:`~pipeline.core.contacts.identity.words`)."""
    return sorted(set(words(f"{row.parts} {row.address} {row.company}")))


class Statements:
    """The store's statements, written once, spelled for *d*'s database."""

    def __init__(self, d: Dialect) -> None:
        self.dialect = d
        sqlite = d.name == "sqlite"
        q, ids = d.q, d.values(integers=True)
        select = f"SELECT {_FIELDS}, c.imported_at, c.hidden FROM contacts AS c"
        self.by_email = f"{select} WHERE c.email_key = {q} AND c.email_key != ''"
        self.by_phones = f"{select} WHERE c.phone IN {d.values()} AND c.phone != ''"
        self.by_identifiers = f"""
        {select} WHERE c.email_key IN {d.values(d.p("keys"))} AND c.email_key != ''
        UNION
        {select} WHERE c.phone IN {d.values(d.p("phones"))} AND c.phone != ''
        ORDER BY 1
        """
        # Every record the query matches: no limit, so no namesake is left out of a decision.
        self.by_words = (
            f"""WITH hits(id) AS (SELECT rowid FROM contacts_fts WHERE contacts_fts MATCH :q)
            {select} JOIN hits ON c.id = hits.id"""
            if sqlite
            else f"{select} WHERE c.words @@ {d.p('q')}::tsquery"
        )
        # What a search reads (ContactStore.search): the same count of rows whatever it finds.
        self.search_email = self._paged(f"c.email_key = {d.p('key')} AND c.email_key != ''")
        self.search_phones = self._paged(f"c.phone IN {d.values(d.p('phones'))} AND c.phone != ''")
        # The index drives the join, so that the page's limit stops its reading (an IN over
        # it would read every hit of a word thousands of records hold first).
        self.search_words = (
            self._paged(
                "contacts_fts MATCH :q",
                "contacts_fts JOIN contacts AS c ON c.id = contacts_fts.rowid",
            )
            if sqlite
            else self._paged(f"c.words @@ {d.p('q')}::tsquery")
        )
        # One row per digest asked (duplicates too), with whether it is suppressed.
        digests = (
            "json_each(:digests) AS j"
            if sqlite
            else "jsonb_array_elements_text(%(digests)s::jsonb)"
        )
        value = "j.value" if sqlite else "v"
        self.search_suppressed = (
            f"SELECT {value}, EXISTS (SELECT 1 FROM suppressed AS s WHERE s.digest = {value}) "
            f"FROM {digests}{'' if sqlite else ' AS v'}"
        )
        # The given names stored records start with (the first of the parts).
        given = "substr(parts, 1, instr(parts, '|') - 1)" if sqlite else "split_part(parts, '|', 1)"
        self.known_given = f"SELECT DISTINCT {given} FROM contacts WHERE parts LIKE '_%|%|_%|%'"
        self.last_id = "SELECT coalesce(max(id), 0) FROM contacts"
        marks = ", ".join([q] * 11)
        self.insert = (
            f"INSERT INTO contacts ({_WRITTEN}) VALUES ({marks})"
            if sqlite
            else f"INSERT INTO contacts ({_WRITTEN}, words) "
            f"VALUES ({marks}, array_to_tsvector({q}::text[]))"
        )
        sets = ", ".join(f"{column} = {q}" for column in _WRITTEN.split(", "))
        words_set = "" if sqlite else f", words = array_to_tsvector({q}::text[])"
        self.update = f"UPDATE contacts SET {sets}{words_set} WHERE id = {q}"
        self.suppressed_among = f"SELECT digest FROM suppressed WHERE digest IN {d.values()}"
        self.add_suppressed = (
            f"INSERT INTO suppressed (digest, kind, at) VALUES ({q}, {q}, {q}) "
            "ON CONFLICT DO NOTHING"
        )
        self.hide = f"UPDATE contacts SET hidden = 1 WHERE id IN {ids}"
        self.delete = f"DELETE FROM contacts WHERE id IN {ids}"
        # Another person's record keeps nothing of an erased person: a shared mailbox or
        # number goes.
        self.blank_emails = (
            f"UPDATE contacts SET email = '', email_key = '' WHERE email_key IN {d.values()}"
        )
        self.blank_phones = f"UPDATE contacts SET phone = '' WHERE phone IN {d.values()}"
        self.add_secret = f"INSERT INTO secret (id, value) VALUES (1, {q}) ON CONFLICT DO NOTHING"
        self.secret = "SELECT value FROM secret WHERE id = 1"
        self.any_suppressed = "SELECT EXISTS (SELECT 1 FROM suppressed)"
        columns = ", ".join(AUDIT_COLUMNS)
        self.add_audit = f"INSERT INTO audit ({columns}) VALUES ({', '.join([q] * 7)})"
        order = "rowid" if sqlite else "id"
        self.audit_since = f"SELECT {columns} FROM audit WHERE at >= {q} ORDER BY at, {order}"
        self.purge_audit = f"DELETE FROM audit WHERE at < {q}"
        # The audit keeps that a lookup happened, not whom it was about.
        self.scrub_audit = (
            "UPDATE audit SET term_hmac = '', record_id = NULL "
            f"WHERE record_id IN {ids} OR term_hmac IN {d.values()}"
        )

    def _paged(self, where: str, source: str = "contacts AS c") -> str:
        """The records *where* holds, at most ``:take`` (<= ``:page``) of them, then other
        records (the last column 1) up to ``:page`` rows in all: a search reads as many rows
        whether it finds no one, one person or many (see ContactStore.search). The others
        are read from ``:start`` on in id order (wrapping round to the first): from a random
        place, so that they cost a read from disk as the records found do, not a page kept
        warm by every search."""
        d = self.dialect
        page, take, start = d.p("page"), d.p("take"), d.p("start")
        fields = f"{_FIELDS}, c.imported_at, c.hidden"
        ordered = f"SELECT {fields}, 1 FROM contacts AS c"
        return f"""WITH found AS (SELECT {fields} FROM {source} WHERE {where} LIMIT {take}),
        others AS (
            SELECT * FROM ({ordered} WHERE c.id >= {start} ORDER BY c.id LIMIT {page}) AS later
            UNION ALL
            SELECT * FROM ({ordered} ORDER BY c.id LIMIT {page}) AS first
        )
        SELECT found.*, 0 FROM found
        UNION ALL
        SELECT * FROM (
            SELECT * FROM others LIMIT {page} - (SELECT count(*) FROM found)
        ) AS padding"""

    def written(self, row: Row, source: str, now: float) -> tuple[object, ...]:
        """The values :attr:`insert` takes for *row*, and :attr:`update` before the id."""
        values = (*_values(row), source, now)
        return values if self.dialect.name == "sqlite" else (*values, index_words(row))

    def match(self, clauses: Sequence[Clause]) -> str:
        """The full-text query :attr:`by_words` takes for *clauses*: FTS5's syntax or a
        tsquery (see :func:`~pipeline.core.contacts.search.match_clauses`)."""
        if self.dialect.name == "sqlite":
            return fts5_query(clauses)
        return tsquery(clauses)


def _values(row: Row) -> tuple[str, ...]:
    return (
        row.name,
        row.address,
        row.place,
        row.phone,
        row.email,
        row.email_key,
        row.company,
        row.title,
        row.parts,
    )


def fts5_query(clauses: Sequence[Clause]) -> str:
    """*clauses* in FTS5's syntax: each alternative a quoted string, so no word can act as
    query syntax; ``"m"*`` for an initial."""
    if not clauses:
        return '""'

    def option(o: Option) -> str:
        quoted = [f'"{w}"' for w in o.words]
        if o.prefix:
            return f"{quoted[0]}*"
        return quoted[0] if len(quoted) == 1 else "(" + " AND ".join(quoted) + ")"

    def clause(c: Clause) -> str:
        return option(c[0]) if c[0].prefix else "(" + " OR ".join(map(option, c)) + ")"

    return " AND ".join(map(clause, clauses))


def tsquery(clauses: Sequence[Clause]) -> str:
    """*clauses* as a tsquery of verbatim lexemes (read by the ``::tsquery`` cast, which
    normalizes nothing); ``'m':*`` for an initial. A word FTS5 would split in several tokens
    needs all of them."""

    def option(o: Option) -> str:
        lexemes = [t for w in o.words for t in words(w)] or [" "]
        if o.prefix:
            return f"'{lexemes[0]}':*"
        return "(" + " & ".join(f"'{t}'" for t in lexemes) + ")"

    if not clauses:
        return "' '"  # a lexeme no record holds: nothing matches
    return " & ".join("(" + " | ".join(map(option, c)) + ")" for c in clauses)


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
