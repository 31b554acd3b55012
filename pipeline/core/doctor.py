"""Can this host verify? The checks behind ``listclean doctor``.

Address-level verification needs a resolver that answers, outbound connections to port 25
(many networks and clouds block it), and an EHLO name that mail servers will accept (a fully
qualified name that resolves; ideally the PTR of the public address points back to it, which
only the network's owner can see and set).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.core.config import Config
from pipeline.core.dns import Resolver, check_health, host_addresses
from pipeline.core.errors import ResolverUnhealthyError
from pipeline.core.mailboxes.smtp import SmtpSettings, smtp_reachable


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


async def helo_name(resolver: Resolver, helo: str) -> Check:
    """The EHLO name should be a fully qualified name with an address of its own."""
    if "." not in helo.strip("."):
        return Check("EHLO name", False, f"{helo!r} is not a fully qualified name; set --helo.")
    addresses = await host_addresses(resolver, helo)
    if not addresses:
        return Check("EHLO name", False, f"{helo} does not resolve; many servers refuse it.")
    return Check(
        "EHLO name",
        True,
        f"{helo} resolves to {', '.join(addresses[:3])}; make sure the PTR record of this "
        "host's public address names it too.",
    )


async def run_doctor(config: Config, settings: SmtpSettings) -> list[Check]:
    resolver = Resolver(config.dns)
    try:
        try:
            await check_health(resolver, config.dns.canaries)
            checks = [Check("resolver", True, f"{resolver.description} resolves the canaries")]
        except ResolverUnhealthyError as exc:
            return [Check("resolver", False, str(exc))]
        timeout = min(settings.timeout, 10.0)
        reachable = await smtp_reachable(
            resolver, config.dns.canaries, settings.port, timeout, settings.loopback_only
        )
        checks.append(Check("outbound SMTP", reachable.ok, reachable.detail))
        checks.append(await helo_name(resolver, settings.helo))
        return checks
    finally:
        await resolver.close()
