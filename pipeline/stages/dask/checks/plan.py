"""What the workers compute so that the driver can share out a budget from tallies alone.

1. :func:`candidate_pieces`, on each part's worker: the part's addresses worth a check (the
   local engine's :func:`~pipeline.stages.steps.probe_candidates`, with the bounce ledger's
   flags), narrow, split into key buckets by the CRC-32 the shared caches bucket their keys by.
2. :func:`settle`, one task per key bucket and method: which candidates the caches answer (the
   mailbox cache, a remote API's answers, the paid answers; a vendor's bulk jobs left open),
   which are open (to be asked: never answered, or answered past the answer's lifetime, due),
   and :func:`tally`: one row per domain (its candidates, its first row, how many are open,
   how many of them are due and the oldest of those).
3. :func:`rank`, one task: the tallies merged and ranked by the local engine's rule
   (:func:`~pipeline.core.mailboxes.step.rank_domains`), with each domain's catch-all finding
   if the cache has one. The driver shares the budget out over that (a frame of domains) with
   the local engine's :func:`~pipeline.core.mailboxes.step.cut`, and asks
   :func:`first_rows` (:func:`first_due`) where a domain is reached only in part. The
   addresses never answered come first, then the due ones (the local engine's
   :func:`~pipeline.core.mailboxes.step.refresh_order`).
4. :func:`targets_of`: each bucket's reached candidates, one frame per owner; :func:`fixed`:
   the answers nobody has to ask for (the cache's, and for what the budget does not reach
   "not verified", or a due answer shown with its age). The owners' answers come from
   :mod:`.owners`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import polars as pl

from pipeline.core.bounces.step import attach_bounces
from pipeline.core.config import ListsConfig
from pipeline.core.db.buckets import with_buckets
from pipeline.core.domains.dns import DnsStatus
from pipeline.core.mailboxes.checkers import (
    NOT_VERIFIED_REMOTE,
    not_verified,
    stale_mailbox,
    stale_remote,
)
from pipeline.core.mailboxes.step import GOOD_DOMAIN, mailbox_table, rank_domains, remote_table
from pipeline.core.mailboxes.types import Target
from pipeline.core.mailboxes.vendors.checker import (
    RoutedChecker,
    beyond_balance,
    beyond_budget,
    stale_vendor,
    vendor_table,
)
from pipeline.core.mailboxes.vendors.types import VendorAnswer
from pipeline.stages.base import Batch
from pipeline.stages.dask.shuffle import ROW, pieces_of
from pipeline.stages.dask.sizes import size_of
from pipeline.stages.dask.stores import Stores, bounce_source, mailbox_store, paid_store
from pipeline.stages.dask.tasks import restored, worker_lists
from pipeline.stages.steps import probe_candidates

RANK = "_RANK"  # a domain's place in the priority order
METHOD = "_METHOD"  # the method a routed run checks a candidate with
_OPEN = "_OPEN"  # asked by this run, if the budget reaches it
_HELD = "_HELD"  # held by a vendor's bulk job a run left open: collected, whatever the budget
_DUE = "_DUE"  # open, with a kept answer past its lifetime (asked after the never answered)
LEARNED = "_LEARNED"  # when a due answer was learned (0.0 for the others)
PHASE = "_PHASE"  # 0: never answered (or held), 1: due
_NONE = (float("-inf"), -1)  # a due limit that reaches none of a domain
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
    whole = restored(part).work  # a part held narrow is normalized again for its candidates
    rows = attach_bounces(bounce_source(stores), probe_candidates(whole, table))
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
    """A key bucket's candidates of one method (with _OPEN, _HELD, _DUE and _LEARNED), and
    the answers the caches hold for them within their lifetime, as a table by KEY; the due
    answers as they are shown when the budget does not reach them again (*stale*)."""

    rows: pl.DataFrame
    cached: pl.DataFrame
    stale: pl.DataFrame

    def __sizeof__(self) -> int:
        return size_of(self.rows) + size_of(self.cached) + size_of(self.stale) + 64


def settle(method: Method, stores: Stores, since: float, *groups: list[pl.DataFrame]) -> Settled:
    """Which of the bucket's candidates the caches answer, and which are open (*groups*: the
    bucket's pieces, :func:`~pipeline.stages.dask.shuffle.Exchange.to_buckets`).

    An answer learned at or after *since* (when the driver planned the checks) is this run's
    own and counts as open: a bucket settled again after a lost worker then plans the targets
    it planned the first time, and an owner run again finds them answered (a domain's
    refusals are judged on all of its answers; the RCPTs spent are counted once)."""
    pieces = pieces_of(groups)
    rows = pl.concat(pieces, how="vertical") if pieces else pl.DataFrame()
    if METHOD in rows.columns:
        rows = rows.filter(pl.col(METHOD) == method.name)
    keys = rows.get_column("KEY").to_list() if rows.height else []
    held: set[str] = set()
    bounced: set[str] = set()
    learned: dict[str, float] = {}
    if method.kind in ("smtp", "api"):
        store = mailbox_store(stores)
        now = store.now()
        if method.kind == "smtp":
            fresh, due = store.with_due(keys)
            table = mailbox_table(_before(fresh, since))
            stale = mailbox_table({k: stale_mailbox(a, now) for k, a in due.items()})
            learned = {k: a.at for k, a in due.items()}
        else:
            found, gone = store.remote_with_due(keys, method.api)
            table = remote_table(_before(found, since))
            stale = remote_table({k: stale_remote(a, now) for k, a in gone.items()})
            learned = {k: a.at or 0.0 for k, a in gone.items()}
    else:  # a paid verifier is never asked about a known bounce
        bounced = set(rows.filter(pl.col("LEDGER_KNOWN")).get_column("KEY").to_list())
        paid = paid_store(stores)
        bought, aged = paid.with_due([k for k in keys if k not in bounced])
        table = vendor_table(_before(bought, since))
        stale = vendor_table({k: stale_vendor(a, paid.now()) for k, a in aged.items()})
        learned = {k: a.at or 0.0 for k, a in aged.items()}
        jobs = paid.open_jobs(method.name, method.key_fp)
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
            key.replace_strict(learned, default=None, return_dtype=pl.Float64).alias(LEARNED),
        ).with_columns((pl.col(_OPEN) & pl.col(LEARNED).is_not_null()).alias(_DUE))
        rows = rows.with_columns(pl.col(LEARNED).fill_null(0.0))
    return Settled(rows, table, stale)


class _Dated(Protocol):
    @property
    def at(self) -> float | None: ...


A = TypeVar("A", bound=_Dated)


def _before(answers: dict[str, A], since: float) -> dict[str, A]:
    """The *answers* learned before *since* (an answer of unknown age counts as earlier)."""
    return {k: a for k, a in answers.items() if (a.at or 0.0) < since}


_COUNTS = ("_size", "_open", "_held", "_cached", "_bounced", "_due")


def tally(settled: Settled) -> pl.DataFrame:
    """One row per domain: its mail host, whether it looks good, its first row, its
    candidates (_size) and how many are open and never answered (_open), held by a vendor's
    job, answered by the cache, known bounces, or open with a due answer (_due, the oldest
    learned at _oldest)."""
    rows = settled.rows
    if not rows.height:
        return pl.DataFrame()
    return rows.group_by("DOMAIN").agg(
        pl.col("MX").first(),
        pl.col("_good").first(),
        pl.col(ROW).min().alias("_first"),
        pl.len().alias("_size"),
        (pl.col(_OPEN) & ~pl.col(_DUE)).sum().alias("_open"),
        pl.col(_HELD).sum().alias("_held"),
        *(pl.col(c).sum() for c in ("_cached", "_bounced")),
        pl.col(_DUE).sum().alias("_due"),
        pl.col(LEARNED).filter(pl.col(_DUE)).min().alias("_oldest"),
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
            pl.col("_oldest").min(),
        )
    )
    ranked = rank_domains(merged).with_row_index(RANK)
    known: set[str] = set()
    if method.kind == "smtp":
        wanted = (pl.col("_open") > 0) | (pl.col("_due") > 0)
        asked = ranked.filter(wanted).get_column("DOMAIN").to_list()
        known = set(mailbox_store(stores).catch_all(asked))
    known_column = pl.col("DOMAIN").is_in(list(known)).alias("_known")
    return ranked.select(RANK, "DOMAIN", "MX", *_COUNTS, "_oldest", known_column)


def first_rows(settled: Settled, domain: str, count: int) -> list[int]:
    """The rows of the bucket's first *count* never answered open candidates of *domain*."""
    rows = settled.rows
    if not rows.height:
        return []
    wanted = pl.col(_OPEN) & ~pl.col(_DUE) & (pl.col("DOMAIN") == domain)
    return rows.filter(wanted).get_column(ROW).sort().head(count).to_list()


