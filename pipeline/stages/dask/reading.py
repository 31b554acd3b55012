"""How the workers of a Dask run read a delimited-text list: in byte ranges, planned by the
driver from the file's head alone (:mod:`pipeline.stages.read.ranges` has the reading rule).

:func:`plan` opens the head (the first :data:`HEAD_BYTES`): the header, the delimiter, which
column holds the addresses and, when the head is not UTF-8, the code page, which one worker
finds as the local reader finds it, from the whole file. :func:`read_ranges` then has the
workers survey their ranges (quote parity, line ends), read and normalize them at once (a
range's raw rows are not kept while the others are read), and tell the driver each range's
rows: small tallies, from which each part gets its first row number. A list the ranges
cannot settle (quotes that do not pair up, a byte that is not UTF-8 after a UTF-8 head, a field
over the limit, a packed or UTF-16 file) is read in order instead, by one worker
(:func:`~pipeline.stages.dask.tasks.convert`), so the rows are the local reader's either way.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import polars as pl

from pipeline.core.config import ListsConfig
from pipeline.core.files.delimited import (
    count_records,
    physical_ends,
    record_ends,
    utf16_encoding,
)
from pipeline.core.files.encodings import Decoding, detect, non_ascii_lines
from pipeline.core.files.headers import RULE_RECORDS
from pipeline.core.files.tables import FileKind, file_kind
from pipeline.core.files.utf8 import BOM, chunks, first_bad, not_utf8
from pipeline.stages.base import Batch
from pipeline.stages.dask.tasks import RangeAgain, held_thin, numbered, scan_batch
from pipeline.stages.job import CleanJob
from pipeline.stages.objects import filesystem, is_object_url, is_remote_dataset
from pipeline.stages.read.csv_source import REJECT_SCHEMA
from pipeline.stages.read.ranges import (
    UTF8,
    ByteRange,
    Layout,
    cuts,
    head_record_end,
    line_start,
    quotes_pair,
    ranges_of,
    read_range,
    survey,
)
from pipeline.stages.read.reader import Choice, ListReader, open_list
from pipeline.stages.runner import batch_rows, open_reader

HEAD_BYTES: Final = 4 << 20  # what the driver reads of a CSV: header, delimiter, a sample
MIN_RANGE_BYTES: Final = 1 << 20

Submit = Callable[..., Any]


@dataclass(frozen=True)
class Planned:
    reader: ListReader  # the list's columns, email column, encoding (from its head)
    layout: Layout | None  # set when the workers read it in byte ranges
    target: int = 0  # bytes a range


def plan(job: CleanJob, folder: Path, submit: Submit, part_mb: int) -> Planned:
    """The list opened from its head for the workers to read in ranges of a part's size for
    *part_mb* MiB, when it can be; else opened as the local engine opens it."""
    head = _head(job)
    if head is None:
        return Planned(open_reader(job, folder), None)
    layout, reader = _layout(job, folder, head, submit)
    return Planned(reader, layout, range_bytes(part_mb, reader.bytes_per_row))


def range_bytes(memory_mb: int, bytes_per_row: float) -> int:
    """Bytes a range: a batch of the local engine's size for the run's memory."""
    rows = batch_rows(memory_mb, bytes_per_row)
    return max(MIN_RANGE_BYTES, int(rows * bytes_per_row))


def _head(job: CleanJob) -> bytes | None:
    """The first bytes of a list the workers can read in ranges: a plain delimited-text file
    (local, or an object) in UTF-8 or a code page whose ASCII is ASCII; None otherwise."""
    source = job.input
    if job.member or job.sheet or job.spooled:
        return None
    if isinstance(source, Path) and (not source.is_file() or source.is_dir()):
        return None
    if isinstance(source, str) and is_remote_dataset(source, filesystem(source, job.storage)):
        return None
    said = job.decoding.encoding
    if said and not _ascii_safe(said):
        return None
    with _open(job) as handle:
        head: bytes = handle.read(HEAD_BYTES)
    name = Path(str(source).rsplit("/", 1)[-1])
    if file_kind(name, head[:16]) is not FileKind.TEXT or utf16_encoding(head[:4096]):
        return None
    end = head_record_end(head)
    if end is None:
        return None  # a first record longer than the head: read in order
    if len(head) == HEAD_BYTES and (count_records(head[:end]) or 0) < RULE_RECORDS:
        return None  # too few records in the head to find the header as the local reader does
    return head[:end]


def _ascii_safe(encoding: str) -> bool:
    """Whether a line end or a quote in *encoding* is that ASCII byte and never part of
    another character (UTF-8 and the code pages Excel writes; not UTF-16 or UTF-7)."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return False
    if name.startswith(("utf-16", "utf-32", "utf-7")):
        return False
    probe = '"\r\n,;\t|'
    return probe.encode(name, errors="replace") == probe.encode("ascii")


