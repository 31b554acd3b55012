"""One worksheet written as an Excel workbook (.xlsx, ECMA-376 SpreadsheetML), fast: each
batch's rows become the sheet's XML in polars, column by column, never cell by cell in Python.

What the sheet holds, and how it looks:

- Row 1 is the header, bold, frozen (it stays in view while scrolling), with a filter on every
  column; each column is as wide as its longest value (the header's with room for the filter
  button), within :data:`MAX_WIDTH` characters.
- Text is always an inline string: never a formula, number or link (a cell reading
  ``=HYPERLINK(...)`` stays inert). Characters XML cannot hold (control characters) are
  written as Excel escapes them (``_x0001_``), and so is text that looks like such an escape.
- Whole numbers are numbers, except those of 16 digits or more, which Excel would round (it
  keeps numbers as doubles): those are text, so a customer number comes back as it was.
  Other numbers are numbers; NaN and infinities are the error ``#NUM!``.
- Booleans are booleans; dates and date-times are Excel dates, formatted ``yyyy-mm-dd`` and
  ``yyyy-mm-dd hh:mm:ss`` (before 1900-03-01, which Excel's calendar gets wrong, and with a
  time zone, which Excel has no place for, they are ISO text); anything else is its text.

The rows go to an unnamed temporary file as they come, so memory holds one batch; the
package (the workbook, its styles, the sheet, its properties) is zipped at :meth:`finish`.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Final
from xml.sax.saxutils import escape, quoteattr

import polars as pl

_SLICE: Final = 20_000  # rows made into XML at a time: the XML is several times their size
MAX_WIDTH: Final = 60  # characters, the widest a column is made
_FILTER_ROOM: Final = 3  # characters the filter button takes beside a header
EXACT_IN_EXCEL: Final = 10**15
_EPOCH: Final = dt.date(1899, 12, 30)  # Excel's day 0 (its 1900 leap-year bug folded in)
_FIRST_RIGHT: Final = dt.date(1900, 3, 1)  # Excel counts days right from here on
_UNIX_DAY: Final = 25_569  # 1970-01-01 in Excel's days
_BAD_XML: Final = r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]|_x[0-9A-Fa-f]{4}_"
_BOLD, _DATE, _DATETIME = 1, 2, 3  # the cell styles of styles.xml


def column_letter(index: int) -> str:
    """Excel's name of the column at *index* (0-based): A, ..., Z, AA, ..."""
    letters = ""
    index += 1
    while index:
        index, left = divmod(index - 1, 26)
        letters = chr(65 + left) + letters
    return letters


