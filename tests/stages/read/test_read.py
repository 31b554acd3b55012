"""Reading lists: delimiters, encodings, email column detection, Parquet, rejects."""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.core.config import ReadConfig
from pipeline.core.environment import LIST_ENVIRONMENT
from pipeline.core.errors import InputError, UsageError
from pipeline.core.files import utf8
from pipeline.core.files.delimited import sniff_delimiter
from pipeline.stages.read import csv_source
from pipeline.stages.read.reader import Choice, find_email_column, open_list, read_list
from tests.conftest import REPO
from tests.exports import hubspot_report_workbook, salesforce_report


@pytest.mark.parametrize(
    ("sample", "delimiter"),
    [
        ("id,email\n1,a@b.com\n", ","),
        ("id;email\n1;a@b.com\n", ";"),
        ("id\temail\n1\ta@b.com\n", "\t"),
        ("id|email\n1|a@b.com\n", "|"),
        ('name;email\n"Smith, Ann";a@b.com\n"Lee, Bo";c@d.com\n', ";"),
        ("email\na@b.com\n", ","),
        ("", ","),
    ],
)
def test_sniff_delimiter(sample: str, delimiter: str) -> None:
    assert sniff_delimiter(sample) == delimiter


@pytest.mark.parametrize(
    ("columns", "found"),
    [
        (["id", "Email"], "Email"),
        (["id", "E-Mail"], "E-Mail"),
        (["id", "email_address"], "email_address"),
        (["id", "Email Address"], "Email Address"),
        (["id", "MAIL"], "MAIL"),
        (["mail", "email"], "email"),  # "email" outranks "mail"
    ],
)
def test_email_column_is_found_by_name(columns: list[str], found: str) -> None:
    assert find_email_column(columns, None, Path("x.csv")) == found


def test_named_email_column_exact_then_case_insensitive() -> None:
    assert find_email_column(["Contact", "contact"], "contact", Path("x.csv")) == "contact"
    assert find_email_column(["Contact"], "CONTACT", Path("x.csv")) == "Contact"
    with pytest.raises(InputError, match=r"no column named 'nope'.*'Contact'"):
        find_email_column(["Contact"], "nope", Path("x.csv"))


def test_utf8_bom_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffemail,name\nä@b.de,Jürgen\n".encode())
    result = read_list(path, tmp_path)
    assert result.reader.email.name == "email"  # kept as input_email beside our EMAIL
    assert result.frame.columns == ["input_email", "name"]
    assert result.frame.row(0) == ("ä@b.de", "Jürgen")
    assert result.reader.warnings == ()


def test_latin1_bytes_fall_back_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "latin.csv"
    path.write_bytes(b"email;name\nx@y.fr;Fran\xe7ois\n")
    result = read_list(path, tmp_path)
    assert result.frame.row(0) == ("x@y.fr", "François")
    assert result.reader.encoding == "cp1252"
    warning = result.reader.warnings[0]
    assert "not valid UTF-8" in warning and "offset 22" in warning


def test_values_are_kept_as_written(tmp_path: Path) -> None:
    path = tmp_path / "zip.csv"
    path.write_text("email,zip,amount\na@b.com,01234,1.50\n")
    assert read_list(path, tmp_path).frame.row(0) == ("a@b.com", "01234", "1.50")


def test_short_rows_are_padded_and_long_rows_rejected(tmp_path: Path) -> None:
    path = tmp_path / "ragged.csv"
    path.write_text('email,a,b\nx@y.com,1,2\nz@y.com\n"multi\nline@y.com",1,2,3\nw@y.com,1,2\n')
    result = read_list(path, tmp_path)
    assert result.frame.get_column("input_email").to_list() == ["x@y.com", "z@y.com", "w@y.com"]
    assert result.frame.row(1) == ("z@y.com", None, None)
    assert result.rejects.rows() == [
        # The raw text as the file has it, quotes included, so nothing is lost.
        (4, "row has 4 fields but the header has 3", '"multi\nline@y.com",1,2,3')
    ]


def test_parquet_is_recognised_by_content_and_keeps_types(tmp_path: Path) -> None:
    path = tmp_path / "list.data"  # no .parquet suffix on purpose
    pl.DataFrame({"id": [1, 2], "Email": ["a@b.com", None]}).write_parquet(path)
    result = read_list(path, tmp_path)
    assert result.reader.source_format == "parquet"
    assert result.frame.schema["id"] == pl.Int64
    assert result.reader.email_column == "input_Email"  # beside our EMAIL, ignoring case


