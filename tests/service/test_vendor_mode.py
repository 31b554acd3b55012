"""With a paid verifier as [verify] mode, /api/email asks it only for keyed callers whose plan
says vendor = true: never for anonymous callers, never for other plans' keys. Its answers are
paid for once and shared through the paid-answer cache."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from pipeline.core.config import AnonymousConfig, VendorConfig, VerifyConfig
from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.service.app import Paths, create_app
from pipeline.service.settings import PlanConfig
from tests.service.conftest import create_key, fetch, run, service_config
from worlds.vendors.base import GOOD_KEY
from worlds.vendors.kickbox import FakeKickbox

ADDRESS = "rejected-email@gmail.com"  # the fake's undeliverable trigger


def test_only_plans_that_allow_it_have_the_vendor_asked(
    sample_dns: SandboxDNS, tmp_path: Path
) -> None:
    db = tmp_path / "service.sqlite"
    _, paying = create_key(db, "paid")
    _, other = create_key(db, "default")
    with FakeKickbox() as fake:
        base = service_config(
            sample_dns.address,
            plans={"paid": PlanConfig(1_000, 5, vendor=True)},
            anonymous=AnonymousConfig(email_per_day=10),
        )
        engine = dataclasses.replace(
            base.engine,
            verify=VerifyConfig(mode="kickbox"),
            vendor=VendorConfig(url=fake.url, retries=1, backoff=0.001, per_minute=600_000),
        )
        config = dataclasses.replace(base, engine=engine)

        async def scenario() -> list[dict[str, Any]]:
            app = create_app(
                config, Paths(db, tmp_path / "domains.sqlite"), api_keys={"kickbox": GOOD_KEY}
            )
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            url = f"http://127.0.0.1:{runner.addresses[0][1]}/api/email"
            answers = []
            try:
                async with aiohttp.ClientSession() as session:
                    for key in (None, other, paying, paying):
                        headers = {"Authorization": f"Bearer {key}"} if key else {}
                        reply = await fetch(
                            session, "GET", url, params={"email": ADDRESS}, headers=headers
                        )
                        assert reply.status == 200, reply.text
                        answers.append(reply.json)
            finally:
                await runner.cleanup()
            return answers

        anonymous, unpaid, paid, again = run(scenario())
        assert fake.checked("/v2/verify") == [ADDRESS]  # once: for the paying key
    assert (anonymous["VERDICT"], anonymous["REASON"]) == ("Valid", "")  # the domain level
    assert (unpaid["VERDICT"], unpaid["REASON"]) == ("Valid", "")
    assert (paid["VERDICT"], paid["REASON"]) == ("Invalid", "no_such_user")
    assert again == paid  # from the paid-answer cache
    assert (tmp_path / "vendor-answers.sqlite").exists()
