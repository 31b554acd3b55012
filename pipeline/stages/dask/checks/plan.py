"""What the workers compute so that the driver can share out a budget from tallies alone.

1. :func:`candidate_pieces`, on each part's worker: the part's addresses worth a check (the
   local engine's :func:`~pipeline.stages.steps.probe_candidates`, with the bounce ledger's
   flags), narrow, split into key buckets by the CRC-32 the shared caches bucket their keys by.
2. :func:`settle`, one task per key bucket and method: which candidates the caches answer (the
   mailbox cache, a remote API's answers, the paid answers; a vendor's bulk jobs left open),
   which are open (to be asked), and :func:`tally`: one row per domain (its candidates, its
   first row, how many are open).
3. :func:`rank`, one task: the tallies merged and ranked by the local engine's rule
   (:func:`~pipeline.core.mailboxes.step.rank_domains`), with each domain's catch-all finding
   if the cache has one. The driver shares the budget out over that (a frame of domains) with
   the local engine's :func:`~pipeline.core.mailboxes.step.cut`, and asks
   :func:`first_rows` where a domain is reached only in part.
4. :func:`targets_of`: each bucket's reached candidates, one frame per owner; :func:`fixed`:
   the answers nobody has to ask for (the cache's, and "not verified" for what the budget does
   not reach). The owners' answers come from :mod:`.owners`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipeline.core.bounces.step import attach_bounces
from pipeline.core.config import ListsConfig
from pipeline.core.db.buckets import with_buckets
from pipeline.core.domains.dns import DnsStatus
from pipeline.core.mailboxes.checkers import NOT_VERIFIED_REMOTE, not_verified
from pipeline.core.mailboxes.step import GOOD_DOMAIN, mailbox_table, rank_domains, remote_table
from pipeline.core.mailboxes.types import Target
from pipeline.core.mailboxes.vendors.checker import (
    RoutedChecker,
    beyond_balance,
    beyond_budget,
    vendor_table,
)
from pipeline.core.mailboxes.vendors.types import VendorAnswer
from pipeline.stages.base import Batch
from pipeline.stages.dask.shuffle import ROW
from pipeline.stages.dask.sizes import size_of
from pipeline.stages.dask.stores import Stores, bounce_source, mailbox_store, paid_store
from pipeline.stages.dask.tasks import worker_lists
from pipeline.stages.steps import probe_candidates

RANK = "_RANK"  # a domain's place in the priority order
METHOD = "_METHOD"  # the method a routed run checks a candidate with
_OPEN = "_OPEN"  # asked by this run, if the budget reaches it
_HELD = "_HELD"  # held by a vendor's bulk job a run left open: collected, whatever the budget
_COLUMNS = ("KEY", "EMAIL", "DOMAIN", "DNS_STATUS", "MX", "SYNTAX", ROW)


@dataclass(frozen=True)
class Method:
    """One way of checking addresses, as the workers need to know it."""

    name: str  # the method ("smtp", "api", a vendor's name)
    kind: str  # "smtp" | "api" | "vendor"
    api: str = ""  # a remote API's URL: its answers are kept per URL
    key_fp: str = ""  # a vendor's key, as its open jobs name it


@dataclass(frozen=True)
class Routes:
    """A routed run's routes (provider -> method) and the method of every other provider."""

    routes: Mapping[str, str]
    default: str


def candidate_pieces(
    part: Batch,
    table: pl.DataFrame,
    stores: Stores,
    buckets: int,
    routes: Routes | None,
    lists: ListsConfig,
) -> list[pl.DataFrame]:
    """The part's candidates, narrow, one frame per key bucket."""
    rows = attach_bounces(bounce_source(stores), probe_candidates(part.work, table))
    flags = [
        (pl.col(c).fill_null(False) if c in rows.columns else pl.lit(False)).alias(c)
        for c in ("LEDGER_KNOWN", "LEDGER_DELIVERED")
    ]
    narrow = rows.select(*_COLUMNS, GOOD_DOMAIN.alias("_good"), *flags)
    if routes is not None:
        router = RoutedChecker(routes.routes, routes.default, {})
        narrow = narrow.with_columns(router.methods(rows, worker_lists(lists)).alias(METHOD))
    bucketed = with_buckets(narrow, "KEY")
    bucket = bucketed.get_column("_bucket") % buckets
    return [bucketed.filter(bucket == b).drop("_bucket") for b in range(buckets)]


@dataclass(frozen=True)
class Settled:
    """A key bucket's candidates of one method (with _OPEN and _HELD), and the answers the
    caches hold for them, as a table by KEY."""

    rows: pl.DataFrame
    cached: pl.DataFrame

    def __sizeof__(self) -> int:
        return size_of(self.rows) + size_of(self.cached) + 64


