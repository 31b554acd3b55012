"""Stage 4, verify: address-level answers (SMTP or a remote API, when asked for), then VERDICT,
SCORE and REASON.

Both the batch and the service go through :func:`pipeline.core.engine.check_addresses` and
:func:`pipeline.core.engine.decide`, so verdicts are made in one place.
"""

from __future__ import annotations

import polars as pl

from pipeline.core.engine import Engine, check_addresses, decide
from pipeline.core.mailboxes.step import MailboxChecker, RemoteChecker


async def verify(
    engine: Engine, work: pl.DataFrame
) -> tuple[pl.DataFrame, dict[str, int | float | str]]:
    checked = await check_addresses(engine, work)
    details: dict[str, int | float | str] = {}
    checker = engine.mailboxes
    if isinstance(checker, MailboxChecker):
        stats = checker.stats
        details = {
            "rcpts_sent": stats.rcpts,
            "smtp_sessions": stats.sessions,
            "busiest_host_sessions": max(stats.sessions_per_host.values(), default=0),
        }
    elif isinstance(checker, RemoteChecker):
        details = {"api_requests": checker.requests}
    return decide(checked), details