@contextlib.contextmanager
def _open(job: CleanJob) -> Iterator[Any]:
    source = job.input
    if isinstance(source, str) and is_object_url(source):
        with filesystem(source, job.storage).open(source, "rb") as handle:
            yield handle
    else:
        with Path(source).open("rb") as handle:
            yield handle


def _layout(job: CleanJob, folder: Path, head: bytes, submit: Submit) -> tuple[Layout, ListReader]:
    name = job.name or str(job.input)
    body = head.removeprefix(BOM)
    bom = len(head) - len(body)
    said = job.decoding.encoding
    encoding, warning = (codecs.lookup(said).name if said else UTF8), ""
    if encoding == "utf-8-sig":
        encoding = UTF8
    if not said and (bad := first_bad(body)) is not None:
        source = str(job.input)
        encoding = submit(detect_encoding, source, job.storage, job.decoding, name).result()
        warning = not_utf8(name, bad, encoding)
    copy = folder / "head-of-list.csv"
    copy.write_bytes(head)
    decoding = Decoding(encoding if (said or warning) else "", job.decoding.margin)
    choice = Choice(None, None, decoding, job.read, job.header_row, job.further)
    reader = open_list(name, copy, folder, job.email_column, job.storage, choice)
    reader.info = dataclasses.replace(reader.info, rows_known=False)  # the head's, not the list's
    if warning:
        reader.warnings = (warning, *reader.warnings)
    first, after, line = _header_bytes(head, reader)
    layout = Layout(
        source=str(job.input),
        label=name,
        size=_size(job),
        header=head[max(first, bom) : after],
        body=after,
        delimiter=reader.delimiter,
        encoding=encoding,
        assumed=not said and not warning,
        max_field=job.read.max_field_bytes,
        renamed=reader.renamed,
        email_column=reader.email_column,
        storage=job.storage,
        body_line=line,
    )
    return layout, reader


def _header_bytes(head: bytes, reader: ListReader) -> tuple[int, int, int]:
    """Where the header record the local reader found in *head* starts and ends, and the
    line after it: the ranges start there, the rows above it are the head's."""
    line = reader.header_row
    first = line_start(head, line)
    ends, _ = record_ends(head[first:], b"", 0)
    body = first + int(ends[0]) + 1
    return first, body, line + physical_ends(head[first:body], head[body : body + 1])


def titles_of(reader: ListReader) -> pl.DataFrame:
    """The rejects above the header (title rows), as the local reader gives them."""
    return pl.DataFrame(reader.titles, schema=REJECT_SCHEMA, orient="row")


def _size(job: CleanJob) -> int:
    source = job.input
    if isinstance(source, str) and is_object_url(source):
        return int(filesystem(source, job.storage).size(source))
    return os.stat(source).st_size


def detect_encoding(source: str, storage: Any, decoding: Decoding, label: str) -> str:
    """The code page of a list that is not UTF-8, found as the local reader finds it, from the
    non-ASCII lines of the whole file (read here, on a worker)."""
    layout = Layout(source, label, 0, b"", 0, ",", UTF8, True, 0, {}, "", storage)
    with layout.open() as handle:
        return detect(non_ascii_lines(chunks(handle)), decoding.margin, label)


@dataclass(frozen=True)
class Report:
    rows: int
    rejects: int
    exact: bool
    settled: str


