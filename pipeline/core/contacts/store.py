"""The contact store behind ``/api/find``: imported contacts, opt-outs and the lookup audit.

Contacts come from CSV or Parquet files (:meth:`ContactStore.import_file`) into one SQLite file,
``contacts.db`` or else ``contacts.sqlite`` in the cache directory, or into the PostgreSQL
database several service instances share (``contacts.db`` or ``--db`` a ``postgresql://`` URL;
the statements of each are in :mod:`.sql`). :meth:`ContactStore.search`
answers a search term with one :class:`Lookup`; the service answers 404 for anything but a MATCH.

Term classification, name rules and the decision: :mod:`pipeline.core.contacts.search` and
:mod:`pipeline.core.contacts.names`. Every search of a kind does the same work whatever its
outcome, so that its time tells no one which 404 it got: the same two statements reading as
many rows (the candidates, :data:`SEARCH_ROWS` rows padded with other records, then a row for
each of their identifiers and the term's in the suppression list), every row decoded and
fitted; the decision is made afterwards, in memory. A term that more records may fit than a
search reads is too broad to name one person (AMBIGUOUS).

Opt-out (:meth:`ContactStore.suppress`) and erasure (:meth:`ContactStore.erase`)
    Whom they reach: :mod:`pipeline.core.contacts.privacy`. The person's identifiers (email
    key, E.164 number, and name with address) are kept only as HMAC-SHA256 digests (RFC 2104)
    under a 256-bit secret made once per store and kept in its own table. A suppression hides
    the person's records and lookalikes from every search; a search by a suppressed email or
    number is SUPPRESSED, and another person's record leaves a suppressed value it shares (a
    household's landline) out of its answer. Import rejects rows that carry a suppressed
    identifier, so importing the person again does not bring them back. Erasure suppresses the
    same way, deletes the person's records (and their full-text rows), and takes their email
    and number out of other records that shared them. Both make the audit log forget whom past
    lookups were about.

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
from typing import Any, Final

from pipeline.core.addresses.syntax import Syntax, parse_address
from pipeline.core.config import ContactsConfig, known_region
from pipeline.core.contacts import privacy, sql
from pipeline.core.contacts.identity import normalize_phone, person_key, reads_as
from pipeline.core.contacts.importer import Drafts, normalize_rows, read_contacts
from pipeline.core.contacts.names import Fit, NameParts, parse_name
from pipeline.core.contacts.search import (
    candidate,
    classify_term,
    decide,
    match_clauses,
    may_fit_anyone,
    name_fit,
    name_term,
    phone_candidates,
)
from pipeline.core.contacts.types import (
    Candidate,
    ContactImport,
    Lookup,
    Reached,
    Rejected,
    Row,
    StoredRow,
    TermKind,
)
from pipeline.core.db.database import OwnsDatabase, Where, dialect_of, open_database
from pipeline.core.db.sqlite import SqliteFile
from pipeline.core.errors import UsageError

_BATCH: Final = 50_000
_OPTED_OUT: Final = "the person opted out (suppressed)"
_ANONYMOUS: Final = "anonymous"
_DAY: Final = 86400.0
# Candidate records one search reads, by kind of term. A term that more records may fit is
# too broad to name one person (AMBIGUOUS): a full name, with or without a town, in a million
# people has a handful of candidates; an address or a number, one or two (a household's).
SEARCH_ROWS: Final = {TermKind.NAME: 24, TermKind.EMAIL: 4, TermKind.PHONE: 4}


class ContactStore(OwnsDatabase):
    """Contacts, opt-outs and the lookup audit in one SQLite file or PostgreSQL database.

    Used under a lock: the service may call from worker threads, and a search must not read an
    import's half-written transaction on SQLite's one shared connection.
    """

    def __init__(
        self, where: Where, config: ContactsConfig, clock: Callable[[], float] = time.time
    ) -> None:
        region = known_region(config.region)
        self._db = open_database(
            where,
            what="the contact store",
            remedy="Choose a writable file with contacts.db or --cache-dir.",
            broken_remedy="Delete the file to start afresh (then import the contact files "
            "again; opt-outs are lost with it), or choose another one with contacts.db.",
            sqlite_schema=sql.SCHEMA,
            postgres_schema=sql.PG_SCHEMA,
        )
        self._sql = sql.Statements(dialect_of(self._db))
        self.where = self._db.where
        self._config = config
        self._region = region
        self._clock = clock
        self._lock = threading.RLock()
        self._tracer: Callable[[str, int], None] | None = None
        self._upgrade()
        # Made once per store (INSERT OR IGNORE keeps the first). 32 bytes is SHA-256's output
        # length L, below which RFC 2104 §3 discourages HMAC keys.
        self._db.execute(self._sql.add_secret, (secrets.token_bytes(32),))
        self._secret: bytes = bytes(self._db.query(self._sql.secret)[0][0])
        self._last_id = self._latest_id()

    def _latest_id(self) -> int:
        """The highest record id: where a search's padding may start reading (see
        ``sql.Statements._paged``). Kept from start and imports; a stale one only narrows
        the range."""
        return int(self._db.query(self._sql.last_id)[0][0])

    def _upgrade(self) -> None:
        """Bring a SQLite store of an earlier schema version up to this one (sql.VERSION); a
        PostgreSQL store was made at the current one."""
        db = self._db
        if isinstance(db, SqliteFile) and db.query(sql.SCHEMA_VERSION)[0][0] < sql.VERSION:
            with db.transaction(write=True):
                db.run(sql.upgrade)

    # ---- import

    def import_file(self, path: Path, source: str) -> ContactImport:
        """Add the contacts of a CSV or Parquet file, merging those already stored."""
        table = read_contacts(path)
        with self._lock:
            known = self._known_given()
        rows, rejected = normalize_rows(table, path, self._region, known)
        imported = merged = 0
        with self._lock, self._db.transaction(write=True):
            now = self._clock()
            screen = bool(self._db.query(self._sql.any_suppressed)[0][0])
            for start in range(0, len(rows), _BATCH):
                batch = rows[start : start + _BATCH]
                added, joined, refused = self._import_batch(batch, source, now, screen)
                imported, merged, rejected = imported + added, merged + joined, rejected + refused
        self._last_id = self._latest_id()
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
        for stored in map(_stored, self._db.query(self._sql.by_identifiers, params)):
            drafts.load(stored)
        added = joined = 0
        for where, row in batch:
            if blocked and any(self._digest("suppress", *i) in blocked for i in row.identifiers()):
                refused.append((where, _OPTED_OUT))
                continue
            if not (row.email_key or row.phone) and (key := person_key(row.name, row.address)):
                for same in self._people(row.name, key):
                    drafts.load(same)
            at = drafts.find(row)
            if at is None:
                drafts.add(row)
                added += 1
            else:
                drafts.merge(at, row)
                joined += 1
        written = self._sql.written
        inserts = [written(row, source, now) for i, row, _ in drafts.rows if i is None]
        updates = [
            (*written(row, source, now), i) for i, row, changed in drafts.rows if i and changed
        ]
        self._db.executemany(self._sql.insert, inserts)
        self._db.executemany(self._sql.update, updates)
        return added, joined, refused

    def _people(self, name: str, key: str) -> list[StoredRow]:
        """The stored records with *key* (person_key: the same name at the same address)."""
        rows = self._db.query(self._sql.by_words, self._words(name))
        return [s for s in map(_stored, rows) if person_key(s.row.name, s.row.address) == key]

    def _known_given(self) -> frozenset[str]:
        """The given names stored names start with (see :func:`.names.parse_name`)."""
        return frozenset(given for (given,) in self._db.query(self._sql.known_given))

    def _blocked(self, rows: Iterable[Row]) -> set[str]:
        """The digests among *rows*' identifiers that are suppressed."""
        digests = {self._digest("suppress", *i) for row in rows for i in row.identifiers()}
        return {
            d for (d,) in self._db.query(self._sql.suppressed_among, (json.dumps(sorted(digests)),))
        }

    # ---- search

    def search(self, term: str) -> Lookup:
        """The contact *term* names, if exactly one person fits and is not opted out.

        Whatever it finds, a search of a kind does the same work, so that its time tells no
        one which 404 it was (no match, opted out, too close to call): two statements, the
        candidates (:data:`SEARCH_ROWS` rows, padded with other records; more that fit make
        the term too broad to name one person) and one row per identifier asked about in the
        suppression list; every row read is decoded and fitted, the padding then dropped.
        """
        kind, value = classify_term(term, self._region)
        term_ids = self._term_identifiers(kind, term, value)
        with self._lock, self._db.transaction():  # one snapshot for all queries
            read = self._candidates(kind, term, value)
            asked = term_ids + [
                i for c, _ in read for i in (("email", c.email_key), ("phone", c.contact.phone))
            ]
            hits = self._suppressed_among_all(asked)
        candidates = [c for c, padding in read if not padding]
        on_term = any(
            i in hits and (kind is not TermKind.PHONE or reads_as(term, i[1])) for i in term_ids
        )
        return decide(
            kind,
            candidates,
            term_suppressed=on_term,
            suppressed=lambda k, v: (k, v) in hits,
            too_many=len(candidates) >= SEARCH_ROWS[kind] and may_fit_anyone(kind, term),
        )

    def trace(self, tracer: Callable[[str, int], None] | None) -> None:
        """Call *tracer* (statement, rows read) for each statement a search runs (tests)."""
        self._tracer = tracer

    def _term_identifiers(self, kind: TermKind, term: str, value: str) -> list[tuple[str, str]]:
        if kind is TermKind.EMAIL:
            return [("email", value)]
        if kind is TermKind.PHONE:
            return [("phone", number) for number in phone_candidates(term)]
        return []

    def _candidates(self, kind: TermKind, term: str, value: str) -> list[tuple[Candidate, bool]]:
        """The records that may answer *term*, with how they fit, and whether each is padding."""
        start = secrets.randbelow(self._last_id + 1)
        page = {"page": SEARCH_ROWS[kind], "take": SEARCH_ROWS[kind], "start": start}
        if kind is TermKind.EMAIL:
            rows = self._search(self._sql.search_email, {"key": value, **page})
            return [(candidate(s, Fit.EXACT), padding) for s, padding in rows]
        if kind is TermKind.PHONE:
            phones = json.dumps(phone_candidates(term))
            rows = self._search(self._sql.search_phones, {"phones": phones, **page})
            fits = [Fit.EXACT if reads_as(term, s.row.phone) else Fit.NONE for s, _ in rows]
            return [(candidate(s, f), padding) for (s, padding), f in zip(rows, fits, strict=True)]
        words = name_term(term)
        clauses = match_clauses(term)
        if not may_fit_anyone(kind, term):
            # No record can fit a first name alone, and thousands may hold it: the search
            # reads one of them, the rest of its page padding, as a term that finds no one
            # does (the answer is known beforehand; the time must not tell it).
            page["take"] = 1
        rows = self._search(self._sql.search_words, {"q": self._sql.match(clauses), **page})
        return [(candidate(s, name_fit(words, s)), padding) for s, padding in rows]

    def _search(self, statement: str, params: dict[str, Any]) -> list[tuple[StoredRow, bool]]:
        rows = self._traced(statement, params)
        return [(_stored(row[:-1]), bool(row[-1])) for row in rows]

    def _traced(self, statement: str, params: Any) -> list[Any]:
        rows = self._db.query(statement, params)
        if self._tracer is not None:
            self._tracer(statement, len(rows))
        return rows

    def _records(self, statement: str, params: Any) -> list[StoredRow]:
        return list(map(_stored, self._db.query(statement, params)))

    def _suppressed_among_all(self, identifiers: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those of *identifiers* that are suppressed: one statement that reads a row for
        each of them, empty and repeated ones too (none of those is ever suppressed)."""
        digests = [self._digest("suppress", *i) for i in identifiers]
        rows = self._traced(self._sql.search_suppressed, {"digests": json.dumps(digests)})
        suppressed = {digest for digest, hit in rows if hit}
        pairs = zip(identifiers, digests, strict=True)
        return {i for i, digest in pairs if i[1] and digest in suppressed}

    # ---- opt-out and erasure

    def suppress(
        self, *, email: str | None = None, phone: str | None = None, name: str | None = None
    ) -> Reached:
        """Opt the person out: their records and lookalikes hidden from every search.

        The person is named by *email* or *phone* (or both); *name*, as they give it, also
        reaches records that only their name leads to (see :mod:`.privacy`).
        """
        seeds = self._seeds(email, phone)
        with self._lock, self._db.transaction(write=True):
            person, lookalikes = self._reach(seeds, name or "")
            self._add_suppressions(privacy.identifiers(person) + seeds)
            self._db.execute(self._sql.hide, (_ids(person + lookalikes),))
            audit = self._scrub_audit(person + lookalikes, seeds)
        return _reached(person, lookalikes, audit, seeds)

    def erase(
        self, *, email: str | None = None, phone: str | None = None, name: str | None = None
    ) -> Reached:
        """Delete the person's records and opt them out (their lookalikes hidden)."""
        seeds = self._seeds(email, phone)
        with self._lock, self._db.transaction(write=True):
            person, lookalikes = self._reach(seeds, name or "")
            found = privacy.identifiers(person) + seeds
            self._add_suppressions(found)
            self._db.execute(self._sql.delete, (_ids(person),))
            self._db.execute(self._sql.hide, (_ids(lookalikes),))
            emails = json.dumps([v for k, v in found if k == "email"])
            phones = json.dumps([v for k, v in found if k == "phone"])
            self._db.execute(self._sql.blank_emails, (emails,))
            self._db.execute(self._sql.blank_phones, (phones,))
            audit = self._scrub_audit(person + lookalikes, seeds)
        return _reached(person, lookalikes, audit, seeds)

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

    def _reach(
        self, seeds: list[tuple[str, str]], name: str
    ) -> tuple[list[Candidate], list[Candidate]]:
        """The person's records (see :mod:`~pipeline.core.contacts.privacy`) and lookalikes."""
        person = {c.contact.record_id: c for c in self._holding(seeds)}
        joined = list(person.values())
        while joined:
            linked = self._holding(privacy.identifiers(joined))
            for c in joined:
                if c.person:
                    found = self._people(c.contact.name, c.person)
                    linked += [candidate(s, Fit.EXACT) for s in found]
            joined = privacy.grow(person, linked)
        mine = list(person.values())
        names = [c.parts for c in mine] + ([parse_name(name, self._known_given())] if name else [])
        namesakes: dict[int, Candidate] = {}
        for parts in dict.fromkeys(n for n in names if n.given and n.surname):
            for s in self._records(self._sql.by_words, self._words(_spoken(parts))):
                namesakes.setdefault(s.id, candidate(s, Fit.EXACT))
        lookalikes = [
            c
            for rid, c in namesakes.items()
            if rid not in person and privacy.lookalike(names, mine, c)
        ]
        return mine, privacy.closest(names, lookalikes)

    def _holding(self, identifiers: Sequence[tuple[str, str]]) -> list[Candidate]:
        params = {
            "keys": json.dumps([v for k, v in identifiers if k == "email"]),
            "phones": json.dumps([v for k, v in identifiers if k == "phone"]),
        }
        return [candidate(s, Fit.EXACT) for s in self._records(self._sql.by_identifiers, params)]

    def _add_suppressions(self, identifiers: Iterable[tuple[str, str]]) -> None:
        now = self._clock()
        rows = [(self._digest("suppress", kind, value), kind, now) for kind, value in identifiers]
        self._db.executemany(self._sql.add_suppressed, rows)

    def _scrub_audit(self, records: Sequence[Candidate], seeds: list[tuple[str, str]]) -> int:
        values = privacy.audit_values(records, seeds)
        digests = [self._digest("audit", *v) for v in values]
        params = (_ids(records), json.dumps(digests))
        return self._db.execute(self._sql.scrub_audit, params)

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
        with self._lock:
            self._db.execute(self._sql.add_audit, row)
            if self._tracer is not None:
                self._tracer(self._sql.add_audit, 0)

    def audit_records(self, since: float | None = None) -> list[dict[str, object]]:
        """Audit records, oldest first; only those at or after *since* when given."""
        with self._lock:
            rows = self._db.query(
                self._sql.audit_since, (float("-inf") if since is None else since,)
            )
        return [dict(zip(sql.AUDIT_COLUMNS, row, strict=True)) for row in rows]

    def purge_audit(self) -> int:
        """Delete audit records older than ``contacts.retention_days``; how many went."""
        cutoff = self._clock() - self._config.retention_days * _DAY
        with self._lock:
            return self._db.execute(self._sql.purge_audit, (cutoff,))

    # ---- plumbing

    def _words(self, term: str) -> dict[str, str]:
        """The parameters of the full-text statement for *term*."""
        return {"q": self._sql.match(match_clauses(term))}

    def _digest(self, purpose: str, kind: str, value: str) -> str:
        # Purpose and kind are part of the message, so an audit digest of an email never equals
        # its suppression digest, and an email never collides with a phone (\x1f: unit separator).
        message = f"{purpose}\x1f{kind}\x1f{value}".encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()


def _stored(row: Sequence[Any]) -> StoredRow:
    rid, name, address, place, phone, email, email_key, company, title, parts, at, hidden = row
    record = Row(name, address, place, phone, email, email_key, company, title, parts)
    return StoredRow(rid, record, at, bool(hidden))


def _ids(records: Iterable[Candidate]) -> str:
    return json.dumps(sorted({c.contact.record_id for c in records}))


def _spoken(parts: NameParts) -> str:
    """The name as a term finds its namesakes: given name and surname."""
    return " ".join([parts.given, *parts.surname])


def _reached(
    person: Sequence[Candidate],
    lookalikes: Sequence[Candidate],
    audit: int,
    seeds: Sequence[tuple[str, str]],
) -> Reached:
    keys = {c.email_key for c in person if c.email_key} | {v for k, v in seeds if k == "email"}
    return Reached(len(person), len(lookalikes), audit, tuple(sorted(keys)))
