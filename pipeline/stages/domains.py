"""Stage 3, domains: check each distinct domain once (cache, then DNS) and join it back."""

from __future__ import annotations

import polars as pl

from pipeline.core.engine import Engine, attach_domains, check_domains, resolvable_domains


async def domains(
    engine: Engine, work: pl.DataFrame
) -> tuple[pl.DataFrame, dict[str, int | float | str]]:
    table, stats = await check_domains(engine, resolvable_domains(work))
    details: dict[str, int | float | str] = {
        "distinct_domains": stats.distinct,
        "cache_hits": stats.cache_hits,
        "looked_up": stats.looked_up,
        "dns_queries": stats.queries_sent,
    }
    return attach_domains(work, table), details
