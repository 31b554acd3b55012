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
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import polars as pl

from pipeline.core.address import Syntax, normalize_column
from pipeline.core.contacts.search import normalize_phone, person_key
from pipeline.core.errors import InputError
from pipeline.core.tables import decode, find_column, read_rows, sniff_delimiter

__all__ = [
    "ContactImport",
    "Rejected",
    "Row",
    "Table",
    "merge_row",
    "normalize_rows",
    "read_table",
]

Rejected = list[tuple[str, str]]


@dataclass(frozen=True)
class ContactImport:
    read: int  # rows found in the file (= imported + merged + rejected)
    imported: int  # new records
    merged: int  # rows merged into a stored record or an earlier row
    rejected: Rejected  # (where, why)


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
_PARQUET_MAGIC: Final = b"PAR1"
_SNIFF_CHARS: Final = 65536


@dataclass(frozen=True)
class Table:
    """A contact file column by column as text; ``where`` names each row for rejects."""

    columns: dict[str, list[str]]
    where: list[str]
    rejected: Rejected


@dataclass(frozen=True)
class Row:
    """One contact, normalized: what a file row becomes and what the table stores."""

    name: str
    address: str
    place: str  # the city; the whole address when the file has no city
    phone: str  # E.164
    email: str
    email_key: str
    company: str
    title: str

    def identifiers(self) -> list[tuple[str, str]]:
        found = (
            ("email", self.email_key),
            ("phone", self.phone),
            ("person", person_key(self.name, self.address)),
        )
        return [(kind, value) for kind, value in found if value]


def read_table(path: Path) -> Table:
    try:
        with path.open("rb") as handle:
            head = handle.read(len(_PARQUET_MAGIC))
    except OSError as exc:
        raise InputError(
            f"Cannot read the contact file {path}: {exc.strerror}. Check the path and permissions."
        ) from exc
    if head == _PARQUET_MAGIC or path.suffix.lower() == ".parquet":
        return _read_parquet(path)
    return _read_csv(path)


def _read_parquet(path: Path) -> Table:
    try:
        frame = pl.read_parquet(path)
        frame = frame.select(pl.all().cast(pl.String).fill_null(""))
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise InputError(
            f"Cannot read {path} as Parquet with text columns: {exc}. "
            "Check that the file is complete and its columns are plain values."
        ) from exc
    columns = {name: frame.get_column(name).to_list() for name in frame.columns}
    return Table(columns, [f"{path.name} row {n}" for n in range(1, frame.height + 1)], [])


def _read_csv(path: Path) -> Table:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"Cannot read the contact file {path}: {exc.strerror}.") from exc
    text = decode(raw).text
    found = read_rows(text, sniff_delimiter(text[:_SNIFF_CHARS]))
    rows = [(line, cells) for line, cells in found.rows if any(c.strip() for c in cells)]
    columns = {name: [cells[i] for _, cells in rows] for i, name in enumerate(found.header)}
    where = [f"{path.name} line {line}" for line, _ in rows]
    rejected = [(f"{path.name} line {line}", why) for line, why, _ in found.rejects]
    return Table(columns, where, rejected)


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