def first_due(settled: Settled, domain: str, count: int) -> list[tuple[float, int]]:
    """(learned, row) of the bucket's first *count* due candidates of *domain*, oldest first."""
    rows = settled.rows
    if not rows.height:
        return []
    found = rows.filter(pl.col(_DUE) & (pl.col("DOMAIN") == domain)).select(LEARNED, ROW)
    return [(float(a), int(r)) for a, r in found.sort(LEARNED, ROW).head(count).iter_rows()]


Limit = int | None  # the row a cut reaches a domain's never answered up to (None: all; -1: none)
DueLimit = tuple[float, int] | None  # (learned, row) a cut reaches its due ones up to


@dataclass(frozen=True)
class Reach:
    """What the budget reaches, per domain: its rank, its owner, up to which row each cut
    reaches its never answered candidates, its place in the order of the due ones, and up to
    which (learned, row) each cut reaches those (None: all of them). Cut 0 is what is asked;
    a vendor's cut 1 is its budget without its balance (what only the balance leaves out is
    ``not_verified_credits``)."""

    domains: Mapping[str, tuple[int, int, tuple[Limit, ...], int, tuple[DueLimit, ...]]]
    balance: int | None = None


def _reached(rows: pl.DataFrame, reach: Reach, cut: int) -> pl.Series:
    """Which of *rows* (open candidates) cut *cut* reaches."""
    entries = [(d, e[2][cut], e[4][cut]) for d, e in reach.domains.items()]
    limits = pl.DataFrame(
        {"DOMAIN": [d for d, _, _ in entries],
         "_all": [lim is None for _, lim, _ in entries],
         "_limit": [-1 if lim is None else lim for _, lim, _ in entries],
         "_all_due": [due is None for _, _, due in entries],
         "_at": [(due or _NONE)[0] for _, _, due in entries],
         "_row": [(due or _NONE)[1] for _, _, due in entries]},
        schema={"DOMAIN": pl.String, "_all": pl.Boolean, "_limit": pl.Int64,
                "_all_due": pl.Boolean, "_at": pl.Float64, "_row": pl.Int64},
    )  # fmt: skip
    joined = rows.select("DOMAIN", ROW, _DUE, LEARNED).join(
        limits, on="DOMAIN", how="left", maintain_order="left"
    )
    row, at = pl.col(ROW).cast(pl.Int64), pl.col(LEARNED)
    never = ~pl.col(_DUE) & (pl.col("_all") | (row <= pl.col("_limit")))
    before = (at < pl.col("_at")) | ((at == pl.col("_at")) & (row <= pl.col("_row")))
    due = pl.col(_DUE) & (pl.col("_all_due") | before)
    return rows.get_column(_OPEN) & joined.select((never | due).fill_null(False)).to_series()


