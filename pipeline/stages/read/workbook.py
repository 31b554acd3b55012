"""An Excel workbook (.xlsx) as a list: one sheet, written once as UTF-8 CSV into the run's
spill folder and read like any CSV (so title rows, empty rows and footers are handled alike),
its columns then given back the types their cells have (:class:`SheetSource`).

The sheet is read with openpyxl in read-only mode, which streams the sheet's XML: memory
stays bounded whatever the sheet's size. Values are taken as Excel stores them (the result of
a formula, not the formula). Rows before the first non-empty one and after the last are the
sheet's padding, not records; an empty row between records is kept (and becomes an
``empty_row`` reject). Line numbers (a reject's ``line``, the header's row) are the sheet's row
numbers, unless a cell above holds a line break.

**Types.** A column keeps the type its cells have in the list's rows (below the header, report
footers at the end left out): whole numbers, numbers, booleans, dates (a date-time at
midnight, as Excel stores a date), date-times. A column whose cells mix text with those, or
numbers with dates, is text, each cell spelled as Excel shows it: whole numbers without a
decimal point (a phone number typed as a number stays ``4915112345678``), dates in ISO 8601,
booleans ``TRUE``/``FALSE``. The email column is always text.
"""

from __future__ import annotations

import collections
import csv
import datetime as dt
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipeline.core.errors import InputError
from pipeline.stages.read.csv_source import CsvSource
from pipeline.stages.read.footers import filler_kind

_DAY_START: Final = dt.time(0, 0)
_TAIL: Final = 32  # rows at the sheet's end looked at for report footers
_DATE: Final = "%Y-%m-%d"
_DATETIME: Final = "%Y-%m-%dT%H:%M:%S%.f"
# The type of a column whose cells hold only these kinds (empty cells aside).
_TYPES: Final = (
    (frozenset({"int"}), pl.Int64()),
    (frozenset({"float"}), pl.Float64()),
    (frozenset({"int", "float"}), pl.Float64()),
    (frozenset({"bool"}), pl.Boolean()),
    (frozenset({"date"}), pl.Date()),
    (frozenset({"datetime"}), pl.Datetime("us")),
    (frozenset({"date", "datetime"}), pl.Datetime("us")),
)


@dataclass
class Kinds:
    """What kinds of value each column's cells hold, by record of the CSV: for the rows at the
    sheet's end (where footers are) each row's own; for the rows before, the last record
    each kind was seen in."""

    last: dict[int, dict[str, int]] = field(default_factory=dict)  # column -> kind -> record
    tail: collections.deque[tuple[int, list[str], list[str]]] = field(
        default_factory=lambda: collections.deque(maxlen=_TAIL)
    )  # (record, texts, kinds)

    def add(self, record: int, texts: list[str], kinds: list[str]) -> None:
        if len(self.tail) == _TAIL:
            self._settle(*self.tail[0])
        self.tail.append((record, texts, kinds))

    def _settle(self, record: int, _texts: list[str], kinds: list[str]) -> None:
        for column, kind in enumerate(kinds):
            if kind:
                self.last.setdefault(column, {})[kind] = record

    def types(self, header: int, columns: list[str]) -> dict[str, pl.DataType]:
        """The type of each column whose cells below record *header* (0-based) agree."""
        seen: dict[int, set[str]] = {
            c: {k for k, at in kinds.items() if at > header} for c, kinds in self.last.items()
        }
        for _, _, kinds in self._kept(header, len(columns)):
            for column, kind in enumerate(kinds):
                if kind:
                    seen.setdefault(column, set()).add(kind)
        typed = dict(_TYPES)
        return {
            name: typed[frozenset(seen[c])]
            for c, name in enumerate(columns)
            if frozenset(seen.get(c, ())) in typed
        }

    def _kept(self, header: int, width: int) -> Iterator[tuple[int, list[str], list[str]]]:
        """The rows of the tail below the header that are not footers or empty rows."""
        rows = [row for row in self.tail if row[0] > header]
        if not rows or width == 0:
            return
        cells = [(texts + [""] * width)[:width] for _, texts, _ in rows]
        names = [f"c{i}" for i in range(width)]
        frame = pl.DataFrame(cells, schema=dict.fromkeys(names, pl.String), orient="row")
        filler = filler_kind(frame.with_columns(pl.all().replace("", None)))
        for row, why in zip(rows, filler.to_list(), strict=True):
            if why is None:
                yield row


