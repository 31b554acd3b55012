"""Download links that carry no key: a short-lived token made for one file of one job.

A browser downloads a file by following a link, and a link cannot carry an ``Authorization``
header; putting the API key in the URL would leave it in the browser's history, in proxies'
logs and in the ``Referer`` of whatever the file opens. So the page asks for links (with its
key, in the header) and gets, for each file, a URL whose ``token`` is an HMAC-SHA256 (RFC 2104)
of the job, the file, the key's id and an expiry, under a secret every instance shares (kept in
the service's store). A token opens that one file until it expires, and nothing else.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from dataclasses import dataclass
from typing import Final

_MAC_BYTES: Final = 18  # 144 bits: forging one is hopeless; the URL stays short


@dataclass(frozen=True)
class Links:
    secret: bytes
    ttl: float

    def token(self, job_id: str, key_id: str, file: str, now: float | None = None) -> str:
        """A token for *file* (``result:csv:valid``, ``rejects``, ``report``) of the job."""
        expires = int((time.time() if now is None else now) + self.ttl)
        return f"{expires}.{self._mac(job_id, key_id, file, expires)}"

    def opens(
        self, token: str, job_id: str, key_id: str, file: str, now: float | None = None
    ) -> bool:
        """Whether *token* was made for exactly this file of this job, and is still valid."""
        expires_text, _, mac = token.partition(".")
        if not expires_text.isdigit() or len(expires_text) > 12:
            return False
        expires = int(expires_text)
        if expires < (time.time() if now is None else now):
            return False
        return hmac.compare_digest(mac, self._mac(job_id, key_id, file, expires))

    def expires(self, token: str) -> int:
        return int(token.partition(".")[0])

    def _mac(self, job_id: str, key_id: str, file: str, expires: int) -> str:
        message = f"{job_id}\n{key_id}\n{file}\n{expires}".encode()
        digest = hmac.new(self.secret, message, hashlib.sha256).digest()[:_MAC_BYTES]
        return base64.urlsafe_b64encode(digest).decode("ascii")
