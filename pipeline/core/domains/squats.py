"""Squatted typo domains: a domain one typing slip from a major provider whose mail does not go
to that provider is a typo, unless it is known to be real.

Squatters register the typo domains of big mail providers and run mail servers on them to
collect mis-addressed mail (J. Szurdi and N. Christin, "Email Typosquatting", ACM IMC 2017), so
DNS says "fine" and only the name gives them away. :func:`squat` decides from the evidence a
run has, cheapest first:

1. the typing model (:mod:`pipeline.core.domains.slips`): the domain is one slip from exactly
   one provider of ``mail_providers.txt``; anything else is no squat of a provider;
2. the domain's standing: a domain on the near-provider list (``near_providers.txt``, real
   domains near the providers' names, and the deployment's ``lists.extra_legitimate``) is real;
3. the MX (online only): mail that goes to one of the providers' own exchanges
   (``mail_providers.txt``) is the provider's own defensive registration or a customer of its
   hosted mail; mail at a mainstream mail host (:data:`MAIL_HOSTING`: Microsoft 365, Google
   Workspace and the like) is a real organisation's, since squatters park their catch-all
   hosts elsewhere. A mail host under the domain's own name or a third party's (a parking
   service's catch-all host) is what squatters run, and makes it a squat;
4. a short name (:data:`SHORT_NAME` letters or fewer: ``gm.com``, ``mai.ru``, ``weg.de``)
   under a real top-level domain is crowded with real organisations, so a mail host under its
   own name does not make it a squat, nor does the list evidence alone when DNS could not
   answer: only a third party's host does.

When DNS could not answer (``--offline``, timeouts), only 1, 2 and 4 apply. The verdict that
follows is Risky ``typo_suspected``, never Invalid: mail may well be delivered, to a stranger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pipeline.core.domains.slips import Slip, slip_index
from pipeline.core.lists import DomainLists

# Rule 4: a name of this many letters or fewer is crowded with real organisations.
SHORT_NAME: Final = 3

# Rule 3: mainstream mail hosting and filtering services (registrable domains of their MX
# hosts, as published in their set-up guides). Real organisations near a provider's name
# receive mail there (aon.com at Microsoft 365, wahoo.com at Google Workspace); a squatted
# typo points its MX at a domain-parking service's catch-all host, or runs its own.
MAIL_HOSTING: Final = frozenset(
    {
        "zoho.com", "zoho.eu", "messagingengine.com", "protonmail.ch", "pphosted.com",
        "ppe-hosted.com", "mimecast.com", "barracudanetworks.com", "secureserver.net",
        "ovh.net", "kundenserver.de", "ionos.com", "gmx.net", "web.de", "mail.ru",
        "yandex.net", "yandex.ru", "qq.com", "emailsrvr.com", "mailgun.org", "fastmail.com",
        "google.com", "googlemail.com", "outlook.com", "hotmail.com",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Squat:
    """A suggested provider and why, in words (for DETAIL)."""

    domain: str
    why: str


def slip_of(key: str, lists: DomainLists) -> tuple[str, Slip] | None:
    """(provider, slip) when *key* is one typing slip from exactly one major provider."""
    return slip_index(lists.provider_suffixes).get(key)


def squat(key: str, lists: DomainLists, *, mx: str, dns_answered: bool) -> Squat | None:
    """The provider *key* (a domain in lookup form, with its own working MX *mx*, or none known
    when DNS did not answer) is a squat of, and why; None when it is not one."""
    hit = slip_of(key, lists)
    if hit is None or key in lists.legitimate or key in lists.free_providers:
        return None
    provider, slip = hit
    short = _crowded(key, provider, lists)
    typed = f"{key} is {provider} with {slip.words}"
    if not dns_answered:
        if short:
            return None
        return Squat(provider, f"{typed}; DNS was not asked, and no list knows {key} as real.")
    host = lists.registrable_domain(mx) if mx else ""
    own = lists.providers.get(provider, frozenset())
    if not host or host in lists.provider_exchanges or host in MAIL_HOSTING:
        return None
    if host == lists.registrable_domain(key) or host.endswith(f".{key}"):
        if short:
            return None
        where = f"its own mail host ({mx})"
    else:
        where = f"a third party's mail host ({mx}), as parked typo domains do"
    shown = ", ".join(sorted(own)) or "its exchanges"
    return Squat(
        provider,
        f"{typed}; its mail goes to {where}, not to {provider}'s ({shown}), "
        f"and no list knows {key} as real.",
    )


def _crowded(key: str, provider: str, lists: DomainLists) -> bool:
    """Rule 4: a short name under a real top-level domain."""
    if not lists.is_tld(key.rsplit(".", 1)[-1]):
        return False  # no organisation lives under a TLD that does not exist
    suffix = lists.psl.publicsuffix(provider, accept_unknown=False) or ""
    if key.endswith(f".{suffix}"):  # a slip in the name: the name as typed
        return len(key[: -len(suffix) - 1]) <= SHORT_NAME
    return len(provider.split(".", 1)[0]) <= SHORT_NAME  # a slip in the ending
