"""The batch entry of address syntax: a column of addresses normalized in polars.

:func:`normalize_column` decides the common shapes vectorized and sends only the *distinct*
values it cannot decide to :func:`~pipeline.core.addresses.syntax.parse_address`, so a list of
hundreds of millions of rows never runs Python per row. The tests check that both give
identical results. Routing (see :mod:`pipeline.core.addresses.syntax` for the rules):

1. fast path: ASCII dot-atom local part @ ASCII LDH host name with an alphabetic TLD,
   within the length limits and not special-use. Fully vectorized.
2. domain path: ASCII dot-atom local part @ anything else (IDN, punycode, upper-case
   ``XN--``, ...). Each *distinct domain* is validated once in Python; rows whose domain
   turns out valid are then finished vectorized.
3. shape path: the common messy shapes (spaces around the ``@``, display names, ``mailto:``,
   quotes, brackets, trailing punctuation around an address the fast path would accept) are
   invalid cells settled with expressions, one precise parse per distinct shape
   (:mod:`pipeline.core.addresses.shapes`).
4. address path: everything left (other invalid values, quoted, literals, comments, non-ASCII
   local parts, ...) goes through ``parse_address`` once per distinct trimmed value.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import polars as pl

from pipeline.core.addresses.shapes import settle_shapes
from pipeline.core.addresses.syntax import (
    ADDRESS_MAX_OCTETS,
    DOMAIN_MAX_OCTETS,
    DOT_ATOM_RE,
    LDH_DOMAIN_RE,
    LOCAL_MAX_OCTETS,
    OUTPUT_COLUMNS,
    SPECIAL_USE_RE,
    WHITESPACE,
    Syntax,
    domain_forms,
    parse_address,
)
from pipeline.core.schema import FEW_ROWS

__all__ = ["normalize_column"]


def normalize_column(emails: pl.Series, then: Mapping[str, pl.Expr] | None = None) -> pl.DataFrame:
    """Normalize a column of addresses; same length and order as ``emails``.

    *then* are columns computed from the output columns. On a small batch they are computed in
    the fast path's pass (a pass costs more than its expressions there), and again only if
    some rows needed the precise parser; on a list, once, at the end."""
    extra = dict(then or {})
    folded = extra if emails.len() <= FEW_ROWS else {}
    frame = _fast_frame(emails, folded)
    if frame.get_column("_fast").all():
        # Ready columns make a frame without another pass.
        output = pl.DataFrame([frame.get_column(c) for c in (*OUTPUT_COLUMNS, *folded)])
        return output if folded or not extra else output.with_columns(**extra)
    rest_rows = frame.get_column("_fast").not_().arg_true()
    rest = frame[rest_rows].with_columns(_row=rest_rows)
    via_domain, rest = _domain_path(rest)
    via_shape, rest = _shape_path(rest)
    decided = pl.concat([via_domain, via_shape, _address_path(rest)])
    rows = decided.get_column("_row")
    merged = pl.DataFrame(
        [frame.get_column(c).scatter(rows, decided.get_column(c)) for c in OUTPUT_COLUMNS]
    )
    return merged.with_columns(**extra) if extra else merged


def _fast_frame(emails: pl.Series, extra: Mapping[str, pl.Expr]) -> pl.DataFrame:
    """All rows with the fast-path outputs; ``_fast`` marks the rows those are final for."""
    text, at, *rest = _fast_steps()
    few = emails.len() <= FEW_ROWS
    # At the first @: without one, ``dom`` is null and the row is not for the fast path.
    frame = pl.LazyFrame({"_text": emails}).with_columns(**text).with_columns(**at).unnest("_at")
    # A few rows (a service batch): a step's columns one after another, not handed to the
    # thread pool together (on 64 rows the handoffs cost more than the columns: the query
    # takes 0.2 ms instead of 0.48 ms with polars on one thread, as `listclean serve` runs it,
    # and the same with two); then the in-memory engine, as a DataFrame's own methods run, and
    # no optimizer: the default engine's fixed cost is a third of this query's there, and the
    # optimizer's a fifth of the rest (a chain of columns on a frame in memory has nothing to
    # push down). A list's batch keeps the defaults.
    for step in (*rest, extra):
        frame = frame.with_columns_seq(**step) if few else frame.with_columns(**step)
    if few:
        return frame.collect(engine="in-memory", optimizations=pl.QueryOptFlags.none())
    return frame.collect()


@functools.cache
def _fast_steps() -> tuple[dict[str, pl.Expr], ...]:
    """The fast path's columns, step by step (each step reads the columns of those before;
    the second is a struct of ``local`` and ``dom`` to unnest). Built once: expressions are
    immutable, and building them costs a service batch as much as running a few."""
    local = pl.col("local")
    local_octets = local.str.len_bytes()
    host = pl.col("_host")
    host_octets = host.str.len_bytes()
    ascii_local = (
        local.str.contains(DOT_ATOM_RE)
        & ~pl.col("dom").str.contains("@", literal=True)
        & (local_octets <= LOCAL_MAX_OCTETS)
    )
    fast = (
        pl.col("_ascii_local")
        & host.str.contains(LDH_DOMAIN_RE)
        # "--" in labels 3-4 is reserved (RFC 5891 §4.2.3.1) and "xn--" needs IDNA checks.
        & ~host.str.contains("--", literal=True)
        & ~host.str.contains(SPECIAL_USE_RE)
        & (host_octets <= DOMAIN_MAX_OCTETS)
        & (local_octets + 1 + host_octets <= ADDRESS_MAX_OCTETS)
    )
    return (
        # Null and blank are the same EMPTY outcome, so nulls become "" up front.
        {"_text": pl.col("_text").cast(pl.String).str.strip_chars(WHITESPACE).fill_null("")},
        {"_at": pl.col("_text").str.splitn("@", 2).struct.rename_fields(["local", "dom"])},
        {
            "_ascii_local": ascii_local.fill_null(False),
            # RFC 1034 §3.1: the trailing root dot is not part of the name.
            "_host": pl.col("dom").str.strip_suffix("."),
        },
        {
            "_fast": fast.fill_null(False),
            # ASCII LDH: lower-casing is all IDNA/UTS-46 would do (RFC 4343).
            "DOMAIN": host.str.to_lowercase(),
            "LOCAL": local,
        },
        {"EMAIL": pl.concat_str(local, pl.lit("@"), pl.col("DOMAIN"))},
        {
            # For ASCII, str.casefold() is lower-casing, so this matches parse_address.
            "KEY": pl.col("EMAIL").str.to_lowercase(),
            "SYNTAX": pl.lit(Syntax.OK.value),
            "SYNTAX_DETAIL": pl.lit(""),
        },
    )


def _domain_path(rest: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Decide rows with an ASCII dot-atom local part by validating each distinct domain once.

    Only rows that come out valid are decided here; the others go to the address path so
    their reasons match :func:`parse_address` exactly.
    """
    candidates = rest.filter(pl.col("_ascii_local"))
    domains = candidates.get_column("dom").unique().to_list()
    forms = [domain_forms(d) for d in domains]
    lookup = pl.DataFrame(
        {
            "dom": domains,
            "DOMAIN": [f.ascii for f in forms],
            "_max": [f.max_octets for f in forms],
            "_ok": [not f.detail for f in forms],
        },
        schema={"dom": pl.String, "DOMAIN": pl.String, "_max": pl.Int64, "_ok": pl.Boolean},
    )
    local_octets = pl.col("local").str.len_bytes().cast(pl.Int64)
    decided = (
        candidates.drop("DOMAIN")
        .join(lookup, on="dom", how="left")
        .filter(pl.col("_ok") & (local_octets + 1 + pl.col("_max") <= ADDRESS_MAX_OCTETS))
        .select(
            "_row",
            pl.concat_str("local", pl.lit("@"), "DOMAIN").alias("EMAIL"),
            pl.col("local").alias("LOCAL"),
            "DOMAIN",
            pl.concat_str(pl.col("local").str.to_lowercase(), pl.lit("@"), "DOMAIN").alias("KEY"),
            pl.lit(Syntax.OK.value).alias("SYNTAX"),
            pl.lit("").alias("SYNTAX_DETAIL"),
        )
    )
    return decided, rest.join(decided.select("_row"), on="_row", how="anti")


