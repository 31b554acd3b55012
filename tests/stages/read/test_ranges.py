"""A delimited-text list read in byte ranges gives the local reader's rows and rejects, with the
same line numbers, wherever the cuts fall: inside quoted newlines, between the CR and LF of a
line end, on CR-only line ends, after a BOM, in a code page. Each range is read by the real
range functions; the tasks run one after another here (the Dask tests run them on workers)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.core.config import ListsConfig
from pipeline.core.domains.step import resolvable_domains
from pipeline.core.errors import InputError
from pipeline.core.files.encodings import Decoding
from pipeline.stages.dask.reading import Cluster, Planned, plan, read_ranges
from pipeline.stages.dask.shuffle import NO_FLAGS, ROW, mark_part
from pipeline.stages.dask.tasks import NARROW, part_domains, restored, scan_batch, slimmed
from pipeline.stages.job import CleanJob
from pipeline.stages.read.email_column import Further
from pipeline.stages.read.reader import Choice, read_list
from tests.exports import salesforce_report


class Done:
    """A task already run: what a future gives."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return self.value


def submit(function: Callable[..., Any], *args: Any) -> Done:
    """*function* run now on *args*, a future among them given as its value (as Dask does)."""
    return Done(function(*(a.value if isinstance(a, Done) else a for a in args)))


def gather(futures: list[Done]) -> list[Any]:
    return [f.result() for f in futures]


def in_ranges(
    path: Path, tmp: Path, target: int, encoding: str = ""
) -> tuple[pl.DataFrame, pl.DataFrame, Planned] | None:
    """The list at *path* read in ranges of *target* bytes: its rows and rejects, in order;
    None when the ranges leave it to the reader in order."""
    job = CleanJob(path, tmp / "out.parquet", decoding=Decoding(encoding))
    spill = tmp / f"spill-{target}"
    spill.mkdir(exist_ok=True)
    planned = plan(job, spill, submit, job.memory_mb)
    if planned.layout is None:
        return None
    planned = Planned(planned.reader, planned.layout, target)
    ranged = read_ranges(Cluster(submit, gather, gather, lambda _: None), planned, ListsConfig())
    if ranged is None:
        return None
    held = [b.result() for b in ranged.batches]
    # A part is held without the list's own columns; the write reads its range again.
    assert all(b.originals.is_empty() and b.again is not None for b in held)
    frames = [restored(b).originals for b in held]
    rejects = [r.result() for r in ranged.rejects]
    schema = planned.reader.schema
    frame = pl.concat(frames) if frames else pl.DataFrame(schema=schema)
    empty = pl.DataFrame(schema=planned.reader.reject_schema)
    return frame, pl.concat(rejects) if rejects else empty, planned


def local(path: Path, tmp: Path, encoding: str = "") -> tuple[pl.DataFrame, pl.DataFrame]:
    spill = tmp / "local"
    spill.mkdir(exist_ok=True)
    whole = read_list(path, spill, choice=Choice(decoding=Decoding(encoding)))
    return whole.frame, whole.rejects


def awkward(rng: random.Random, rows: int, end: str, messy: bool = True) -> str:
    """A list with quoted newlines (of the file's own line end and others), quotes, quoted
    empty fields (which the fast reader reads as "" and the exact one as null), repeated
    addresses and non-ASCII names; *messy*: with empty, short and ragged rows too, and a
    report's footer (the exact reader's)."""
    lines = [f"id,name,email,note{end}"]
    for i in range(rows):
        kind = rng.random()
        name = rng.choice(["Ann", "Zoë", "José", "Ørjan", "Brontë", "Smith, Bo"])
        email = f"user{rng.randrange(rows // 2)}@{rng.choice(['gmail.com', 'acme.io'])}"
        if kind < 0.1:
            note = f'"line one{rng.choice([chr(10), chr(13) + chr(10), chr(13)])}line two"'
        elif kind < 0.15:
            note = '"she said ""hi"", twice"'
        elif kind < 0.16:
            note = '""'
        elif not messy:
            note = ""
        elif kind < 0.18:
            lines.append(f"{end}")  # an empty row
            continue
        elif kind < 0.2:
            lines.append(f"{i},{name},{email},x,extra{end}")  # more fields than the header
            continue
        elif kind < 0.22:
            lines.append(f"{i},{name}{end}")  # fewer: padded
            continue
        else:
            note = ""
        quoted = f'"{name}"' if "," in name else name
        lines.append(f"{i},{quoted},{email},{note}{end}")
    if messy:
        lines.append(f'"Total: {rows} records"{end}')
    return "".join(lines)


