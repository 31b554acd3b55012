"""Output formats: Parquet, CSV (with or without a BOM) and xlsx by -o's suffix, refused when
the suffix says something else; columns that never clash with the input's, as DuckDB and
polars read them; the schema's version in each format."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import duckdb
import openpyxl
import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.cli import main
from pipeline.core.errors import UsageError
from pipeline.core.schema import OUTPUT_COLUMNS, SCHEMA_VERSION
from pipeline.stages.write.formats import EXCEL_MAX_ROWS, OutputFormat, choose_format
from pipeline.stages.write.outputs import OutputPaths
from pipeline.stages.write.sinks import XlsxSink

# HubSpot-like: its Email beside our EMAIL, an untrimmed address, an id that must stay exact.
INPUT = (
    "Record ID,First Name,Email,email,Verdict\n"
    '1,Ann," Ann@Gmail.COM ",ann@x.org,keep\n'
    '1234567890123456789,Zoë,=HYPERLINK("http://x"),,\n'
)


def clean(tmp: Path, output: str, *extra: str, source: str = "list.csv") -> int:
    if not (tmp / source).exists():
        (tmp / source).write_text(INPUT, encoding="utf-8")
    return main(
        [
            "clean",
            str(tmp / source),
            "-o",
            str(tmp / output),
            "--offline",
            "--quiet",
            "--cache-dir",
            str(tmp / "cache"),
            "--email-column",
            "Email",
            *extra,
        ]
    )


def test_the_suffix_chooses_the_format(tmp_path: Path) -> None:
    for name in ("out.parquet", "out.csv", "out.xlsx"):
        assert clean(tmp_path, name) == 0
    parquet = pl.read_parquet(tmp_path / "out.parquet")
    csv = pl.read_csv(tmp_path / "out.csv", infer_schema=False)
    book = openpyxl.load_workbook(tmp_path / "out.xlsx", read_only=True)
    sheet = [list(row) for row in book.active.iter_rows(values_only=True)]  # type: ignore[union-attr]
    book.close()
    assert parquet.columns == csv.columns == sheet[0]
    assert parquet.get_column("EMAIL").to_list() == ["Ann@gmail.com", '=HYPERLINK("http://x")']
    assert csv.get_column("EMAIL").to_list() == parquet.get_column("EMAIL").to_list()
    # Text stays text in the workbook (never a formula); an id of 19 digits stays exact.
    assert sheet[2][0] == "1234567890123456789" and sheet[2][2] == '=HYPERLINK("http://x")'
    assert sheet[1][0] == "1"  # a CSV's values are text, and stay text
    score = sheet[0].index("SCORE")
    duplicate = sheet[0].index("DUPLICATE")
    assert isinstance(sheet[1][score], float) and sheet[1][duplicate] is False  # ours keep types
    for name in ("out.rejects.csv", "out.summary.json"):
        assert (tmp_path / name).exists()
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert summary["output_format"] == "xlsx" and summary["schema_version"] == SCHEMA_VERSION


def test_csv_for_excel_starts_with_a_bom(tmp_path: Path) -> None:
    assert clean(tmp_path, "plain.csv") == 0
    assert clean(tmp_path, "excel.csv", "--csv-bom") == 0
    plain, excel = (tmp_path / "plain.csv").read_bytes(), (tmp_path / "excel.csv").read_bytes()
    assert not plain.startswith(b"\xef\xbb\xbf") and excel == b"\xef\xbb\xbf" + plain
    assert "Zoë".encode() in plain  # UTF-8


@pytest.mark.parametrize(
    ("output", "flag", "message"),
    [
        ("out.json", None, "ends in '.json', a format listclean does not write"),
        ("list.clean", None, "ends in '.clean'"),
        ("out.csv", "xlsx", "--output-format xlsx does not match the output"),
        ("out.parquet", "csv", "--output-format csv does not match"),
        ("out/", "csv", "names dataset output"),
    ],
)
def test_an_unknown_or_mismatching_suffix_is_refused(
    output: str, flag: str | None, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        choose_format(output, flag)


def test_refused_formats_exit_2_and_write_nothing(tmp_path: Path) -> None:
    assert clean(tmp_path, "out.txt") == 2
    assert clean(tmp_path, "out.csv", "--output-format", "parquet") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["list.csv"]


@pytest.mark.parametrize(
    ("output", "flag", "fmt"),
    [
        (None, None, OutputFormat.PARQUET),
        (None, "csv", OutputFormat.CSV),
        ("x.PARQUET", None, OutputFormat.PARQUET),
        ("x", None, OutputFormat.PARQUET),
        ("x.xlsx", "xlsx", OutputFormat.XLSX),
        ("folder/", None, OutputFormat.DATASET),
        ("spark.parquet", "dataset", OutputFormat.DATASET),  # a folder, as Spark names them
    ],
)
def test_formats_chosen(output: str | None, flag: str | None, fmt: OutputFormat) -> None:
    assert choose_format(output, flag) is fmt


def test_xlsx_is_refused_before_any_work_for_too_many_rows(tmp_path: Path) -> None:
    rows = EXCEL_MAX_ROWS + 1
    pl.DataFrame({"email": ["a@b.co"] * rows}).write_parquet(tmp_path / "big.parquet")
    assert clean(tmp_path, "out.xlsx", source="big.parquet") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.parquet", "cache"]


def test_xlsx_fails_cleanly_when_the_rows_were_not_known(tmp_path: Path) -> None:
    """A list whose rows could not be counted up front (quotes that do not pair up): the sink
    stops at the sheet's limit and leaves nothing behind."""
    paths = OutputPaths.for_output(tmp_path / "out.xlsx", fmt=OutputFormat.XLSX)
    with XlsxSink(paths, ["email"]) as sink:
        sink.write(pl.DataFrame({"email": ["a@b.co"] * 10}))
        with pytest.raises(UsageError, match=r"at most 1,048,575"):
            sink.write(pl.DataFrame({"email": ["a@b.co"] * (EXCEL_MAX_ROWS - 9)}))
    assert list(tmp_path.iterdir()) == []


