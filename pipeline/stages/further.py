"""Every address column: the further columns of addresses a run checks beside the list's own
(``--email-column`` given again), written once for both engines.

Exports keep more than one address a person: Outlook's ``E-mail 2 Address`` and ``E-mail 3
Address``, HubSpot's ``Additional email addresses`` (a ``;``-list in one cell). The list's own
column keeps the spec's fields, DUPLICATE and SAFE_TO_SEND; each further column ``C`` gets
three of its own (:func:`pipeline.core.schema.further_fields`):

- ``C_VERDICT``: the worst verdict among the cell's addresses (Invalid, then Risky, then
  Valid); ``""`` for an empty cell, which holds nothing to check;
- ``C_REASON``: the REASON of the address that gave that verdict (the first such);
- ``C_SUGGESTION``: the cell with each address a correction is suggested for replaced by it
  (``;`` between them), ``""`` when none is.

A cell is cut at ``;`` and ``,``; each address in it is normalized and decided by the rules of
the list's own column: syntax, its domain's answer (each distinct domain of the whole list,
whichever column it is in, resolved once), the bounce ledger, and an address-level answer when
the run has one for the same address (address-level checks are asked for the list's own
column). Rows in = rows out: the further columns add columns, never rows.
"""

from __future__ import annotations

import polars as pl

from pipeline.core.addresses.step import classify_addresses
from pipeline.core.bounces.step import BounceScope, BounceSource, attach_bounces, bounce_keys
from pipeline.core.decide import decide, with_address_columns
from pipeline.core.domains.step import attach_domains, resolvable_domains
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.step import join_answers
from pipeline.core.schema import further_fields
from pipeline.core.verdict import Verdict
from pipeline.stages.read.email_column import Further

_WORST = {Verdict.INVALID.value: 2, Verdict.RISKY.value: 1, Verdict.VALID.value: 0}


def addresses_of(frame: pl.DataFrame, further: Further, lists: DomainLists) -> pl.DataFrame:
    """Every address of the further columns of *frame*, one row each (_COL, _ROW, _POS, and
    the normalized work columns), in column, row and cell order."""
    pieces = []
    for index, (column, _) in enumerate(further.columns):
        cells = frame.get_column(column).cast(pl.String)
        items = (
            pl.DataFrame({"_CELL": cells})
            .with_row_index("_ROW")
            .with_columns(pl.col("_CELL").str.replace_all(",", ";", literal=True).str.split(";"))
        )
        exploded = items.explode("_CELL").with_columns(pl.col("_CELL").str.strip_chars())
        exploded = exploded.with_columns(_POS=pl.int_range(pl.len()).over("_ROW"))
        kept = exploded.filter(pl.col("_CELL").is_not_null() & (pl.col("_CELL") != ""))
        pieces.append(kept.with_columns(pl.lit(index, pl.UInt32).alias("_COL")))
    found = pl.concat(pieces) if pieces else pl.DataFrame()
    if found.is_empty():
        return found
    work = classify_addresses(found.get_column("_CELL"), lists)
    return pl.concat([found.select("_COL", "_ROW", "_POS"), work], how="horizontal")


def further_domains(frame: pl.DataFrame, further: Further, lists: DomainLists) -> list[str]:
    """The resolvable domains of the further columns' addresses, first seen first."""
    found = addresses_of(frame, further, lists) if further else pl.DataFrame()
    return resolvable_domains(found) if found.height else []


def further_bounce_keys(
    frame: pl.DataFrame, further: Further, lists: DomainLists, scope: BounceScope | None
) -> list[str]:
    found = addresses_of(frame, further, lists) if further else pl.DataFrame()
    return bounce_keys(found, scope) if found.height else []


def further_columns(
    frame: pl.DataFrame,
    further: Further,
    lists: DomainLists,
    answers: tuple[pl.DataFrame, BounceSource | None, BounceScope | None, pl.DataFrame | None],
) -> pl.DataFrame:
    """The further columns' fields for the rows of *frame* (one row each, in order), from
    *answers*: the domain table, the bounce ledger and its scope, the address checker's."""
    table, bounces, scope, checked = answers
    found = addresses_of(frame, further, lists)
    fields = [
        pl.Series(name, [""] * frame.height, dtype=pl.String)
        for name in further.fields  # every cell empty until an address says otherwise
    ]
    if found.is_empty():
        return pl.DataFrame(fields)
    rows = attach_bounces(bounces, attach_domains(found, table), scope)
    if checked is not None:
        rows = join_answers(rows, checked)
    decided = decide(with_address_columns(rows)).select(
        "_COL", "_ROW", "_POS", "EMAIL", "VERDICT", "REASON", "SUGGESTION"
    )
    per_cell = _per_cell(decided)
    result = pl.DataFrame(fields).with_row_index("_ROW")
    for index, (_, prefix) in enumerate(further.columns):
        names = list(further_fields(prefix))
        cell = per_cell.filter(pl.col("_COL") == index).drop("_COL")
        joined = result.select("_ROW").join(cell, on="_ROW", how="left", maintain_order="left")
        result = result.with_columns(
            joined.get_column(got).fill_null("").alias(name)
            for got, name in zip(("VERDICT", "REASON", "SUGGESTION"), names, strict=True)
        )
    return result.drop("_ROW")


def _per_cell(decided: pl.DataFrame) -> pl.DataFrame:
    """One row a cell: the worst verdict and its REASON, and the cell as suggested."""
    rank = pl.col("VERDICT").replace_strict(_WORST, return_dtype=pl.Int8)
    shown = (
        pl.when(pl.col("SUGGESTION") != "").then(pl.col("SUGGESTION")).otherwise(pl.col("EMAIL"))
    )
    ordered = decided.sort("_COL", "_ROW", "_POS")
    worst = ordered.sort([rank, "_POS"], descending=[True, False]).group_by(
        "_COL", "_ROW", maintain_order=True
    )
    chosen = worst.agg(pl.col("VERDICT").first(), pl.col("REASON").first())
    suggested = ordered.group_by("_COL", "_ROW", maintain_order=True).agg(
        pl.when((pl.col("SUGGESTION") != "").any())
        .then(shown.str.join("; "))
        .otherwise(pl.lit(""))
        .first()
        .alias("SUGGESTION")
    )
    return chosen.join(suggested, on=["_COL", "_ROW"], how="left")