def test_truncated_parquet_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.parquet"
    pl.DataFrame({"email": ["a@b.com"] * 100}).write_parquet(path)
    path.write_bytes(path.read_bytes()[:60])
    with pytest.raises(InputError, match=r"Cannot read .* as Parquet"):
        read_list(path, tmp_path)


def test_empty_file_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(InputError, match="is empty"):
        read_list(path, tmp_path)


def test_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match="is a directory that holds no Parquet file"
    ):  # a folder is a dataset
        read_list(tmp_path, tmp_path)


def test_two_parquet_columns_of_one_name_are_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "twice.parquet"
    table = pa.table([pa.array(["a@b.com"]), pa.array(["c@d.com"])], names=["email", "email"])
    pq.write_table(table, path)
    with pytest.raises(InputError, match=r"more than one column named 'email'.*Rename"):
        read_list(path, tmp_path)


LONG_FIELDS = ReadConfig(max_field_bytes=100)


def test_a_record_with_a_long_field_is_rejected_in_its_place(tmp_path: Path) -> None:
    """The record goes to the rejects with its line and its first bytes; the lines after it
    keep their numbers, and rows in = rows out + rows rejected."""
    path = tmp_path / "list.csv"
    quoted = '"' + "\n".join(["x" * 60] * 4) + '"'  # 247 bytes over four lines
    path.write_text(
        f"name,email\nAnn,a@b.com\n{quoted},b@b.com\nCat,c@b.com,extra\n\n"
        f"Dan,{'d' * 150}@b.com\nEve,e@b.com\n"
    )
    result = read_list(path, tmp_path, choice=Choice(limits=LONG_FIELDS))
    assert result.frame.get_column("input_email").to_list() == ["a@b.com", "e@b.com"]
    reasons = [(line, reason) for line, reason, _ in result.rejects.rows()]
    assert reasons == [
        (3, "field_too_long"),
        (7, "row has 3 fields but the header has 2"),
        (8, "empty_row"),
        (9, "field_too_long"),
    ]
    assert result.rejects.get_column("raw")[0] == quoted + ",b@b.com"
    assert result.reader.expected_rows == result.frame.height + result.rejects.height


def test_a_long_field_in_an_archive_member(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "list.zip", "w") as archive:
        archive.writestr("a.csv", "email\na@b.com\n")
        archive.writestr("b.csv", f"email\n{'x' * 200}@b.com\nc@b.com\n")
    result = read_list(tmp_path / "list.zip", tmp_path, choice=Choice(limits=LONG_FIELDS))
    assert result.frame.get_column("input_email").to_list() == ["a@b.com", "c@b.com"]
    assert result.rejects.select("line", "reason", "file").rows() == [
        (2, "field_too_long", "b.csv")
    ]


def test_a_header_with_a_long_field_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_text(f"email,{'n' * 200}\na@b.com,x\n")
    with pytest.raises(InputError, match=r"header row .* longer than read\.max_field_bytes"):
        read_list(path, tmp_path, choice=Choice(limits=LONG_FIELDS))


