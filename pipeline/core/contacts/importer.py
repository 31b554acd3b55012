"""Contact files for the import: what is read, how columns are found, how rows become contacts.

:meth:`ContactStore.import_file <pipeline.core.contacts.store.ContactStore.import_file>` writes what
this module reads, without the database: a file's rows normalized (:func:`normalize_rows`) and
the rule for merging one into a record (:func:`merge_row`).

Files
    A file that starts with Parquet's magic ``PAR1`` or is named ``*.parquet`` is read as
    Parquet, every column as text; any other as delimited text (:mod:`pipeline.core.files.tables`
    finds the encoding and the delimiter), skipping blank lines.

Columns
    Columns are found by name, ignoring case, spaces, ``-`` and ``_``: name (or first_name +
    last_name), address/street, city, state, zip/postcode, country, phone/telephone/mobile,
    email/e-mail, company/employer/organization, title/job_title/position. A file with no name,
    first/last name, email or phone column is refused.

Rows
    Values are NFC-normalized with their whitespace collapsed. Emails go through
    ``parse_address``; phones become E.164 through phonenumbers, read as numbers of the country
    of the row's address (its country column: a name in any language phonenumbers knows, or a
    code) and else of ``contacts.region``; an invalid one is stored empty. Names are read into
    parts (:func:`~pipeline.core.contacts.names.parse_name`), with first/last name columns when
    the file has them. A row with no name, no valid email and no valid phone is rejected with
    the reason.

Merging
    A row joins a record only on evidence that both are one person: the record holds the row's
    email or phone number and their names agree (:func:`~pipeline.core.contacts.names.names_agree`),
    or, for a row with neither email nor phone, the record has the same name at the same
    address. The record may be a stored one or an earlier row of the same file. A row whose
    email or phone belongs to records of someone else (a household's landline, an office's
    switchboard, a family mailbox) becomes a record of its own, and so does one that would
    fit records of two different people. Merged, its non-empty values win and empty ones keep
    the stored values, except the name, where the fuller one stays (Robert over Bob, José over
    Jose); an address comes with its city, a new employer with its own title. Every record keeps
    the ``source`` and time of the import that last wrote it. The whole file is one transaction,
    written in batches of 50,000 rows.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Final

import polars as pl

from pipeline.core.addresses.normalize import normalize_column
from pipeline.core.addresses.syntax import Syntax
from pipeline.core.contacts.identity import country_region, normalize_phone, person_key
from pipeline.core.contacts.names import (
    NameParts,
    first_token,
    fuller_name,
    name_tokens,
    names_agree,
    parse_name,
)
from pipeline.core.contacts.types import Rejected, Row, StoredRow
from pipeline.core.errors import InputError
from pipeline.core.files.tables import Table, find_column, read_table

# Header names, compared after case-folding and dropping spaces, - and _ ("E-Mail", "Job Title",
# "first_name" all match). The first name found wins.
_COLUMN_NAMES: Final = {
    "name": ("name", "fullname", "contactname"),
    "first": ("firstname", "givenname", "forename"),
    "last": ("lastname", "surname", "familyname"),
    "street": ("address", "street", "streetaddress", "address1", "addressline1"),
    "city": ("city", "town", "locality"),
    "state": ("state", "province", "region", "county"),
    "postcode": ("zip", "zipcode", "postcode", "postalcode"),
    "country": ("country",),
    "phone": ("phone", "telephone", "mobile", "phonenumber", "tel", "cell"),
    "email": ("email", "emailaddress", "mail"),
    "company": ("company", "employer", "organization", "organisation", "companyname"),
    "title": ("title", "jobtitle", "position", "role"),
}


_IDENTIFYING: Final = ("name", "first", "last", "email", "phone")


def _find_columns(table: Table, path: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for field, names in _COLUMN_NAMES.items():
        column = find_column(table.columns, names)
        if column is not None:
            found[field] = column
    if not any(field in found for field in _IDENTIFYING):
        listing = ", ".join(repr(c) for c in table.columns) or "(none)"
        raise InputError(
            f"{path} has no column that names or reaches a person: none is called name, "
            f"first_name/last_name, email or phone (in any case). Its columns are: {listing}. "
            "Rename the columns to one of those."
        )
    return found


def _clean(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).split())


def normalize_rows(
    table: Table, path: Path, region: str, known_given: Iterable[str] = ()
) -> tuple[list[tuple[str, Row]], Rejected]:
    """The file's rows normalized, and (where, why) for those that cannot be a contact.

    Phones are read in the country of the row's address, else in *region*; names are read
    into parts knowing the given names of *known_given* and of the file itself.
    """
    found = _find_columns(table, path)
    height = len(table.where)

    def cells(field: str) -> list[str]:
        column = found.get(field)
        return [_clean(c) for c in table.columns[column]] if column else [""] * height

    c = {field: cells(field) for field in _COLUMN_NAMES}
    emails = normalize_column(pl.Series(c["email"], dtype=pl.String))
    names = [c["name"][i] or _clean(f"{c['first'][i]} {c['last'][i]}") for i in range(height)]
    lexicon = _given_names(names, c["first"], known_given)
    phones: dict[tuple[str, str], str] = {}  # one phonenumbers parse per spelling and country
    rows: list[tuple[str, Row]] = []
    rejected: Rejected = list(table.rejected)
    for i, (email, _, _, key, syntax, detail) in enumerate(emails.iter_rows()):
        name = names[i]
        where = (c["phone"][i], country_region(c["country"][i]) or region)
        phone = phones.get(where)
        if phone is None:
            phone = phones[where] = normalize_phone(*where)
        valid = syntax not in (Syntax.INVALID, Syntax.EMPTY)
        if not (name or phone or valid):
            why = "no name, no valid email and no valid phone"
            rejected.append((table.where[i], f"{why} (email: {detail})" if c["email"][i] else why))
            continue
        region_line = " ".join(v for v in (c["state"][i], c["postcode"][i]) if v)
        parts = (c["street"][i], c["city"][i], region_line, c["country"][i])
        address = ", ".join(p for p in parts if p)
        # A first-name cell says where the given names end, unless it holds the whole name.
        first = "" if c["name"][i] or not c["last"][i] else c["first"][i]
        row = Row(
            name=name,
            address=address,
            place=c["city"][i] or address,
            phone=phone,
            email=email if valid else "",
            email_key=key if valid else "",
            company=c["company"][i],
            title=c["title"][i],
            parts=parse_name(name, lexicon, first=first).encode(),
        )
        rows.append((table.where[i], row))
    return rows, rejected


def _given_names(names: list[str], firsts: list[str], known: Iterable[str]) -> frozenset[str]:
    """Given names: *known* ones, the words of first-name cells, the first word of names."""
    found = set(known)
    for first in firsts:
        found.update(name_tokens(first))
    found.update(first_token(name) for name in dict.fromkeys(names))
    found.discard("")
    return frozenset(found)


def merge_row(old: Row, new: Row) -> Row:
    """*new* over *old*: its non-empty values win, but the fuller name stays (see
    :func:`~pipeline.core.contacts.names.fuller_name`); an address comes with its city, an
    email with its key, and a new employer with its own title (possibly empty) rather than the
    old job's."""
    email, key = (new.email, new.email_key) if new.email_key else (old.email, old.email_key)
    address, place = (new.address, new.place) if new.address else (old.address, old.place)
    if new.company and new.company != old.company:
        company, title = new.company, new.title
    else:
        company, title = old.company, new.title or old.title
    old_parts, new_parts = NameParts.decode(old.parts), NameParts.decode(new.parts)
    keep_old = not new.name or fuller_name(old_parts, new_parts, old.name, new.name)
    return Row(
        name=old.name if keep_old else new.name,
        address=address,
        place=place,
        phone=new.phone or old.phone,
        email=email,
        email_key=key,
        company=company,
        title=title,
        parts=old.parts if keep_old else new.parts,
    )


