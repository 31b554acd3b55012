"""An Excel workbook (.xlsx) as a list: one sheet, written once as UTF-8 CSV into the run's
spill folder and then read like any CSV (so empty rows and footers are handled alike).

The sheet is read with openpyxl in read-only mode, which streams the sheet's XML: memory
stays bounded whatever the sheet's size. Values are taken as Excel stores them (the result of
a formula, not the formula) and written as text: whole numbers without a decimal point (a phone
number typed as a number stays ``4915112345678``), other numbers as Python spells them, dates
as ISO 8601, booleans as ``TRUE``/``FALSE``. Rows before the first non-empty one and after the
last are the sheet's padding, not records; an empty row between records is kept (and becomes
an ``empty_row`` reject). The rejects file's ``line`` is then the line of that CSV: the sheet's
row number, counted from the first non-empty row, unless a cell above holds a line break.
"""

from __future__ import annotations

import csv
import datetime as dt
import zipfile
from pathlib import Path
from typing import Any, Final

from pipeline.core.errors import InputError

_DAY_START: Final = dt.time(0, 0)


def workbook_to_csv(path: Path, spill: Path, sheet: str | None) -> tuple[Path, str]:
    """The chosen sheet of *path* (the first by default) as a CSV in *spill*, and its name."""
    import openpyxl  # imported here: only workbooks need it

    try:
        book = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise InputError(f"Cannot read the Excel workbook {path}: {exc}.") from exc
    try:
        name = _sheet_name(path, book.sheetnames, sheet)
        target = spill / "sheet.csv"
        with target.open("w", encoding="utf-8", newline="") as out:
            _copy_rows(book[name].iter_rows(values_only=True), csv.writer(out, lineterminator="\n"))
        return target, name
    finally:
        book.close()


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


def _copy_rows(rows: Any, writer: Any) -> None:
    """The sheet's rows from its first non-empty one to its last, as text."""
    pending = 0  # empty rows seen since the last written one: written only if more follows
    started = False
    for values in rows:
        cells = [_text(v) for v in values]
        while cells and cells[-1] == "":
            cells.pop()
        if not cells:
            pending += started
            continue
        writer.writerows([[]] * pending)
        pending, started = 0, True
        writer.writerow(cells)


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    if isinstance(value, dt.datetime):
        return value.date().isoformat() if value.time() == _DAY_START else value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    return str(value)
