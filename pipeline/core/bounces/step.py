"""The bounce step: each row's flags from the bounce ledger (LEDGER_KNOWN, LEDGER_SUSPECTED,
the last hard bounce, deliveries), one query for all its keys."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Protocol

import polars as pl

from pipeline.core.bounces.types import BounceFlags
from pipeline.core.schema import FEW_ROWS, keyed_schema

_LEDGER_SCOPE_FROM = 10_000  # rows; see attach_bounces


BounceScope = tuple[set[str], set[str]]  # keys with events, domains whose mail bounces


class BounceSource(Protocol):
    """Where bounce flags come from: the ledger, or the flags a partitioned run's driver read
    from it for one partition."""

    def flags(self, keys: Iterable[str]) -> dict[str, BounceFlags]: ...
    def scope(self) -> BounceScope: ...


class Serialized:
    """A bounce source several threads share, asked one question at a time (the ledger's is
    one database connection)."""

    def __init__(self, source: BounceSource) -> None:
        self._source = source
        self._lock = threading.Lock()

    def flags(self, keys: Iterable[str]) -> dict[str, BounceFlags]:
        with self._lock:
            return self._source.flags(keys)

    def scope(self) -> BounceScope:
        with self._lock:
            return self._source.scope()


def attach_bounces(
    ledger: BounceSource | None, rows: pl.DataFrame, scope: BounceScope | None = None
) -> pl.DataFrame:
    """LEDGER_KNOWN / LEDGER_SUSPECTED per row from the ledger (one query for all keys).
    *scope* is the ledger's (:meth:`BounceLedger.scope`), when the caller has read it once for
    many batches."""
    if ledger is None:
        return rows
    if scope is None and rows.height > _LEDGER_SCOPE_FROM:
        # A big list: ask only about the keys the ledger could flag. Reading the ledger's scope
        # costs a scan of it, so small batches (the service) ask about their keys directly.
        scope = ledger.scope()
    wanted = bounce_keys(rows, scope)
    return join_bounce_flags(rows, ledger.flags(wanted) if wanted else {})


def bounce_keys(rows: pl.DataFrame, scope: BounceScope | None) -> list[str]:
    """The distinct keys of *rows* the ledger could flag (all of them without a scope)."""
    if scope is None and rows.height <= FEW_ROWS:
        return list(dict.fromkeys(k for k in rows.get_column("KEY").to_list() if k))
    wanted = rows.filter(pl.col("KEY") != "")
    if scope is not None:
        with_events, dead_domains = scope
        wanted = wanted.filter(
            pl.col("KEY").is_in(list(with_events)) | pl.col("DOMAIN").is_in(list(dead_domains))
        )
    return wanted.get_column("KEY").unique().to_list() if wanted.height else []


def join_bounce_flags(rows: pl.DataFrame, flags: Mapping[str, BounceFlags]) -> pl.DataFrame:
    if not flags:
        return rows
    table = pl.DataFrame(
        {
            "KEY": list(flags),
            "LEDGER_KNOWN": [f.known for f in flags.values()],
            "LEDGER_SUSPECTED": [f.suspected for f in flags.values()],
            "LEDGER_LAST_HARD_AT": [f.last_hard_at for f in flags.values()],
            "LEDGER_DELIVERED": [f.delivered for f in flags.values()],
        },
        schema=keyed_schema(
            "LEDGER_KNOWN", "LEDGER_SUSPECTED", "LEDGER_LAST_HARD_AT", "LEDGER_DELIVERED"
        ),
    )
    return rows.join(table, on="KEY", how="left", maintain_order="left")
