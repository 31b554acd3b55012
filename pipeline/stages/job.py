"""What a clean run reads and writes, checked before any work is done.

The input is a local file, or ``-`` for standard input; a URL is refused (object stores are not
read yet), and so is a directory. Input that is not a regular file (standard input, a named
pipe, ``/dev/stdin``, a shell's ``<(...)``) is read exactly once, into a private temporary file
under ``$TMPDIR`` that the run removes, so every stage after it sees a plain file.

The output and its companions (``.rejects.csv``, ``.summary.json``) must not be the input, must
not be directories, and must be creatable: their folder exists or can be made. A refused run
writes nothing.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from pipeline.core.errors import InputError, OutputError, UsageError
from pipeline.stages.parquet_source import is_dataset
from pipeline.stages.write import OutputPaths

STDIN: Final = "-"
# RFC 3986 §3.1: scheme ":" then "//" for the URLs people paste (s3://, https://, gs://).
_URL: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_PART: Final = re.compile(r"part-\d+\.parquet")


@dataclass(frozen=True)
class CleanJob:
    input: Path  # a regular file by the time the stages run (see open_input)
    output: Path
    email_column: str | None = None
    name: str = ""  # the input as the user gave it, when it differs from *input* ("-")
    dataset: bool = False  # the output is a folder of part files
    memory_mb: int = 1024  # what the run should stay within; sets the batch size


def refuse_url(text: str, role: str) -> None:
    """A URL given where a local path is expected: refused, never written as a local folder."""
    if _URL.match(text):
        scheme = text.split(":", 1)[0]
        raise UsageError(
            f"The {role} {text!r} is a URL ({scheme}://); listclean reads and writes local "
            "files only. Download the list first, or write to a local path and upload it."
        )


def check_output(input_text: str, output: Path, dataset: bool = False) -> None:
    """Refuse an output that would overwrite the input, is a directory (unless a dataset is
    asked for: then a folder of part files a run wrote, or an empty one), or cannot be made."""
    paths = OutputPaths.for_output(output, dataset)
    source = Path(input_text)
    for path in (paths.parquet, paths.rejects, paths.summary):
        if input_text != STDIN and _same_file(source, path):
            raise UsageError(
                f"The output {path} is the input file {input_text}: writing it would overwrite "
                "the input. Choose another output with -o."
            )
        if path.is_dir() and not (dataset and path == paths.parquet):
            raise UsageError(
                f"The output {path} is a directory; name a file such as {path / 'list.parquet'}, "
                "or ask for a dataset with --output-format dataset."
            )
    if dataset and output.is_dir() and _foreign(output):
        raise UsageError(
            f"The dataset output {output} holds other files than part-*.parquet; a run replaces "
            "the whole folder, so name an empty or new one."
        )
    _check_folder(paths.parquet.parent)


def _foreign(folder: Path) -> bool:
    return any(not (p.is_file() and _PART.fullmatch(p.name)) for p in folder.iterdir())


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


def _check_folder(folder: Path) -> None:
    """The output's folder exists or can be made: its nearest existing ancestor is a writable
    directory."""
    existing = next(p for p in (folder, *folder.parents) if p.exists() or p == p.parent)
    if not existing.is_dir():
        raise OutputError(
            f"Cannot create the output's folder {folder}: {existing} is not a directory. "
            "Choose another output with -o."
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(
            f"Cannot write the output in {folder}: {existing} is not writable. "
            "Choose another output with -o."
        )


@contextlib.contextmanager
def open_input(text: str) -> Iterator[Path]:
    """The input as a regular file: the file itself, or a private copy of a stream."""
    if text == STDIN:
        with _spooled(sys.stdin.buffer, "stdin") as copy:
            yield copy
        return
    path = Path(text)
    if is_dataset(text):  # a folder or a glob of Parquet shards, read where they are
        yield path
        return
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise InputError(f"Cannot read the input file {path}: {exc.strerror}.") from exc
    if stat.S_ISDIR(mode):
        raise InputError(f"The input {path} is a directory; pass a CSV or Parquet file.")
    if stat.S_ISREG(mode):
        yield path
        return
    try:
        stream = path.open("rb")
    except OSError as exc:
        raise InputError(f"Cannot read the input {path}: {exc.strerror}.") from exc
    with stream, _spooled(stream, path.name) as copy:
        yield copy


@contextlib.contextmanager
def _spooled(stream: BinaryIO, name: str) -> Iterator[Path]:
    """*stream* read once to its end into a temporary file of our own, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="listclean-input-"))
    copy = folder / (name if name not in ("", ".", "..") else "input")
    try:
        with copy.open("wb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)