def test_a_count_left_behind_stops_at_its_next_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The records are counted on a thread of their own while the long fields are looked for;
    when that fails (or a signal stops the run), the count stops at its next chunk instead of
    reading the rest of the file. A pipe stands for the file: the count cannot have read what
    is written to it after the block was left."""
    monkeypatch.setattr(utf8, "CHUNK", 64)
    pipe = tmp_path / "list.csv"
    os.mkfifo(pipe)
    line = b"x" * 31 + b"\n"  # two lines a chunk
    writer = None
    with pytest.raises(InputError), csv_source._counting(pipe) as counted:
        writer = pipe.open("wb")  # waits for the count to open the pipe
        writer.write(line * 4)
        writer.flush()
        raise InputError("the header is too long")
    assert writer is not None
    with writer:  # written after the block was left: never counted
        writer.write(line * 100)
    records = counted()
    assert records is not None and records <= 4


def test_the_exact_reader_reads_a_file_as_the_fast_one_does(tmp_path: Path) -> None:
    """The same records through both readers give the same frame: empty fields null, quoted
    fields with delimiters, quotes and line ends kept, short rows padded, blank text kept."""
    path = tmp_path / "list.csv"
    rng = random.Random(3)
    pieces = ["", " ", "a", "é", '"q, ""x""\nline"', "x,y", "ann@example.org"]
    lines = ["email,name,note"]
    for i in range(500):
        row = [rng.choice(pieces) for _ in range(3)]
        row[0] = row[0] if row[0].strip() else f"p{i}@example.org"  # no row blank throughout
        lines.append(",".join(c if c.startswith('"') or "," not in c else f'"{c}"' for c in row))
    lines.append("short@example.org")  # fewer fields than the header: padded
    path.write_text("\n".join(lines) + "\n")
    reader = open_list(str(path), path, tmp_path, "email")
    fast = pl.concat([b.frame for b in reader.batches(64)])
    reader.read_exactly()
    exact = pl.concat([b.frame for b in reader.batches(64)])
    assert exact.height == fast.height == 501
    assert exact.equals(fast)
    assert exact.get_column("note").null_count() > 0


def _peak_rss_mib(tmp_path: Path, source: Path) -> float:
    """The peak memory of ``listclean clean`` over *source*, in a process of its own."""
    script = (
        "import resource, sys\n"
        "from pipeline.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "print(code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    out = tmp_path / f"{source.stem}.clean.parquet"
    args = [str(source), "-o", str(out), "--offline", "--quiet"]
    done = subprocess.run(
        [sys.executable, "-c", script, "clean", *args, "--cache-dir", str(tmp_path / "c")],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    code, peak = done.stdout.split()
    assert code == "0", done.stderr
    return float(peak)


def test_a_long_field_is_never_held_in_memory(tmp_path: Path) -> None:
    """An 80 MB quoted field over a million lines, over the default 16 MiB limit: the run
    needs a few of its 16 MiB reading buffers more than for the list without it, never the
    field (before: 1.7 GB for a 200 MB one)."""
    rows = "".join(f"N{i},user{i}@gmail.com\n" for i in range(2_000))
    (tmp_path / "short.csv").write_text(f"name,email\n{rows}")
    with (tmp_path / "long.csv").open("w") as out:
        out.write(f'name,email\n{rows}"')
        for _ in range(80):
            out.write(("x" * 79 + "\n") * 13_108)
        out.write(f'",big@gmail.com\n{rows}')
    short = _peak_rss_mib(tmp_path, tmp_path / "short.csv")
    long = _peak_rss_mib(tmp_path, tmp_path / "long.csv")
    assert long < short + 64, (short, long)


def test_a_salesforce_report_is_read_below_its_title(tmp_path: Path) -> None:
    path = tmp_path / "report.csv"
    emails = salesforce_report(path, rows=6)
    result = read_list(path, tmp_path)
    assert result.reader.header_row == 5
    assert result.frame.columns[:4] == ["First Name", "Last Name", "Title", "input_Email"]
    assert result.frame.get_column("input_Email").to_list() == emails
    rejects = result.rejects.select("line", "reason").rows()
    assert rejects == [
        (1, "title_row"),
        (2, "title_row"),
        (3, "title_row"),
        (4, "empty_row"),
        (12, "empty_row"),
        (13, "footer"),
        (14, "footer"),
        (15, "footer"),
    ]
    assert result.rejects.row(0)[2] == '"Contacts & Accounts"'  # as the file spells it


def test_title_rows_keep_the_fast_reader(tmp_path: Path) -> None:
    """Without footers or empty rows below the header, the rows are read by the fast reader,
    the title rows given with its first batch."""
    path = tmp_path / "report.csv"
    path.write_text("Newsletter signups\nExported 2026-11-26\n\nname,email\nAnn,a@b.com\n")
    spill = tmp_path / "spill"
    spill.mkdir()
    reader = open_list(str(path), path, spill, None)
    batches = list(reader.batches(10))
    assert not reader._source.exact  # type: ignore[attr-defined]
    assert batches[0].frame.rows() == [("Ann", "a@b.com")]
    assert batches[0].rejects.get_column("reason").to_list() == ["title_row"] * 2 + ["empty_row"]
    assert reader.expected_rows == 1


def test_header_row_names_the_header(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_text("Signups\nname,email\nAnn,a@b.com\n")
    result = read_list(path, tmp_path, choice=Choice(header_row=2))
    assert result.frame.rows() == [("Ann", "a@b.com")]
    assert result.rejects.rows() == [(1, "title_row", "Signups")]
    with pytest.raises(UsageError, match="--header-row 9: no record"):
        read_list(path, tmp_path, choice=Choice(header_row=9))
    parquet = tmp_path / "list.parquet"
    pl.DataFrame({"email": ["a@b.com"]}).write_parquet(parquet)
    with pytest.raises(UsageError, match="Parquet"):
        read_list(parquet, tmp_path, choice=Choice(header_row=2))


def test_a_hubspot_report_workbook_keeps_its_types(tmp_path: Path) -> None:
    path = tmp_path / "report.xlsx"
    rows = hubspot_report_workbook(path)
    result = read_list(path, tmp_path)
    assert result.reader.header_row == 5  # the sheet's row
    frame = result.frame
    assert frame.schema["Record ID"] == pl.Int64
    assert frame.schema["Create Date"] == pl.Date
    assert frame.schema["Last Activity Date"] == pl.Datetime("us")
    assert frame.schema["Lead Score"] == pl.Float64
    assert frame.schema["Unsubscribed from all email"] == pl.Boolean
    assert frame.get_column("Record ID").to_list() == [r[0] for r in rows]
    assert frame.get_column("Create Date").to_list() == [r[3].date() for r in rows]  # type: ignore[attr-defined]
    assert frame.get_column("Last Activity Date").to_list() == [r[4] for r in rows]
    assert result.rejects.select("line", "reason").rows() == [
        (1, "title_row"),
        (2, "title_row"),
        (3, "title_row"),
        (4, "empty_row"),
    ]
    again = read_list(path, tmp_path, choice=Choice(header_row=5))
    assert again.frame.equals(frame)


def test_a_second_read_of_a_clean_file_does_not_look_for_fillers_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run reads a list twice: once the fast reader has read the whole file and found no
    empty row or footer, the second read gives the same batches without looking for them
    (the input pin refuses a file changed in between)."""
    path = tmp_path / "list.csv"
    path.write_text("name,email\n" + "".join(f"P{i},p{i}@example.com\n" for i in range(25)))
    spill = tmp_path / "spill"
    spill.mkdir()
    looked: list[int] = []
    real = csv_source.filler_kind

    def filler_kind(frame: pl.DataFrame) -> pl.Series:
        looked.append(frame.height)
        return real(frame)

    monkeypatch.setattr(csv_source, "filler_kind", filler_kind)
    reader = open_list(str(path), path, spill, None)
    looked.clear()  # opening it looked at its first rows
    first = [batch.frame for batch in reader.batches(10)]
    assert looked == [10, 10, 5]
    second = [batch.frame for batch in reader.batches(10)]
    assert looked == [10, 10, 5]
    assert [f.rows() for f in first] == [f.rows() for f in second]