def targets_of(settled: Settled, reach: Reach, owners: int) -> list[pl.DataFrame]:
    """The bucket's reached candidates (and a vendor's held ones), one frame per owner."""
    rows = settled.rows
    if not rows.height:
        return [pl.DataFrame()] * owners
    asked = rows.filter(_reached(rows, reach, 0) | pl.col(_HELD))
    entries = reach.domains
    domain = pl.col("DOMAIN")
    asked = asked.with_columns(
        pl.col(_DUE).cast(pl.Int64).alias(PHASE),
        pl.when(pl.col(_DUE))
        .then(domain.replace_strict({d: e[3] for d, e in entries.items()}, default=-1))
        .otherwise(domain.replace_strict({d: e[0] for d, e in entries.items()}, default=-1))
        .cast(pl.Int64).alias(RANK),
        domain.replace_strict({d: e[1] for d, e in entries.items()}, default=0)
        .cast(pl.Int64).alias("_owner"),
    )  # fmt: skip
    columns = (
        "KEY",
        "EMAIL",
        "DOMAIN",
        "DNS_STATUS",
        "LEDGER_DELIVERED",
        PHASE,
        RANK,
        LEARNED,
        ROW,
    )
    return [asked.filter(pl.col("_owner") == o).select(columns) for o in range(owners)]


