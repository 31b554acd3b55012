"""A job's upload: its body read to a file within the size limit and a minimum transfer rate,
and its options read as ``clean``'s.

An upload takes as long as the list is large and the line is slow, so it has no fixed body
timeout (the service's ``body_timeout`` does not apply under ``/api/jobs``): it must keep up
``[jobs] min_upload_rate`` bytes a second over each ``upload_window``, and stay within
``max_upload_bytes``; a ``Content-Length`` over the limit is refused before a byte is read.
The body is a multipart form (RFC 7578) whose ``file`` field is the list and whose other
fields are options, or a JSON object ``{"addresses": [...], <options>}`` (at most
:data:`JSON_MOST` bytes: it is parsed whole).
"""

from __future__ import annotations

import asyncio
import re
import time
import unicodedata
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Final, TypeVar

from aiohttp import BodyPartReader, web
from aiohttp.http_exceptions import HttpProcessingError

from pipeline.core.config import JobsConfig
from pipeline.core.errors import UsageError
from pipeline.core.files.encodings import codec_name
from pipeline.core.text import invalid_at
from pipeline.service.connections.admission import BodyTimeout
from pipeline.service.errors import (
    ConflictingParameters,
    InvalidParameter,
    MissingParameter,
    RequestTimeout,
    TooLarge,
    UnsupportedMediaType,
)
from pipeline.service.jobs.types import OPTION_NAMES, JobOptions

T = TypeVar("T")
JSON_MOST: Final = 64 * 2**20  # a JSON body is parsed whole: send a file for more
CHUNK: Final = 1 << 16
FIELD_MOST: Final = 4096  # bytes of an option's value
FIELDS_MOST: Final = 32  # fields of one form
JSON_NAME: Final = "addresses.json"
# Suffixes a list's name loses for the name of what a job writes (list.csv.gz: list.clean...).
_SUFFIXES: Final = {".csv", ".tsv", ".txt", ".xlsx", ".parquet", ".zip", ".gz", ".bz2", ".zst"}
_UNSAFE: Final = re.compile(r"[^A-Za-z0-9._-]+")

Fields = dict[str, list[str]]  # an option's name -> its values, in the order sent


@dataclass
class Received:
    """What an upload brought: the list (written to *path*) and the option fields."""

    path: Path
    name: str  # the list's name as the caller gave it ("" for a JSON body)
    size: int
    fields: Fields = field(default_factory=dict)
    json: bool = False


