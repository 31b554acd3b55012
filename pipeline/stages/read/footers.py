"""Rows of a text export that are not records: empty rows and report footers.

Spreadsheet programs pad a sheet's used range with empty rows (``;;;;`` in a German Excel
CSV), and report exports end with lines about the report, not about anyone: Salesforce's
``Grand Totals (3 records)``, ``Confidential Information - Do Not Distribute`` and its
copyright line. Such a row goes to the rejects file with the reason ``empty_row`` or
``footer`` instead of the output, where it would only swell the Invalid count.

The rule never takes a row that could hold an address: a row is judged only when none of its
cells contains an ``@``. Then it is ``empty_row`` when every cell is empty, whitespace or
delimiters (``;;;;`` read with another delimiter is still an empty row), and
``footer`` when its text (the non-empty cells, joined) matches one of :data:`_FOOTERS` and it
fills at most half of the header's columns. Applied to delimited text, workbooks and archive
members; never to Parquet, whose rows come from a database.
"""

from __future__ import annotations

from typing import Final

import polars as pl

_BLANK: Final = " \t\r\n\u00a0,;|"  # what an empty row holds: whitespace and delimiters
EMPTY_ROW: Final = "empty_row"
FOOTER: Final = "footer"

# What report footers say, at the start of the row's text unless the pattern says otherwise.
_FOOTERS: Final = "(?i)" + "|".join(
    (
        # Grand Totals (3 records), Total:, and the word in German, Dutch, Italian
        r"^(grand\s+)?(totals?|summe|gesamt(summe)?|totaal|totale)\s*(\(|:|rows?\b|records?\b|$)",
        r"^\(?\d[\d,. ]*\s+(records?|rows?)\)?$",  # 3 records
        r"^(strictly\s+)?confidential\b",  # Confidential Information - ...
        r"\bdo not (distribute|copy|forward)\b",
        r"^(copyright\b|©|\(c\)\s)",  # Copyright (c) 2000-2024 salesforce.com, inc.
        r"\ball rights reserved\b",
        r"^(report\s+)?(generated|exported|created|printed|run)\s+(by|on|at|from)\b",
        r"^page\s+\d+\s+of\s+\d+",
    )
)


def filler_kind(frame: pl.DataFrame) -> pl.Series:
    """Per row of *frame* (text columns): ``empty_row``, ``footer`` or null (a record)."""
    found = pl.Series("filler", [None] * frame.height, dtype=pl.String)
    text = [pl.col(name) for name, dtype in frame.schema.items() if dtype == pl.String]
    if not text:
        return found
    # A row with an @ anywhere is a record: only the few without one are looked at closely.
    has_at = pl.any_horizontal(c.str.contains("@", literal=True).fill_null(False) for c in text)
    rest = frame.with_row_index("_row").filter(~has_at)
    if rest.is_empty():
        return found
    cells = [pl.when(c.str.strip_chars(_BLANK) != "").then(c.str.strip_chars()) for c in text]
    joined = pl.concat_str(cells, separator=" ", ignore_nulls=True)
    filled = pl.sum_horizontal(c.is_not_null() for c in cells)
    footer = joined.str.contains(_FOOTERS) & (filled * 2 <= max(2, len(text)))
    kind = (
        pl.when(filled == 0)
        .then(pl.lit(EMPTY_ROW))
        .when(footer)
        .then(pl.lit(FOOTER))
        .otherwise(pl.lit(None, pl.String))
    )
    kinds = rest.select("_row", kind.alias("filler"))
    return found.scatter(kinds.get_column("_row"), kinds.get_column("filler"))


def blank_text(raw: str) -> bool:
    """Whether a record's raw text holds only whitespace and delimiters (``;;;;`` with more
    delimiters than the header has: an empty row all the same)."""
    return not raw.strip(_BLANK)
