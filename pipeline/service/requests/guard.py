"""Failed authentication, slowed down per client address.

Guessing a 256-bit key is hopeless, but unlimited failures are free work for anyone (OWASP API
Security Top 10, 2023: API2 broken authentication, API4 unrestricted resource consumption). A
client address that has failed ``limit`` times within the last ``window`` seconds gets 429 with
``Retry-After`` for its further failures instead of 401; every failure counts, so a client that
ignores ``Retry-After`` stays slowed down. A request whose key is valid is always served, so the
owner of a key behind the same NAT as a guesser is never locked out.

Failures are counted in memory (a window is short; a restart may forget it), per address, and
for IPv6 per /64: one IPv6 client usually holds a whole /64 (RFC 6177), and counting single
addresses would let it fail 2^64 times as often. At most ``max_addresses`` addresses are
tracked; the one that failed least recently is forgotten first.
"""

from __future__ import annotations

import ipaddress
import math
from collections import OrderedDict, deque
from collections.abc import Callable


class AuthThrottle:
    def __init__(
        self,
        limit: int,
        window: float,
        clock: Callable[[], float],
        max_addresses: int = 100_000,
    ) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._max = max_addresses
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def failed(self, client_ip: str) -> int | None:
        """Count a failed authentication from *client_ip*: None when it may be told 401, else
        the seconds it must wait (its failures are past the limit)."""
        now = self._clock()
        bucket = client_bucket(client_ip)
        times = self._failures.pop(bucket, None) or deque(maxlen=self.limit)
        while times and times[0] <= now - self.window:
            times.popleft()
        over = len(times) >= self.limit
        wait = math.ceil(times[0] + self.window - now) if over else None
        times.append(now)  # at the limit the deque drops the oldest: the window slides on
        self._failures[bucket] = times
        if len(self._failures) > self._max:
            self._failures.popitem(last=False)
        return max(1, wait) if wait is not None else None


def client_bucket(client_ip: str) -> str:
    """What one client is counted as: an IPv4 address (IPv4-mapped IPv6 too), an IPv6 /64."""
    try:
        address = ipaddress.ip_address(client_ip)
    except ValueError:
        return client_ip
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)
