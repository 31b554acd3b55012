"""Stage 4, verify: address-level answers (SMTP, when asked for), then VERDICT, SCORE, REASON.

Both the batch and the service go through :func:`pipeline.core.engine.check_addresses` and
:func:`pipeline.core.engine.decide`, so verdicts are made in one place.
"""

from __future__ import annotations

import polars as pl

from pipeline.core.engine import Engine, check_addresses, decide


async def verify(
    engine: Engine, work: pl.DataFrame
) -> tuple[pl.DataFrame, dict[str, int | float | str]]:
    checked = await check_addresses(engine, work)
    details: dict[str, int | float | str] = {}
    if engine.mailboxes is not None:
        stats = engine.mailboxes.stats
        details = {
            "rcpts_sent": stats.rcpts,
            "smtp_sessions": stats.sessions,
            "busiest_host_sessions": max(stats.sessions_per_host.values(), default=0),
        }
    return decide(checked), details