class SheetWriter:
    """A workbook of one sheet with the header *columns*, written batch by batch to *target*."""

    def __init__(
        self, target: Path, columns: list[str], name: str, properties: Mapping[str, str]
    ) -> None:
        self._target = target
        self._columns = columns
        self._name = name
        self._properties = dict(properties)
        self._letters = [column_letter(i) for i in range(len(columns))]
        self._widths = [len(c) + _FILTER_ROOM for c in columns]
        # Removed when closed (or this process dies): nothing of it outlives the run.
        self._rows: IO[bytes] = tempfile.TemporaryFile(  # noqa: SIM115
            dir=target.parent, prefix=".listclean-"
        )
        self.written = 1  # rows in the sheet: the header, then the data
        header = "".join(
            f'<c r="{letter}1" t="inlineStr" s="{_BOLD}"><is><t xml:space="preserve">'
            f"{_text(name)}</t></is></c>"
            for letter, name in zip(self._letters, columns, strict=True)
        )
        self._rows.write(f'<row r="1">{header}</row>'.encode())

    def write(self, frame: pl.DataFrame) -> None:
        """*frame*'s rows (its columns in the header's order), below those written."""
        for start in range(0, frame.height, _SLICE):
            self._write(frame.slice(start, _SLICE))

    def _write(self, frame: pl.DataFrame) -> None:
        first = self.written + 1
        number = pl.int_range(first, first + frame.height, eager=False).cast(pl.String)
        cells = [
            _cell(frame.get_column(name), letter, number)
            for name, letter in zip(frame.columns, self._letters, strict=True)
        ]
        rows = frame.select(
            pl.concat_str(
                [pl.lit('<row r="'), number, pl.lit('">'), *cells, pl.lit("</row>")],
                ignore_nulls=True,
            ).alias("xml")
        )
        # One row a line, written as it is (the XML escaped its own text).
        rows.write_csv(self._rows, include_header=False, quote_style="never")
        self.written += frame.height
        self._measure(frame)

    def _measure(self, frame: pl.DataFrame) -> None:
        for index, (name, dtype) in enumerate(frame.schema.items()):
            values = frame.get_column(name)
            if dtype == pl.Date:
                longest = 10
            elif dtype == pl.Datetime:
                longest = 19
            elif dtype == pl.Boolean:
                longest = 5
            else:
                text = values if dtype == pl.String else values.cast(pl.String)
                longest = int(text.str.len_chars().max() or 0)  # type: ignore[arg-type]
            self._widths[index] = min(MAX_WIDTH, max(self._widths[index], longest + 1))

    def finish(self) -> None:
        """Zip the package into *target* (then the rows' temporary file is gone)."""
        last = f"{self._letters[-1] if self._letters else 'A'}{self.written}"
        with zipfile.ZipFile(self._target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as book:
            for part, text in self._parts(last).items():
                book.writestr(part, text)
            with book.open("xl/worksheets/sheet1.xml", "w", force_zip64=True) as sheet:
                sheet.write(self._sheet_head(last).encode())
                self._rows.seek(0)
                shutil.copyfileobj(self._rows, sheet, 1 << 20)
                sheet.write(self._sheet_tail(last).encode())
        self.close()

    def close(self) -> None:
        self._rows.close()

    def _sheet_head(self, last: str) -> str:
        widths = "".join(
            f'<col min="{i}" max="{i}" width="{w + 1.5:.1f}" customWidth="1"/>'
            for i, w in enumerate(self._widths, start=1)
        )
        return (
            f'{_DECLARATION}<worksheet xmlns="{_MAIN}" xmlns:r="{_RELATIONSHIPS}">'
            f'<dimension ref="A1:{last}"/><sheetViews><sheetView tabSelected="1" '
            'workbookViewId="0"><pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" '
            'state="frozen"/><selection pane="bottomLeft" activeCell="A2" sqref="A2"/>'
            '</sheetView></sheetViews><sheetFormatPr defaultRowHeight="15"/>'
            + (f"<cols>{widths}</cols>" if widths else "")
            + "<sheetData>"
        )

    def _sheet_tail(self, last: str) -> str:
        return (
            f'</sheetData><autoFilter ref="A1:{last}"/><pageMargins left="0.7" right="0.7" '
            'top="0.75" bottom="0.75" header="0.3" footer="0.3"/></worksheet>'
        )

    def _parts(self, last: str) -> dict[str, str]:
        sheet = quoteattr(self._name)
        area = f"{_quoted_sheet(self._name)}!$A$1:${last.rstrip('0123456789')}${self.written}"
        properties = "".join(
            f'<property fmtid="{{D5CDD505-2E9C-101B-9397-08002B2CF9AE}}" pid="{pid}" '
            f"name={quoteattr(name)}><vt:lpwstr>{_text(value)}</vt:lpwstr></property>"
            for pid, (name, value) in enumerate(self._properties.items(), start=2)
        )
        return {
            "[Content_Types].xml": _CONTENT_TYPES,
            "_rels/.rels": _ROOT_RELS,
            "docProps/app.xml": _APP,
            "docProps/core.xml": _CORE,
            "docProps/custom.xml": f'{_DECLARATION}<Properties xmlns="{_CUSTOM}" '
            f'xmlns:vt="{_VTYPES}">{properties}</Properties>',
            "xl/workbook.xml": f'{_DECLARATION}<workbook xmlns="{_MAIN}" '
            f'xmlns:r="{_RELATIONSHIPS}"><bookViews><workbookView/></bookViews><sheets>'
            f'<sheet name={sheet} sheetId="1" r:id="rId1"/></sheets><definedNames>'
            '<definedName name="_xlnm._FilterDatabase" localSheetId="0" hidden="1">'
            f"{_text(area)}</definedName></definedNames></workbook>",
            "xl/_rels/workbook.xml.rels": _BOOK_RELS,
            "xl/styles.xml": _STYLES,
        }


def _cell(values: pl.Series, letter: str, number: pl.Expr) -> pl.Expr:
    """The XML of each cell of a column (null where the cell is empty)."""
    dtype = values.dtype
    at = [pl.lit(f'<c r="{letter}'), number]
    column = pl.col(values.name)
    if dtype == pl.Boolean:
        value = column.cast(pl.UInt8).cast(pl.String)
        return pl.concat_str([*at, pl.lit('" t="b"><v>'), value, pl.lit("</v></c>")])
    if dtype.is_integer():
        wide = values.abs().max()
        if wide is None or int(wide) < EXACT_IN_EXCEL:  # type: ignore[arg-type]
            return pl.concat_str([*at, pl.lit('"><v>'), column.cast(pl.String), _END])
        return _string(values.cast(pl.String), column.cast(pl.String), at)
    if dtype.is_float():
        finite = pl.concat_str([*at, pl.lit('"><v>'), column.cast(pl.String), _END])
        error = pl.concat_str([*at, pl.lit('" t="e"><v>#NUM!</v></c>')])
        return pl.when(column.is_finite()).then(finite).when(column.is_not_null()).then(error)
    if dtype == pl.Date or (isinstance(dtype, pl.Datetime) and dtype.time_zone is None):
        return _date(column, dtype, at)
    text = column if dtype == pl.String else column.cast(pl.String)
    return _string(values if dtype == pl.String else values.cast(pl.String), text, at)


_END: Final = pl.lit("</v></c>")


def _date(column: pl.Expr, dtype: pl.DataType, at: list[pl.Expr]) -> pl.Expr:
    if dtype == pl.Date:
        serial = (column - pl.lit(_EPOCH)).dt.total_days().cast(pl.String)
        style = _DATE
    else:
        days = column.dt.epoch("us").cast(pl.Float64) / 86_400_000_000 + _UNIX_DAY
        serial, style = days.cast(pl.String), _DATETIME
    number = pl.concat_str([*at, pl.lit(f'" s="{style}"><v>'), serial, _END])
    iso = column.cast(pl.String)
    text = pl.concat_str([*at, pl.lit('" t="inlineStr"><is><t>'), iso, pl.lit("</t></is></c>")])
    early = column.cast(pl.Date) < pl.lit(_FIRST_RIGHT)
    return pl.when(early).then(text).otherwise(number)


def _string(values: pl.Series, text: pl.Expr, at: list[pl.Expr]) -> pl.Expr:
    escaped = (
        text.str.replace_all("&", "&amp;", literal=True)
        .str.replace_all("<", "&lt;", literal=True)
        .str.replace_all(">", "&gt;", literal=True)
    )
    if values.str.contains(_BAD_XML).any():  # rare: escaped value by value
        escaped = text.map_elements(_text, return_dtype=pl.String)
    cell = pl.concat_str(
        [
            *at,
            pl.lit('" t="inlineStr"><is><t xml:space="preserve">'),
            escaped,
            pl.lit("</t></is></c>"),
        ]
    )
    return pl.when(text != "").then(cell)


def _text(value: str) -> str:
    """*value* as XML text: markup escaped, and what XML cannot hold as Excel writes it."""
    return escape(_excel_escapes(value))


def _excel_escapes(value: str) -> str:
    def hexed(match: re.Match[str]) -> str:
        found = match.group(0)
        return "_x005F" + found if found.startswith("_x") else f"_x{ord(found):04X}_"

    return re.sub(_BAD_XML, hexed, value)


def _quoted_sheet(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


_DECLARATION: Final = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_MAIN: Final = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_RELATIONSHIPS: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PACKAGE_RELS: Final = "http://schemas.openxmlformats.org/package/2006/relationships"
_CUSTOM: Final = "http://schemas.openxmlformats.org/officeDocument/2006/custom-properties"
_VTYPES: Final = "http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"
_OFFICE: Final = "application/vnd.openxmlformats-officedocument"
_CONTENT_TYPES: Final = (
    f'{_DECLARATION}<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.'
    'relationships+xml"/><Default Extension="xml" ContentType="application/xml"/>'
    f'<Override PartName="/xl/workbook.xml" ContentType="{_OFFICE}.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" '
    f'ContentType="{_OFFICE}.spreadsheetml.worksheet+xml"/>'
    f'<Override PartName="/xl/styles.xml" ContentType="{_OFFICE}.spreadsheetml.styles+xml"/>'
    '<Override PartName="/docProps/core.xml" '
    'ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>'
    f'<Override PartName="/docProps/app.xml" ContentType="{_OFFICE}.extended-properties+xml"/>'
    f'<Override PartName="/docProps/custom.xml" ContentType="{_OFFICE}.custom-properties+xml"/>'
    "</Types>"
)
_ROOT_RELS: Final = (
    f'{_DECLARATION}<Relationships xmlns="{_PACKAGE_RELS}">'
    f'<Relationship Id="rId1" Type="{_RELATIONSHIPS}/officeDocument" Target="xl/workbook.xml"/>'
    '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/'
    'relationships/metadata/core-properties" Target="docProps/core.xml"/>'
    f'<Relationship Id="rId3" Type="{_RELATIONSHIPS}/extended-properties" '
    'Target="docProps/app.xml"/>'
    f'<Relationship Id="rId4" Type="{_RELATIONSHIPS}/custom-properties" '
    'Target="docProps/custom.xml"/></Relationships>'
)
_BOOK_RELS: Final = (
    f'{_DECLARATION}<Relationships xmlns="{_PACKAGE_RELS}">'
    f'<Relationship Id="rId1" Type="{_RELATIONSHIPS}/worksheet" Target="worksheets/sheet1.xml"/>'
    f'<Relationship Id="rId2" Type="{_RELATIONSHIPS}/styles" Target="styles.xml"/>'
    "</Relationships>"
)
_APP: Final = (
    f'{_DECLARATION}<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/'
    f'extended-properties" xmlns:vt="{_VTYPES}"><Application>listclean</Application></Properties>'
)
_CORE: Final = (
    f'{_DECLARATION}<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/'
    '2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
    "<dc:creator>listclean</dc:creator></cp:coreProperties>"
)
_FONT: Final = '<sz val="11"/><name val="Calibri"/><family val="2"/>'
_STYLES: Final = (
    f'{_DECLARATION}<styleSheet xmlns="{_MAIN}"><numFmts count="2">'
    '<numFmt numFmtId="164" formatCode="yyyy\\-mm\\-dd"/>'
    '<numFmt numFmtId="165" formatCode="yyyy\\-mm\\-dd\\ hh:mm:ss"/></numFmts>'
    f'<fonts count="2"><font>{_FONT}</font><font><b/>{_FONT}</font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill>'
    '<fill><patternFill patternType="gray125"/></fill></fills>'
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
    '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
    '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '<xf numFmtId="165" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
    '</cellXfs><cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/>'
    "</cellStyles></styleSheet>"
)
