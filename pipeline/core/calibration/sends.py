"""The sends of a list: each delivery and hard bounce of the bounce ledger matched to what the
address was scored in the list's last run that started before the send (the run history, by
the address's hash, :mod:`pipeline.core.history.keys`). A send to an address that run did not
hold is no send of this list, and is left out.

Providers are named by the ledger's domain: a major mailbox provider of ``mail_providers.txt``
by its first domain there (``googlemail.com`` is ``gmail.com``: the same exchanges), any other
domain ``other``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import polars as pl

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.bounces.types import BounceKind
from pipeline.core.calibration.fit import SENDS
from pipeline.core.calibration.types import OTHER
from pipeline.core.history.keys import HASH, address_hashes
from pipeline.core.history.store import RunHistory
from pipeline.core.lists import DomainLists

_TYPES: Final[Any] = {HASH: pl.UInt64(), **SENDS}


def providers_of(lists: DomainLists) -> dict[str, str]:
    """Each major provider's domain -> the provider's name (its first domain with the same
    exchanges)."""
    named: dict[frozenset[str], str] = {}
    return {d: named.setdefault(exchanges, d) for d, exchanges in lists.providers.items()}


def sends_of(
    ledger: BounceLedger,
    history: RunHistory,
    list_name: str,
    sandbox: bool,
    providers: Mapping[str, str],
    since: float = 0.0,
) -> pl.DataFrame:
    """The list's sends since *since* (:data:`~.fit.SENDS`, with HASH and AT)."""
    rows = ledger.outcomes(since)
    runs = history.runs(list_name, sandbox)
    empty = pl.DataFrame(schema={HASH: pl.UInt64(), "AT": pl.Float64(), **SENDS})
    if not rows or not runs:
        return empty
    events = pl.DataFrame(
        rows,
        schema={"KEY": pl.String, "DOMAIN": pl.String, "KIND": pl.String, "AT": pl.Float64},
        orient="row",
    )
    events = events.with_columns(address_hashes(events.get_column("KEY"))).sort("AT")
    started = pl.DataFrame(
        {"RUN": [r.run_id for r in runs], "STARTED": [r.started_at for r in runs]}
    ).sort("STARTED")
    # The last run that started strictly before the send.
    matched = events.join_asof(
        started, left_on="AT", right_on="STARTED", strategy="backward", allow_exact_matches=False
    ).filter(pl.col("RUN").is_not_null())
    # One run's addresses at a time, joined with its sends at once: a history of many long
    # runs is never held whole.
    pieces = [
        matched.filter(pl.col("RUN") == run).join(history.kept(run), on=HASH, how="inner")
        for run in matched.get_column("RUN").unique(maintain_order=True).to_list()
    ]
    if not pieces:
        return empty
    joined = pl.concat(pieces)
    return joined.select(
        HASH,
        "AT",
        "SCORE",
        pl.col("VERDICT").cast(pl.String),
        "REASON",
        pl.col("DOMAIN").replace_strict(dict(providers), default=OTHER).alias("PROVIDER"),
        (pl.col("KIND") == BounceKind.HARD.value).alias("HARD"),
    ).cast(_TYPES)