def test_xlsx_refuses_a_cell_longer_than_excel_holds(tmp_path: Path) -> None:
    (tmp_path / "list.csv").write_text("Email,notes\na@b.co," + "x" * 40_000 + "\n")
    assert clean(tmp_path, "out.xlsx") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "list.csv"]


def test_output_columns_never_clash_with_the_inputs_ignoring_case(tmp_path: Path) -> None:
    assert clean(tmp_path, "out.parquet") == 0
    assert clean(tmp_path, "out.csv") == 0
    frame = pl.read_parquet(tmp_path / "out.parquet")
    folded = [c.casefold() for c in frame.columns]
    assert len(folded) == len(set(folded))
    assert frame.columns == [
        "Record ID",
        "First Name",
        "input_Email",
        "input_input_email",  # input_email would clash with input_Email, ignoring case
        "input_Verdict",
        *OUTPUT_COLUMNS,
    ]
    for source in (f"'{tmp_path / 'out.parquet'}'", f"read_csv('{tmp_path / 'out.csv'}')"):
        db = duckdb.connect()
        # DuckDB resolves names ignoring case: EMAIL must be ours (trimmed), not the input's.
        emails = db.sql(f"SELECT EMAIL, email, Verdict FROM {source}").fetchall()
        assert emails[0] == ("Ann@gmail.com", "Ann@gmail.com", "Risky")
        names = [d[0] for d in db.sql(f"SELECT * FROM {source}").description]
        assert names == frame.columns  # nothing renamed to EMAIL_1 on the way in
        db.close()
    assert frame.select(pl.col("EMAIL")).item(0, 0) == "Ann@gmail.com"


def test_the_schema_version_is_in_every_format(tmp_path: Path) -> None:
    assert clean(tmp_path, "out.parquet") == 0
    assert clean(tmp_path, "out.xlsx") == 0
    metadata = pq.read_schema(tmp_path / "out.parquet").metadata
    assert metadata[b"listclean.schema_version"] == SCHEMA_VERSION.encode()
    with zipfile.ZipFile(tmp_path / "out.xlsx") as book:
        custom = book.read("docProps/custom.xml").decode()
    assert "listclean.schema_version" in custom and f"<vt:lpwstr>{SCHEMA_VERSION}<" in custom


def test_parquet_keeps_statistics_where_they_can_prune(tmp_path: Path) -> None:
    """Numbers, flags and the few-valued text columns keep min/max statistics; free text (the
    addresses, the input's own columns) has none: in the list's order they prune nothing."""
    assert clean(tmp_path, "out.parquet") == 0
    group = pq.ParquetFile(tmp_path / "out.parquet").metadata.row_group(0)
    has = {
        group.column(i).path_in_schema: group.column(i).is_stats_set
        for i in range(group.num_columns)
    }
    assert all(has[name] for name in ("VERDICT", "REASON", "SCORE", "SAFE_TO_SEND", "DUPLICATE"))
    assert not any(has[name] for name in ("EMAIL", "LOCAL", "DOMAIN", "First Name"))
    # A reader still filters on the kept ones.
    whole = pl.read_parquet(tmp_path / "out.parquet")
    verdict = whole.get_column("VERDICT")[0]
    found = pl.scan_parquet(tmp_path / "out.parquet").filter(pl.col("VERDICT") == verdict)
    assert found.collect().equals(whole.filter(pl.col("VERDICT") == verdict))
