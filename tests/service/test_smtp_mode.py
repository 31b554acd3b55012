"""With [verify] mode = "smtp", /api/email also asks the mail server (sandbox world on loopback)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from pipeline.core.config import AnonymousConfig, VerifyConfig
from pipeline.sandbox.dns_server import SandboxDNS, load_world
from pipeline.sandbox.smtp_server import SandboxSMTP
from pipeline.service.app import Paths, create_app
from tests.conftest import SAMPLE_WORLD
from tests.service.conftest import fetch, run, service_config


@pytest.fixture(scope="module")
def mail_servers() -> Iterator[SandboxSMTP]:
    with SandboxSMTP(load_world(SAMPLE_WORLD).smtp) as smtp:
        yield smtp


def test_the_mailbox_answer_reaches_the_api(
    sample_dns: SandboxDNS, mail_servers: SandboxSMTP, tmp_path: Path
) -> None:
    from aiohttp import web

    base = service_config(sample_dns.address, anonymous=AnonymousConfig(email_per_day=10))
    verify = VerifyConfig(
        mode="smtp", port=mail_servers.port, timeout=2.0, helo="probe.example.net"
    )
    config = dataclasses.replace(base, engine=dataclasses.replace(base.engine, verify=verify))

    async def scenario() -> list[dict[str, object]]:
        app = create_app(
            config, Paths(tmp_path / "s.sqlite", tmp_path / "domains.sqlite"), loopback_only=True
        )
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            async with aiohttp.ClientSession() as s:
                answers = []
                for email in ("dlopez@gmail.com", "thomas.robinson+lists@outlook.com"):
                    reply = await fetch(
                        s, "GET", f"http://127.0.0.1:{port}/api/email", params={"email": email}
                    )
                    assert reply.status == 200, reply.text
                    answers.append(reply.json)
                return answers
        finally:
            await runner.cleanup()

    missing, present = run(scenario())
    assert (missing["VERDICT"], missing["REASON"]) == ("Invalid", "no_such_user")
    assert (present["VERDICT"], present["SCORE"]) == ("Valid", 0.97)
    assert (tmp_path / "mailboxes.sqlite").exists()  # answers kept for the batch to reuse
