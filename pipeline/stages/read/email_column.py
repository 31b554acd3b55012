"""Which column of a list holds the addresses: named with ``--email-column``, else found by its
header, else by its content.

1. **By name.** Headers are folded before they are compared: case, accents, spaces and
   punctuation do not count, so ``E-Mail-Adresse``, ``e_mail_adresse`` and ``EMAIL ADRESSE``
   are one name. :data:`EMAIL_NAMES` lists the names exports use, in order of preference (the
   first that a column has wins: ``Email`` before ``Work Email`` before ``E-mail 2 - Value``).
2. **By content**, when no header is such a name: the one column where at least
   :data:`CONTENT_SHARE` of the non-empty values among the first :data:`SAMPLE_ROWS` rows look
   like addresses (something ``@`` something ``.`` something, no spaces). Two such columns is a
   usage error listing both; so is a header that is itself an address (the file has no header
   row, and its first record would be lost).

The :class:`EmailColumn` found says which rule chose it and why; the summary shows it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

import polars as pl

from pipeline.core.errors import InputError
from pipeline.core.files.headers import ADDRESS_LIKE
from pipeline.core.schema import further_fields

SAMPLE_ROWS: Final = 1_000
CONTENT_SHARE: Final = 0.8


def fold_header(header: str) -> str:
    """*header* without case, accents, spaces or punctuation: "Correo electrónico" and
    "CORREO_ELECTRONICO" fold alike."""
    decomposed = unicodedata.normalize("NFKD", header.casefold())
    letters = "".join(c for c in decomposed if not unicodedata.combining(c))
    return re.sub(r"[\W_]+", "", letters)


# The header names exports use, most preferred first. Sources: the exports of Mailchimp
# ("Email Address"), HubSpot, Salesforce, Klaviyo ("Email"), Google Contacts ("E-mail 1 -
# Value"), Outlook ("E-mail Address", "E-mail 2 Address"), LinkedIn ("Email Address"), and the
# words for "email address" in the languages of the EU and a few more.
_NAMES: Final = (
    # English
    "Email", "Email Address", "Mail", "Email Addr", "Mail Address", "Emails",
    "Primary Email", "Primary Email Address", "Email 1", "Email Address 1", "E-mail 1 - Value",
    "E-mail 1 Address", "Work Email", "Business Email", "Personal Email", "Home Email",
    "Contact Email", "Email (Work)", "Email (Home)", "Email 2", "E-mail 2 - Value",
    "E-mail 2 Address", "Email 3", "E-mail 3 - Value", "E-mail 3 Address",
    # German, Dutch, Danish, Norwegian, Swedish, Finnish, Polish, Czech, Hungarian
    "E-Mail-Adresse", "Mail-Adresse", "E-mailadres", "Mailadres", "E-post", "E-postadresse",
    "E-postadress", "Sähköposti", "Sähköpostiosoite", "Adres e-mail", "E-mailová adresa",
    "E-mail cím",
    # French, Spanish, Italian, Portuguese, Romanian
    "Courriel", "Adresse e-mail", "Adresse courriel", "Adresse électronique", "Adresse mail",
    "Correo", "Correo electrónico", "Dirección de correo", "Dirección de correo electrónico",
    "Dirección de email", "Indirizzo email", "Posta elettronica", "Endereço de e-mail",
    "Correio eletrónico", "Correio eletrônico", "Adresă de e-mail",
    # Greek, Russian, Ukrainian, Turkish, Japanese, Chinese, Korean
    "Ηλεκτρονικό ταχυδρομείο", "Электронная почта", "Эл. почта", "Почта",
    "Електронна пошта", "E-posta", "E-posta adresi", "メールアドレス", "メール",
    "电子邮件", "电子邮箱", "邮箱", "電子郵件", "이메일", "이메일 주소",
)  # fmt: skip
EMAIL_NAMES: Final = tuple(dict.fromkeys(fold_header(name) for name in _NAMES))  # folded, in order


Rule = Literal["flag", "name", "content"]


@dataclass(frozen=True)
class EmailColumn:
    name: str
    rule: Rule  # flag: --email-column; name: a known header; content: its values
    why: str  # a sentence for the summary


def by_flag(columns: Sequence[str], wanted: str, where: object) -> EmailColumn:
    """The column named *wanted*: exact, then ignoring case."""
    matches = [c for c in columns if c == wanted] or [
        c for c in columns if c.casefold() == wanted.casefold()
    ]
    if not matches:
        raise InputError(
            f"{where} has no column named {wanted!r}. Its columns are: {listing(columns)}. "
            "Pass one of them with --email-column."
        )
    return EmailColumn(matches[0], "flag", "named with --email-column")


def by_name(columns: Sequence[str]) -> EmailColumn | None:
    """The column whose header is the most preferred of :data:`EMAIL_NAMES`, if any."""
    folded: dict[str, str] = {}
    for column in columns:
        folded.setdefault(fold_header(column), column)
    for name in EMAIL_NAMES:
        if name in folded:
            column = folded[name]
            return EmailColumn(column, "name", f"its header {column!r} names an email column")
    return None


def by_content(sample: pl.DataFrame, where: object) -> EmailColumn:
    """The one column of *sample* whose values look like addresses (see the module's doc)."""
    _check_header(sample.columns, where)
    found = {}
    for name in sample.columns:
        share, seen = _share(sample.get_column(name))
        if seen and share >= CONTENT_SHARE:
            found[name] = (share, seen)
    if len(found) == 1:
        name, (share, seen) = next(iter(found.items()))
        why = (
            f"no header names an email column, and {share:.0%} of its {seen:,} non-empty "
            f"values in the first {SAMPLE_ROWS:,} rows look like addresses"
        )
        return EmailColumn(name, "content", why)
    if found:
        raise InputError(
            f"Cannot tell which column of {where} holds the email addresses: no header names "
            f"one, and several columns hold addresses: {listing(list(found))}. Name one with "
            "--email-column."
        )
    raise InputError(
        f"Cannot tell which column of {where} holds the email addresses: no header names one "
        f"and no column holds addresses. Its columns are: {listing(sample.columns)}. Name it "
        "with --email-column."
    )


def _share(values: pl.Series) -> tuple[float, int]:
    """(share of address-like values, count) among the non-empty values of *values*."""
    if values.dtype.is_nested() or values.dtype in (pl.Binary, pl.Object):
        return 0.0, 0
    text = values.cast(pl.String).str.strip_chars()
    text = text.filter(text.is_not_null() & (text != ""))
    if text.is_empty():
        return 0.0, 0
    return int(text.str.contains(ADDRESS_LIKE).sum()) / text.len(), text.len()


def _check_header(columns: Sequence[str], where: object) -> None:
    """A header that is an address means the first line is a record, not a header."""
    for column in columns:
        if re.fullmatch(ADDRESS_LIKE, column.strip()):
            raise InputError(
                f"The first line of {where} holds an address ({column.strip()!r}) where the "
                "header belongs: the list has no header row. Add one (say email,name) and "
                "run again."
            )


@dataclass(frozen=True)
class Further:
    """The further columns: each as the frames name it, and the name its fields start with
    (the column's name in the input)."""

    columns: tuple[tuple[str, str], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.columns)

    @property
    def fields(self) -> dict[str, pl.DataType]:
        """The output's further columns, in order, with their types."""
        return {k: v() for _, prefix in self.columns for k, v in further_fields(prefix).items()}


def other_address_columns(
    columns: Sequence[str], sample: pl.DataFrame, checked: Sequence[str]
) -> list[str]:
    """The columns besides *checked* that hold addresses: named like an email column (Outlook's
    ``E-mail 2 Address``, HubSpot's ``Additional email addresses``), or whose values among
    *sample*'s rows are, for at least :data:`CONTENT_SHARE` of the non-empty ones, an address
    or a list of them (``;`` or ``,`` between)."""
    names = set(EMAIL_NAMES) | {fold_header(n) for n in _MORE_NAMES}
    found = []
    for name in columns:
        if name in checked:
            continue
        if fold_header(name) in names:
            found.append(name)
        elif name in sample.columns:
            items = _items(sample.get_column(name))
            share, seen = _share(items) if items is not None else (0.0, 0)
            if seen and share >= CONTENT_SHARE:
                found.append(name)
    return found


# Headers of columns that hold further addresses (not the list's own column).
_MORE_NAMES: Final = ("Additional email addresses", "Other Email", "Secondary Email", "Emails")


def _items(values: pl.Series) -> pl.Series | None:
    """Each cell's addresses, when cut at ``;`` and ``,``."""
    if values.dtype != pl.String:
        return None
    return values.str.replace_all(",", ";", literal=True).str.split(";").explode()


def listing(columns: Sequence[str]) -> str:
    return ", ".join(repr(c) for c in columns) if columns else "(none)"
