"""Can this host verify? The checks behind ``listclean doctor`` and the SMTP start-up check.

Address-level verification needs a resolver that answers, outbound connections to port 25
(many networks and clouds block it), and an EHLO name that mail servers will accept (a fully
qualified name that resolves; ideally the PTR of the public address points back to it, which
only the network's owner can see and set).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.core.config import Config
from pipeline.core.dns import Resolver, check_health, host_addresses, lookup_domain, mail_hosts
from pipeline.core.errors import ResolverUnhealthyError


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


async def smtp_reachable(
    resolver: Resolver,
    canaries: Sequence[str],
    port: int,
    timeout: float,
    loopback_only: bool = False,
) -> Check:
    """Whether a canary domain's mail host answers with an SMTP banner on *port*."""
    tried: list[str] = []
    for canary in canaries:
        answer = await lookup_domain(resolver, canary)
        for host in (await mail_hosts(resolver, canary, answer.status))[:1]:
            addresses = await host_addresses(resolver, host)
            if loopback_only:  # the sandbox: nothing but loopback is ever connected to
                addresses = [a for a in addresses if ipaddress.ip_address(a).is_loopback]
            for address in addresses[:1]:
                banner = await _banner(address, port, timeout)
                if banner.startswith("220"):
                    return Check("outbound SMTP", True, f"{host} ({address}:{port}) answered")
                tried.append(f"{host} ({address}:{port}): {banner}")
    return Check(
        "outbound SMTP",
        False,
        "no mail server could be reached on port "
        f"{port} ({'; '.join(tried) or 'no mail host of the canary domains resolved'}). "
        "Outbound port 25 is blocked on many networks and clouds: verify from a host that may "
        "send mail, or run with --verify none.",
    )


async def _banner(address: str, port: int, timeout: float) -> str:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), timeout)
    except (OSError, TimeoutError) as exc:
        return f"cannot connect ({exc.__class__.__name__})"
    try:
        line = await asyncio.wait_for(reader.readline(), timeout)
        return line.decode("ascii", "replace").strip() or "no banner"
    except (OSError, TimeoutError):
        return "no banner in time"
    finally:
        writer.close()


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


async def run_doctor(config: Config, helo: str, loopback_only: bool = False) -> list[Check]:
    resolver = Resolver(config.dns)
    try:
        try:
            await check_health(resolver, config.dns.canaries)
            checks = [Check("resolver", True, f"{resolver.description} resolves the canaries")]
        except ResolverUnhealthyError as exc:
            return [Check("resolver", False, str(exc))]
        timeout = min(config.verify.timeout, 10.0)
        checks.append(
            await smtp_reachable(
                resolver, config.dns.canaries, config.verify.port, timeout, loopback_only
            )
        )
        checks.append(await helo_name(resolver, helo))
        return checks
    finally:
        await resolver.close()
