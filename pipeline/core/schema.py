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
    "SAFE_TO_SEND": pl.Boolean,  # Valid, and the first row with this address
    "FREE_PROVIDER": pl.Boolean,  # a free consumer mailbox provider (gmail.com, web.de, ...)
    "DETAIL": pl.String,  # the parser's explanation, or the mail server's words
}

OUTPUT_COLUMNS: Mapping[str, type[pl.DataType]] = {**SPEC_COLUMNS, **BOOKKEEPING_COLUMNS}


def further_fields(column: str) -> dict[str, type[pl.DataType]]:
    """The output columns of a further column of addresses (``--email-column`` given again):
    its verdict, reason codes and suggestion, named after it."""
    return {
        f"{column}_VERDICT": pl.String,
        f"{column}_REASON": pl.String,
        f"{column}_SUGGESTION": pl.String,
    }


# Rows up to which a frame is a service batch rather than a list's: on so few rows a Python
# pass over a column costs less than a polars query (a fixed cost of tens of microseconds).
FEW_ROWS = 10_000

# The batch output's layout, for the jobs that parse it: raised whenever a column is added,
# renamed or retyped (docs/lists.md#output-schema keeps the changelog). Written into the Parquet
# file's key-value metadata, the workbook's properties and summary.json.
SCHEMA_VERSION = "3"
# Which archive member a row came from (an input zip of several lists); present only then.
SOURCE_COLUMN = "SOURCE_FILE"

# Work columns of the address-level step, null where a row has no address-level answer:
# filled by the mailbox (SMTP), remote API and bounce-ledger steps, read by the verdict.
ADDRESS_COLUMNS: Mapping[str, type[pl.DataType]] = {
    "MAILBOX": pl.String,  # a Mailbox value: the SMTP answer, or why there is none
    "MAILBOX_REPLY": pl.String,  # the server's words, the remote error, or the vendor's status
    "MAILBOX_AT": pl.Float64,  # when the mail server (or the paid verifier) answered (Unix time)
    # A paid verifier's answer as a reason code (pipeline.core.mailboxes.vendors.verdicts), or
    # why there is none (not_verified_credits, api_error); its own words are in MAILBOX_REPLY.
    "VENDOR_REASON": pl.String,
    "API_VERDICT": pl.String,  # a remote service's answer (--verify api)
    "API_SCORE": pl.Float64,
    "API_KNOWN_BOUNCES": pl.Boolean,
    "API_SUSPECTED_BOUNCES": pl.Boolean,
    "LEDGER_KNOWN": pl.Boolean,  # the bounce ledger's flags
    "LEDGER_SUSPECTED": pl.Boolean,
    "LEDGER_LAST_HARD_AT": pl.Float64,
    "LEDGER_DELIVERED": pl.Boolean,  # delivered to since its last hard bounce: it exists
    # Why the list's own export holds the row back from sending (a consent reason code, see
    # pipeline.stages.read.consent), null when it does not; never set by the service.
    "CONSENT": pl.String,
}


def keyed_schema(*columns: str) -> dict[str, type[pl.DataType]]:
    """The schema of an answer table: the dedupe KEY, then some of ``ADDRESS_COLUMNS``."""
    return {"KEY": pl.String, **{c: ADDRESS_COLUMNS[c] for c in columns}}
