"""Stage 4, verify: address-level answers (SMTP or a remote API, when asked for), then VERDICT,
SCORE and REASON.

Both the batch and the service go through :func:`pipeline.core.engine.check_addresses` and
:func:`pipeline.core.engine.decide`, so verdicts are made in one place.
"""

from __future__ import annotations

import polars as pl

from pipeline.core.engine import Engine, check_addresses, decide
from pipeline.core.mailboxes.types import CheckStats


async def verify(engine: Engine, work: pl.DataFrame) -> tuple[pl.DataFrame, CheckStats | None]:
    checked, stats = await check_addresses(engine, work)
    return decide(checked), stats
