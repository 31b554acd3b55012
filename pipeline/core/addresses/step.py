"""The address step: a column of raw addresses to the rows every later step reads.

classify_addresses  raw addresses -> EMAIL, LOCAL, DOMAIN, KEY, SYNTAX, ROLE, and what an
                    invalid cell holds (REPAIR, REPAIRED)
annotate_addresses  the same, and DUPLICATE (a whole list in one frame)
annotate_domains    domain mode's rows: a domain and no local part
with_check          _CHECK: the domain whose DNS answer a row takes (null when none)
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.core.addresses.normalize import normalize_column
from pipeline.core.addresses.repairs import repair_column
from pipeline.core.addresses.syntax import Syntax, normalize_domain
from pipeline.core.lists import DomainLists

# Rows whose domain is a DNS name worth resolving. An address can be invalid for its local
# part alone (john..doe@gmail.com): its domain still gets its own DOMAIN_VERDICT.
RESOLVABLE = (pl.col("DOMAIN") != "") & (pl.col("SYNTAX") != Syntax.DOMAIN_LITERAL.value)
CHECKED_DOMAIN = pl.when(RESOLVABLE).then(pl.col("DOMAIN"))


def classify_addresses(emails: pl.Series, lists: DomainLists) -> pl.DataFrame:
    """Normalize and classify each address (EMAIL, LOCAL, DOMAIN, KEY, SYNTAX, ROLE), and what
    an invalid cell holds (REPAIR, REPAIRED: :mod:`pipeline.core.addresses.repairs`)."""
    return _with_repairs(emails, normalize_column(emails, then=_classified(lists)))


def annotate_addresses(emails: pl.Series, lists: DomainLists) -> pl.DataFrame:
    """:func:`classify_addresses`, and DUPLICATE: repeats of an earlier row's address among
    *emails* (a whole list in one frame; a list read in batches marks them out of core)."""
    then = {**_classified(lists), "DUPLICATE": _REPEAT}
    return _with_repairs(emails, normalize_column(emails, then=then))


# A row whose address an earlier row of the frame has.
_REPEAT = (pl.col("KEY") != "") & ~pl.col("KEY").is_first_distinct()


def _classified(lists: DomainLists) -> dict[str, pl.Expr]:
    return {"ROLE": lists.local_is_role, "_CHECK": CHECKED_DOMAIN}


def _with_repairs(emails: pl.Series, parsed: pl.DataFrame) -> pl.DataFrame:
    if not (parsed.get_column("SYNTAX") == Syntax.INVALID.value).any():
        return parsed.hstack(_NO_REPAIRS(parsed.height))  # the usual batch: nothing to mend
    return parsed.hstack(repair_column(emails, parsed.get_column("SYNTAX")).get_columns())


def _NO_REPAIRS(rows: int) -> list[pl.Series]:
    # Repeated from a one-value Series: pl.repeat(eager=True) runs a query of its own, a fixed
    # cost that weighs on a service batch of a few rows.
    return [
        pl.Series(c, [""], dtype=pl.String).new_from_index(0, rows) for c in ("REPAIR", "REPAIRED")
    ]


def with_check(rows: pl.DataFrame) -> pl.DataFrame:
    """*rows* with ``_CHECK``: the domain whose DNS answer the row takes, null when none."""
    return rows if "_CHECK" in rows.columns else rows.with_columns(_CHECK=CHECKED_DOMAIN)


def annotate_domains(values: Sequence[str]) -> pl.DataFrame:
    """Rows of domain mode (``verify --domain``, ``?domain=``): a domain and no local part."""
    checked = [normalize_domain(v) for v in values]
    n = len(values)
    return pl.DataFrame(
        {
            "EMAIL": [""] * n,
            "LOCAL": [""] * n,
            "DOMAIN": [domain for domain, _ in checked],
            "KEY": [""] * n,
            "SYNTAX": [(Syntax.OK if domain else Syntax.INVALID).value for domain, _ in checked],
            "SYNTAX_DETAIL": [detail for _, detail in checked],
            "ROLE": [False] * n,
            "DUPLICATE": [False] * n,
            "REPAIR": [""] * n,
            "REPAIRED": [""] * n,
            "_CHECK": [domain or None for domain, _ in checked],
        },
        schema={
            "EMAIL": pl.String,
            "LOCAL": pl.String,
            "DOMAIN": pl.String,
            "KEY": pl.String,
            "SYNTAX": pl.String,
            "SYNTAX_DETAIL": pl.String,
            "ROLE": pl.Boolean,
            "DUPLICATE": pl.Boolean,
            "REPAIR": pl.String,
            "REPAIRED": pl.String,
            "_CHECK": pl.String,
        },
    )
