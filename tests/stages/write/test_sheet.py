"""The workbook output: every cell type as Excel holds it, the header bold, frozen and
filtered, sensible widths, a package whose every part is well-formed XML; and a workbook in,
a workbook out, with the types its cells had."""

from __future__ import annotations

import datetime as dt
import json
import math
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import openpyxl
import polars as pl
import pytest

from pipeline.cli import main
from pipeline.stages.write.formats import OutputFormat
from pipeline.stages.write.outputs import OutputPaths
from pipeline.stages.write.publish import Publication
from pipeline.stages.write.sheet import column_letter
from pipeline.stages.write.sinks import XlsxSink
from tests.exports import HUBSPOT_REPORT_HEADER, hubspot_report_workbook

FRAME = pl.DataFrame(
    {
        "text": ["  a & <b> ", "=SUM(A1:A2)", "bell\x07_x0041_", None, ""],
        "whole": [1, -2, 3, None, 4],
        "wide": [1234567890123456789, 1, 2, 3, 4],
        "number": [2.5, float("nan"), float("inf"), None, 1e-7],
        "flag": [True, False, None, True, False],
        "day": [dt.date(2024, 3, 1), dt.date(1899, 1, 1), None, dt.date(2026, 11, 26), None],
        "moment": [dt.datetime(2026, 11, 26, 10, 15, 30), None, None, None, None],
        "zoned": pl.Series([dt.datetime(2026, 1, 1, 12)] * 5).dt.replace_time_zone("UTC"),
        "tags": [["a", "b"], [], None, ["c"], ["d"]],
    }
)


def written(tmp: Path, frame: pl.DataFrame, batches: int = 2) -> Path:
    target = tmp / "out.xlsx"
    paths = OutputPaths.for_output(target, fmt=OutputFormat.XLSX)
    publication = Publication(None, str)
    with XlsxSink(paths, frame.columns) as sink:
        step = max(1, -(-frame.height // batches))
        for start in range(0, frame.height, step):
            sink.write(frame.slice(start, step))
        sink.stage(publication)
        publication.commit()
    return target


def test_every_type_is_held_as_excel_holds_it(tmp_path: Path) -> None:
    target = written(tmp_path, FRAME)
    book = openpyxl.load_workbook(target)
    sheet = book["listclean"]
    rows = [list(r) for r in sheet.iter_rows(values_only=True)]
    assert rows[0] == FRAME.columns
    text, whole, wide, number, flag, day, moment, zoned, tags = zip(*rows[1:], strict=True)
    # A control character and a look-alike escape as Excel writes them (openpyxl shows the
    # escapes; Excel reads them back as "bell\x07_x0041_"), as xlsxwriter writes them too.
    assert text == ("  a & <b> ", "=SUM(A1:A2)", "bell_x0007__x005F_x0041_", None, None)
    assert sheet["B2"].data_type == "n" and sheet["A3"].data_type == "s"  # text, not a formula
    assert whole == (1, -2, 3, None, 4)
    assert wide[0] == "1234567890123456789"  # 19 digits: text, exact
    assert number[0] == 2.5 and number[3] is None and number[4] == 1e-7
    assert sheet["D3"].value == "#NUM!" and sheet["D3"].data_type == "e"
    assert flag == (True, False, None, True, False)
    assert day[0] == dt.datetime(2024, 3, 1) and sheet["F2"].number_format == "yyyy\\-mm\\-dd"
    assert day[1] == "1899-01-01"  # before Excel's calendar is right: ISO text
    assert moment[0] == dt.datetime(2026, 11, 26, 10, 15, 30)
    assert zoned[0].startswith("2026-01-01 12:00:00")  # a time zone: text
    assert tags[0] == '["a","b"]'
    assert math.isnan(FRAME.get_column("number")[1])


def test_the_header_is_bold_frozen_and_filtered(tmp_path: Path) -> None:
    target = written(tmp_path, FRAME)
    sheet = openpyxl.load_workbook(target)["listclean"]
    assert all(cell.font.b for cell in sheet[1])
    assert sheet.freeze_panes == "A2"
    assert sheet.auto_filter.ref == f"A1:{column_letter(FRAME.width - 1)}{FRAME.height + 1}"
    widths = {
        c: sheet.column_dimensions[column_letter(i)].width for i, c in enumerate(FRAME.columns)
    }
    assert widths["flag"] < widths["text"] < 20  # each as wide as its values, within bounds
    assert widths["day"] >= 11  # a date's ten characters show
    with zipfile.ZipFile(target) as package:
        for name in package.namelist():
            ElementTree.fromstring(package.read(name))  # every part is well-formed XML
        assert "_xlnm._FilterDatabase" in package.read("xl/workbook.xml").decode()


@pytest.mark.parametrize("rows", [0, 1])
def test_an_empty_or_small_sheet(tmp_path: Path, rows: int) -> None:
    target = written(tmp_path, FRAME.head(rows).select("text", "whole"), batches=1)
    sheet = openpyxl.load_workbook(target)["listclean"]
    assert sheet.max_row == rows + 1


def test_column_letters() -> None:
    assert [column_letter(i) for i in (0, 25, 26, 51, 52, 701, 702)] == [
        "A", "Z", "AA", "AZ", "BA", "ZZ", "AAA",
    ]  # fmt: skip


@pytest.mark.parametrize("engine", ["local", "dask"])
def test_a_workbook_comes_back_with_its_types(tmp_path: Path, engine: str) -> None:
    """A HubSpot report workbook in, a workbook out: its title rows in the rejects, its ids,
    counts and scores numbers, its dates dates, its booleans booleans."""
    source = tmp_path / "report.xlsx"
    data = hubspot_report_workbook(source, rows=5)
    out = tmp_path / "report.clean.xlsx"
    args = ["clean", str(source), "-o", str(out), "--offline", "--quiet"]
    extra = ["--engine", "dask", "--dask-workers", "1"] if engine == "dask" else []
    assert main([*args, "--cache-dir", str(tmp_path / "cache"), *extra]) == 0
    sheet = openpyxl.load_workbook(out)["listclean"]
    rows = [list(r) for r in sheet.iter_rows(values_only=True)]
    assert rows[0][: len(HUBSPOT_REPORT_HEADER)] == [
        "Record ID", "First Name", "input_Email", *HUBSPOT_REPORT_HEADER[3:],
    ]  # fmt: skip
    for got, want in zip(rows[1:], data, strict=True):
        assert tuple(got[: len(want)]) == want
    summary = json.loads((tmp_path / "report.clean.summary.json").read_text())
    assert summary["header_row"] == 5 and summary["rows_rejected"] == 4