def _shape_path(rest: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Decide the rows whose value has one of the common messy shapes with expressions."""
    if rest.is_empty():
        return rest.select("_row", *OUTPUT_COLUMNS), rest
    shaped = settle_shapes(rest.get_column("_text")).with_columns(rest.get_column("_row"))
    settled = shaped.get_column("_settled")
    decided = shaped.filter(settled).select("_row", *OUTPUT_COLUMNS)
    return decided, rest.filter(~settled)


def _address_path(rest: pl.DataFrame) -> pl.DataFrame:
    """Run :func:`parse_address` once per distinct trimmed value and join the results back.

    The values were trimmed by polars with the same character set parse_address strips,
    so parsing the trimmed value gives the same result as parsing the raw one.
    """
    values = rest.get_column("_text").unique().to_list()
    parsed = [parse_address(v) for v in values]
    lookup = pl.DataFrame(
        {
            "_text": values,
            "EMAIL": [p.email for p in parsed],
            "LOCAL": [p.local for p in parsed],
            "DOMAIN": [p.domain for p in parsed],
            "KEY": [p.key for p in parsed],
            "SYNTAX": [p.syntax.value for p in parsed],
            "SYNTAX_DETAIL": [p.detail for p in parsed],
        },
        schema=dict.fromkeys(("_text", *OUTPUT_COLUMNS), pl.String),
    )
    return rest.select("_row", "_text").join(lookup, on="_text", how="left").drop("_text")