def read_contacts(path: Path) -> Table:
    """A contact file, every value as text."""
    return read_table(path, "contact file", text=True)


class Drafts:
    """Working copies of the records one import batch touches, found by email, phone or person.

    ``rows`` holds (record id, or None for a new record; row; changed). A row joins a record
    only on evidence that both are one person (:meth:`find`). Person keys (name and address)
    are worked out only when a batch has rows with neither email nor phone (*people*), as they
    cost a Unicode pass per row.
    """

    def __init__(self, *, people: bool) -> None:
        self.rows: list[tuple[int | None, Row, bool]] = []
        self._people = people
        self._ids: dict[int, int] = {}
        self._index: dict[str, dict[str, list[int]]] = {"email": {}, "phone": {}, "person": {}}

    def find(self, row: Row) -> int | None:
        """The record *row* is about: one holding its email or phone whose name agrees with the
        row's, or (for a row with neither) one with the same name at the same address. When
        such records are not one person (their names disagree), none: the row is a record of
        its own."""
        if row.email_key or row.phone:
            found = self._holding("email", row.email_key) + self._holding("phone", row.phone)
        else:
            found = self._holding("person", person_key(row.name, row.address))
        parts = NameParts.decode(row.parts)
        agreeing = [at for at in dict.fromkeys(found) if self._agrees(at, parts)]
        if not agreeing:
            return None
        names = [NameParts.decode(self.rows[at][1].parts) for at in agreeing]
        return agreeing[0] if all(names_agree(names[0], n) for n in names[1:]) else None

    def _holding(self, kind: str, value: str) -> list[int]:
        return (
            self._index[kind].get(value, []) if value and (kind != "person" or self._people) else []
        )

    def _agrees(self, at: int, parts: NameParts) -> bool:
        return names_agree(NameParts.decode(self.rows[at][1].parts), parts)

    def load(self, stored: StoredRow) -> int:
        """Take in a stored record (once); where it is among the drafts."""
        at = self._ids.get(stored.id)
        if at is None:
            self.rows.append((stored.id, stored.row, False))
            at = self._ids[stored.id] = len(self.rows) - 1
            self._reindex(at, None, stored.row)
        return at

    def add(self, row: Row) -> None:
        self.rows.append((None, row, True))
        self._reindex(len(self.rows) - 1, None, row)

    def merge(self, at: int, row: Row) -> None:
        record_id, old, _ = self.rows[at]
        new = merge_row(old, row)
        self.rows[at] = (record_id, new, True)
        self._reindex(at, old, new)

    def _keys(self, row: Row) -> dict[str, str]:
        person = person_key(row.name, row.address) if self._people else ""
        return {"email": row.email_key, "phone": row.phone, "person": person}

    def _reindex(self, at: int, old: Row | None, new: Row) -> None:
        # A value the record no longer holds stops leading to it.
        before = self._keys(old) if old is not None else {}
        for kind, value in self._keys(new).items():
            index, previous = self._index[kind], before.get(kind, "")
            if previous and previous != value and at in index.get(previous, []):
                index[previous].remove(at)
            if value and at not in index.setdefault(value, []):
                index[value].append(at)
