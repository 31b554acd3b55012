"""Contact files for the import: what is read, how columns are found, how rows become contacts.

:meth:`ContactStore.import_file <pipeline.core.contacts.store.ContactStore.import_file>` writes what
this module reads, without the database: a file's rows normalized (:func:`normalize_rows`) and
the rule for merging one into a record (:func:`merge_row`).

Files
    A file that starts with Parquet's magic ``PAR1`` or is named ``*.parquet`` is read as
    Parquet, every column as text; any other as delimited text (:mod:`pipeline.core.tables`
    finds the encoding and the delimiter), skipping blank lines.

Columns
    Columns are found by name, ignoring case, spaces, ``-`` and ``_``: name (or first_name +
    last_name), address/street, city, state, zip/postcode, country, phone/telephone/mobile,
    email/e-mail, company/employer/organization, title/job_title/position. A file with no name,
    first/last name, email or phone column is refused.

Rows
    Values are NFC-normalized with their whitespace collapsed. Emails go through
    ``parse_address`` and phones to E.164 through phonenumbers; an invalid one is stored empty.
    A row with no name, no valid email and no valid phone is rejected with the reason.

Merging
    A row whose email (else phone) belongs to a stored record, or to an earlier row of the same
    file, is merged into it and counted as merged; so is a row with neither email nor phone whose
    name and address are a record's. Its non-empty values win, empty ones keep the stored values;
    an address comes with its city, a new employer with its own title. Every record keeps the
    ``source`` and time of the import that last wrote it. The whole file is one transaction,
    written in batches of 50,000 rows.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Final

import polars as pl

from pipeline.core.address import Syntax, normalize_column
from pipeline.core.contacts.identity import normalize_phone, person_key
from pipeline.core.contacts.types import Rejected, Row, StoredRow
from pipeline.core.errors import InputError
from pipeline.core.tables import Table, find_column, read_table

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


def normalize_rows(table: Table, path: Path, region: str) -> tuple[list[tuple[str, Row]], Rejected]:
    """The file's rows normalized, and (where, why) for those that cannot be a contact."""
    found = _find_columns(table, path)
    height = len(table.where)

    def cells(field: str) -> list[str]:
        column = found.get(field)
        return [_clean(c) for c in table.columns[column]] if column else [""] * height

    c = {field: cells(field) for field in _COLUMN_NAMES}
    emails = normalize_column(pl.Series(c["email"], dtype=pl.String))
    phones: dict[str, str] = {}  # one phonenumbers parse per distinct spelling
    rows: list[tuple[str, Row]] = []
    rejected: Rejected = list(table.rejected)
    for i, (email, _, _, key, syntax, detail) in enumerate(emails.iter_rows()):
        name = c["name"][i] or _clean(f"{c['first'][i]} {c['last'][i]}")
        raw_phone = c["phone"][i]
        phone = phones.get(raw_phone)
        if phone is None:
            phone = phones[raw_phone] = normalize_phone(raw_phone, region)
        valid = syntax not in (Syntax.INVALID, Syntax.EMPTY)
        if not (name or phone or valid):
            why = "no name, no valid email and no valid phone"
            rejected.append((table.where[i], f"{why} (email: {detail})" if c["email"][i] else why))
            continue
        region_line = " ".join(v for v in (c["state"][i], c["postcode"][i]) if v)
        parts = (c["street"][i], c["city"][i], region_line, c["country"][i])
        address = ", ".join(p for p in parts if p)
        row = Row(
            name=name,
            address=address,
            place=c["city"][i] or address,
            phone=phone,
            email=email if valid else "",
            email_key=key if valid else "",
            company=c["company"][i],
            title=c["title"][i],
        )
        rows.append((table.where[i], row))
    return rows, rejected


def merge_row(old: Row, new: Row) -> Row:
    """*new* over *old*: its non-empty values win; an address comes with its city, an email with
    its key, and a new employer with its own title (possibly empty) rather than the old job's."""
    email, key = (new.email, new.email_key) if new.email_key else (old.email, old.email_key)
    address, place = (new.address, new.place) if new.address else (old.address, old.place)
    if new.company and new.company != old.company:
        company, title = new.company, new.title
    else:
        company, title = old.company, new.title or old.title
    return Row(
        name=new.name or old.name,
        address=address,
        place=place,
        phone=new.phone or old.phone,
        email=email,
        email_key=key,
        company=company,
        title=title,
    )


def read_contacts(path: Path) -> Table:
    """A contact file, every value as text."""
    return read_table(path, "contact file", text=True)


class Drafts:
    """Working copies of the records one import batch touches, found by email, phone or person.

    ``rows`` holds (record id, or None for a new record; row; changed). A row is looked up by
    its email, else its phone; only a row with neither by its person (name and address), and
    only then are person keys worked out (*people*), as they cost a Unicode pass per row.
    """

    def __init__(self, *, people: bool) -> None:
        self.rows: list[tuple[int | None, Row, bool]] = []
        self._people = people
        self._ids: dict[int, int] = {}
        self._index: dict[str, dict[str, int]] = {"email": {}, "phone": {}, "person": {}}

    def find(self, row: Row) -> int | None:
        if row.email_key and (at := self._index["email"].get(row.email_key)) is not None:
            return at
        if row.phone and (at := self._index["phone"].get(row.phone)) is not None:
            return at
        if row.email_key or row.phone or not self._people:
            return None
        return self._index["person"].get(person_key(row.name, row.address))

    def load(self, stored: StoredRow) -> int:
        """Take in a stored record (once); where it is among the drafts."""
        at = self._ids.get(stored.id)
        if at is None:
            self.rows.append((stored.id, stored.row, False))
            at = self._ids[stored.id] = len(self.rows) - 1
            for kind, value in self._keys(stored.row).items():
                if value:  # the oldest record holding a value keeps it
                    self._index[kind].setdefault(value, at)
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
            if previous and previous != value and index.get(previous) == at:
                del index[previous]
            if value:
                index[value] = at