def test_a_second_read_drops_the_rows_that_are_not_records_the_first_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's second pass reads a long list again: the rows the first read found not to be
    records (empty rows, footers) are dropped by their numbers, and their rejects given again
    with their lines and text, without looking for them or reading their text again. The
    second read's batches are cut elsewhere than the first's."""
    lines = ["name,email"]
    for i in range(40):
        lines.append(f"P{i},p{i}@example.com")
        if i % 7 == 3:
            lines.append("" if i % 2 else " , ")
    lines.append("Grand Totals (40 records),")
    path = tmp_path / "report.csv"
    path.write_text("\n".join(lines) + "\n")
    spill = tmp_path / "spill"
    spill.mkdir()
    source = open_list(str(path), path, spill, None)._source  # type: ignore[attr-defined]
    exact = open_list(str(path), path, spill, None)._source  # type: ignore[attr-defined]
    exact.exact = True
    wanted = list(exact.batches(50))
    rows = pl.concat([frame for frame, _ in wanted]).rows()
    rejected = pl.concat([rejects for _, rejects in wanted]).rows()
    assert len(rows) == 40 and len(rejected) == 7
    looked: list[int] = []
    real_kind, real_lines = csv_source.filler_kind, csv_source.lines_of

    def filler_kind(frame: pl.DataFrame) -> pl.Series:
        looked.append(frame.height)
        return real_kind(frame)

    def lines_of(*args: Any) -> Any:
        looked.append(-1)
        return real_lines(*args)

    monkeypatch.setattr(csv_source, "filler_kind", filler_kind)
    monkeypatch.setattr(csv_source, "lines_of", lines_of)
    for size in (9, 4, 50, 1):
        read = list(source.batches(size))
        assert pl.concat([frame for frame, _ in read]).rows() == rows
        assert pl.concat([rejects for _, rejects in read]).rows() == rejected
        if size == 9:
            assert looked and looked[-1] == -1  # looked for, then their text read
            looked.clear()
    assert looked == []  # the later reads did neither
    assert not source.exact


# Files with rows that are not records (empty rows, footers), read by the fast reader when
# every record is one line, and by the exact reader when a record spans lines or a lone CR
# ends one: either way, what the exact reader alone makes of them.
_FILLED = {  # the text, and whether the fast reader reads it
    "trailing blank line": ("email,name\na@b.com,Ann\nc@d.com,Cy\n\n", True),
    "blank lines and spaces": ("email,name\n\na@b.com,Ann\n  \n,\nc@d.com,Cy\n\n\n", True),
    "crlf and a footer": ("email,name\r\na@b.com,Ann\r\n\r\nc@d.com,Cy\r\nTotal: 2,\r\n", True),
    "no line end at the end": ("email,name\na@b.com,Ann\n\nc@d.com,Cy", True),
    "titles above the header": ("Report\n\nemail,name\na@b.com,Ann\n\nc@d.com,Cy\n", True),
    "a blank last line": ("email,name\na@b.com,Ann\n\n   ", True),
    "a quoted line end": ('email,name\na@b.com,"Ann\nLee"\n\nc@d.com,Cy\n', False),
    "a lone CR": ("email,name\na@b.com,Ann\rc@d.com,Cy\n\n", False),
}


@pytest.mark.parametrize(("text", "fast"), list(_FILLED.values()), ids=list(_FILLED))
def test_rows_that_are_not_records_are_rejected_as_the_exact_reader_does(
    tmp_path: Path, text: str, fast: bool
) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(text.encode())
    exact = open_list(str(path), path, tmp_path, "email")
    exact.read_exactly()
    expected = list(exact.batches(2))
    found = read_list(path, tmp_path, "email")
    assert found.reader._source.exact is not fast  # type: ignore[attr-defined]
    frames = [batch.frame for batch in expected]
    assert found.frame.equals(pl.concat(frames))
    rejects = pl.concat([batch.rejects for batch in expected])
    assert found.rejects.rows() == rejects.rows() and rejects.height


def test_a_file_with_many_empty_rows_is_read_by_the_exact_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fast reader holds the rows that are not records until the end of its read: past
    a bound (100,000; 3 here), the exact reader reads the file instead, batch by batch."""
    monkeypatch.setattr(csv_source, "_MOST_FILLERS", 3)
    path = tmp_path / "list.csv"
    path.write_text("email\n" + "".join(f"p{i}@example.com\n\n" for i in range(10)))
    found = read_list(path, tmp_path, "email")
    assert found.reader._source.exact  # type: ignore[attr-defined]
    assert found.frame.height == 10
    assert found.rejects.get_column("line").to_list() == list(range(3, 23, 2))
    monkeypatch.setattr(csv_source, "_MOST_FILLERS", 10)
    again = read_list(path, tmp_path, "email")
    assert not again.reader._source.exact  # type: ignore[attr-defined]
    assert again.rejects.rows() == found.rejects.rows()