@pytest.mark.parametrize("messy", [True, False])
@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("target", [7, 61, 500, 1 << 20])
def test_ranges_give_the_local_rows_and_rejects(
    tmp_path: Path, end: str, target: int, messy: bool
) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(awkward(random.Random(target), 300, end, messy).encode())
    got = in_ranges(path, tmp_path, target)
    assert got is not None
    frame, rejects, _ = got
    want_frame, want_rejects = local(path, tmp_path)
    assert frame.equals(want_frame)
    assert rejects.equals(want_rejects)


@pytest.mark.parametrize("target", [5, 40, 333])
def test_a_bom_and_a_code_page(tmp_path: Path, target: int) -> None:
    text = awkward(random.Random(3), 200, "\r\n")
    for name, data, encoding in [
        ("bom.csv", b"\xef\xbb\xbf" + text.encode(), ""),
        ("cp1252.csv", text.replace("Ø", "O").encode("cp1252"), ""),
        ("said.csv", text.replace("Ø", "O").encode("cp1252"), "cp1252"),
    ]:
        path = tmp_path / name
        path.write_bytes(data)
        got = in_ranges(path, tmp_path, target, encoding)
        assert got is not None, name
        frame, rejects, planned = got
        want_frame, want_rejects = local(path, tmp_path, encoding)
        assert frame.equals(want_frame), name
        assert rejects.equals(want_rejects), name
        spill = tmp_path / "again"
        spill.mkdir(exist_ok=True)
        whole = read_list(path, spill, choice=Choice(decoding=Decoding(encoding)))
        assert planned.reader.encoding == whole.reader.encoding
        assert planned.reader.warnings == whole.reader.warnings


