"""Lists that come packed: compressed (gzip, bzip2, Zstandard) or in a zip archive.

Each is unpacked once, streamed, into the run's spill folder, and the copy is read like any
list (a compressed Parquet file too). Memory stays bounded by the copy buffer; the disk holds
the unpacked copy for the run's length, as it holds a transcoded CSV. gzip and bzip2 come from
the standard library (both read concatenated members, as ``gunzip`` and ``bunzip2`` do);
Zstandard from pyarrow's codec, which the Parquet reader already needs.

A zip archive's lists are its CSV members (``.csv``, ``.tsv``, ``.txt``: Mailchimp delivers an
export as a zip of ``subscribed_``, ``unsubscribed_`` and ``cleaned_`` CSV files), in the order
of the archive; folders, macOS metadata (``__MACOSX/``, ``._*``) and other files are passed
over. ``--member NAME`` picks one (by its path in the archive, or its file name).
"""

from __future__ import annotations

import bz2
import gzip
import shutil
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

import pyarrow as pa

from pipeline.core.errors import InputError
from pipeline.core.tables import FileKind

_COPY: Final = 1 << 22
_LIST_SUFFIXES: Final = (".csv", ".tsv", ".txt")
_COMPRESSIONS: Final = {FileKind.GZIP: "gzip", FileKind.BZIP2: "bzip2", FileKind.ZSTD: "zstd"}


def compression_of(kind: FileKind) -> str | None:
    """The compression a file of *kind* is in ("gzip", "bzip2", "zstd"), None for others."""
    return _COMPRESSIONS.get(kind)


def decompress(path: Path, kind: FileKind, spill: Path) -> Path:
    """*path* decompressed, streamed, into *spill*; InputError when it is corrupt or cut."""
    target = spill / "input.unpacked"
    try:
        with _opened(kind, path) as source, target.open("wb") as out:
            shutil.copyfileobj(source, out, _COPY)
    except (OSError, EOFError, zlib.error, pa.ArrowException) as exc:
        target.unlink(missing_ok=True)
        name = _COMPRESSIONS[kind]
        raise InputError(
            f"Cannot decompress {path} ({name}): {exc}. Check that the file is complete."
        ) from exc
    return target


def _opened(kind: FileKind, path: Path) -> Any:
    """A binary stream of *path*'s decompressed bytes."""
    if kind is FileKind.GZIP:
        return gzip.open(path, "rb")
    if kind is FileKind.BZIP2:
        return bz2.open(path, "rb")
    return pa.CompressedInputStream(pa.OSFile(str(path)), "zstd")


@dataclass(frozen=True)
class Member:
    name: str  # its path in the archive
    path: Path  # its unpacked copy


def zip_members(path: Path, spill: Path, wanted: str | None) -> list[Member]:
    """The list members of the zip *path* (or only *wanted*), each unpacked into *spill*."""
    try:
        with zipfile.ZipFile(path) as archive:
            infos = _chosen(path, archive.infolist(), wanted)
            folder = spill / "members"
            folder.mkdir(exist_ok=True)
            return [
                _extract(archive, info, folder / f"{n:04d}", path) for n, info in enumerate(infos)
            ]
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise InputError(f"Cannot read the zip archive {path}: {exc}.") from exc


def _chosen(path: Path, infos: list[zipfile.ZipInfo], wanted: str | None) -> list[zipfile.ZipInfo]:
    files = [i for i in infos if not i.is_dir() and not _metadata(i.filename)]
    if wanted is not None:
        found = [i for i in files if i.filename == wanted] or [
            i for i in files if PurePosixPath(i.filename).name.casefold() == wanted.casefold()
        ]
        if len(found) == 1:
            return found
        raise InputError(
            f"The zip archive {path} has no member {wanted!r}"
            + (" (several have that name)" if found else "")
            + f". Its members are: {_names(files)}. Pass one of them with --member."
        )
    lists = [i for i in files if PurePosixPath(i.filename).suffix.lower() in _LIST_SUFFIXES]
    if not lists:
        raise InputError(
            f"The zip archive {path} holds no CSV file (.csv, .tsv, .txt). Its members are: "
            f"{_names(files)}. Extract the list and pass it, or name a member with --member."
        )
    return lists


def _metadata(name: str) -> bool:
    """macOS's resource forks and hidden files, which Finder's "Compress" adds."""
    parts = PurePosixPath(name).parts
    return "__MACOSX" in parts or any(p.startswith(".") for p in parts)


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, path: Path) -> Member:
    if info.flag_bits & 0x1:  # APPNOTE §4.4.4: bit 0, the member is encrypted
        raise InputError(
            f"The member {info.filename!r} of {path} is encrypted. Extract it with its "
            "password and pass the CSV."
        )
    try:
        with archive.open(info) as source, target.open("wb") as out:
            shutil.copyfileobj(source, out, _COPY)
    except NotImplementedError as exc:  # a compression method zipfile does not know
        raise InputError(
            f"Cannot unpack the member {info.filename!r} of {path}: {exc}. Extract it with "
            "another tool and pass the CSV."
        ) from exc
    return Member(info.filename, target)


def _names(infos: list[zipfile.ZipInfo]) -> str:
    return ", ".join(repr(i.filename) for i in infos) if infos else "(none)"
