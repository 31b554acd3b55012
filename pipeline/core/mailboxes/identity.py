"""Who the probes say they are: the EHLO name and the envelope sender, and whether they can work.

A mail server judges us before it judges any recipient, and it gives every recipient the same
answer when it does not like us: Postfix's ``reject_unknown_sender_domain`` refuses a MAIL FROM
domain without an MX or address record (``550 5.1.8 <postmaster@localhost>: Sender address
rejected: Domain not found``, at RCPT), ``reject_non_fqdn_helo_hostname`` an EHLO name without a
dot (postconf(5)). On a host without a fully qualified name the defaults would be ``localhost``
and ``postmaster@localhost``: every probe would be wasted on a refusal of us. So a run whose
*default* names cannot be real stops before it sends anything and says what to pass instead.
Names the operator gave (``--helo``, ``--mail-from``, ``[verify]``) are taken as given.

The sandbox gives its probes names of their own, so ``--sandbox`` works on any host.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass

from pipeline.core.addresses.syntax import normalize_domain
from pipeline.core.config import VerifyConfig
from pipeline.core.errors import UsageError

# The sandbox's names: fully qualified, under a real public suffix, and never contacted (the
# sandbox only talks to loopback). Its worlds decide whether they resolve.
SANDBOX_HELO = "probe.listclean-sandbox.net"

PublicSuffix = Callable[[str], bool]  # is this label a real top-level domain?


@dataclass(frozen=True)
class Identity:
    helo: str
    mail_from: str
    helo_given: bool  # set by a flag or the config, not derived from this host
    mail_from_given: bool  # set, or derived from a given EHLO name


def identity_of(verify: VerifyConfig, *, sandbox: bool = False) -> Identity:
    """The names of *verify*; missing ones come from this host's fully qualified name (or the
    sandbox's), the sender as postmaster at the EHLO name (RFC 5321 §4.5.1: every domain must
    accept mail for postmaster, so bounces about probes have somewhere to go)."""
    helo = verify.helo or (SANDBOX_HELO if sandbox else socket.getfqdn())
    sender = verify.mail_from or f"postmaster@{helo}"
    # A sender derived from a given EHLO name is the operator's choice too.
    return Identity(helo, sender, bool(verify.helo), bool(verify.mail_from or verify.helo))


def name_problem(name: str, is_tld: PublicSuffix) -> str:
    """Why *name* cannot be a mail domain or EHLO name on the internet; "" when it can."""
    domain, detail = normalize_domain(name)
    if not domain:
        return detail  # no dot, localhost, a special-use name (RFC 6761), bad syntax
    tld = domain.rsplit(".", 1)[-1]
    if not is_tld(tld):
        return f"'.{tld}' is not a top-level domain"
    return ""


def problems(who: Identity, is_tld: PublicSuffix) -> list[str]:
    """What is wrong with the names we would use, one sentence each."""
    found = []
    helo_problem = name_problem(who.helo, is_tld)
    if helo_problem and not who.helo_given:
        found.append(f"the EHLO name {who.helo!r} ({helo_problem})")
    sender_domain = who.mail_from.rpartition("@")[2]
    sender_problem = name_problem(sender_domain, is_tld)
    if sender_problem and not who.mail_from_given:
        found.append(f"the envelope sender {who.mail_from!r} ({sender_problem})")
    return found


def require_real(who: Identity, is_tld: PublicSuffix) -> None:
    """Refuse a run whose default names no mail server would accept."""
    found = problems(who, is_tld)
    if found:
        raise UsageError(
            f"SMTP checks cannot run with {' and '.join(found)}: mail servers refuse such a "
            "sender for every recipient, so no address would be verified. Pass a fully "
            "qualified EHLO name that resolves to this host (its PTR record should name it "
            "too) and an envelope sender in a domain you control, with an MX record and an SPF "
            "record allowing this host: --helo mail.example.org --mail-from "
            "verify@example.org. `listclean doctor` checks both."
        )
