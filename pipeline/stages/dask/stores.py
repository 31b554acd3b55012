"""Where the workers of a Dask run find the caches and stores, without the driver holding any.

Each store a worker needs lives in one of two shared forms:

- a **PostgreSQL database** when the store's setting names one: ``[cache] db`` for the domain
  cache and the mailbox cache (with the remote API's quota ledger), ``[vendor] db`` for the
  paid answers and their bulk jobs, ``[bounces] db`` for the bounce ledger. Every worker opens
  it (a small pool per worker process), as every host of a service does;
- otherwise **bucket tables on the run's shelf** (:mod:`pipeline.core.db.buckets`): a folder
  every worker reaches, ``[cache] shared`` (``file:///shared/path`` or ``s3://bucket/prefix``),
  else ``.listclean-cache/`` beside the output, on the shared path or in the object store the
  run already writes to. A worker reads and writes the buckets of what it works on. The bounce
  ledger, a file only the driver can read, is copied there as the flags it answers (a
  snapshot, page by page, removed when the run ends); it is read by the workers, never
  written.

A second run anywhere that reaches the same database or shelf finds what the first learned.
The sandbox's made-up answers are kept apart (``sandbox_`` tables, a ``sandbox/`` folder).

A worker process opens each store once per run (:func:`domain_store` and the others are cached
by the run's :class:`Stores`, which names the run).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipeline.core.bounces.ledger import BounceLedger, SnapshotFlags, write_snapshot
from pipeline.core.bounces.step import BounceSource
from pipeline.core.bounces.types import BounceFlags
from pipeline.core.config import BouncesConfig, CacheConfig, Config, VendorConfig, VerifyConfig
from pipeline.core.db.buckets import BucketTable, Shelf
from pipeline.core.db.database import is_url
from pipeline.core.domains.cache import DomainBuckets, DomainCache, DomainStore
from pipeline.core.mailboxes.cache import MailboxBuckets, MailboxCache, MailboxStore
from pipeline.core.mailboxes.vendors.store import PaidAnswers, PaidBuckets, PaidStore
from pipeline.stages.job import CleanJob
from pipeline.stages.objects import filesystem, is_object_url, local_path

SHELF = ".listclean-cache"  # beside the output, when [cache] shared names no folder


@dataclass(frozen=True)
class Stores:
    """Where one run's workers open each store: a database URL, or "" for the shelf."""

    run: str  # the run's id: its own folder on the shelf, and the workers' cache key
    shelf: Shelf
    caches: str  # [cache] db
    family: str  # the tables' prefix in a shared database ("sandbox_" for made-up answers)
    paid: str  # [vendor] db
    bounces: str  # [bounces] db; "" with bounce_snapshot: the flags copied to the shelf
    bounce_snapshot: bool
    cache: CacheConfig
    verify: VerifyConfig
    vendor: VendorConfig
    rules: BouncesConfig

    @property
    def own(self) -> Shelf:
        """The run's own folder on the shelf (its journal, its snapshot)."""
        return self.shelf / "runs" / self.run


def shelf_of(job: CleanJob, config: Config, sandbox: bool) -> Shelf:
    """The run's shelf: ``[cache] shared``, else ``.listclean-cache/`` beside the output."""
    given = config.cache.shared
    if given:
        shelf = (
            Shelf(given, filesystem(given, job.storage))
            if is_object_url(given)
            else Shelf(local_path(given))
        )
    elif job.paths.upload is not None:
        upload = job.paths.upload
        parent = upload.name(job.paths.parquet).rsplit("/", 1)[0]
        shelf = Shelf(f"{parent}/{SHELF}", upload.fs)
    else:
        shelf = Shelf(str(Path(job.paths.parquet).resolve().parent / SHELF))
    return shelf / "sandbox" if sandbox else shelf


@contextlib.contextmanager
def run_stores(
    job: CleanJob, config: Config, sandbox: bool, run: str, ledger: BounceLedger | None
) -> Iterator[Stores]:
    """The run's stores; its own folder on the shelf is removed when it ends."""
    shelf = shelf_of(job, config, sandbox)
    bounces = config.bounces.db if is_url(config.bounces.db) else ""
    stores = Stores(
        run,
        shelf,
        config.cache.db if is_url(config.cache.db) else "",
        "sandbox_" if sandbox else "",
        config.vendor.db if is_url(config.vendor.db) else "",
        bounces,
        False,
        config.cache,
        config.verify,
        config.vendor,
        config.bounces,
    )
    try:
        if ledger is not None and not bounces and write_snapshot(ledger, stores.own):
            stores = dataclasses.replace(stores, bounce_snapshot=True)
        yield stores
    finally:
        remove(stores.own)


def remove(shelf: Shelf) -> None:
    """*shelf*'s folder and all in it gone (a run's own folder, at its end)."""
    with contextlib.suppress(OSError):
        if shelf.fs is None:
            shutil.rmtree(shelf.root, ignore_errors=True)
        elif shelf.fs.exists(shelf.root):
            shelf.fs.rm(shelf.root, recursive=True)


@functools.lru_cache(maxsize=4)
def domain_store(stores: Stores) -> DomainStore:
    if stores.caches:
        return DomainCache(stores.caches, stores.cache, family=stores.family, size=4)
    return DomainBuckets(stores.shelf, stores.cache)


@functools.lru_cache(maxsize=4)
def mailbox_store(stores: Stores) -> MailboxStore:
    if stores.caches:
        return MailboxCache(stores.caches, stores.verify, family=stores.family)
    return MailboxBuckets(stores.shelf, stores.verify)


@functools.lru_cache(maxsize=4)
def paid_store(stores: Stores) -> PaidStore:
    floor = stores.verify.ttl_floor
    if stores.paid:
        return PaidAnswers(stores.paid, stores.vendor, floor=floor)
    return PaidBuckets(stores.shelf, stores.vendor, floor=floor)


@functools.lru_cache(maxsize=4)
def bounce_source(stores: Stores) -> BounceSource | None:
    """The ledger's flags: the shared ledger, its snapshot, or None (an empty ledger)."""
    if stores.bounces:
        return _Scoped(BounceLedger(stores.bounces, stores.rules))
    return _Scoped(SnapshotFlags(stores.own)) if stores.bounce_snapshot else None


class _Scoped:
    """A bounce source whose scope is read once per worker process and run."""

    def __init__(self, source: BounceSource) -> None:
        self._source = source

    def flags(self, keys: Iterable[str]) -> dict[str, BounceFlags]:
        return self._source.flags(keys)

    @functools.cached_property
    def _scope(self) -> tuple[set[str], set[str]]:
        return self._source.scope()

    def scope(self) -> tuple[set[str], set[str]]:
        return self._scope


def journal(stores: Stores) -> BucketTable:
    """The replies each address of the run got (by domain, then key; "" a domain's catch-all
    probe): how many, and the latest answer, kept as they come, so that an owner run again
    after its worker was lost knows what was spent and what was answered
    (see :mod:`.checks.owners`)."""
    key = ("domain", "key", "again")  # again: "1" for a reply that asked to be asked again
    values = {"replies": pl.Int64, "outcome": pl.String, "reply": pl.String, "at": pl.Float64}
    return BucketTable(stores.own, "replies", key, values)
