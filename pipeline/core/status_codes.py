"""RFC 3463 enhanced mail system status codes, read in one place for SMTP replies and DSNs.

A code is ``class "." subject "." detail`` (RFC 3463 §2): class 2 success, 4 persistent
transient failure, 5 permanent failure; subject and detail of one to three digits. It is the
precise part of a mail server's answer (RFC 2034 puts it at the start of a reply's text), and a
bounce report carries it in its ``Status`` field (RFC 3464 §2.3.4).
"""

from __future__ import annotations

import re
from typing import Final

# Not part of a longer dotted number such as a version or an IP address.
_CODE: Final = re.compile(r"(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d.])")


def leading_status(text: str) -> str:
    """The code at the start of *text* ("5.1.1 No such user" -> "5.1.1"), or ""."""
    match = _CODE.match(text.strip())
    return match.group(0) if match else ""


def find_status(text: str) -> str:
    """The first code anywhere in *text* ("smtp; 550 5.1.1 ..." -> "5.1.1"), or ""."""
    match = _CODE.search(text)
    return match.group(0) if match else ""


def status_class(code: str) -> str:
    """ "2", "4" or "5" for a code found above; "" for none."""
    return code[:1]


def status_subject(code: str) -> str:
    """The class-free part of the code's subject and detail ("5.7.1" -> "7.1")."""
    return code[2:]
