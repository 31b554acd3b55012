"""The contact store behind ``/api/find``: imported contacts, opt-outs and the lookup audit.

Contacts come from CSV or Parquet files (:meth:`ContactStore.import_file`) into one SQLite file,
``contacts.db`` or else ``contacts.sqlite`` in the cache directory. :meth:`ContactStore.search`
answers a search term with one :class:`Lookup`; the service answers 404 for anything but a MATCH.

Term classification, name search and the decision: :mod:`pipeline.core.contacts.search`.

Opt-out (:meth:`ContactStore.suppress`) and erasure (:meth:`ContactStore.erase`)
    The person's identifiers (email key, E.164 number, and name with address) are kept only as
    HMAC-SHA256 digests (RFC 2104) under a 256-bit secret made once per store and kept in its own
    table. Suppression reaches every record that shares an identifier with the ones named, and
    theirs in turn. A search is SUPPRESSED when its term is a suppressed email or phone, or when
    any record of the best candidate's person has a suppressed identifier, name searches
    included; the service answers it exactly like no match. Import rejects rows that carry a
    suppressed identifier, so importing the person again does not bring them back. Erasure
    suppresses the same way and deletes the records (and their full-text rows).

Import (:meth:`ContactStore.import_file`): see :mod:`pipeline.core.contacts.importer`.

Audit (:meth:`ContactStore.audit`)
    One record per search: time, API key id (or "anonymous" with the client's IP address), the
    term's kind and an HMAC of its normalized value (never the term), the matched record id and
    the outcome. :meth:`ContactStore.purge_audit` deletes those older than
    ``contacts.retention_days``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Final, TypeVar

from pipeline.core.address import Syntax, parse_address
from pipeline.core.config import ContactsConfig, known_region
from pipeline.core.contacts import sql
from pipeline.core.contacts.identity import normalize_phone, person_key, words
from pipeline.core.contacts.importer import Drafts, normalize_rows, read_contacts
from pipeline.core.contacts.search import classify_term, decide, fts_query, name_confidence
from pipeline.core.contacts.types import (
    Candidate,
    Contact,
    ContactImport,
    Lookup,
    Outcome,
    Rejected,
    Row,
    StoredRow,
    TermKind,
)
from pipeline.core.errors import UsageError
from pipeline.core.sqlite import SqliteFile

_BATCH: Final = 50_000
_OPTED_OUT: Final = "the person opted out (suppressed)"


# --------------------------------------------------------------------------- the store

_ANONYMOUS: Final = "anonymous"
_DAY: Final = 86400.0
_T = TypeVar("_T")


class ContactStore(SqliteFile):
    """Contacts, opt-outs and the lookup audit in one SQLite file.

    One connection, guarded by a lock: the service may call from worker threads, and a search
    must not read an import's half-written transaction on the shared connection.
    """

    def __init__(
        self, path: Path, config: ContactsConfig, clock: Callable[[], float] = time.time
    ) -> None:
        region = known_region(config.region)
        super().__init__(
            path,
            sql.SCHEMA,
            what="the contact store",
            remedy="Choose a writable file with contacts.db or --cache-dir.",
            broken_remedy="Delete the file to start afresh (then import the contact files "
            "again; opt-outs are lost with it), or choose another one with contacts.db.",
        )
        self._config = config
        self._region = region
        self._clock = clock
        self._lock = threading.RLock()
        # Made once per store (INSERT OR IGNORE keeps the first). 32 bytes is SHA-256's output
        # length L, below which RFC 2104 §3 discourages HMAC keys.
        self._run(
            lambda db: db.execute(
                "INSERT OR IGNORE INTO secret (id, value) VALUES (1, ?)", (secrets.token_bytes(32),)
            )
        )
        self._secret: bytes = self._query("SELECT value FROM secret WHERE id = 1", ())[0][0]

    # ---- import

    def import_file(self, path: Path, source: str) -> ContactImport:
        """Add the contacts of a CSV or Parquet file, merging those already stored."""
        table = read_contacts(path)
        rows, rejected = normalize_rows(table, path, self._region)
        imported = merged = 0
        with self._lock, self._transaction("BEGIN IMMEDIATE"):
            now = self._clock()
            screen = self._query("SELECT EXISTS (SELECT 1 FROM suppressed)", ())[0][0] == 1
            for start in range(0, len(rows), _BATCH):
                batch = rows[start : start + _BATCH]
                added, joined, refused = self._import_batch(batch, source, now, screen)
                imported, merged, rejected = imported + added, merged + joined, rejected + refused
        read = len(table.where) + len(table.rejected)
        return ContactImport(read, imported, merged, rejected)

    def _import_batch(
        self, batch: list[tuple[str, Row]], source: str, now: float, screen: bool
    ) -> tuple[int, int, Rejected]:
        refused: Rejected = []
        blocked = self._blocked([row for _, row in batch]) if screen else set()
        params = {
            "keys": json.dumps(sorted({r.email_key for _, r in batch if r.email_key})),
            "phones": json.dumps(sorted({r.phone for _, r in batch if r.phone})),
        }
        drafts = Drafts(people=any(not (r.email_key or r.phone) for _, r in batch))
        for stored in map(_stored, self._query(sql.BY_IDENTIFIERS, params)):
            drafts.load(stored)
        added = joined = 0
        for where, row in batch:
            if blocked and any(self._digest("suppress", *i) in blocked for i in row.identifiers()):
                refused.append((where, _OPTED_OUT))
                continue
            at = drafts.find(row)
            if at is None and not (row.email_key or row.phone):
                key = person_key(row.name, row.address)
                same = self._people(row.name, key) if key else []
                at = drafts.load(same[0]) if same else None
            if at is None:
                drafts.add(row)
                added += 1
            else:
                drafts.merge(at, row)
                joined += 1
        inserts = [(*_values(row), source, now) for i, row, _ in drafts.rows if i is None]
        updates = [
            (*_values(row), source, now, i) for i, row, changed in drafts.rows if i and changed
        ]
        self._run(lambda db: db.executemany(sql.INSERT, inserts))
        self._run(lambda db: db.executemany(sql.UPDATE, updates))
        return added, joined, refused

    def _people(self, name: str, key: str) -> list[StoredRow]:
        """The stored records of the person with *key* (person_key), found through *name*."""
        rows = self._query(sql.FTS_EVERY, {"q": fts_query(name, every=True), "n": -1})
        return [s for s in map(_stored, rows) if person_key(s.row.name, s.row.address) == key]

    def _blocked(self, rows: Iterable[Row]) -> set[str]:
        """The digests among *rows*' identifiers that are suppressed."""
        digests = {self._digest("suppress", *i) for row in rows for i in row.identifiers()}
        return {d for (d,) in self._query(sql.SUPPRESSED_AMONG, (json.dumps(sorted(digests)),))}

    # ---- search

    def search(self, term: str) -> Lookup:
        """The contact *term* names, if exactly one person fits well enough and is not opted out."""
        kind, value = classify_term(term, self._region)
        if not value:
            return Lookup(kind, Outcome.NO_MATCH, None, 0.0)
        with self._lock, self._transaction("BEGIN"):  # one snapshot of the file for all queries
            if kind is TermKind.NAME:
                candidates = self._name_candidates(term, value.split())
            elif self._suppressed([(kind.value, value)]):
                return Lookup(kind, Outcome.SUPPRESSED, None, 0.0)
            else:
                query = sql.BY_EMAIL if kind is TermKind.EMAIL else sql.BY_PHONE
                candidates = [
                    _candidate(s, 1.0) for s in map(_stored, self._query(query, (value,)))
                ]
            return decide(
                kind,
                candidates,
                min_confidence=self._config.min_confidence,
                margin=self._config.ambiguity_margin,
                suppressed=self._group_suppressed,
            )

    def _name_candidates(self, term: str, term_words: list[str]) -> list[Candidate]:
        limit = self._config.candidates
        found = self._query(sql.FTS_EVERY, {"q": fts_query(term, every=True), "n": limit})
        scored = [_scored(_stored(row), term_words) for row in found]
        enough = any(c.confidence >= self._config.min_confidence for c in scored)
        if not enough and len(term_words) > 1:
            seen = {c.contact.record_id for c in scored}
            more = self._query(sql.FTS_ANY, {"q": fts_query(term, every=False), "n": limit})
            scored += [_scored(_stored(row), term_words) for row in more if row[0] not in seen]
        return scored

    def _group_suppressed(self, group: Sequence[Candidate]) -> bool:
        identifiers = [
            (kind, value)
            for c in group
            for kind, value in (
                ("email", c.email_key),
                ("phone", c.contact.phone),
                ("person", c.person),
            )
            if value
        ]
        return self._suppressed(identifiers)

    def _suppressed(self, identifiers: Iterable[tuple[str, str]]) -> bool:
        digests = json.dumps([self._digest("suppress", *i) for i in identifiers])
        return bool(self._query(sql.ANY_SUPPRESSED, (digests,))[0][0])

    # ---- opt-out and erasure

    def suppress(self, *, email: str | None = None, phone: str | None = None) -> int:
        """Opt the person out; the number of their records now hidden."""
        seeds = self._seeds(email, phone)
        with self._lock, self._transaction("BEGIN IMMEDIATE"):
            records, identifiers = self._reach(seeds)
            self._add_suppressions(identifiers)
        return len(records)

    def erase(self, *, email: str | None = None, phone: str | None = None) -> int:
        """Delete the person's records and opt them out; the number of records deleted."""
        seeds = self._seeds(email, phone)
        with self._lock, self._transaction("BEGIN IMMEDIATE"):
            records, identifiers = self._reach(seeds)
            self._add_suppressions(identifiers)
            ids = json.dumps(sorted(records))
            self._run(
                lambda db: db.execute(
                    "DELETE FROM contacts WHERE id IN (SELECT value FROM json_each(?))", (ids,)
                )
            )
        return len(records)

    def _seeds(self, email: str | None, phone: str | None) -> list[tuple[str, str]]:
        seeds: list[tuple[str, str]] = []
        if email is not None:
            parsed = parse_address(email)
            if parsed.syntax in (Syntax.INVALID, Syntax.EMPTY):
                raise UsageError(f"{email!r} is not an email address: {parsed.detail}.")
            seeds.append(("email", parsed.key))
        if phone is not None:
            number = normalize_phone(phone, self._region)
            if not number:
                raise UsageError(
                    f"{phone!r} is not a phone number (numbers without +country code are read "
                    f"as {self._region} numbers, contacts.region)."
                )
            seeds.append(("phone", number))
        if not seeds:
            raise UsageError("Name the person to opt out by email, by phone or both.")
        return seeds

    def _reach(self, seeds: list[tuple[str, str]]) -> tuple[set[int], set[tuple[str, str]]]:
        """The records sharing an identifier with *seeds*, and theirs in turn; all identifiers."""
        identifiers = set(seeds)
        pending = list(seeds)
        people: list[tuple[str, str]] = []  # (name as stored, person key)
        records: set[int] = set()
        while pending or people:
            keys = [value for kind, value in pending if kind == "email"]
            phones = [value for kind, value in pending if kind == "phone"]
            params = {"keys": json.dumps(keys), "phones": json.dumps(phones)}
            found = list(map(_stored, self._query(sql.BY_IDENTIFIERS, params)))
            for name, key in people:
                found += self._people(name, key)
            pending, people = [], []
            for stored in found:
                if stored.id in records:
                    continue
                records.add(stored.id)
                for identifier in stored.row.identifiers():
                    if identifier not in identifiers:
                        identifiers.add(identifier)
                        if identifier[0] == "person":
                            people.append((stored.row.name, identifier[1]))
                        else:
                            pending.append(identifier)
        return records, identifiers

    def _add_suppressions(self, identifiers: Iterable[tuple[str, str]]) -> None:
        now = self._clock()
        rows = [(self._digest("suppress", kind, value), kind, now) for kind, value in identifiers]
        self._run(
            lambda db: db.executemany(
                "INSERT OR IGNORE INTO suppressed (digest, kind, at) VALUES (?, ?, ?)", rows
            )
        )

    # ---- audit

    def audit(self, *, key_id: str, client_ip: str, term: str, lookup: Lookup) -> None:
        """Record one search: who asked (key id, or the IP when anonymous), for what, with what."""
        _, value = classify_term(term, self._region)
        anonymous = key_id in ("", _ANONYMOUS)
        row = (
            self._clock(),
            _ANONYMOUS if anonymous else key_id,
            client_ip if anonymous else "",
            lookup.kind.value,
            self._digest("audit", lookup.kind.value, value),
            lookup.contact.record_id if lookup.contact is not None else None,
            lookup.outcome.value,
        )
        insert = f"INSERT INTO audit ({', '.join(sql.AUDIT_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?)"
        with self._lock:
            self._run(lambda db: db.execute(insert, row))

    def audit_records(self, since: float | None = None) -> list[dict[str, object]]:
        """Audit records, oldest first; only those at or after *since* when given."""
        select = (
            f"SELECT {', '.join(sql.AUDIT_COLUMNS)} FROM audit WHERE at >= ? ORDER BY at, rowid"
        )
        with self._lock:
            rows = self._query(select, (float("-inf") if since is None else since,))
        return [dict(zip(sql.AUDIT_COLUMNS, row, strict=True)) for row in rows]

    def purge_audit(self) -> int:
        """Delete audit records older than ``contacts.retention_days``; how many went."""
        cutoff = self._clock() - self._config.retention_days * _DAY
        with self._lock:
            return self._run(
                lambda db: db.execute("DELETE FROM audit WHERE at < ?", (cutoff,)).rowcount
            )

    # ---- plumbing

    def _digest(self, purpose: str, kind: str, value: str) -> str:
        # Purpose and kind are part of the message, so an audit digest of an email never equals
        # its suppression digest, and an email never collides with a phone (\x1f: unit separator).
        message = f"{purpose}\x1f{kind}\x1f{value}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()


def _stored(row: Sequence[Any]) -> StoredRow:
    record_id, name, address, place, phone, email, email_key, company, title, imported_at = row
    return StoredRow(
        record_id, Row(name, address, place, phone, email, email_key, company, title), imported_at
    )


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
    )


def _candidate(stored: StoredRow, confidence: float) -> Candidate:
    r = stored.row
    contact = Contact(stored.id, r.name, r.address, r.phone, r.email, r.company, r.title)
    key = person_key(r.name, r.address)
    return Candidate(contact, r.email_key, key, stored.imported_at, confidence)


def _scored(stored: StoredRow, term_words: list[str]) -> Candidate:
    r = stored.row
    context = words(f"{r.address} {r.place} {r.company}")
    return _candidate(stored, name_confidence(term_words, words(r.name), context))
