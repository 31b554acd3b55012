"""The Python API: ``from pipeline import clean, verify``.

Both run the engine the command line runs (:mod:`pipeline.core.assembly.build` builds it, the
streaming runner of :mod:`pipeline.stages.runner` cleans a list), with the same settings:
the defaults, then ``LISTCLEAN_<SECTION>_<KEY>`` environment variables, or a settings file or a
:class:`~pipeline.core.config.Config` you pass. They are plain functions that block until the
work is done, and they work from code that already runs an event loop (an ``async`` task, a
Jupyter cell): there the work runs in a worker thread with an event loop of its own, because a
thread runs one loop at a time. In ``async`` code, ``await asyncio.to_thread(clean, frame)``
keeps your own loop free meanwhile.

A frame given to :func:`clean` is written once as Parquet into a private temporary folder and
read back enriched, so any frame polars can write works, and memory holds the frame, its
enriched copy and one batch of the run. A path (CSV, Parquet, xlsx, zip, gzip, a Parquet
dataset, an ``s3://`` URL) is read as ``listclean clean`` reads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict, TypeVar, cast

import polars as pl

from pipeline.core.assembly import build as assembly
from pipeline.core.assembly.build import EngineOptions
from pipeline.core.config import (
    Config,
    api_key,
    cache_root,
    load_config,
    method_keys,
    service_link_warning,
    service_links,
    setting_variables,
)
from pipeline.core.engine import Engine, verify_once
from pipeline.core.files.encodings import Decoding, codec_name
from pipeline.stages.history import plan_history
from pipeline.stages.job import CleanRequest, open_job
from pipeline.stages.runner import run_clean
from pipeline.stages.summary import RunSummary

__all__ = ["CleanResult", "Verification", "clean", "verify"]

T = TypeVar("T")
_log = logging.getLogger("listclean")
Settings = Config | str | Path | None


@dataclass(frozen=True)
class CleanResult:
    """What :func:`clean` gives back."""

    frame: pl.DataFrame  # every row kept, in input order: its columns, then the output schema's
    rejects: pl.DataFrame  # line (Int64), reason, raw: what could not be a row, and why
    summary: RunSummary  # counts, verdicts, reasons, timings; .as_dict() is summary.json


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


def clean(
    data: pl.DataFrame | str | Path,
    *,
    email_column: str | None = None,
    config: Settings = None,
    cache_dir: str | Path | None = None,
    offline: bool = False,
    encoding: str | None = None,
    list_name: str | None = None,
) -> CleanResult:
    """Clean a list: a polars DataFrame, or the path (or ``s3://`` URL) of a list file.

    *email_column* names the column of addresses (default: found by its header or values, as
    the command line finds it). *encoding* names a text file's encoding (``"cp1251"``; default:
    the ``input.encoding`` setting, else detected, as the command line does). *config* is a
    settings file or a Config (default: the defaults and ``LISTCLEAN_`` variables). *cache_dir*
    holds the caches the command line shares (default: the user's cache directory); *offline*
    skips DNS. A list read from a path is recorded in the run history, as the command line
    records it (under *list_name*, else ``[history] list_name``, else its file name without
    dates), and ``summary.since_last_run`` says what changed since its last run; a DataFrame
    is recorded only under a *list_name* (it has no name of its own). Raises
    :class:`~pipeline.core.errors.ListcleanError` subclasses for what must be fixed first (an
    unreadable list, no email column, a bad setting, an unhealthy resolver).
    """
    settings = _settings(config)
    decoding = Decoding(
        codec_name(encoding) if encoding else settings.input.encoding,
        settings.input.encoding_margin,
    )
    job = _Asked(email_column, decoding, list_name)
    return _blocking(lambda: _clean(data, job, settings, cache_dir, offline))


def verify(
    value: str,
    *,
    domain: bool = False,
    config: Settings = None,
    cache_dir: str | Path | None = None,
    offline: bool = False,
) -> Verification:
    """The spec's answer for one address, or for a bare domain with ``domain=True``."""
    settings = _settings(config)

    def work() -> Verification:
        with contextlib.ExitStack() as stack:
            engine = _engine(stack, settings, cache_dir, offline)
            record = asyncio.run(verify_once(engine, value, domain_mode=domain))
        return cast(Verification, record)

    return _blocking(work)


@dataclass(frozen=True)
class _Asked:
    """What the caller asked of the reading: the email column, the encoding."""

    email_column: str | None
    decoding: Decoding
    list_name: str | None = None


def _clean(
    data: pl.DataFrame | str | Path,
    asked: _Asked,
    config: Config,
    cache_dir: str | Path | None,
    offline: bool,
) -> CleanResult:
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="listclean-api-")))
        label = None
        if isinstance(data, pl.DataFrame):
            data.write_parquet(folder / "input.parquet")
            data, label = folder / "input.parquet", "DataFrame"
        request = CleanRequest(
            str(data),
            str(folder / "out.parquet"),
            asked.email_column,
            memory_mb=config.run.memory,
            decoding=asked.decoding,
            label=label,
        )
        job = stack.enter_context(open_job(request, config.storage, config.read))
        engine = _engine(stack, config, cache_dir, offline)
        history = None
        if label is None or asked.list_name:  # a DataFrame has no name of its own
            where = _domain_cache(config, cache_dir)
            history = plan_history(config, str(data), where, list_name=asked.list_name)
        summary = run_clean(job, engine, folder, history)
        frame = pl.read_parquet(job.output)
        rejects = pl.read_csv(job.paths.rejects, infer_schema=False)
    rejects = rejects.with_columns(pl.col("line").cast(pl.Int64))
    return CleanResult(frame, rejects, dataclasses.replace(summary, files={}))


def _engine(
    stack: contextlib.ExitStack, config: Config, cache_dir: str | Path | None, offline: bool
) -> Engine:
    keys = method_keys(config.verify.mode)  # a routed vendor's key comes from its variable
    options = EngineOptions(offline=offline, api_key=api_key(), api_keys=keys, spent=0)
    return assembly.open_engine(stack, config, _domain_cache(config, cache_dir), options)


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
