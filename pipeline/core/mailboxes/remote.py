"""Address-level answers from a remote service that speaks the spec's ``/api/email``.

The remote may be our own ``listclean serve`` or a hosted one; either way it has a quota, and
running over it costs money or gets the key blocked. So the client:

- reads the rate-limit headers of every response, both the IETF pair (``RateLimit-Policy`` /
  ``RateLimit``, draft-ietf-httpapi-ratelimit-headers) and the ``X-RateLimit-*`` trio, and never
  sends a request it knows the quota cannot cover;
- keeps its own ledger of what it spent in the current quota window (UTC calendar month), so
  consecutive runs stay within the plan even when the service sends no headers at all;
- on 429 waits for ``Retry-After`` when that is within the run's horizon, and otherwise stops
  cleanly, leaving the rest ``not_verified_budget`` for the next run;
- retries 5xx and connection failures with jittered exponential backoff, then gives up on that
  address as ``api_error`` (a malformed or partial answer is ``api_error`` too, never a crash);
- sends the key only in ``Authorization: Bearer`` (never in a URL, never in a log).
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipeline.core.clock import Window, window_bounds
from pipeline.core.config import ApiConfig
from pipeline.core.errors import UsageError
from pipeline.core.mailboxes.types import Budget, RemoteAnswer, Target
from pipeline.core.verdict import Verdict

if TYPE_CHECKING:  # imported when a run uses the API: every `listclean` start would pay for it
    import aiohttp

_PARAM = re.compile(r";\s*([a-z]+)=([^;,]+)")


@dataclass(frozen=True)
class QuotaView:
    """What one response's headers say about the caller's quota."""

    limit: int | None = None
    remaining: int | None = None
    reset_in: float | None = None  # seconds until the window renews
    retry_after: float | None = None


def read_quota(headers: Mapping[str, str], now: float) -> QuotaView:
    """The quota as the headers tell it; the most constraining policy wins."""
    limit = _int(headers.get("X-RateLimit-Limit"))
    remaining = _int(headers.get("X-RateLimit-Remaining"))
    reset_in = _reset_seconds(headers.get("X-RateLimit-Reset"), now)
    for params in _items(headers.get("RateLimit", "")):
        r, t = _int(params.get("r")), _int(params.get("t"))
        if r is not None and (remaining is None or r < remaining):
            remaining, reset_in = r, float(t) if t is not None else reset_in
    for params in _items(headers.get("RateLimit-Policy", "")):
        q = _int(params.get("q"))
        if q is not None and limit is None:
            limit = q
    retry = _reset_seconds(headers.get("Retry-After"), now)
    return QuotaView(limit, remaining, reset_in, retry)


def _items(field: str) -> list[dict[str, str]]:
    """Structured-field list items (RFC 8941) as parameter dicts: '"a";r=1;t=2, "b";r=3'."""
    found = []
    for raw in field.split(","):
        if raw.strip():
            found.append({k: v.strip() for k, v in _PARAM.findall(raw)})
    return found


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _reset_seconds(value: str | None, now: float) -> float | None:
    """Seconds until a reset given as delta seconds or as Unix time (big numbers are times)."""
    number = _int(value)
    if number is None:
        return None
    return max(0.0, number - now) if number > 1_000_000_000 else float(number)


def key_fingerprint(key: str) -> str:
    """How the ledger names a key without storing it."""
    return hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class QuotaLedger:
    """Per API URL, key and window: requests spent and the quota learned (store injected).

    The learned quota is kept too, so that the next run knows the limit before its first
    request, even if the service no longer sends headers.
    """

    spent: Callable[[str, str, int], int]  # (api, key fingerprint, window start) -> spent
    add: Callable[[str, str, int, int], None]  # (..., requests) -> None
    limit: Callable[[str, str, int], int | None]  # -> the quota, if ever learned
    set_limit: Callable[[str, str, int, int], None]


class ApiKeyRejectedError(UsageError):
    """The remote service does not accept the key."""


class RemoteVerifier:
    """Verifies addresses through a remote ``/api/email`` within quota and budget."""

    def __init__(
        self,
        config: ApiConfig,
        key: str | None,
        ledger: QuotaLedger,
        budget: Budget,
        on_result: Callable[[str, RemoteAnswer], None],
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._config = config
        self._key = key
        self._ledger = ledger
        self.budget = budget
        self._on_result = on_result
        self._clock = clock
        self._sleep = sleep
        self._api = config.url.rstrip("/")
        self._fingerprint = key_fingerprint(key or "")
        # The spec's plans count per UTC calendar month.
        self._window = window_bounds(Window.MONTH, clock())
        # Spent in this window by every run so far (ours counted as we go).
        self._spent = ledger.spent(self._api, self._fingerprint, self._window[0])
        learned = ledger.limit(self._api, self._fingerprint, self._window[0])
        self._limit: int | None = config.quota or learned
        self._remaining: int | None = None  # what the last response's headers said
        self._in_flight = 0
        self._stopped = ""  # why sending stopped, once it has
        self.requests = 0  # requests actually sent, for the summary and the tests

    def quota_left(self) -> int | None:
        """Requests the quota still allows in this window, as far as we know (None: unknown)."""
        local = None if self._limit is None else self._limit - self._spent
        known = [v for v in (local, self._remaining) if v is not None]
        return min(known) - self._in_flight if known else None

    async def run(self, targets: Sequence[Target]) -> dict[str, RemoteAnswer]:
        answers: dict[str, RemoteAnswer] = {}
        queue = collections.deque(targets)
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=self._config.timeout)
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        async with aiohttp.ClientSession(timeout=timeout, headers=headers) as session:

            async def worker() -> None:
                while queue:
                    target = queue.popleft()
                    answers[target.key] = await self._one(session, target)

            await asyncio.gather(*(worker() for _ in range(self._config.concurrency)))
        return answers

    async def _one(self, session: aiohttp.ClientSession, target: Target) -> RemoteAnswer:
        if not self._may_send():
            return RemoteAnswer(None, error=f"not_verified_budget: {self._stopped}")
        self._in_flight += 1
        try:
            answer = await self._ask(session, target.address)
        finally:
            self._in_flight -= 1
        if not answer.error.startswith("not_verified_budget"):
            self._on_result(target.key, answer)
        return answer

    def _may_send(self) -> bool:
        if self._stopped:
            return False
        left = self.quota_left()
        if left is not None and left <= 0:
            self._stopped = "the API quota for this month is used up"
            return False
        if not self.budget.take():
            self._stopped = "the run's request budget is spent"
            return False
        return True

    async def _ask(self, session: aiohttp.ClientSession, address: str) -> RemoteAnswer:
        import aiohttp

        failure = "no answer"
        for attempt in range(self._config.retries + 1):
            if attempt:
                # Full jitter (exponential backoff, random share): retries from many workers
                # must not arrive together at a service that is already struggling.
                await self._sleep(random.uniform(0, self._config.backoff * 2 ** (attempt - 1)))
            try:
                async with session.get(f"{self._api}/api/email", params={"email": address}) as r:
                    self.requests += 1
                    body = await r.read()
                    status, quota = r.status, read_quota(r.headers, self._clock())
            except (aiohttp.ClientError, TimeoutError) as exc:
                failure = f"{exc.__class__.__name__}"
                continue
            self._learn(quota)
            if status == 200:
                self._count_spent()
                return _parse(body)
            if status == 429:
                failure = "HTTP 429"
                if not await self._wait_for(quota):
                    return RemoteAnswer(None, error=f"not_verified_budget: {self._stopped}")
                continue
            if status in (401, 403):
                raise ApiKeyRejectedError(
                    f"The verification service at {self._api} refused the API key "
                    f"(HTTP {status}). Check --api-key or LISTCLEAN_API_KEY."
                )
            if status < 500:
                return RemoteAnswer(None, error=f"api_error: HTTP {status}")
            failure = f"HTTP {status}"
        return RemoteAnswer(
            None, error=f"api_error: {failure} after {self._config.retries + 1} tries"
        )

    def _learn(self, quota: QuotaView) -> None:
        # A quota set in the config is the operator's word; otherwise the service's is.
        if quota.limit is not None and not self._config.quota and quota.limit != self._limit:
            self._limit = quota.limit
            self._ledger.set_limit(self._api, self._fingerprint, self._window[0], quota.limit)
        if quota.remaining is not None:
            self._remaining = quota.remaining

    def _count_spent(self) -> None:
        self._spent += 1
        self._ledger.add(self._api, self._fingerprint, self._window[0], 1)

    async def _wait_for(self, quota: QuotaView) -> bool:
        """After a 429: wait if the service says when, within the horizon; else stop."""
        wait = quota.retry_after if quota.retry_after is not None else quota.reset_in
        if wait is None or wait > self._config.horizon:
            self._stopped = "the API answered 429 and the quota renews beyond this run's horizon"
            return False
        await self._sleep(wait)
        return True


def _parse(body: bytes) -> RemoteAnswer:
    """The spec's result object, checked field by field; anything off is an api_error."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return RemoteAnswer(None, error="api_error: the answer is not JSON")
    if not isinstance(data, dict):
        return RemoteAnswer(None, error="api_error: the answer is not a JSON object")
    missing = [f for f in ("VERDICT", "SCORE") if f not in data]
    if missing:
        return RemoteAnswer(None, error=f"api_error: the answer lacks {', '.join(missing)}")
    verdict, score = data["VERDICT"], data["SCORE"]
    if verdict not in {v.value for v in Verdict} or not isinstance(score, int | float):
        return RemoteAnswer(None, error="api_error: VERDICT or SCORE has an unexpected value")
    flags = {f: data.get(f) is True for f in ("HAS_KNOWN_BOUNCES", "HAS_SUSPECTED_BOUNCES")}
    return RemoteAnswer(
        Verdict(verdict),
        min(1.0, max(0.0, float(score))),
        flags["HAS_KNOWN_BOUNCES"],
        flags["HAS_SUSPECTED_BOUNCES"],
    )
