"""Talking to a vendor: where it is, how the key travels, retries, pace, and redaction.

- **Where:** each adapter names its documented hosts by role (ZeroBounce's ``api`` and
  ``bulk``); ``--api-url`` (``[vendor] url``) replaces the scheme, host and port of every one
  of them and keeps the documented paths, so a regional host, a proxy or a loopback fake stands
  in for the vendor. Plain ``http://`` is accepted only on loopback: several vendors take the key
  in the query string.
- **Retries:** connection failures, timeouts, 5xx (Cloudflare's 520 and 524 too) and 429 are
  asked again with full-jitter exponential backoff (``[vendor] retries``, ``backoff``); none of
  the vendors sends ``Retry-After``. A throttle a vendor reports inside a 200 (NeverBounce's
  ``throttle_triggered``, Emailable's 249) is retried the same way (:meth:`VendorHttp.retrying`).
- **Pace:** per-address requests keep to the vendor's published rate (or ``[vendor]
  per_minute``); ZeroBounce blocks a key for an hour after 100 bad requests a minute, so the
  run stops sending after :data:`BAD_REQUESTS` answers of 400 (never a syntax failure: those
  never reach a vendor).
- **Secrets:** the key is in no message. Errors name the exception's class and the request's
  path, never its URL (aiohttp's exceptions carry the URL, query string and key included), and
  every message passes :meth:`VendorHttp.scrub`. :func:`redact` blanks the key-bearing
  parameters of a URL that has to be shown.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import random
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Protocol, Self, TypeVar

from pipeline.core.config import VendorConfig
from pipeline.core.errors import UsageError
from pipeline.core.mailboxes.vendors.types import (
    Failure,
    JobStatus,
    Limits,
    VendorAnswer,
    VendorError,
)

if TYPE_CHECKING:  # imported when a run asks a vendor: every `listclean` start would pay for it
    import aiohttp

T = TypeVar("T")
RETRIED_STATUS: Final = frozenset({429, 500, 502, 503, 504, 520, 522, 524})
BAD_REQUESTS: Final = 50  # 400s after which a run stops sending (ZeroBounce blocks at 100/min)
# Query and form parameters that carry a key: ZeroBounce api_key, NeverBounce key, Kickbox
# apikey (the vendors' docs).
KEY_PARAMETERS: Final = frozenset({"api_key", "apikey", "key"})


def redact(url: str) -> str:
    """*url* with the values of its key-bearing parameters blanked."""
    parts = urllib.parse.urlsplit(url)
    if not parts.query:
        return url
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    shown = [(k, "***" if k.lower() in KEY_PARAMETERS else v) for k, v in pairs]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(shown, safe="*")))


def origin_of(url: str, vendor: str) -> str:
    """The scheme, host and port of *url* (``--api-url``), or UsageError."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--api-url {redact(url)!r} is not an http(s) URL; give the scheme, host and port "
            f"that stand in for {vendor}'s (https://host:port)."
        )
    if parts.path not in ("", "/") or parts.query:
        raise UsageError(
            f"--api-url {redact(url)!r} has a path or a query: with --verify {vendor} it "
            f"replaces only the scheme, host and port, and {vendor}'s documented paths are kept."
        )
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise UsageError(
            f"--api-url {redact(url)!r}: plain http is accepted only on this machine "
            f"(127.0.0.1, ::1, localhost): {vendor} takes the key in the request. Use https."
        )
    return f"{parts.scheme}://{parts.netloc}"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Reply:
    """A vendor's response, read whole."""

    status: int
    headers: Mapping[str, str]  # names in lower case
    body: bytes

    def json(self, vendor: str) -> Any:
        """The body as JSON, or VendorError (a proxy's HTML page, a truncated answer)."""
        try:
            return json.loads(self.body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise VendorError(
                Failure.BAD_ANSWER, f"{vendor} answered HTTP {self.status} with no JSON"
            ) from None

    def object(self, vendor: str) -> dict[str, Any]:
        """The body as a JSON object, or VendorError."""
        data = self.json(vendor)
        if not isinstance(data, dict):
            raise VendorError(
                Failure.BAD_ANSWER, f"{vendor} answered something else than an object"
            )
        return data

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    @property
    def is_json(self) -> bool:
        return "json" in self.headers.get("content-type", "")


class VendorHttp:
    """One vendor's HTTP client for one run: a keep-alive session, its hosts, retries, pace."""

    def __init__(
        self,
        vendor: str,
        origins: Mapping[str, str],
        key: str,
        config: VendorConfig,
        limits: Limits,
        *,
        base: str = "",
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.vendor = vendor
        self.key = key
        self.config = config
        self.limits = limits
        override = origin_of(base, vendor) if base else ""
        self._origins = {role: override or origin for role, origin in origins.items()}
        self._sleep = sleep
        self._clock = clock
        per_minute = config.per_minute or limits.per_minute
        self._interval = 60.0 / per_minute if per_minute else 0.0
        self._next_slot = 0.0
        self._pace = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None
        self.requests = 0  # HTTP requests sent, for the summary and the tests
        self.bad_requests = 0  # 400s: see BAD_REQUESTS

    async def __aenter__(self) -> Self:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=self.config.timeout)
        self._session = aiohttp.ClientSession(timeout=timeout, raise_for_status=False)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._session is not None:
            await self._session.close()

    @property
    def concurrency(self) -> int:
        return max(1, min(self.config.concurrency, self.limits.concurrency))

    def url(self, role: str, path: str) -> str:
        return self._origins[role] + path

    def scrub(self, text: str) -> str:
        """*text* without the key, should anything have quoted it."""
        return text.replace(self.key, "***") if self.key else text

    def error(self, failure: Failure, text: str) -> VendorError:
        return VendorError(failure, self.scrub(text))

    def refusal(
        self,
        reply: Reply,
        *,
        no_credits: frozenset[int] = frozenset({402}),
        refused: frozenset[int] = frozenset({401, 403}),
        throttled: frozenset[int] = frozenset(),
    ) -> None:
        """Raise the failure a status code stands for (a 4xx that is none of these: a bad
        answer for this address); nothing for a 2xx."""
        status = reply.status
        if status < 300 and status not in throttled:
            return
        said = said_in(reply)
        if status in no_credits:
            raise self.error(Failure.NO_CREDITS, f"{self.vendor}: out of credits ({said})")
        if status in refused:
            raise self.error(Failure.KEY_REFUSED, f"{self.vendor}: HTTP {status} ({said})")
        if status in throttled:
            raise self.error(Failure.THROTTLED, f"{self.vendor}: HTTP {status}, ask again")
        raise self.error(Failure.BAD_ANSWER, f"{self.vendor}: HTTP {status} ({said})")

    async def pace(self) -> None:
        """Wait for the next slot the vendor's rate allows (per-address requests)."""
        if not self._interval:
            return
        async with self._pace:
            wait = self._next_slot - self._clock()
            if wait > 0:
                await self._sleep(wait)
            self._next_slot = max(self._clock(), self._next_slot) + self._interval

    async def call(
        self,
        method: str,
        role: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        json_body: Any = None,
        data: Any = None,
        headers: Mapping[str, str] | None = None,
        url: str | None = None,
    ) -> Reply:
        """The vendor's reply to one request (*url*: an absolute address the vendor gave, a
        signed download link); transport failures, 5xx and 429 are asked again."""
        import aiohttp

        if self._session is None:
            raise RuntimeError("VendorHttp is used outside its `async with`")
        target = url or self.url(role, path)
        shown = urllib.parse.urlsplit(target).path or "/"
        failure, why = Failure.UNAVAILABLE, "no answer"
        for attempt in range(self.config.retries + 1):
            if attempt:
                await self._backoff(attempt)
            try:
                async with self._session.request(
                    method, target, params=params, json=json_body, data=data, headers=headers
                ) as response:
                    self.requests += 1
                    body = await response.read()
                    reply = Reply(
                        response.status, {k.lower(): v for k, v in response.headers.items()}, body
                    )
            except (aiohttp.ClientError, TimeoutError) as exc:
                why = f"{type(exc).__name__} on {method} {shown}"
                continue
            if reply.status not in RETRIED_STATUS:
                if reply.status == 400:
                    self.bad_requests += 1
                return reply
            failure = Failure.THROTTLED if reply.status == 429 else Failure.UNAVAILABLE
            why = f"HTTP {reply.status} on {method} {shown}"
        tries = self.config.retries + 1
        said = self.scrub(f"{self.vendor}: {why} after {tries} tries")
        raise VendorError(failure, said, retried=True)

    async def retrying(self, ask: Callable[[], Awaitable[T]]) -> T:
        """*ask*, asked again while it fails with a failure worth waiting out (a throttle the
        vendor reported in its body, say), up to ``[vendor] retries`` times; a failure
        :meth:`call` has already asked again about is not asked about twice over."""
        for attempt in range(self.config.retries + 1):
            if attempt:
                await self._backoff(attempt)
            try:
                return await ask()
            except VendorError as exc:
                if exc.retried or not exc.failure.passing or attempt == self.config.retries:
                    raise
        raise AssertionError("unreachable")

    async def _backoff(self, attempt: int) -> None:
        # Full jitter: retries from many requests must not arrive together at a vendor that
        # is already struggling (or already throttling this key).
        await self._sleep(random.uniform(0, self.config.backoff * 2 ** (attempt - 1)))


def said_in(reply: Reply) -> str:
    """The ``message`` of an error body ({"message": ...}, the vendors' common shape)."""
    try:
        data = json.loads(reply.body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "no message"
    said = data.get("message") or data.get("error") if isinstance(data, dict) else None
    return str(said)[:200] if said else "no message"


class Adapter(Protocol):
    """One vendor's documented API, spoken exactly; :mod:`.checker` holds the five."""

    @property
    def name(self) -> str: ...

    @property
    def limits(self) -> Limits: ...

    @property
    def origins(self) -> Mapping[str, str]:
        """Role -> the documented scheme://host."""
        ...

    async def balance(self, http: VendorHttp) -> int | None:
        """Credits left (None: the vendor does not say); VendorError for a refused key."""
        ...

    async def check(self, http: VendorHttp, address: str) -> VendorAnswer:
        """One address's answer, or VendorError."""
        ...

    async def submit(self, http: VendorHttp, addresses: Sequence[str]) -> str:
        """A bulk job of *addresses*, created and started; its id."""
        ...

    async def status(self, http: VendorHttp, job_id: str) -> JobStatus: ...

    async def results(self, http: VendorHttp, job_id: str) -> dict[str, VendorAnswer]:
        """A finished job's answers by address, lower case."""
        ...
