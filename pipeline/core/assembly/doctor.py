"""Can this host verify? The checks behind ``listclean doctor``.

With a paid verifier as a method (``--verify zerobounce``, or a route to one), the doctor asks
the vendor for the key's balance: a refused key, or an empty balance, is a failed check. A run
whose methods are all vendors needs no port 25, so the SMTP checks are left out then.

Address-level verification needs a resolver that answers, outbound connections to port 25
(many networks and clouds block it), an EHLO name that mail servers will accept (a fully
qualified name that resolves; ideally the PTR of the public address points back to it, which
only the network's owner can see and set), and an envelope sender in a domain that exists:
servers that check the sender (Postfix reject_unknown_sender_domain, Exim sender
verification) refuse every recipient otherwise, and the run learns nothing
(``smtp_sender_refused``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.core.config import VENDORS, Config, routes_of, vendor_url
from pipeline.core.domains.dns import (
    TEMPORARY,
    DnsStatus,
    Resolver,
    check_health,
    host_addresses,
    lookup_domain,
)
from pipeline.core.errors import ResolverUnhealthyError, UsageError, VendorUnavailableError
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.identity import name_problem
from pipeline.core.mailboxes.smtp import SmtpSettings, smtp_reachable
from pipeline.core.mailboxes.types import Budget
from pipeline.core.mailboxes.vendors.checker import adapter_for
from pipeline.core.mailboxes.vendors.types import Job, VendorAnswer
from pipeline.core.mailboxes.vendors.verifier import VendorVerifier

_FIX = (
    "Pass --helo with this host's fully qualified name and --mail-from with an address in a "
    "domain you control (an MX record, and an SPF record allowing this host)."
)


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


async def helo_name(resolver: Resolver, helo: str, lists: DomainLists) -> Check:
    """The EHLO name should be a fully qualified name with an address of its own."""
    problem = name_problem(helo, lists.is_tld)
    if problem:
        return Check("EHLO name", False, f"{helo!r} cannot be a real host name ({problem}). {_FIX}")
    addresses = await host_addresses(resolver, helo)
    if not addresses:
        return Check("EHLO name", False, f"{helo} does not resolve; many servers refuse it. {_FIX}")
    return Check(
        "EHLO name",
        True,
        f"{helo} resolves to {', '.join(addresses[:3])}; make sure the PTR record of this "
        "host's public address names it too.",
    )


async def sender_domain(resolver: Resolver, sender: str, lists: DomainLists) -> Check:
    """The envelope sender's domain must exist and take mail, or servers refuse the sender."""
    domain = sender.rpartition("@")[2]
    problem = name_problem(domain, lists.is_tld)
    if problem:
        return Check("envelope sender", False, f"{sender!r}: {problem}. {_FIX}")
    answer = await lookup_domain(resolver, domain)
    if answer.status in TEMPORARY:
        return Check("envelope sender", False, f"{domain}: DNS did not answer; try again.")
    if answer.status not in (DnsStatus.MX, DnsStatus.IMPLICIT_MX):
        return Check(
            "envelope sender",
            False,
            f"{domain} has no mail host ({answer.status.value}): servers that check senders "
            f"refuse {sender} for every recipient. {_FIX}",
        )
    return Check(
        "envelope sender",
        True,
        f"{domain} receives mail ({answer.mx}); make sure its SPF record allows this host's "
        "address, or servers that check SPF refuse the probes.",
    )


async def vendor_key(config: Config, vendor: str, key: str | None) -> Check:
    """Does *vendor* take the key, and how many credits are left?"""
    name = f"{vendor} key"
    if not key:
        return Check(
            name, False, f"no key: pass --api-key or set LISTCLEAN_{vendor.upper()}_API_KEY"
        )
    base = vendor_url(config.vendor, vendor, main=vendor == config.verify.mode)
    verifier = VendorVerifier(
        adapter_for(vendor), key, config.vendor, _NoLedger(), Budget(None), base=base
    )
    try:
        balance = await verifier.balance()
    except (UsageError, VendorUnavailableError) as exc:
        return Check(name, False, str(exc))
    if balance is None:
        return Check(name, True, f"{vendor} accepts the key; it does not tell the balance")
    if balance <= 0:
        return Check(name, False, f"{vendor} accepts the key, but its balance is 0 credits")
    return Check(name, True, f"{vendor} accepts the key; balance {balance:,} credits")


class _NoLedger:
    """The doctor asks for a balance only: nothing to keep."""

    def open_jobs(self) -> list[Job]:
        return []

    def add_job(self, job: Job) -> None: ...
    def close_job(self, job: Job, state: str) -> None: ...
    def answered(self, key: str, answer: VendorAnswer) -> None: ...


async def run_doctor(
    config: Config,
    settings: SmtpSettings,
    lists: DomainLists,
    keys: Mapping[str, str] | None = None,
) -> list[Check]:
    """The resolver; then SMTP's checks unless every method is a paid verifier; then each
    paid verifier's key and balance (*keys*: method -> API key)."""
    methods = {config.verify.mode, *routes_of(config.routing).values()}
    vendors = [m for m in VENDORS if m in methods]
    resolver = Resolver(config.dns)
    try:
        try:
            await check_health(resolver, config.dns.canaries)
            checks = [Check("resolver", True, f"{resolver.description} resolves the canaries")]
        except ResolverUnhealthyError as exc:
            return [Check("resolver", False, str(exc))]
        for vendor in vendors:
            checks.append(await vendor_key(config, vendor, (keys or {}).get(vendor)))
        if vendors and "smtp" not in methods:  # no port 25 needed
            return checks
        timeout = min(settings.timeout, 10.0)
        reachable = await smtp_reachable(
            resolver, config.dns.canaries, settings.port, timeout, settings.loopback_only
        )
        checks.append(Check("outbound SMTP", reachable.ok, reachable.detail))
        checks.append(await helo_name(resolver, settings.helo, lists))
        checks.append(await sender_domain(resolver, settings.mail_from, lists))
        return checks
    finally:
        await resolver.close()
