"""What a hostile case is: the files it builds, how the command is run, and what must happen.

A case states the *correct* behaviour, whatever the code does today. Either the run succeeds
and accounts for every input record (``Accept``: docs/lists.md's "rows in = rows out +
rows rejected, always", with the record count known from how the file was built, not from any
reader), or it refuses with exit 2 and one line that names the problem (``Refuse``). Either
way: no traceback, and every file that was in the case's directory before the run is still
there, byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Accept:
    """Exit 0; rows_in == records == rows_out + rows_rejected."""

    records: int
    kept: tuple[str, ...] = ()  # addresses that must come out in EMAIL (not rejected, not lost)
    cells: tuple[str, ...] = ()  # values that must come out exactly, in some string column
    warns: str | None = None  # a pattern some `listclean: warning:` line must match
    rejected: tuple[str, ...] | None = None  # the rejects' reasons, in file order, when given


@dataclass(frozen=True)
class Refuse:
    """Exit *code* with one line on stderr that matches *pattern* once the case's own file
    names are taken out of it (a file called ``list.parquet`` must not make "parquet" match)."""

    pattern: str
    code: int = 2


Expect = Accept | Refuse


@dataclass(frozen=True)
class Run:
    """How to run `listclean clean` for a case; paths are relative to the case directory,
    which is also the working directory."""

    input: str
    args: tuple[str, ...] = ("-o", "out.parquet")
    output: str | None = "out.parquet"  # where an accepted run writes its three files
    stdin: bytes | None = None
    substitute: bool = False  # pass INPUT as bash's `<(cat INPUT)`: a pipe at /dev/fd/N
    feeds: tuple[tuple[str, str], ...] = ()  # (fifo, source): `cat source > fifo` alongside
    file_size_limit: int | None = None  # RLIMIT_FSIZE: a write past it fails (EFBIG)
    faults: tuple[str, ...] = ()  # more of the launcher's options (--signal-at, --no-space-for)
    timeout: float = 30.0


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], Run]  # writes the case's files into an empty directory
    expect: Expect


def csv_text(header: str, records: Sequence[str], end: str = "\n") -> str:
    """A header and *records*, each ended by *end*; a record may span lines inside quotes."""
    return "".join(line + end for line in (header, *records))


def file_case(
    name: str, data: bytes, expect: Expect, filename: str = "list.csv", *args: str
) -> Case:
    """The commonest shape: one input file, cleaned to ``out.parquet``."""

    def build(where: Path) -> Run:
        (where / filename).write_bytes(data)
        return Run(filename, ("-o", "out.parquet", *args))

    return Case(name, build, expect)
