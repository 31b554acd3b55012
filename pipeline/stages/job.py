"""What a clean run reads and writes, checked before any work is done.

The input is a local file, ``-`` for standard input, or an object-store URL (``s3://``, see
:mod:`pipeline.stages.objects`); a URL of another scheme is refused, and so is a directory that
holds no Parquet shard. Input that is not a regular file (standard input, a named pipe,
``/dev/stdin``, a shell's ``<(...)``) is read exactly once, into a private temporary file under
``$TMPDIR`` that the run removes, so every stage after it sees a plain file.

The output and its companions (``.rejects.csv``, ``.summary.json``) must not be the input, must
not be directories, and must be creatable: their folder exists or can be made (for an
object-store output: its bucket can be reached). A refused run writes nothing.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Final

from pipeline.core.config import ReadConfig, StorageConfig
from pipeline.core.errors import InputError, OutputError, UsageError
from pipeline.core.files.encodings import Decoding
from pipeline.stages.objects import (
    Upload,
    check_location,
    check_output_url,
    filesystem,
    is_object_url,
    is_remote_dataset,
    local_path,
    read_head,
)
from pipeline.stages.read.parquet_source import is_dataset
from pipeline.stages.write.formats import OutputFormat, choose_format, stem_of
from pipeline.stages.write.outputs import OutputPaths, companions, default_output

__all__ = [
    "CleanJob",
    "CleanRequest",
    "check_location",
    "check_output",
    "open_input",
    "open_job",
    "remote_output",
]

STDIN: Final = "-"
_PART: Final = re.compile(r"part-\d+\.parquet")
_SPOOLED: Final = "listclean-input-"  # the folder of a stream's private copy


@dataclass(frozen=True)
class CleanJob:
    # A regular file by the time the stages run (see open_input), or an object's URL.
    input: Path | str
    output: Path  # local; an object-store output is staged here (see *upload*)
    email_column: str | None = None
    name: str = ""  # the input as the user gave it, when it differs from *input* ("-")
    dataset: bool = False  # the output is a folder of part files
    memory_mb: int = 1024  # what the run should stay within; sets the batch size
    storage: StorageConfig = field(default_factory=StorageConfig)
    upload: Upload | None = None  # where the finished output files go
    format: OutputFormat = OutputFormat.PARQUET
    csv_bom: bool = False  # a CSV output starts with a UTF-8 BOM (for Excel)
    member: str | None = None  # the one archive member to read (zip input)
    sheet: str | None = None  # the one workbook sheet to read (xlsx input)
    split: bool = False  # also write the rows of each verdict to a file of their own
    decoding: Decoding = field(default_factory=Decoding)  # a text input's encoding: said, or found
    read: ReadConfig = field(default_factory=ReadConfig)  # limits on unpacking, field sizes
    header_row: int | None = None  # the line the header starts on (--header-row); None: found
    further: tuple[str, ...] = ()  # more address columns to check (--email-column again)

    @property
    def paths(self) -> OutputPaths:
        return OutputPaths.for_output(self.output, self.dataset, self.upload, self.format)

    @property
    def spooled(self) -> bool:
        """The input is this process's private copy of a stream (standard input, a pipe):
        no other machine can read it."""
        return isinstance(self.input, Path) and self.input.parent.name.startswith(_SPOOLED)

    @property
    def named(self) -> str:
        """The output as its user names it: its URL when uploaded, else its whole path."""
        return self.upload.name(self.output) if self.upload else str(self.output.resolve())


@dataclass(frozen=True)
class CleanRequest:
    """A clean run as a front asks for it (the command line's flags, the Python API's
    arguments): the input and output as the user named them, how to read and write."""

    input: str  # a path, "-" for standard input, an object's URL
    output: str | None = None  # default: beside the input (see default_output)
    email_column: str | None = None
    output_format: str | None = None  # default: from the output's suffix
    split: bool = False
    csv_bom: bool = False
    member: str | None = None
    sheet: str | None = None
    memory_mb: int = 1024
    decoding: Decoding = field(default_factory=Decoding)
    label: str | None = None  # how the input is named, when not by *input* (a DataFrame)
    header_row: int | None = None  # the line (a sheet's row) the header starts on
    further: tuple[str, ...] = ()  # more address columns to check, after *email_column*


@contextlib.contextmanager
def open_job(request: CleanRequest, storage: StorageConfig, read: ReadConfig) -> Iterator[CleanJob]:
    """The job *request* asks for, checked before any work (places, format, memory) and opened:
    the input as a regular file or a URL (:func:`open_input`), the output local or staged for
    its upload (:func:`remote_output`). Both fronts open their jobs here."""
    check_location(request.input, "input")
    if request.output is not None:
        check_location(request.output, "output")
    if request.memory_mb < 64:
        raise UsageError(f"--memory must be at least 64 (MiB), got {request.memory_mb}.")
    if request.header_row is not None and request.header_row < 1:
        raise UsageError(f"--header-row counts lines from 1, got {request.header_row}.")
    input_text = local_path(request.input)
    output_text = local_path(request.output) if request.output else None
    fmt = choose_format(output_text, request.output_format)
    dataset = fmt is OutputFormat.DATASET
    with contextlib.ExitStack() as stack:
        upload = None
        if output_text is not None and is_object_url(output_text):
            staged = remote_output(output_text, input_text, dataset, storage)
            output, upload = stack.enter_context(staged)
        else:
            output = Path(output_text) if output_text else default_output(input_text, fmt)
            check_output(input_text, output, dataset, request.split)
        source = stack.enter_context(open_input(input_text, storage))
        yield CleanJob(
            source,
            output,
            request.email_column,
            request.label or request.input,
            dataset,
            request.memory_mb,
            storage,
            upload,
            fmt,
            request.csv_bom,
            request.member,
            request.sheet,
            request.split,
            request.decoding,
            read,
            request.header_row,
            request.further,
        )


@contextlib.contextmanager
def remote_output(
    url: str, input_text: str, dataset: bool, storage: StorageConfig
) -> Iterator[tuple[Path, Upload]]:
    """An object-store output: checked before any work, staged in a private local folder
    (removed afterwards), and uploaded file by file as each is complete."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    local = Path("out" + name[len(stem_of(name)) :])
    remote = _remote_names(url, dataset)
    if input_text in remote.values():
        raise UsageError(
            f"The output {url} or one of its companions is the input {input_text}: writing it "
            "would overwrite the input. Choose another output with -o."
        )
    fs = filesystem(url, storage)
    check_output_url(url, fs, dataset)
    folder = Path(tempfile.mkdtemp(prefix="listclean-upload-"))
    try:
        targets = {folder / named: remote[role] for role, named in companions(local.name).items()}
        yield folder / local.name, Upload(fs, targets)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _remote_names(url: str, dataset: bool) -> dict[str, str]:
    """The URL of every file the run may write, by role (:func:`companions`)."""
    base = url.rstrip("/") if dataset else url
    folder, name = base[: len(base) - len(base.rsplit("/", 1)[-1])], base.rsplit("/", 1)[-1]
    return {role: folder + named for role, named in companions(name).items()}


