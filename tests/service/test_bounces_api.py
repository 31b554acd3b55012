"""/api/email reads the bounce ledger beside the service's domain cache."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.config import BouncesConfig
from tests.conftest import REPO
from tests.service.conftest import Env, fetch, run


def test_the_ledger_reaches_the_api(env: Env) -> None:
    with BounceLedger(env.cache.with_name("bounces.sqlite"), BouncesConfig()) as ledger:
        report = ledger.import_file(REPO / "sample_data" / "bounces.csv")
        assert report.added > 0

    async def scenario() -> dict[str, object]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            reply = await fetch(s, "GET", f"{url}/api/email", params={"email": "dlopez@gmail.com"})
            assert reply.status == 200, reply.text
            return reply.json  # type: ignore[no-any-return]

    answer = run(scenario())
    assert answer["HAS_KNOWN_BOUNCES"] is True
    assert answer["VERDICT"] == "Invalid" and "known_bounce" in str(answer["REASON"])


def test_no_ledger_means_no_bounce_flags(env: Env, tmp_path: Path) -> None:
    async def scenario() -> dict[str, object]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            reply = await fetch(s, "GET", f"{url}/api/email", params={"email": "dlopez@gmail.com"})
            return reply.json  # type: ignore[no-any-return]

    answer = run(scenario())
    assert answer["HAS_KNOWN_BOUNCES"] is False and answer["HAS_SUSPECTED_BOUNCES"] is False