def test_a_trailing_blank_line_keeps_the_fast_reader(tmp_path: Path) -> None:
    """The commonest row that is not a record, an empty last line, costs no exact read."""
    path = tmp_path / "list.csv"
    path.write_text("email\n" + "".join(f"p{i}@example.com\n" for i in range(5_000)) + "\n")
    found = read_list(path, tmp_path, "email")
    assert not found.reader._source.exact  # type: ignore[attr-defined]
    assert found.frame.height == 5_000
    assert found.rejects.rows() == [(5_002, "empty_row", "")]


_CHUNKED_READ = """
import json, sys
from pathlib import Path
from pipeline.stages.read.reader import open_list
path = Path(sys.argv[1])
reader = open_list(str(path), path, path.parent / "spill", None)
rows = [row for batch in reader.batches(50_000) for row in batch.frame.rows()]
print(json.dumps({"exact": reader._source.exact, "rows": rows}))
"""


def test_quoted_line_ends_across_the_readers_chunks(tmp_path: Path) -> None:
    """The list commands have polars' CSV reader cut 4 MiB at a time (LIST_ENVIRONMENT): a
    16 MiB list whose quoted fields hold line ends, delimiters and quotes, wherever the cuts
    fall, is read whole by the fast reader, every field as Python's csv module reads it."""
    rng = random.Random(34)
    pieces = ["a", "b c", ",", "\n", '""', "\r\n", "é", "x" * 40]
    written, size = [("id", "note", "email")], 0
    while size < 16 << 20:
        note = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30))).replace('""', '"')
        written.append((str(len(written)), note, f"u{len(written)}@x.com"))
        size += len(note) + 30
    path = tmp_path / "list.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        csv.writer(out, lineterminator="\n").writerows(written)
    (tmp_path / "spill").mkdir()
    env = {**os.environ, **LIST_ENVIRONMENT, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _CHUNKED_READ, str(path)],
        capture_output=True, text=True, check=True, env=env,
    )  # fmt: skip
    read = json.loads(done.stdout)
    with path.open(newline="", encoding="utf-8") as handle:
        expected = [[cell or None for cell in row] for row in list(csv.reader(handle))[1:]]
    assert read["exact"] is False
    assert read["rows"] == expected
