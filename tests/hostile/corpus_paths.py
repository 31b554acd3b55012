"""Path and stream mistakes: outputs that would clobber an input or cannot be written, URLs
where a local path belongs, work directories that hold other files, and inputs that can be
read only once (a named pipe, standard input, bash's ``<(...)``)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import polars as pl

from tests.hostile.cases import Accept, Case, Refuse, Run, csv_text

ADDRESSES = ("ann@gmail.com", "bob@yahoo.com", "cat@outlook.com")
CSV = csv_text("name,email", tuple(f"N{i},{a}" for i, a in enumerate(ADDRESSES))).encode()
ACCEPT = Accept(len(ADDRESSES), ADDRESSES)
# The message must say that input and output collide, not merely print one path.
CLASH = r"(?i)input.*output|output.*input|same file|overwrit"
URL = r"(?i)\bURLs?\b|\bscheme\b|az://|ftp://|https://|gs://"
NOTES = b"not listclean's: must survive\n"
NOT_UTF8 = r"(?i)not (valid )?UTF-8"


def _list(where: Path, name: str = "list.csv", data: bytes = CSV) -> None:
    (where / name).parent.mkdir(parents=True, exist_ok=True)
    (where / name).write_bytes(data)


def _parquet_list(where: Path, name: str) -> None:
    pl.DataFrame({"email": list(ADDRESSES)}).write_parquet(where / name)


def _simple(name: str, run: Run, expect: Accept | Refuse, given: str = "list.csv") -> Case:
    """A case whose directory holds a list called *given* (CSV, or Parquet by its suffix),
    notes.txt and an empty directory sub/."""

    def build(where: Path) -> Run:
        _parquet_list(where, given) if given.endswith(".parquet") else _list(where, given)
        (where / "notes.txt").write_bytes(NOTES)
        (where / "sub").mkdir()
        return run

    return Case(name, build, expect)


def _refused(name: str, input: str, output: str, pattern: str, given: str = "list.csv") -> Case:
    return _simple(name, Run(input, ("-o", output), output=None), Refuse(pattern), given)


def _outputs() -> list[Case]:
    return [
        _refused("output_is_the_input_csv", "list.csv", "list.csv", CLASH),
        _refused(
            "output_is_the_input_parquet", "list.parquet", "list.parquet", CLASH, "list.parquet"
        ),
        _refused("output_is_the_input_spelled_otherwise", "list.csv", "sub/../list.csv", CLASH),
        # -o out.parquet puts the rejects in out.rejects.csv: here, the input itself.
        _refused(
            "rejects_file_is_the_input", "out.rejects.csv", "out.parquet", CLASH, "out.rejects.csv"
        ),
        _refused("output_is_a_directory", "list.csv", "sub", r"(?i)directory"),
        # Tests run as root, for whom permission bits do not stop a write; a path below a
        # regular file fails for everyone (ENOTDIR), which is the same "cannot write there".
        _refused(
            "output_under_a_regular_file",
            "list.csv",
            "notes.txt/out.parquet",
            r"(?i)not a directory|cannot (create|write)|exists",
        ),
        _refused("output_azure_url", "list.csv", "az://container/key.parquet", URL),
        _refused("output_https_url", "list.csv", "https://example.com/out.parquet", URL),
        _refused("output_gs_url", "list.csv", "gs://bucket/out.parquet", URL),
        # A file name is bytes on POSIX; one that is not UTF-8 reaches Python as a lone
        # surrogate, which the readers and writers cannot encode.
        _refused("output_name_not_utf8", "list.csv", "\udcffout.parquet", NOT_UTF8),
    ]


def _inputs() -> list[Case]:
    return [
        _refused("input_missing", "nothere.csv", "out.parquet", r"(?i)no such file|not found"),
        _refused("input_is_a_directory", "sub", "out.parquet", r"(?i)directory"),
        _refused("input_ftp_url", "ftp://example.com/list.csv", "out.parquet", URL),
        _refused("input_https_url", "https://example.com/list.csv", "out.parquet", URL),
        _refused(
            "input_name_not_utf8", "\udcfflist.csv", "out.parquet", NOT_UTF8, "\udcfflist.csv"
        ),
    ]


def _work_dirs() -> list[Case]:
    smtp = ("--verify", "smtp")

    def foreign(where: Path) -> Run:
        _list(where)
        (where / "precious").mkdir()
        (where / "precious" / "notes.txt").write_bytes(NOTES)
        args = ("-o", "precious/out.parquet", "--work-dir", "precious", *smtp)
        return Run("list.csv", args, output="precious/out.parquet")

    return [
        Case("work_dir_holds_a_foreign_file", foreign, ACCEPT),
        _simple(
            "work_dir_is_dot",
            Run("list.csv", ("-o", "out.parquet", "--work-dir", ".", *smtp)),
            ACCEPT,
        ),
        _simple(
            "work_dir_is_a_file",
            Run("list.csv", ("-o", "out.parquet", "--work-dir", "notes.txt", *smtp), output=None),
            Refuse(r"(?i)directory|work"),
        ),
    ]


def _fifo(where: Path) -> Run:
    _list(where, "feed.csv")
    os.mkfifo(where / "pipe.csv")
    return Run("pipe.csv", feeds=(("pipe.csv", "feed.csv"),), timeout=15)


def _substituted(where: Path) -> Run:
    _list(where, "feed.csv")
    return Run("feed.csv", substitute=True, timeout=15)


def _big_list(rows: int) -> bytes:
    """Distinct, incompressible addresses, so the enriched Parquet is large."""
    locals_ = (hashlib.sha256(str(i).encode()).hexdigest() for i in range(rows))
    return csv_text("email", tuple(f"{local}@gmail.com" for local in locals_)).encode()


# Enough rows that the enriched Parquet (~350 KB) exceeds the file-size limit below, which the
# stores under the cache directory (20 KB) stay well under.
BIG_ROWS = 3_000
FILE_SIZE_LIMIT = 64 * 1024


def _disk_full(where: Path) -> Run:
    _list(where, data=_big_list(BIG_ROWS))
    return Run("list.csv", output=None, file_size_limit=FILE_SIZE_LIMIT)


def _streams() -> list[Case]:
    return [
        Case("named_pipe", _fifo, ACCEPT),
        Case("stdin_as_dash", lambda where: Run("-", stdin=CSV, timeout=15), ACCEPT),
        Case("dev_stdin", lambda where: Run("/dev/stdin", stdin=CSV, timeout=15), ACCEPT),
        Case("process_substitution", _substituted, ACCEPT),
        # RLIMIT_FSIZE stands in for a full disk: the write fails (EFBIG) as it would (ENOSPC).
        Case("output_write_fails", _disk_full, Refuse(r"(?i)writ|space|too large")),
    ]


PATH_CASES: tuple[Case, ...] = (*_outputs(), *_inputs(), *_work_dirs(), *_streams())