@dataclass(frozen=True)
class Sheet:
    """A sheet written as CSV: where, its name, the sheet row of the CSV's first line, and
    the kinds of its cells."""

    path: Path
    name: str
    first_row: int
    kinds: Kinds


def workbook_to_csv(path: Path, spill: Path, sheet: str | None) -> Sheet:
    """The chosen sheet of *path* (the first by default) as a CSV in *spill*."""
    import openpyxl  # imported here: only workbooks need it

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise InputError(f"Cannot read the Excel workbook {path}: {exc}.") from exc
    try:
        name = _sheet_name(path, book.sheetnames, sheet)
        target = spill / "sheet.csv"
        kinds = Kinds()
        with target.open("w", encoding="utf-8", newline="") as out:
            writer = csv.writer(out, lineterminator="\n")
            first = _copy_rows(book[name].iter_rows(values_only=True), writer, kinds)
        return Sheet(target, name, first, kinds)
    finally:
        book.close()


class SheetSource(CsvSource):
    """A sheet read as its CSV, each batch's columns cast back to their cells' types."""

    def __init__(
        self, sheet: Sheet, spill: Path, label: str, max_field: int, header_row: int | None
    ) -> None:
        super().__init__(
            sheet.path, spill, label, max_field=max_field, header_row=header_row,
            first_line=sheet.first_row,
        )  # fmt: skip
        header = self.header_row - sheet.first_row  # its record (no line break above it)
        self.types = sheet.kinds.types(header, self.columns)

    @property
    def schema(self) -> dict[str, pl.DataType]:
        return {**super().schema, **self.types}

    def batches(self, rows: int) -> Iterator[tuple[pl.DataFrame, pl.DataFrame]]:
        for frame, rejects in super().batches(rows):
            yield frame.with_columns(_cast(name, t) for name, t in self.types.items()), rejects


def _cast(name: str, dtype: pl.DataType) -> pl.Expr:
    text = pl.col(name)
    if dtype == pl.Boolean:
        return text == "TRUE"
    if dtype == pl.Date:
        return text.str.to_date(_DATE)
    if dtype == pl.Datetime:  # a date (at midnight) is written without its time
        full = pl.when(text.str.len_chars() == 10).then(text + "T00:00:00").otherwise(text)
        return full.str.to_datetime(_DATETIME, time_unit="us")
    return text.cast(dtype)


def _sheet_name(path: Path, names: list[str], wanted: str | None) -> str:
    if wanted is None:
        if not names:
            raise InputError(f"The Excel workbook {path} has no sheet.")
        return names[0]
    found = [n for n in names if n == wanted] or [
        n for n in names if n.casefold() == wanted.casefold()
    ]
    if not found:
        shown = ", ".join(repr(n) for n in names)
        raise InputError(
            f"The Excel workbook {path} has no sheet {wanted!r}. Its sheets are: {shown}. "
            "Pass one of them with --sheet."
        )
    return found[0]


def _copy_rows(rows: Any, writer: Any, kinds: Kinds) -> int:
    """The sheet's rows from its first non-empty one to its last, as text; the sheet row of
    the first (1 for an empty sheet)."""
    pending = 0  # empty rows seen since the last written one: written only if more follows
    first = 0
    record = 0
    for number, values in enumerate(rows, start=1):
        cells = [_cell(v) for v in values]
        while cells and cells[-1][0] == "":
            cells.pop()
        if not cells:
            pending += bool(first)
            continue
        writer.writerows([[]] * pending)
        record += pending
        pending, first = 0, first or number
        texts = [text for text, _ in cells]
        writer.writerow(texts)
        kinds.add(record, texts, [kind for _, kind in cells])
        record += 1
    return first or 1


def _cell(value: object) -> tuple[str, str]:
    """A cell's text, as Excel shows it, and its kind ("" for an empty cell)."""
    if value is None:
        return "", ""
    if isinstance(value, bool):
        return ("TRUE" if value else "FALSE"), "bool"
    if isinstance(value, int):
        return str(value), "int" if abs(value) < 2**63 else "text"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value)), "int"
        return repr(value), "float"
    if isinstance(value, dt.datetime):
        if value.time() == _DAY_START and value.tzinfo is None:
            return value.date().isoformat(), "date"
        return value.isoformat(), "datetime" if value.tzinfo is None else "text"
    if isinstance(value, dt.date | dt.time):
        return value.isoformat(), "date" if isinstance(value, dt.date) else "text"
    text = str(value)
    return text, "text" if text else ""
