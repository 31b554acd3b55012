"""Stage 3, domains: check each distinct domain once (cache, then DNS) and join it back."""

from __future__ import annotations

import polars as pl

from pipeline.core.engine import (
    DomainStats,
    Engine,
    attach_domains,
    check_domains,
    resolvable_domains,
)


async def domains(engine: Engine, work: pl.DataFrame) -> tuple[pl.DataFrame, DomainStats]:
    table, stats = await check_domains(engine, resolvable_domains(work))
    return attach_domains(work, table), stats
