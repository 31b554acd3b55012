"""The Python API: ``from pipeline import clean, verify, verify_many``.

They run the engine the command line runs (:mod:`pipeline.core.assembly.build` builds it, the
streaming runner of :mod:`pipeline.stages.runner` cleans a list, on the job
:mod:`pipeline.stages.job` opens for both fronts), with the same settings: the defaults, then
``LISTCLEAN_<SECTION>_<KEY>`` environment variables, or a settings file or a
:class:`~pipeline.core.config.Config` you pass. They are plain functions that block until the
work is done, and they work from code that already runs an event loop (an ``async`` task, a
Jupyter cell): there the work runs in a worker thread with an event loop of its own, because a
thread runs one loop at a time. In ``async`` code, ``await asyncio.to_thread(clean, frame)``
keeps your own loop free meanwhile.

:func:`clean` takes a path (CSV, Parquet, xlsx, zip, gzip, a Parquet dataset, an ``s3://``
URL, read as ``listclean clean`` reads it), a polars or pandas DataFrame, a polars LazyFrame, a
pyarrow Table, or an iterable of address strings (:mod:`.kinds`); a frame is written once as
Parquet into a private temporary folder and read back enriched, and
:meth:`CleanResult.as_given` hands the rows back in the kind they came in. What must be fixed
first raises a :class:`~pipeline.core.errors.ListcleanError` whose message names keyword
arguments and settings, not the command line's flags (:mod:`.words`).

The shipped lists (and the public suffix list, the slow part) are loaded once a process, so
``verify()`` in a loop pays for its own work only; :func:`verify_many` checks many values on
one engine, each distinct domain once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, ParamSpec, TypedDict, TypeVar, cast

import polars as pl

from pipeline.api.kinds import ADDRESS_COLUMN, Kind, given_back, kind_of, write_parquet
from pipeline.api.words import reworded
from pipeline.core.assembly import build as assembly
from pipeline.core.assembly.build import EngineOptions
from pipeline.core.config import (
    Config,
    cache_root,
    load_config,
    method_keys,
    service_link_warning,
    service_links,
    setting_variables,
)
from pipeline.core.config import api_key as key_of
from pipeline.core.engine import Engine, verify_once
from pipeline.core.engine import verify_many as verify_all
from pipeline.core.errors import ListcleanError, UsageError
from pipeline.core.files.encodings import Decoding, codec_name
from pipeline.report import render_report
from pipeline.stages.history import plan_history
from pipeline.stages.job import CleanRequest, open_job
from pipeline.stages.runner import run_clean
from pipeline.stages.summary import RunSummary

__all__ = ["CleanResult", "Verification", "clean", "verify", "verify_many"]

T = TypeVar("T")
P = ParamSpec("P")
_log = logging.getLogger("listclean")
Settings = Config | str | Path | None
# verify_many() hands the engine this many values at a time: memory stays bounded however many
# are given, while each batch still checks its distinct domains concurrently.
VERIFY_BATCH: Final = 50_000


@dataclass(frozen=True)
class CleanResult:
    """What :func:`clean` gives back."""

    frame: pl.DataFrame  # every row kept, in input order: its columns, then the output schema's
    rejects: pl.DataFrame  # line (Int64), reason, raw: what could not be a row, and why
    summary: RunSummary  # counts, verdicts, reasons, timings; .as_dict() is summary.json
    given: Kind = field(default=Kind.POLARS, repr=False)  # the kind clean() was given

    def as_given(self) -> Any:
        """:attr:`frame` as the kind :func:`clean` was given: a pandas DataFrame for a pandas
        DataFrame, a pyarrow Table for Arrow, a LazyFrame for a LazyFrame, a list of dicts (one
        per row) for an iterable of addresses, else the polars DataFrame itself."""
        return given_back(self.frame, self.given)

    def write_report(self, path: str | Path) -> Path:
        """Write the run's HTML report (the page ``listclean clean`` writes beside its output,
        one self-contained file) to *path*; returns the path."""
        target = Path(path)
        target.write_text(render_report(self.summary.as_dict()), encoding="utf-8")
        return target


class Verification(TypedDict):
    """The service spec's fields for one address (or domain), plus REASON."""

    EMAIL: str
    VERDICT: str
    SCORE: float
    LOCAL: str
    DOMAIN: str
    DOMAIN_VERDICT: str
    MX: str
    HAS_SUSPECTED_BOUNCES: bool
    LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS: bool
    HAS_KNOWN_BOUNCES: bool
    DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS: bool
    SUGGESTION: str
    REASON: str
    DETAIL: str  # what explains the answer in words (a cleaned list's DETAIL)