def check_output(input_text: str, output: Path, dataset: bool = False, split: bool = False) -> None:
    """Refuse an output that would overwrite the input, is a directory (unless a dataset is
    asked for: then a folder of part files a run wrote, or an empty one), or cannot be made."""
    paths = OutputPaths.for_output(output, dataset)
    source = Path(input_text)
    folders = (paths.parquet, *paths.split.values()) if dataset else ()
    for path in paths.files(split).values():
        if input_text != STDIN and _same_file(source, path):
            raise UsageError(
                f"The output {path} is the input file {input_text}: writing it would overwrite "
                "the input. Choose another output with -o."
            )
        if path.is_dir() and path not in folders:
            raise UsageError(
                f"The output {path} is a directory; name a file such as {path / 'list.parquet'}, "
                "or ask for a dataset with --output-format dataset."
            )
    for target in (output, *(paths.split.values() if split else ())):
        if dataset and target.is_dir() and _foreign(target):
            raise UsageError(
                f"The dataset output {target} holds other files than part-*.parquet; a run "
                "replaces the whole folder, so name an empty or new one."
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
def open_input(text: str, storage: StorageConfig | None = None) -> Iterator[Path | str]:
    """The input as a regular file (the file itself, or a private copy of a stream), or as
    an object-store URL once the object (or the dataset's prefix) is seen to be there."""
    if is_object_url(text):
        fs = filesystem(text, storage or StorageConfig())
        if not is_remote_dataset(text, fs):
            read_head(text, fs, 1)  # InputError now when it is missing or unreadable
        yield text
        return
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
    folder = Path(tempfile.mkdtemp(prefix=_SPOOLED))
    copy = folder / (name if name not in ("", ".", "..") else "input")
    try:
        with copy.open("wb") as out:
            shutil.copyfileobj(stream, out, 1 << 20)
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)
