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

Unpacking is bounded (the ``[read]`` settings, :class:`Budget`): the bytes that come out are
counted as they are written, and an input that expands beyond the least of its limits (a ratio
to its own size, an absolute size, a share of the free disk under the spill folder) is refused
there, so a decompression bomb never fills the disk. A zip's members are also checked against
the sizes its directory declares before anything is unpacked (zipfile never hands out more than
a member declares), which is how an Excel workbook, a zip too, is checked before openpyxl
reads it.
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

from pipeline.core.config import ReadConfig
from pipeline.core.errors import InputError
from pipeline.core.files.tables import FileKind

_COPY: Final = 1 << 22
_LIST_SUFFIXES: Final = (".csv", ".tsv", ".txt")
_COMPRESSIONS: Final = {FileKind.GZIP: "gzip", FileKind.BZIP2: "bzip2", FileKind.ZSTD: "zstd"}
# The ratio is not held against the first bytes: a small file that packs well is no bomb.
RATIO_FLOOR: Final = 16 * 2**20


@dataclass(frozen=True)
class Limit:
    """One limit on what an input may expand to, and what its message says."""

    size: int  # bytes
    setting: str  # the setting that sets it
    why: str  # how it follows from the setting ("" when it is the setting's value)
    advice: str  # what to do, before "raise <setting>"


def limits_of(limits: ReadConfig, packed: int, spill: Path) -> list[Limit]:
    """The limits the ``[read]`` settings put on an input of *packed* bytes unpacked into
    *spill* (none for a setting of 0)."""
    found = []
    if limits.max_unpack_ratio:
        size = max(int(limits.max_unpack_ratio * packed), RATIO_FLOOR)
        why = f"{limits.max_unpack_ratio:g} times its {packed:,} bytes, and never under 16 MiB"
        bomb = "A list that packs this well is most likely a decompression bomb; if this one is "
        found.append(Limit(size, "read.max_unpack_ratio", why, bomb + "real, raise"))
    if limits.max_unpacked_bytes:
        advice = "If the list is really that large, raise"
        found.append(Limit(limits.max_unpacked_bytes, "read.max_unpacked_bytes", "", advice))
    if limits.max_unpack_disk_share:
        free = shutil.disk_usage(spill).free
        share = limits.max_unpack_disk_share
        why = f"{share:.0%} of the {free:,} bytes free under {spill}"
        advice = "Free disk space there, choose another folder with --work-dir, or raise"
        found.append(Limit(int(free * share), "read.max_unpack_disk_share", why, advice))
    return found


class Budget:
    """The bytes a packed input may expand to: the least of ``read.max_unpack_ratio`` times
    its size (never under :data:`RATIO_FLOOR`), ``read.max_unpacked_bytes`` and
    ``read.max_unpack_disk_share`` of the disk free under *spill* now. :meth:`take` counts
    what comes out and refuses the input (InputError) as soon as it passes the limit."""

    def __init__(
        self, path: Path, what: str, spill: Path, limits: ReadConfig, label: str = ""
    ) -> None:
        """*label*: how the message names the input, when not by *path* (an object's URL)."""
        self._path, self._what = label or path, what
        # None: no limit (every setting 0); a limit of 0 bytes (a full disk) is one.
        found = limits_of(limits, path.stat().st_size, spill)
        self.limit = min(found, key=lambda limit: limit.size) if found else None
        self.used = 0

    def passed(self, size: int) -> bool:
        """Whether *size* bytes are more than the limit."""
        return self.limit is not None and size > self.limit.size

    def take(self, size: int) -> None:
        """*size* more bytes came out; InputError when that passes the limit."""
        self.used += size
        if self.passed(self.used):
            raise self.refusal()

    def refusal(self) -> InputError:
        assert self.limit is not None, "only a limit can be passed"
        limit = self.limit
        shown = f"{limit.setting}: {limit.why}" if limit.why else limit.setting
        variable = "LISTCLEAN_" + limit.setting.replace(".", "_").upper()
        return InputError(
            f"The {self._what} {self._path} expands beyond the limit: more than "
            f"{limit.size:,} bytes would come out of it ({shown}). Nothing more was unpacked. "
            f"{limit.advice} {limit.setting} (in the [read] table of --config, or {variable})."
        )