def test_what_the_ranges_cannot_settle_is_read_in_order(tmp_path: Path) -> None:
    cases = {
        "unclosed.csv": b'id,email\n1,a@b.com\n2,"c@d.com\n3,e@f.com\n',
        "stray.csv": b'id,email\n1,ab"c@d.com\n2,e"f@g.com\n' + b"3,x@y.com\n" * 20,
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert in_ranges(path, tmp_path, 9) is None, name
    # A code page's first byte beyond the head the driver reads, which looked like UTF-8.
    path = tmp_path / "late.csv"
    path.write_bytes(b"id,email\n" + b"1,a@b.com\n" * 450_000 + b"2,caf\xe9@b.com\n")
    assert in_ranges(path, tmp_path, 1 << 20) is None


@pytest.mark.parametrize("before", [30, 450_000])  # in the head the driver reads, or not
def test_a_byte_the_said_code_page_lacks_is_the_local_error(tmp_path: Path, before: int) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(b"id,email\n" + b"1,a@b.com\n" * before + b"2,\x81@b.com\n")
    with pytest.raises(InputError) as local_error:
        local(path, tmp_path, "cp1252")
    offset = 9 + 10 * before + 2
    assert f"the byte 0x81 at offset {offset} " in str(local_error.value)
    with pytest.raises(InputError) as ranged_error:
        in_ranges(path, tmp_path, 1 << 20, "cp1252")
    assert str(ranged_error.value) == str(local_error.value)


def test_packed_and_utf16_lists_are_not_cut(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes("id,email\n1,a@b.com\n".encode("utf-16"))
    assert in_ranges(path, tmp_path, 5) is None


@pytest.mark.parametrize("target", [7, 90, 1 << 20])
@pytest.mark.parametrize("header_row", [None, 5])
def test_a_report_with_title_rows(tmp_path: Path, target: int, header_row: int | None) -> None:
    """A Salesforce report: its title rows are read from the head the driver reads, and are
    the local reader's rejects; the ranges start below the header, on the local line numbers."""
    path = tmp_path / "report.csv"
    salesforce_report(path, rows=40)
    job = CleanJob(path, tmp_path / "out.parquet", header_row=header_row)
    planned = plan(job, tmp_path, submit, job.memory_mb)
    assert planned.layout is not None
    assert planned.layout.header.startswith(b'"First Name"')
    planned = Planned(planned.reader, planned.layout, target)
    ranged = read_ranges(Cluster(submit, gather, gather, lambda _: None), planned, ListsConfig())
    assert ranged is not None
    frame = pl.concat([restored(b.result()).originals for b in ranged.batches])
    rejects = pl.concat([ranged.titles, *(r.result() for r in ranged.rejects)])
    whole = read_list(path, tmp_path, choice=Choice(header_row=header_row))
    assert frame.equals(whole.frame)
    assert rejects.equals(whole.rejects)
    assert rejects.get_column("reason").to_list()[:4] == ["title_row"] * 3 + ["empty_row"]
    assert planned.reader.header_row == whole.reader.header_row == 5


def test_a_part_read_again_to_other_rows_is_a_changed_input(tmp_path: Path) -> None:
    """A list rewritten between a range's first reading and the write: exit 2 with the
    words of a changed input, never rows paired with another version's answers."""
    path = tmp_path / "list.csv"
    path.write_bytes(awkward(random.Random(7), 300, "\n", messy=False).encode())
    got = in_ranges(path, tmp_path, 2_000)
    assert got is not None
    planned = got[2]
    job = CleanJob(path, tmp_path / "out.parquet")
    assert planned.layout is not None and job
    ranged = read_ranges(Cluster(submit, gather, gather, lambda _: None), planned, ListsConfig())
    assert ranged is not None
    part = ranged.batches[0].result()
    path.write_bytes(path.read_bytes().replace(b"\n", b"\n\n", 40))  # more records there
    with pytest.raises(InputError, match="changed while it was read"):
        restored(part)


def test_a_part_is_held_narrow_and_made_whole_for_the_write(tmp_path: Path) -> None:
    """From the read to its duplicates marked a part holds only the shuffle's columns and its
    domains, then only the shuffle's flags; the write's part is the one the read normalized,
    with DUPLICATE and CONSENT as the flags set them."""
    path = tmp_path / "list.csv"
    path.write_bytes(awkward(random.Random(11), 400, "\n", messy=True).encode())
    opened = plan(CleanJob(path, tmp_path / "out.parquet"), tmp_path, submit, 1024)
    assert opened.layout is not None
    planned = Planned(opened.reader, opened.layout, 3_000)
    ranged = read_ranges(Cluster(submit, gather, gather, lambda _: None), planned, ListsConfig())
    assert ranged is not None and len(ranged.batches) > 2
    first_row = 0
    for future in ranged.batches:
        part = future.result()
        assert part.work.columns == list(NARROW)
        rows = part.work.get_column(ROW)
        flags = pl.DataFrame(
            {ROW: rows.filter(rows % 3 == 0), "DUPLICATE": True, "_HELD": None},
            schema=NO_FLAGS.schema,
        ).with_columns(pl.when(pl.col(ROW) % 2 == 0).then(pl.lit("unsubscribed")).alias("_HELD"))
        slim = mark_part(part, [flags])
        assert slim.work.height == flags.height  # the flags alone, until the write
        whole = restored(slim)
        again = scan_batch(whole.originals, opened.layout.email_column, first_row, ListsConfig())
        assert whole.work.drop("DUPLICATE", "CONSENT").equals(again.work.drop("CONSENT"))
        duplicate = whole.work.get_column("DUPLICATE")
        assert duplicate.equals((again.work.get_column(ROW) % 3 == 0).alias("DUPLICATE"))
        consent = whole.work.get_column("CONSENT")
        held = (again.work.get_column(ROW) % 6 == 0).to_list()
        assert [c == "unsubscribed" for c in consent.to_list()] == held
        found = part_domains(part, Further(), ListsConfig()).to_list()
        assert found == resolvable_domains(again.work)
        assert slimmed(part).again.domains is None  # let go once taken
        first_row += part.work.height


def test_a_part_read_again_to_other_addresses_is_a_changed_input(tmp_path: Path) -> None:
    """The same number of records, another address among them: refused as a changed input,
    never one address's row with another's answers."""
    path = tmp_path / "list.csv"
    path.write_text("email,name\nann@gmail.com,Ann\nbob@yahoo.com,Bob\n")
    opened = plan(CleanJob(path, tmp_path / "out.parquet"), tmp_path, submit, 1024)
    assert opened.layout is not None
    ranged = read_ranges(Cluster(submit, gather, gather, lambda _: None), opened, ListsConfig())
    assert ranged is not None
    part = ranged.batches[0].result()
    path.write_text("email,name\nann@gmail.com,Ann\nbib@yahoo.com,Bob\n")
    with pytest.raises(InputError, match="changed while it was read"):
        restored(part)
