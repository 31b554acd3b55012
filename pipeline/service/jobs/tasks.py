"""The short tasks of bulk jobs, run in the jobs' worker processes (never in the service's):
reading an uploaded list as ``clean`` would before any work (:func:`inspect`), and making a
download format from the Parquet a job wrote (:func:`convert`).

Both go through the same code as ``clean``: the list is opened by ``open_job`` and the
runner's ``open_reader`` (kind, encoding, delimiter, email column, and the same refusals), and
a CSV or a workbook is written by the sinks ``clean`` writes them with, from the rows of the
Parquet output, row group by row group. A refusal comes back as a problem document.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import polars as pl
import pyarrow.parquet as pq

from pipeline.core.config import Config, StorageConfig, build
from pipeline.core.errors import (
    InputError,
    ListcleanError,
    ResolverUnhealthyError,
    SmtpUnavailableError,
    UsageError,
    VendorUnavailableError,
)
from pipeline.core.files.encodings import Decoding, codec_name
from pipeline.core.schema import OUTPUT_COLUMNS
from pipeline.core.text import decode_utf8, invalid_at
from pipeline.service.errors import (
    ChecksUnavailable,
    ConflictingParameters,
    InternalError,
    InvalidParameter,
    MissingParameter,
    Problem,
    UnreadableList,
)
from pipeline.service.jobs.storage import OUTPUT, Storage
from pipeline.service.jobs.types import OPTION_NAMES, JobOptions
from pipeline.stages.job import CleanRequest, open_job
from pipeline.stages.runner import open_reader
from pipeline.stages.write.formats import EXCEL_MAX_ROWS, OutputFormat, too_many_rows
from pipeline.stages.write.outputs import OutputPaths
from pipeline.stages.write.publish import Publication
from pipeline.stages.write.sinks import open_sink

# The column a JSON body's addresses are written in (a header clean finds as the email column).
ADDRESS_COLUMN: Final = "Email Address"


def problem_of(exc: BaseException) -> dict[str, Any]:
    """The problem document an error of a job's work is answered with: a list ``clean`` cannot
    read is a 422 and an option it refuses a 400, each with ``clean``'s own sentence; checks
    that cannot be made (the resolver, the mail servers) a 503; anything else a 500 that says
    nothing of the cause (the service's log names it)."""
    problem: Problem
    if isinstance(exc, InputError):
        problem = UnreadableList(str(exc))
    elif isinstance(exc, UsageError):
        problem = InvalidParameter(str(exc))
    elif isinstance(exc, ResolverUnhealthyError | SmtpUnavailableError | VendorUnavailableError):
        problem = ChecksUnavailable(str(exc))
    else:
        problem = InternalError("The job failed on the service's side; it was not charged.")
    return problem.body()


def settings_of(config: Config) -> dict[str, Any]:
    """The engine's settings as a process hands them to another (plain JSON values)."""
    plain: dict[str, Any] = json.loads(json.dumps(dataclasses.asdict(config)))
    return plain


def ready(_: object = None) -> bool:
    """Nothing: a pool process that answers has imported what the tasks need."""
    return True


def config_of(data: Mapping[str, Any]) -> Config:
    """The engine's settings as the service handed them over (``dataclasses.asdict``)."""
    return build(Config, dict(data), "the service's settings")


def clean_request(
    input_text: str, output: str, options: JobOptions, config: Config, label: str
) -> CleanRequest:
    """``clean``'s request for a job's list and options."""
    encoding = codec_name(options.encoding) if options.encoding else config.input.encoding
    return CleanRequest(
        input_text,
        output,
        options.email_columns[0] if options.email_columns else None,
        split=options.split,
        member=options.member,
        sheet=options.sheet,
        memory_mb=config.run.memory,
        decoding=Decoding(encoding, config.input.encoding_margin),
        label=label,
        header_row=options.header_row,
        further=options.email_columns[1:],
    )


@dataclass(frozen=True)
class InspectTask:
    """Read the uploaded list at *path* (a local file) as ``clean`` would, before any work."""

    path: str
    name: str  # as the caller named it
    options: JobOptions
    config: dict[str, Any]
    preview: int = 0  # first rows to hand back (the page shows them)


def inspect(task: InspectTask) -> dict[str, Any]:
    """What the list is (kind, encoding, columns, email column and why, rows when counted),
    or ``{"problem": ...}`` with ``clean``'s reason for refusing it."""
    try:
        with _scratch() as folder:
            config = config_of(task.config)
            output = str(folder / "out.parquet")
            request = clean_request(task.path, output, task.options, config, task.name)
            spill = folder / "spill"
            spill.mkdir()
            with open_job(request, config.storage, config.read) as job:
                reader = open_reader(job, spill)
                return _described(reader, task.preview)
    except (ListcleanError, pl.exceptions.PolarsError, OSError) as exc:
        return {"problem": problem_of(exc)}


def addresses(path: str) -> dict[str, Any]:
    """A JSON body ``{"addresses": [...], <options>}`` (the file at *path*) as a list: the
    addresses written beside it as ``addresses.parquet`` (one column, ``Email Address``, each
    value exactly as sent), and the options as a form's fields; or ``{"problem": ...}``."""
    try:
        members = _json_object(Path(path).read_bytes())
        values = members.pop("addresses", None)
        if values is None:
            raise MissingParameter('Send the addresses as {"addresses": ["a@example.com", ...]}.')
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise InvalidParameter("addresses must be an array of strings.")
        _check_text(values)
        target = Path(path).with_name("addresses.parquet")
        column = {ADDRESS_COLUMN: pl.String}
        pl.DataFrame({ADDRESS_COLUMN: values}, schema=column).write_parquet(target)
        return {"path": str(target), "fields": _fields(members)}
    except Problem as problem:
        return {"problem": problem.body()}


def _json_object(raw: bytes) -> dict[str, Any]:
    text = decode_utf8(raw)
    if isinstance(text, int):
        raise InvalidParameter(f"The JSON body is not valid UTF-8 (byte {text}); send UTF-8.")
    try:
        data = json.loads(text, object_pairs_hook=_unique)
    except RecursionError as exc:
        raise InvalidParameter("The JSON body is nested too deeply.") from exc
    except json.JSONDecodeError as exc:  # its message gives a position, never the text
        raise InvalidParameter(f"The JSON body cannot be parsed: {exc}.") from exc
    except ValueError as exc:
        raise InvalidParameter("The JSON body holds a number too long to read.") from exc
    if not isinstance(data, dict):
        raise InvalidParameter('The JSON body must be an object: {"addresses": [...]}.')
    return data


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ConflictingParameters("A name appears more than once in a JSON object.")
    return dict(pairs)


def _check_text(value: Any) -> None:
    """No text in *value* holds a lone surrogate (a \\ud800 escape that is no pair's half)."""
    texts = [value] if isinstance(value, str) else []
    if isinstance(value, dict):
        texts = list(value)
        for inner in value.values():
            _check_text(inner)
    elif isinstance(value, list):
        for inner in value:
            _check_text(inner)
    if any(invalid_at(t) is not None for t in texts):
        raise InvalidParameter("The JSON body holds a lone surrogate escape; send Unicode text.")


def _fields(members: dict[str, Any]) -> dict[str, list[str]]:
    """The options of a JSON body as a form sends them: text values (a flag as true or
    false; email_column as one text or an array of texts)."""
    fields: dict[str, list[str]] = {}
    for name, value in members.items():
        if name not in OPTION_NAMES:  # unknown members are ignored, whatever they hold
            continue
        _check_text(value)
        values = value if name == "email_column" and isinstance(value, list) else [value]
        texts = []
        for item in values:
            if isinstance(item, bool):
                texts.append("true" if item else "false")
            elif isinstance(item, str):
                texts.append(item)
            elif item is not None:
                raise InvalidParameter(f"{name} must be a string in the JSON body.")
        fields[name] = texts
    return fields


def _described(reader: Any, preview: int) -> dict[str, Any]:
    email = reader.email
    found = {
        "format": reader.info.format,
        "compression": reader.info.compression,
        "encoding": reader.encoding if reader.info.format != "xlsx" else "",
        "delimiter": reader.delimiter if reader.info.format != "xlsx" else "",
        "columns": list(reader.schema),
        "email_column": reader.email_column,
        "email_column_rule": email.rule,
        "email_column_why": email.why,
        "rows": reader.known_rows,
        "rows_expected": reader.expected_rows,
    }
    if preview:
        found["preview"] = _first_rows(reader, preview)
    return found


def _first_rows(reader: Any, count: int) -> list[list[str]]:
    """The list's first *count* rows, every cell as text (null as "")."""
    batches = reader.batches(max(count, 1))
    try:
        batch = next(batches, None)
    finally:
        batches.close()
    if batch is None:
        return []
    frame = batch.frame.head(count)
    texts = frame.select(pl.all().cast(pl.String).fill_null(""))
    return [list(map(str, row)) for row in texts.iter_rows()]


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="listclean-job-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass(frozen=True)
class ConvertTask:
    """Make *target* (a file of the job's ``out/`` folder) in *fmt* from the Parquet *source*
    the job wrote there."""

    root: str
    storage: dict[str, Any]
    job_id: str
    source: str
    target: str
    fmt: str


def convert(task: ConvertTask) -> dict[str, Any]:
    """``{}`` once *target* is in the job's storage, or ``{"problem": ...}``."""
    storage = Storage(task.root, build_storage(task.storage))
    try:
        with _scratch() as folder:
            local = folder / task.target
            with storage.open(task.job_id, OUTPUT, task.source) as handle:
                _write_as(pq.ParquetFile(handle), local, OutputFormat(task.fmt))
            storage.put(local, task.job_id, OUTPUT, task.target)
    except (ListcleanError, pl.exceptions.PolarsError, OSError) as exc:
        return {"problem": problem_of(exc)}
    return {}


def build_storage(data: Mapping[str, Any]) -> StorageConfig:
    return build(StorageConfig, dict(data), "[storage]")


def _write_as(source: pq.ParquetFile, target: Path, fmt: OutputFormat) -> None:
    """The rows of *source* written to *target* in *fmt* by ``clean``'s sink for it."""
    rows = source.metadata.num_rows
    if fmt is OutputFormat.XLSX and rows > EXCEL_MAX_ROWS:
        raise too_many_rows(rows)
    empty = pl.from_arrow(source.schema_arrow.empty_table())
    assert isinstance(empty, pl.DataFrame)
    schema = empty.schema
    names, fields = list(schema), list(OUTPUT_COLUMNS)
    # The list's own columns, the output's, then the further address columns' fields.
    start = next(i for i in range(len(names)) if names[i : i + len(fields)] == fields)
    originals = {n: schema[n] for n in names[:start]}
    further = {n: schema[n] for n in names[start + len(fields) :]}
    paths = OutputPaths.for_output(target, fmt=fmt)
    publication = Publication(None, str)
    with open_sink(paths, originals, further=further) as sink:
        for index in range(source.num_row_groups):
            frame = pl.from_arrow(source.read_row_group(index))
            assert isinstance(frame, pl.DataFrame)
            sink.write(frame)
        sink.stage(publication)
        publication.commit()