def _in_api_words(call: Callable[P, T]) -> Callable[P, T]:
    """*call*, its ListcleanErrors saying keyword arguments and settings, not flags."""

    @functools.wraps(call)
    def worded(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return call(*args, **kwargs)
        except ListcleanError as exc:
            raise reworded(exc) from exc.__cause__

    return worded


@_in_api_words
def clean(
    data: Any,
    *,
    email_column: str | Sequence[str] | None = None,
    header_row: int | None = None,
    encoding: str | None = None,
    member: str | None = None,
    sheet: str | None = None,
    config: Settings = None,
    cache_dir: str | Path | None = None,
    offline: bool = False,
    api_key: str | None = None,
    list_name: str | None = None,
) -> CleanResult:
    """Clean a list: the path (or ``s3://`` URL) of a list file, a polars or pandas DataFrame,
    a polars LazyFrame, a pyarrow Table, or an iterable of address strings (a column named
    ``address``). :meth:`CleanResult.as_given` gives the rows back in the kind given.

    *email_column* names the column of addresses (default: found by its header or values, as
    the command line finds it), or several: the first is the list's, each further one gets
    ``<name>_VERDICT``, ``<name>_REASON`` and ``<name>_SUGGESTION``. *header_row* is the line
    (a sheet's row) the header is on (default: found below a report's title rows).
    *encoding* names a text file's encoding (``"cp1251"``; default:
    the ``input.encoding`` setting, else detected). *member* and *sheet* pick a zip's member and
    a workbook's sheet. *config* is a settings file or a Config (default: the defaults and
    ``LISTCLEAN_`` variables). *cache_dir* holds the caches the command line shares (default:
    the user's cache directory); *offline* skips DNS. *api_key* is the key of ``verify.mode =
    "api"`` or a paid verifier (default: ``LISTCLEAN_API_KEY``). A list read from a path is
    recorded in the run history, as the command line records it (under *list_name*, else
    ``[history] list_name``, else its file name without dates), and
    ``summary.since_last_run`` says what changed since its last run; a list given as data is
    recorded only under a *list_name* (it has no name of its own). Raises
    :class:`~pipeline.core.errors.ListcleanError` subclasses for what must be fixed first (an
    unreadable list, no email column, a bad setting, an unhealthy resolver).
    """
    kind = kind_of(data)
    settings = _settings(config)
    decoding = Decoding(
        codec_name(encoding) if encoding else settings.input.encoding,
        settings.input.encoding_margin,
    )
    named = [email_column] if isinstance(email_column, str) else list(email_column or [])
    if kind is Kind.ADDRESSES:
        named = named or [ADDRESS_COLUMN]
    first = named[0] if named else None
    asked = _Asked(first, decoding, member, sheet, header_row, tuple(named[1:]), list_name)
    access = _Access(cache_dir, offline, api_key)
    return _blocking(lambda: _clean(data, kind, asked, settings, access))


@_in_api_words
def verify(
    value: str,
    *,
    domain: bool = False,
    config: Settings = None,
    cache_dir: str | Path | None = None,
    offline: bool = False,
    api_key: str | None = None,
) -> Verification:
    """The spec's answer for one address, or for a bare domain with ``domain=True``."""
    _require_text(value, "verify(value=...)")
    settings = _settings(config)
    access = _Access(cache_dir, offline, api_key)

    def work() -> Verification:
        with contextlib.ExitStack() as stack:
            engine = _engine(stack, settings, access)
            record = asyncio.run(verify_once(engine, value, domain_mode=domain))
        return cast(Verification, record)

    return _blocking(work)


@_in_api_words
def verify_many(
    values: Iterable[str],
    *,
    domain: bool = False,
    config: Settings = None,
    cache_dir: str | Path | None = None,
    offline: bool = False,
    api_key: str | None = None,
) -> list[Verification]:
    """:func:`verify` for many addresses (or domains) on one engine, in their order: each
    distinct domain is checked once, the answers of the address checker in one plan."""
    given = list(values)
    for value in given:
        _require_text(value, "verify_many(values=...)")
    settings = _settings(config)
    access = _Access(cache_dir, offline, api_key)

    async def answers(engine: Engine) -> list[Verification]:
        found: list[Verification] = []
        try:
            for start in range(0, len(given), VERIFY_BATCH):
                batch = given[start : start + VERIFY_BATCH]
                records = await verify_all(engine, batch, domain_mode=domain, detailed=True)
                found.extend(cast(list[Verification], records))
        finally:
            await engine.dns.close()
        return found

    def work() -> list[Verification]:
        if not given:
            return []
        with contextlib.ExitStack() as stack:
            return asyncio.run(answers(_engine(stack, settings, access)))

    return _blocking(work)


@dataclass(frozen=True)
class _Asked:
    """What the caller asked of the reading: the email column, the encoding, the member."""

    email_column: str | None
    decoding: Decoding
    member: str | None
    sheet: str | None
    header_row: int | None = None
    further: tuple[str, ...] = ()
    list_name: str | None = None  # the list's name in the run history


@dataclass(frozen=True)
class _Access:
    """Where the engine keeps its caches and what it may reach."""

    cache_dir: str | Path | None
    offline: bool
    api_key: str | None


def _clean(data: Any, kind: Kind, asked: _Asked, config: Config, access: _Access) -> CleanResult:
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="listclean-api-")))
        source, label = str(data), None
        if kind is not Kind.PATH:
            write_parquet(data, kind, folder / "input.parquet")
            source, label = str(folder / "input.parquet"), _LABELS[kind]
        request = CleanRequest(
            source,
            str(folder / "out.parquet"),
            asked.email_column,
            member=asked.member,
            sheet=asked.sheet,
            memory_mb=config.run.memory,
            decoding=asked.decoding,
            label=label,
            header_row=asked.header_row,
            further=asked.further,
        )
        job = stack.enter_context(open_job(request, config.storage, config.read))
        engine = _engine(stack, config, access)
        history = None
        if label is None or asked.list_name:  # data given as such has no name of its own
            where = _domain_cache(config, access.cache_dir)
            history = plan_history(config, source, where, list_name=asked.list_name)
        summary = run_clean(job, engine, folder, history)
        frame = pl.read_parquet(job.output)
        rejects = pl.read_csv(job.paths.rejects, infer_schema=False)
    rejects = rejects.with_columns(pl.col("line").cast(pl.Int64))
    return CleanResult(frame, rejects, dataclasses.replace(summary, files={}), kind)


