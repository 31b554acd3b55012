"""Packed lists unpack within the ``[read]`` limits (:mod:`pipeline.stages.read.unpack`): a
decompression bomb is refused as it expands, by the default settings, before it fills a disk."""

from __future__ import annotations

import bz2
import gzip
import io
import shutil
import zipfile
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
import xlsxwriter

from pipeline.cli import main
from pipeline.core.config import ReadConfig
from pipeline.core.errors import InputError
from pipeline.stages.read.reader import Choice, read_list
from pipeline.stages.read.unpack import RATIO_FLOOR

# 20 MiB of one byte: past the 16 MiB that the ratio spares, and packed a thousand times over.
BOMB = b"email\n" + b"0" * (20 << 20)
CSV = b"email,name\n" + b"".join(b"user%d@gmail.com,User %d\n" % (i, i) for i in range(500))
NO_LIMITS = ReadConfig(max_unpack_ratio=0, max_unpacked_bytes=0, max_unpack_disk_share=0)


def _zip(data: bytes) -> bytes:
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("list.csv", data)
    return sink.getvalue()


PACKERS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip": ("list.csv.gz", gzip.compress),
    "bzip2": ("list.csv.bz2", bz2.compress),
    "zstd": ("list.csv.zst", lambda data: pa.compress(data, "zstd", asbytes=True)),
    "zip": ("list.zip", _zip),
}


def _spill(tmp_path: Path) -> Path:
    spill = tmp_path / "spill"
    spill.mkdir(parents=True)
    return spill


@pytest.mark.parametrize("kind", list(PACKERS))
def test_a_bomb_is_refused_by_the_default_ratio(tmp_path: Path, kind: str) -> None:
    name, pack = PACKERS[kind]
    (tmp_path / name).write_bytes(pack(BOMB))
    spill = _spill(tmp_path)
    with pytest.raises(InputError) as refused:
        read_list(tmp_path / name, spill)
    message = str(refused.value)
    assert f"{tmp_path / name} expands beyond the limit: more than {RATIO_FLOOR:,} bytes" in message
    assert "raise read.max_unpack_ratio" in message
    assert "LISTCLEAN_READ_MAX_UNPACK_RATIO" in message
    assert "complete" not in message  # the file is whole: never blamed for being cut
    unpacked = sum(p.stat().st_size for p in spill.rglob("*") if p.is_file())
    assert unpacked <= RATIO_FLOOR


def test_the_bomb_is_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "list.csv.gz").write_bytes(gzip.compress(BOMB))
    args = ["clean", str(tmp_path / "list.csv.gz"), "-o", str(tmp_path / "out.parquet")]
    assert main([*args, "--offline", "--quiet", "--cache-dir", str(tmp_path / "c")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "expands beyond the limit" in line
    assert not (tmp_path / "out.parquet").exists()


def test_a_list_that_packs_well_below_the_floor_is_read(tmp_path: Path) -> None:
    """The ratio spares the first 16 MiB: 2.8 MB of one row repeated packs thousands of times
    over in bzip2, and is read."""
    packed = bz2.compress(b"email\n" + b"ann@gmail.com\n" * 200_000)
    (tmp_path / "list.csv.bz2").write_bytes(packed)
    assert read_list(tmp_path / "list.csv.bz2", _spill(tmp_path)).frame.height == 200_000


@pytest.mark.parametrize("kind", list(PACKERS))
def test_the_absolute_limit(tmp_path: Path, kind: str) -> None:
    name, pack = PACKERS[kind]
    (tmp_path / name).write_bytes(pack(CSV))
    limits = ReadConfig(max_unpack_ratio=0, max_unpacked_bytes=len(CSV) - 1)
    with pytest.raises(InputError, match=r"read\.max_unpacked_bytes\)\. Nothing more"):
        read_list(tmp_path / name, _spill(tmp_path), choice=Choice(limits=limits))
    limits = ReadConfig(max_unpack_ratio=0, max_unpacked_bytes=len(CSV))
    result = read_list(tmp_path / name, _spill(tmp_path / "again"), choice=Choice(limits=limits))
    assert result.frame.height == 500


def test_the_share_of_the_free_disk(tmp_path: Path) -> None:
    (tmp_path / "list.csv.gz").write_bytes(gzip.compress(CSV))
    free = shutil.disk_usage(tmp_path).free
    limits = ReadConfig(max_unpack_disk_share=(len(CSV) - 1) / free)
    with pytest.raises(InputError, match=r"read\.max_unpack_disk_share: 0% of the [\d,]+ bytes"):
        read_list(tmp_path / "list.csv.gz", _spill(tmp_path), choice=Choice(limits=limits))


def test_no_limits(tmp_path: Path) -> None:
    (tmp_path / "list.csv.zst").write_bytes(pa.compress(BOMB, "zstd", asbytes=True))
    result = read_list(tmp_path / "list.csv.zst", _spill(tmp_path), choice=Choice(limits=NO_LIMITS))
    assert result.reader.info.compression == "zstd"


def test_a_zip_is_refused_by_its_declared_sizes_before_unpacking(tmp_path: Path) -> None:
    (tmp_path / "list.zip").write_bytes(_zip(BOMB))
    spill = _spill(tmp_path)
    with pytest.raises(InputError, match=r"zip archive .* expands beyond the limit"):
        read_list(tmp_path / "list.zip", spill)
    assert not (spill / "members").exists()


def test_a_workbook_is_refused_by_its_declared_sizes(tmp_path: Path) -> None:
    """An xlsx is a zip of XML parts that openpyxl unpacks as it reads: the sizes they declare
    (zipfile unpacks no more) are held against the limits before it opens the workbook."""
    path = tmp_path / "list.xlsx"
    book = xlsxwriter.Workbook(path)
    sheet = book.add_worksheet()
    for row, value in enumerate(["email", "ann@gmail.com"]):
        sheet.write(row, 0, value)
    book.close()
    assert read_list(path, _spill(tmp_path / "first")).frame.height == 1
    with zipfile.ZipFile(path, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/media/padding.bin", BOMB)
    with pytest.raises(InputError, match=r"Excel workbook .* expands beyond the limit"):
        read_list(path, _spill(tmp_path))
