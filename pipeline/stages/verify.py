"""Stage 4, verify: decide VERDICT, SCORE and REASON for every row.

Today this decides at the domain level. Address-level results (SMTP probing, a remote
verification service) are the next layer: they join onto the distinct addresses (KEY) here,
before :func:`pipeline.core.engine.decide` turns all evidence into the spec's fields, so that
both the batch and the service keep one place where verdicts are made.
"""

from __future__ import annotations

import polars as pl

from pipeline.core.engine import decide


def verify(work: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, int | float | str]]:
    return decide(work), {}