def settle(method: Method, stores: Stores, *pieces: pl.DataFrame) -> Settled:
    """Which of the bucket's candidates the caches answer, and which are open."""
    rows = pl.concat(pieces, how="vertical") if pieces else pl.DataFrame()
    if METHOD in rows.columns:
        rows = rows.filter(pl.col(METHOD) == method.name)
    keys = rows.get_column("KEY").to_list() if rows.height else []
    held: set[str] = set()
    bounced: set[str] = set()
    if method.kind == "smtp":
        table = mailbox_table(mailbox_store(stores).get_many(keys))
    elif method.kind == "api":
        table = remote_table(mailbox_store(stores).remote_answers(keys, method.api))
    else:  # a paid verifier is never asked about a known bounce
        bounced = set(rows.filter(pl.col("LEDGER_KNOWN")).get_column("KEY").to_list())
        store = paid_store(stores)
        table = vendor_table(store.answers([k for k in keys if k not in bounced]))
        jobs = store.open_jobs(method.name, method.key_fp)
        held = {k for job in jobs for k, _ in job.targets}
    answered = set(table.get_column("KEY").to_list())
    if rows.height:
        key = pl.col("KEY")
        settled = list(answered | bounced)
        rows = rows.with_columns(
            key.is_in(list(answered)).alias("_cached"),
            key.is_in(list(bounced)).alias("_bounced"),
            (key.is_in(list(held)) & ~key.is_in(settled)).alias(_HELD),
            (~key.is_in(settled) & ~key.is_in(list(held))).alias(_OPEN),
        )
    return Settled(rows, table)


_COUNTS = ("_size", "_open", "_held", "_cached", "_bounced")


def tally(settled: Settled) -> pl.DataFrame:
    """One row per domain: its mail host, whether it looks good, its first row, its
    candidates (_size) and how many are open, held by a vendor's job, answered by the cache,
    or known bounces."""
    rows = settled.rows
    if not rows.height:
        return pl.DataFrame()
    return (
        rows.group_by("DOMAIN")
        .agg(
            pl.col("MX").first(),
            pl.col("_good").first(),
            pl.col(ROW).min().alias("_first"),
            pl.len().alias("_size"),
            *(pl.col(c).sum() for c in (_OPEN, _HELD, "_cached", "_bounced")),
        )
        .rename({_OPEN: "_open", _HELD: "_held"})
    )


def rank(method: Method, stores: Stores, *tallies: pl.DataFrame) -> pl.DataFrame:
    """The domains in the local engine's priority order (RANK) with their counts, and (SMTP)
    whether the cache knows if they accept any address (_known)."""
    found = [t for t in tallies if t.height]
    if not found:
        return pl.DataFrame()
    merged = (
        pl.concat(found, how="vertical")
        .group_by("DOMAIN")
        .agg(
            pl.col("MX").first(),
            pl.col("_good").first(),
            pl.col("_first").min(),
            *(pl.col(c).sum() for c in _COUNTS),
        )
    )
    ranked = rank_domains(merged).with_row_index(RANK)
    known: set[str] = set()
    if method.kind == "smtp":
        asked = ranked.filter(pl.col("_open") > 0).get_column("DOMAIN").to_list()
        known = set(mailbox_store(stores).catch_all(asked))
    known_column = pl.col("DOMAIN").is_in(list(known)).alias("_known")
    return ranked.select(RANK, "DOMAIN", "MX", *_COUNTS, known_column)


def first_rows(settled: Settled, domain: str, count: int) -> list[int]:
    """The rows of the bucket's first *count* open candidates of *domain*."""
    rows = settled.rows
    if not rows.height:
        return []
    found = rows.filter(pl.col(_OPEN) & (pl.col("DOMAIN") == domain)).get_column(ROW)
    return found.sort().head(count).to_list()


@dataclass(frozen=True)
class Reach:
    """What the budget reaches, per domain: its rank, its owner, and up to which row each cut
    reaches it (None: all of it). Cut 0 is what is asked; a vendor's cut 1 is its budget
    without its balance (what only the balance leaves out is ``not_verified_credits``)."""

    domains: Mapping[str, tuple[int, int, tuple[int | None, ...]]]
    balance: int | None = None


def _reached(rows: pl.DataFrame, reach: Reach, cut: int) -> pl.Series:
    """Which of *rows* (open candidates) cut *cut* reaches."""
    limits = {d: entry[2][cut] for d, entry in reach.domains.items()}
    unlimited = [d for d, limit in limits.items() if limit is None]
    limited = pl.DataFrame(
        {"DOMAIN": [d for d, lim in limits.items() if lim is not None],
         "_limit": [lim for lim in limits.values() if lim is not None]},
        schema={"DOMAIN": pl.String, "_limit": pl.Int64},
    )  # fmt: skip
    joined = rows.select("DOMAIN", ROW).join(
        limited, on="DOMAIN", how="left", maintain_order="left"
    )
    under = (pl.col(ROW).cast(pl.Int64) <= pl.col("_limit")).fill_null(False)
    within = pl.col("DOMAIN").is_in(unlimited) | under
    return rows.get_column(_OPEN) & joined.select(within).to_series()


