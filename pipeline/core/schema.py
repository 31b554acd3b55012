"""Column names and types, declared once.

``SPEC_COLUMNS`` are the service spec's twelve upper-case fields (§2.1) in the spec's order;
the batch output appends ``BOOKKEEPING_COLUMNS`` after them, and the original columns of the
input come first.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

SPEC_COLUMNS: Mapping[str, type[pl.DataType]] = {
    "EMAIL": pl.String,
    "VERDICT": pl.String,
    "SCORE": pl.Float64,
    "LOCAL": pl.String,
    "DOMAIN": pl.String,
    "DOMAIN_VERDICT": pl.String,
    "MX": pl.String,
    "HAS_SUSPECTED_BOUNCES": pl.Boolean,
    "LOCAL_PART_IS_SUSPECTED_ROLE_ADDRESS": pl.Boolean,
    "HAS_KNOWN_BOUNCES": pl.Boolean,
    "DOMAIN_IS_SUSPECTED_DISPOSABLE_ADDRESS": pl.Boolean,
    "SUGGESTION": pl.String,
}

BOOKKEEPING_COLUMNS: Mapping[str, type[pl.DataType]] = {
    "REASON": pl.String,  # ;-joined reason codes, see pipeline.core.verdict
    "DUPLICATE": pl.Boolean,  # a repeat of an earlier row's normalized address
}

OUTPUT_COLUMNS: Mapping[str, type[pl.DataType]] = {**SPEC_COLUMNS, **BOOKKEEPING_COLUMNS}
