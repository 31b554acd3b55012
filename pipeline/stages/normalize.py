"""Stage 2, normalize: parse, normalize and classify every address; mark duplicates.

All of it is vectorized in polars; the engine sends only the distinct addresses its fast path
cannot decide through the precise parser.
"""

from __future__ import annotations

import polars as pl

from pipeline.core.engine import annotate_addresses
from pipeline.core.lists import DomainLists


def normalize(
    originals: pl.DataFrame, email_column: str, lists: DomainLists
) -> tuple[pl.DataFrame, dict[str, int | float | str]]:
    emails = originals.get_column(email_column).cast(pl.String)
    work = annotate_addresses(emails, lists)
    details: dict[str, int | float | str] = {
        # Every distinct address has exactly one first occurrence: no second hash pass needed.
        "distinct_addresses": work.select(
            ((pl.col("KEY") != "") & ~pl.col("DUPLICATE")).sum()
        ).item(),
        "duplicates": int(work.get_column("DUPLICATE").sum()),
    }
    return work, details