def targets_of(settled: Settled, reach: Reach, owners: int) -> list[pl.DataFrame]:
    """The bucket's reached candidates (and a vendor's held ones), one frame per owner."""
    rows = settled.rows
    if not rows.height:
        return [pl.DataFrame()] * owners
    asked = rows.filter(_reached(rows, reach, 0) | pl.col(_HELD))
    entries = reach.domains
    asked = asked.with_columns(
        pl.col("DOMAIN").replace_strict({d: e[0] for d, e in entries.items()}, default=-1)
        .cast(pl.Int64).alias(RANK),
        pl.col("DOMAIN").replace_strict({d: e[1] for d, e in entries.items()}, default=0)
        .cast(pl.Int64).alias("_owner"),
    )  # fmt: skip
    columns = ("KEY", "EMAIL", "DOMAIN", "DNS_STATUS", "LEDGER_DELIVERED", RANK, ROW)
    return [asked.filter(pl.col("_owner") == o).select(columns) for o in range(owners)]


def as_targets(frames: tuple[pl.DataFrame, ...]) -> tuple[pl.DataFrame, list[Target]]:
    """An owner's pieces as one frame and as targets, in the priority order (its domains' rank,
    then row), as the local engine orders them; a vendor's held ones first, as it resumes."""
    found = [f for f in frames if f.height]
    if not found:
        return pl.DataFrame(), []
    rows = pl.concat(found, how="vertical").sort(RANK, ROW)
    return rows, [
        Target(key, email, domain, DnsStatus(status), known_to_exist=bool(delivered))
        for key, email, domain, status, delivered in rows.select(
            "KEY", "EMAIL", "DOMAIN", "DNS_STATUS", "LEDGER_DELIVERED"
        ).iter_rows()
    ]


def fixed(settled: Settled, reach: Reach, method: Method) -> pl.DataFrame:
    """The bucket's answers nobody asks for: the caches', and for each open candidate the
    budget does not reach, why (the local engine's words)."""
    rows = settled.rows
    if not rows.height:
        return settled.cached
    left_out = rows.filter(pl.col(_OPEN) & ~_reached(rows, reach, 0))
    keys = left_out.get_column("KEY").to_list()
    if method.kind == "smtp":
        skipped = mailbox_table(not_verified([_key_only(k) for k in keys]))
    elif method.kind == "api":
        skipped = remote_table(dict.fromkeys(keys, NOT_VERIFIED_REMOTE))
    else:
        within_budget = left_out.filter(_reached(left_out, reach, 1)).get_column("KEY")
        short = set(within_budget.to_list())
        answers: dict[str, VendorAnswer] = {
            k: beyond_balance(method.name, reach.balance)
            if k in short
            else beyond_budget(method.name)
            for k in keys
        }
        skipped = vendor_table(answers)
    return pl.concat([settled.cached, skipped], how="vertical")


def _key_only(key: str) -> Target:
    return Target(key, key, "", DnsStatus.MX)


def answer_table(*tables: pl.DataFrame) -> pl.DataFrame | None:
    """A key bucket's answers by KEY, one row each, whatever method gave them (None: none)."""
    found = [t for t in tables if t.width]
    if not found:
        return None
    joined = pl.concat(found, how="diagonal_relaxed")
    return joined.unique("KEY", keep="first", maintain_order=True)


def owned_piece(owned: Any, bucket: int, buckets: int) -> pl.DataFrame:
    """The rows of an owner's answers that fall in key bucket *bucket*."""
    table: pl.DataFrame = owned.table
    bucketed = with_buckets(table, "KEY")
    return bucketed.filter(pl.col("_bucket") % buckets == bucket).drop("_bucket")


def key_pieces_of(part: Batch, buckets: int) -> list[pl.DataFrame]:
    """The part's distinct keys, one frame per key bucket (every row's: a duplicate gets its
    first row's answer)."""
    keys = part.work.select("KEY").filter(pl.col("KEY") != "").unique()
    bucket = with_buckets(keys, "KEY").get_column("_bucket") % buckets
    return [keys.filter(bucket == b) for b in range(buckets)]


def answers_for(answers: pl.DataFrame | None, keys: pl.DataFrame) -> pl.DataFrame | None:
    """The answers of a bucket for one part's keys of it."""
    return None if answers is None else answers.join(keys, on="KEY", how="semi")


def part_answers(*pieces: pl.DataFrame | None) -> pl.DataFrame | None:
    """A part's answers, from its pieces of every bucket (None: no answer at all)."""
    found = [p for p in pieces if p is not None]
    return pl.concat(found, how="diagonal_relaxed") if found else None
