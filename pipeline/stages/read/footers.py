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
    found = pl.repeat(None, frame.height, dtype=pl.String, eager=True).alias("filler")
    kinds = _fillers(frame)
    if kinds.is_empty():
        return found
    return found.scatter(kinds.get_column("_row"), kinds.get_column("filler"))


def _fillers(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows of *frame* that are not records: their numbers (``_row``) and kinds."""
    names = [name for name, dtype in frame.schema.items() if dtype == pl.String]
    rest = _without_at(frame.with_row_index("_row"), names)
    if rest.is_empty():
        return pl.DataFrame(schema={"_row": pl.UInt32, "filler": pl.String})
    text = [pl.col(name) for name in names]
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
    return rest.select("_row", kind.alias("filler")).filter(pl.col("filler").is_not_null())


def _without_at(frame: pl.DataFrame, text: list[str]) -> pl.DataFrame:
    """The rows of *frame* none of whose *text* cells holds an ``@`` (only those are looked
    at closely). The columns are tried one at a time, the one that holds the most ``@`` in
    the first rows first: after it only a few rows are left to look at in the others."""
    if not text:
        return frame.clear()
    head = frame.head(64).select(pl.col(text).str.contains("@", literal=True).sum())
    for name in sorted(text, key=lambda name: -int(head.get_column(name).item() or 0)):
        frame = frame.filter(~pl.col(name).str.contains("@", literal=True).fill_null(False))
        if frame.is_empty():
            break
    return frame


def blank_text(raw: str) -> bool:
    """Whether a record's raw text holds only whitespace and delimiters (``;;;;`` with more
    delimiters than the header has: an empty row all the same)."""
    return not raw.strip(_BLANK)