@dataclass(frozen=True)
class ScannedRange:
    """A range read and normalized at once on its worker, its rows numbered as if it began the
    list (:func:`numbered_range` numbers them once the ranges before it have reported): its
    raw rows are not kept while the other ranges report."""

    report: Report
    batch: Batch | None  # None: no rows, or the ranges cannot settle the list
    rejects: pl.DataFrame

    def __sizeof__(self) -> int:
        held = sys.getsizeof(self.batch) if self.batch is not None else 0
        return held + int(self.rejects.estimated_size()) + 128


def read_scanned(
    part: ByteRange, exact: bool, email_column: str, lists: ListsConfig, thin: bool
) -> ScannedRange:
    """*part* read (exactly, with *exact*) and normalized; *thin*: held without the list's own
    columns, which the write reads again (:class:`~.tasks.RangeAgain`)."""
    read = read_range(part, exact)
    report = Report(read.frame.height, read.rejects.height, read.exact, read.settled)
    if read.settled or not report.rows:
        return ScannedRange(report, None, read.rejects)
    batch = scan_batch(read.frame, email_column, 0, lists)
    if thin:
        batch = held_thin(batch, RangeAgain(part, read.exact), email_column, 0, lists)
    return ScannedRange(report, batch, read.rejects)


def report_of(scanned: ScannedRange) -> Report:
    return scanned.report


def numbered_range(scanned: ScannedRange, first_row: int) -> Batch:
    assert scanned.batch is not None
    return numbered(scanned.batch, first_row)


def rejects_of(scanned: ScannedRange) -> pl.DataFrame:
    return scanned.rejects


@dataclass
class Ranged:
    """The list read in ranges: each part's normalized rows and its rejects, as futures."""

    batches: list[Any]
    rejects: list[Any]
    rows: int
    rejected: int
    titles: pl.DataFrame  # the rejects above the header, read from the head


@dataclass(frozen=True)
class Cluster:
    """How the reading reaches the cluster: *submit* a task, *gather* results in order,
    *hear* the ranges' reports in order while showing the rows read as they come,
    *cancel* tasks."""

    submit: Submit
    gather: Callable[[list[Any]], list[Any]]
    hear: Callable[[list[Any]], list[Report]]
    cancel: Callable[[list[Any]], None]


def read_ranges(on: Cluster, planned: Planned, lists: ListsConfig) -> Ranged | None:
    """The list read by the workers, range by range; None when the ranges cannot settle it
    (the caller reads it in order)."""
    submit, gather, cancel = on.submit, on.gather, on.cancel
    layout = planned.layout
    assert layout is not None
    spans = cuts(layout, planned.target)
    surveys = gather([submit(survey, layout, start, end) for start, end in spans])
    if not quotes_pair(surveys):
        return None
    parts = ranges_of(layout, spans, surveys)
    scan = (layout.email_column, lists, not planned.reader.further)  # further columns: whole
    reads = [submit(read_scanned, part, False, *scan) for part in parts]
    reports = on.hear([submit(report_of, read) for read in reads])
    if any(r.settled for r in reports):
        cancel(reads)
        return None
    if any(r.exact for r in reports) and not all(r.exact for r in reports):
        reads = _exactly(submit, parts, reads, reports, scan)  # as the local reader reads a file
        reports = on.hear([submit(report_of, read) for read in reads])
        if any(r.settled for r in reports):
            cancel(reads)
            return None
    titles = titles_of(planned.reader)
    ranged = Ranged([], [], 0, titles.height, titles)
    for read, report in zip(reads, reports, strict=True):
        if report.rows:
            ranged.batches.append(submit(numbered_range, read, ranged.rows))
        if report.rejects:
            ranged.rejects.append(submit(rejects_of, read))
        ranged.rows += report.rows
        ranged.rejected += report.rejects
    return ranged


def _exactly(
    submit: Submit,
    parts: list[ByteRange],
    reads: list[Any],
    reports: list[Report],
    scan: tuple[str, ListsConfig, bool],
) -> list[Any]:
    return [
        read if report.exact else submit(read_scanned, part, True, *scan)
        for part, read, report in zip(parts, reads, reports, strict=True)
    ]