# How a summary names an input that was no file.
_LABELS: Final = {
    Kind.POLARS: "DataFrame",
    Kind.LAZY: "LazyFrame",
    Kind.PANDAS: "pandas DataFrame",
    Kind.ARROW: "Arrow table",
    Kind.ADDRESSES: "addresses",
}


def _require_text(value: object, where: str) -> None:
    if not isinstance(value, str):
        raise UsageError(
            f"{where} got {value!r:.60} ({type(value).__name__}): pass an address (or, with "
            "domain=True, a domain) as a string."
        )


def _engine(stack: contextlib.ExitStack, config: Config, access: _Access) -> Engine:
    # A routed vendor's key comes from its variable.
    keys = method_keys(config.verify.mode, access.api_key)
    options = EngineOptions(
        offline=access.offline, api_key=key_of(access.api_key), api_keys=keys, spent=0
    )
    return assembly.open_engine(stack, config, _domain_cache(config, access.cache_dir), options)


def _domain_cache(config: Config, cache_dir: str | Path | None) -> Path:
    """Where the command line keeps its domain cache, so both learn from each other."""
    return cache_root(cache_dir, config) / "domains.sqlite"


def _settings(config: Settings) -> Config:
    if isinstance(config, Config):
        return config
    path = Path(config) if config is not None else None
    if links := service_links(os.environ, setting_variables()):
        _log.warning("%s", service_link_warning(links, setting_variables()))
    return load_config(path, os.environ, setting_variables())


def _blocking(work: Callable[[], T]) -> T:
    """*work*'s result, run here, or in a worker thread when this thread runs an event loop
    (asyncio.run refuses to start a loop inside another)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return work()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="listclean") as pool:
        return pool.submit(work).result()
