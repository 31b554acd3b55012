"""What clean() takes (a path, polars, pandas, Arrow, a LazyFrame, addresses) and the same kind
given back, against the sample world's DNS server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

from pipeline import clean
from pipeline.core.config import Config
from pipeline.core.errors import UsageError
from pipeline.core.schema import OUTPUT_COLUMNS

ROWS = {"id": [1, 2, 3], "email": ["John.Doe@gmial.com", "ann@gmail.com", "not an address"]}


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (pl.DataFrame(ROWS), pl.DataFrame),
        (pl.LazyFrame(ROWS), pl.LazyFrame),
        (pd.DataFrame(ROWS), pd.DataFrame),
        (pa.table(ROWS), pa.Table),
        (pa.RecordBatch.from_pydict(ROWS), pa.Table),
    ],
    ids=["polars", "lazy", "pandas", "arrow", "record-batch"],
)
def test_each_frame_kind_is_cleaned_and_given_back_as_it_came(
    config: Config, data: Any, kind: type
) -> None:
    result = clean(data, config=config)
    assert result.frame.columns == ["id", "input_email", *OUTPUT_COLUMNS]
    assert result.frame.get_column("VERDICT").to_list() == ["Risky", "Valid", "Invalid"]
    given = result.as_given()
    assert isinstance(given, kind)
    back = _polars(given)
    assert back.get_column("SUGGESTION").to_list()[0] == "John.Doe@gmail.com"
    assert back.get_column("id").to_list() == [1, 2, 3]


def _polars(given: Any) -> pl.DataFrame:
    if isinstance(given, pl.LazyFrame):
        return given.collect()
    if isinstance(given, pd.DataFrame):
        return pl.from_pandas(given)
    return pl.DataFrame(given)


def test_a_pandas_frame_keeps_its_types_and_a_meaningful_index(config: Config) -> None:
    frame = pd.DataFrame({"email": ["ann@gmail.com"], "joined": pd.to_datetime(["2024-01-02"])})
    frame.index = pd.Index(["row-a"], name="key")
    given = clean(frame, config=config).as_given()
    assert list(given.columns[:3]) == ["input_email", "joined", "key"]
    assert str(given["joined"].dtype).startswith("datetime64")


def test_an_iterable_of_addresses_gives_one_dict_per_address(config: Config) -> None:
    addresses = (a for a in ["ann@gmail.com", "John.Doe@gmial.com", None, "nope"])
    result = clean(addresses, config=config)
    rows = result.as_given()
    assert [r["address"] for r in rows] == ["ann@gmail.com", "John.Doe@gmial.com", None, "nope"]
    assert [r["VERDICT"] for r in rows] == ["Valid", "Risky", "Invalid", "Invalid"]
    assert result.summary.input == "addresses" and result.summary.rows_in == 4


def test_a_path_is_read_as_the_command_line_reads_it(config: Config, tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_text("email\nann@gmail.com\n")
    result = clean(str(path), config=config)
    assert isinstance(result.as_given(), pl.DataFrame) and result.frame.height == 1


@pytest.mark.parametrize(
    ("data", "named"),
    [(42, "got 42 (int)"), (b"ann@gmail.com", "(bytes)"), ({"email": 1}, "(dict)")],
)
def test_what_is_no_list_is_refused_naming_the_keyword(data: object, named: str) -> None:
    with pytest.raises(UsageError, match=r"clean\(data=\.\.\.\)") as caught:
        clean(data)
    assert named in str(caught.value)


def test_an_iterable_must_hold_strings() -> None:
    with pytest.raises(UsageError, match=r"item 1 is a int \(7\)"):
        clean(["ann@gmail.com", 7])


def test_the_report_is_written_from_python(config: Config, tmp_path: Path) -> None:
    result = clean(pl.DataFrame(ROWS), config=config)
    page = result.write_report(tmp_path / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "Risky" in page