def as_targets(frames: tuple[pl.DataFrame, ...]) -> tuple[pl.DataFrame, list[Target]]:
    """An owner's pieces as one frame and as targets, in the priority order (the never
    answered by their domains' rank, then row; then the due ones by their domains' place,
    oldest first, then row), as the local engine orders them; a vendor's held ones first, as
    it resumes."""
    found = [f for f in frames if f.height]
    if not found:
        return pl.DataFrame(), []
    rows = pl.concat(found, how="vertical").sort(PHASE, RANK, LEARNED, ROW)
    return rows, [
        Target(key, email, domain, DnsStatus(status), known_to_exist=bool(delivered))
        for key, email, domain, status, delivered in rows.select(
            "KEY", "EMAIL", "DOMAIN", "DNS_STATUS", "LEDGER_DELIVERED"
        ).iter_rows()
    ]


def fixed(settled: Settled, reach: Reach, method: Method) -> pl.DataFrame:
    """The bucket's answers nobody asks for: the caches', and for each open candidate the
    budget does not reach, its due answer with its age, else why (the local engine's
    words)."""
    rows = settled.rows
    if not rows.height:
        return settled.cached
    left_out = rows.filter(pl.col(_OPEN) & ~_reached(rows, reach, 0))
    stale = settled.stale.join(left_out.select("KEY"), on="KEY", how="semi")
    left_out = left_out.filter(~pl.col(_DUE))
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
    return pl.concat([settled.cached, stale, skipped], how="vertical")


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
    keys = restored(part).work.select("KEY").filter(pl.col("KEY") != "").unique()
    bucket = with_buckets(keys, "KEY").get_column("_bucket") % buckets
    return [keys.filter(bucket == b) for b in range(buckets)]


def answers_for(answers: pl.DataFrame | None, keys: pl.DataFrame) -> pl.DataFrame | None:
    """The answers of a bucket for one part's keys of it."""
    return None if answers is None else answers.join(keys, on="KEY", how="semi")


def answers_of_group(
    answers: pl.DataFrame | None, keys: list[pl.DataFrame]
) -> list[pl.DataFrame | None]:
    """The answers of a bucket for each part of a group (*keys*: their keys of it)."""
    return [answers_for(answers, k) for k in keys]


def part_answers(pieces: list[pl.DataFrame | None]) -> pl.DataFrame | None:
    """A part's answers, from its pieces of every bucket (None: no answer at all)."""
    found = [p for p in pieces if p is not None]
    return pl.concat(found, how="diagonal_relaxed") if found else None