class Pace:
    """The upload's reader: each read must come within the window, and each window must
    bring ``min_rate`` bytes a second; the whole at most ``most`` bytes."""

    def __init__(
        self, settings: JobsConfig, most: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._rate = settings.min_upload_rate
        self._window = settings.upload_window
        self._most = most
        self._clock = clock
        self._start = clock()
        self._in_window = 0
        self.total = 0

    async def read(self, chunk: Callable[[], Awaitable[bytes]]) -> bytes:
        """The next chunk of the body, counted."""
        data = await self.within(chunk)
        self._count(len(data))
        return data

    async def within(self, step: Callable[[], Awaitable[T]]) -> T:
        """*step* (a read of the body), awaited within the pace: a window that ends with too
        few bytes in it is the 408."""
        while True:
            deadline = self._start + self._window
            try:
                async with asyncio.timeout(max(0.0, deadline - self._clock())):
                    result = await step()
            except TimeoutError:
                self._next_window()
                continue
            except BodyTimeout as exc:
                raise RequestTimeout(str(exc)) from exc
            except (web.RequestPayloadError, HttpProcessingError) as exc:
                raise InvalidParameter("The request body cannot be read as sent.") from exc
            if self._clock() >= deadline:
                self._next_window()
            return result

    def _count(self, size: int) -> None:
        self.total += size
        self._in_window += size
        if self.total > self._most:
            raise too_large(self._most)

    def _next_window(self) -> None:
        needed = self._rate * self._window
        if self._in_window < needed:
            raise RequestTimeout(
                f"The upload brought {self._in_window:,} bytes in {self._window:g} seconds; it "
                f"must keep up {self._rate:,} bytes a second ([jobs] min_upload_rate)."
            )
        self._start, self._in_window = self._clock(), 0


def too_large(most: int) -> TooLarge:
    return TooLarge(
        f"The upload is larger than {most:,} bytes, the most a job takes "
        "([jobs] max_upload_bytes); split the list, or pack it (zip, gzip)."
    )


def check_length(request: web.Request, most: int) -> None:
    """A declared length over the limit is refused before a byte is read."""
    if request.content_length is not None and request.content_length > most:
        raise too_large(most)


async def receive(request: web.Request, settings: JobsConfig, folder: Path) -> Received:
    """The upload of *request* into *folder*: a multipart form's ``file``, or a JSON body. An
    upload cut off for its pace or its size is not read on after the answer (aiohttp would
    linger over its body for seconds, reading what a stalled client no longer sends)."""
    try:
        return await _receive(request, settings, folder)
    except (RequestTimeout, TooLarge) as refused:
        request.content.set_exception(BodyTimeout(refused.detail))
        raise


async def _receive(request: web.Request, settings: JobsConfig, folder: Path) -> Received:
    folder.mkdir(parents=True, exist_ok=True)
    kind = request.content_type
    if kind == "application/json":
        most = min(settings.max_upload_bytes, JSON_MOST)
        check_length(request, most)
        path = folder / JSON_NAME
        pace = Pace(settings, most)
        with path.open("wb") as out:
            while data := await pace.read(lambda: request.content.read(CHUNK)):
                out.write(data)
        return Received(path, "", pace.total, json=True)
    if kind != "multipart/form-data":
        raise UnsupportedMediaType(
            "Send the list as multipart/form-data (its file in the field file) or a JSON "
            'object {"addresses": [...]} as application/json.'
        )
    check_length(request, settings.max_upload_bytes)
    return await _form(request, settings, folder)


async def _form(request: web.Request, settings: JobsConfig, folder: Path) -> Received:
    pace = Pace(settings, settings.max_upload_bytes)
    try:
        reader = await request.multipart()
    except (ValueError, AssertionError) as exc:
        raise InvalidParameter("The multipart body cannot be read: check its boundary.") from exc
    received: Received | None = None
    fields: Fields = {}
    count = 0
    while True:
        try:
            part = await pace.within(reader.next)
        except ValueError as exc:
            raise InvalidParameter("The multipart body cannot be read as sent.") from exc
        if part is None:
            break
        count += 1
        if count > FIELDS_MOST:
            raise InvalidParameter(f"A job's form has at most {FIELDS_MOST} fields.")
        if not isinstance(part, BodyPartReader):
            raise InvalidParameter("A job's form holds fields, not forms of its own.")
        name = part.name or ""
        if name == "file":
            if received is not None:
                raise ConflictingParameters("file appears twice; send one list per job.")
            filename = part.filename or "list"
            path = folder / safe_name(filename)
            with path.open("wb") as out:
                await _copy(part, pace, out)
            received = Received(path, filename, pace.total)
        else:
            value = await _field(part, pace)
            fields.setdefault(name, []).append(value)
    if received is None:
        raise MissingParameter("Send the list in the form's field file.")
    received.fields = fields
    return received


async def _copy(part: BodyPartReader, pace: Pace, out: IO[bytes]) -> None:
    read = part.read_chunk
    while data := await pace.read(lambda: read(CHUNK)):
        out.write(data)


async def _field(part: BodyPartReader, pace: Pace) -> str:
    read = part.read_chunk
    raw = b""
    while data := await pace.read(lambda: read(CHUNK)):
        raw += data
        if len(raw) > FIELD_MOST:
            raise InvalidParameter(f"A form field is longer than {FIELD_MOST} bytes.")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidParameter("A form field is not UTF-8 text.") from exc
    return text


def safe_name(name: str) -> str:
    """*name* (a caller's file name) as a file name that is safe anywhere: its last part,
    letters, digits, dots, dashes and underscores, no leading dot, at most 120 characters."""
    base = PurePosixPath(name.replace("\\", "/")).name
    ascii_name = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode()
    safe = _UNSAFE.sub("_", ascii_name).lstrip(".")[-120:]
    return safe or "list"


def stem_of(name: str) -> str:
    """The name a job writes its files under: the list's, less its format's suffixes."""
    stem = safe_name(name)
    for _ in range(2):
        suffix = PurePosixPath(stem).suffix.lower()
        if suffix in _SUFFIXES and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
    return stem


def options_of(fields: Fields, modes: tuple[str, ...], reach: str, longest: int) -> JobOptions:
    """The job's options from the form's (or the JSON body's) fields, checked: *modes* are the
    ``verify`` values this service allows, *reach* its ``[jobs] callbacks``, *longest* the
    longest value it takes. Unknown fields are ignored."""
    for name in OPTION_NAMES:
        values = fields.get(name, [])
        if name != "email_column" and len(values) > 1:
            raise ConflictingParameters(f"{name} appears {len(values)} times; send it once.")
        for value in values:
            if len(value) > longest or invalid_at(value) is not None:
                raise InvalidParameter(f"{name} must be text of at most {longest} characters.")
    one = {name: values[0] for name, values in fields.items() if values}
    columns = tuple(fields.get("email_column", []))
    if len(set(columns)) < len(columns):
        raise ConflictingParameters("email_column names a column twice; name each once.")
    return JobOptions(
        email_columns=columns,
        encoding=_encoding(one.get("encoding")),
        header_row=_header_row(one.get("header_row")),
        sheet=one.get("sheet") or None,
        member=one.get("member") or None,
        verify=_verify(one.get("verify"), modes),
        split=_flag(one.get("split"), "split"),
        callback_url=_callback(one.get("callback_url"), reach),
    )


def _encoding(value: str | None) -> str | None:
    if not value:
        return None
    try:
        return codec_name(value)
    except UsageError as exc:
        raise InvalidParameter(str(exc).replace("--encoding", "encoding")) from exc


def _header_row(value: str | None) -> int | None:
    """The line (a sheet's row) the header starts on, counted from 1, as ``--header-row``."""
    if value is None or value.strip() == "":
        return None
    try:
        row = int(value.strip())
    except ValueError:
        row = 0
    if row < 1:
        raise InvalidParameter(
            f"header_row counts lines from 1 (the header's line, or a sheet's row), "
            f"got {value.strip()[:40]!r}; leave it out to have the header found."
        )
    return row


def _verify(value: str | None, modes: tuple[str, ...]) -> str | None:
    if not value:
        return None
    if value not in modes:
        raise InvalidParameter(
            f"verify may be {' or '.join(modes)} on this service (its [verify] mode decides "
            "what else it can check)."
        )
    return value


def _flag(value: str | None, name: str) -> bool:
    if value is None or value == "":
        return False
    if value not in ("true", "false"):
        raise InvalidParameter(f"{name} must be true or false.")
    return value == "true"


def _callback(value: str | None, reach: str) -> str | None:
    if not value:
        return None
    if reach == "off":
        raise InvalidParameter("This service sends no callbacks ([jobs] callbacks = off).")
    parts = urllib.parse.urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username:
        raise InvalidParameter("callback_url must be an http or https URL with a host.")
    return value
