"""Mail hosts of the squat world: the providers' own, parking services', hosting companies'.

The providers' host names are the ones they publish (their MX records), chosen here for the
world without reading listclean's list of provider exchanges.
"""

from __future__ import annotations

from typing import Final

# Domain-parking services: one catch-all host takes the mail of every domain they park.
PARKING: Final = (
    "park-mx.above.com",
    "mx1.sedoparking.com",
    "mail.h-email.net",
    "mx.parkingcrew.net",
)
# Hosting companies a small organisation may receive its mail at.
HOSTING: Final = ("mx1.hostinger.com", "mx1.mailspamprotection.com", "mx.zoho.eu")

_YAHOO: Final = "mta5.am0.yahoodns.net"
_AOL: Final = "mx-aol.mail.gm0.yahoodns.net"
_ATT: Final = "ff-ip4-mx-vip1.prodigy.net"
# A provider family's host, by the first label of its domains.
_FAMILY: Final = {
    "gmail": "gmail-smtp-in.l.google.com",
    "googlemail": "gmail-smtp-in.l.google.com",
    "yahoo": _YAHOO,
    "ymail": _YAHOO,
    "rocketmail": _YAHOO,
    "aol": _AOL,
    "verizon": _AOL,
    "icloud": "mx01.mail.icloud.com",
    "me": "mx01.mail.icloud.com",
    "mac": "mx01.mail.icloud.com",
    "att": _ATT,
    "sbcglobal": _ATT,
    "bellsouth": _ATT,
    "comcast": "mx1a1.comcast.net",
    "cox": "cxr.mx.a.cloudfilter.net",
    "charter": "mx.charter.net",
    "earthlink": "mx01.earthlink-vadesecure.net",
    "optonline": "mx.mail.optimum.net",
    "orange": "smtp-in.orange.fr",
    "wanadoo": "smtp-in.orange.fr",
    "free": "mx1.free.fr",
    "laposte": "smtp-in.laposte.net",
    "libero": "smtp-in.libero.it",
    "gmx": "mx00.emig.gmx.net",
    "web": "mx-ha03.web.de",
    "t-online": "mx00.t-online.de",
    "btinternet": "mx.bt.lon5.cpcloud.co.uk",
    "mail": "mxs.mail.ru",
    "yandex": "mx.yandex.ru",
}
_MICROSOFT: Final = ("outlook", "hotmail", "live", "msn")
# Families whose name under another suffix is the provider's own country domain; a short or
# common word ("me", "mail", "free", "web", "att") under another suffix is someone else's.
_COUNTRY_DOMAINS: Final = frozenset(
    {"gmail", "googlemail", "yahoo", "aol", "gmx", "t-online", "yandex", "orange", "wanadoo"}
    | {"libero", "laposte", "rocketmail", "ymail", "icloud", "btinternet", *_MICROSOFT}
)


def provider_host(domain: str, default: str | None = None) -> str:
    """The mail host of a provider's domain (or of its family's country domain); *default* for
    any other domain (a KeyError when there is none)."""
    name = domain.split(".", 1)[0]
    if name in _MICROSOFT:
        return f"{domain.replace('.', '-')}.olc.protection.outlook.com"
    if name in _FAMILY and (default is None or name in _COUNTRY_DOMAINS):
        return _FAMILY[name]
    if default is None:
        raise KeyError(f"no mail host known for {domain}")
    return default
