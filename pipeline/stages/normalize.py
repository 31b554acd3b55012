"""Stage 2, normalize: parse, normalize and classify every address; mark duplicates.

All of it is vectorized in polars; the engine sends only the distinct addresses its fast path
cannot decide through the precise parser.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipeline.core.engine import annotate_addresses
from pipeline.core.lists import DomainLists


@dataclass(frozen=True)
class NormalizeStats:
    distinct_addresses: int
    duplicates: int


def normalize(
    originals: pl.DataFrame, email_column: str, lists: DomainLists
) -> tuple[pl.DataFrame, NormalizeStats]:
    emails = originals.get_column(email_column).cast(pl.String)
    work = annotate_addresses(emails, lists)
    # Every distinct address has exactly one first occurrence: no second hash pass needed.
    distinct = work.select(((pl.col("KEY") != "") & ~pl.col("DUPLICATE")).sum()).item()
    return work, NormalizeStats(int(distinct), int(work.get_column("DUPLICATE").sum()))