def compression_of(kind: FileKind) -> str | None:
    """The compression a file of *kind* is in ("gzip", "bzip2", "zstd"), None for others."""
    return _COMPRESSIONS.get(kind)


def decompress(
    path: Path, kind: FileKind, spill: Path, limits: ReadConfig, label: str = ""
) -> Path:
    """*path* (named *label* in messages) decompressed, streamed, into *spill*; InputError
    when it is corrupt or cut, or expands beyond its :class:`Budget`."""
    target = spill / "input.unpacked"
    name = _COMPRESSIONS[kind]
    budget = Budget(path, f"{name} file", spill, limits, label)
    try:
        with _opened(kind, path) as source, target.open("wb") as out:
            _copy(source, out, budget)
    except (OSError, EOFError, zlib.error, pa.ArrowException, InputError) as exc:
        target.unlink(missing_ok=True)
        if isinstance(exc, InputError):
            raise
        raise InputError(
            f"Cannot decompress {path} ({name}): {exc}. Check that the file is complete."
        ) from exc
    return target


def _copy(source: Any, out: Any, budget: Budget) -> None:
    """*source* into *out* a bounded piece at a time, counted against *budget* before each
    piece is written (a piece is at most :data:`_COPY` bytes, whatever it unpacks from)."""
    while piece := source.read(_COPY):
        budget.take(len(piece))
        out.write(piece)


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


def zip_members(
    path: Path, spill: Path, wanted: str | None, limits: ReadConfig, label: str = ""
) -> list[Member]:
    """The list members of the zip *path* (or only *wanted*), each unpacked into *spill*,
    together within the archive's :class:`Budget` (*label*: its name in that message)."""
    budget = Budget(path, "zip archive", spill, limits, label)
    try:
        with zipfile.ZipFile(path) as archive:
            infos = _chosen(path, archive.infolist(), wanted)
            check_declared(infos, budget)
            folder = spill / "members"
            folder.mkdir(exist_ok=True)
            return [
                _extract(archive, info, folder / f"{n:04d}", (path, budget))
                for n, info in enumerate(infos)
            ]
    except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
        raise InputError(f"Cannot read the zip archive {path}: {exc}.") from exc


def check_declared(infos: list[zipfile.ZipInfo], budget: Budget) -> None:
    """InputError, before anything is unpacked, when the sizes the archive declares for
    *infos* already pass *budget*. zipfile stops a member at its declared size (and then
    fails its CRC check), so a member cannot bring more than it declares."""
    if budget.passed(sum(info.file_size for info in infos)):
        raise budget.refusal()


def workbook_budget(path: Path, spill: Path, limits: ReadConfig, label: str = "") -> None:
    """An Excel workbook (a zip of XML parts) whose parts declare more than its
    :class:`Budget` is refused before openpyxl reads it; what it does not declare, zipfile
    does not unpack."""
    budget = Budget(path, "Excel workbook", spill, limits, label)
    try:
        with zipfile.ZipFile(path) as archive:
            check_declared(archive.infolist(), budget)
    except zipfile.BadZipFile as exc:
        raise InputError(f"Cannot read the Excel workbook {path}: {exc}.") from exc


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


def _extract(
    archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path, within: tuple[Path, Budget]
) -> Member:
    path, budget = within
    if info.flag_bits & 0x1:  # APPNOTE §4.4.4: bit 0, the member is encrypted
        raise InputError(
            f"The member {info.filename!r} of {path} is encrypted. Extract it with its "
            "password and pass the CSV."
        )
    try:
        with archive.open(info) as source, target.open("wb") as out:
            _copy(source, out, budget)
    except NotImplementedError as exc:  # a compression method zipfile does not know
        raise InputError(
            f"Cannot unpack the member {info.filename!r} of {path}: {exc}. Extract it with "
            "another tool and pass the CSV."
        ) from exc
    return Member(info.filename, target)


def _names(infos: list[zipfile.ZipInfo]) -> str:
    return ", ".join(repr(i.filename) for i in infos) if infos else "(none)"
