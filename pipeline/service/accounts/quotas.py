"""Quotas and the rate-limit headers that report them.

Who is counted: a key (``key:<key_id>``) against its plan's monthly quota, or, without a key,
the client IP (``ip:<address>``) against the anonymous daily quota; one counter per endpoint.
Windows are UTC calendar days and months.

The sandbox (``serve --sandbox``) answers from a made-up world, and its anonymous callers on
this machine (a loopback address: 127.0.0.0/8, ::1) are people trying the docs' examples: they
have no daily quota there. They are counted against a ``<endpoint>-sandbox-day`` policy of
:data:`SANDBOX_PER_DAY` requests, so every response still carries the same headers. Anyone
else, a key's holder or an anonymous caller from another address, is counted as always.

A plan may also cap requests per second (burst),
counted in memory: a burst window is too short to need surviving a restart, and with several
instances each counts its own (a key's burst cap is per instance; the quotas are shared).

The counters live in the service's state (:mod:`pipeline.service.accounts.state`): take, refund and
peek are coroutines, so that a PostgreSQL round trip never stalls the event loop.

Headers, on every API response (draft-ietf-httpapi-ratelimit-headers, structured fields)::

    RateLimit-Policy: "email-month";q=100;w=2592000
    RateLimit: "email-month";r=97;t=1234567
    X-RateLimit-Limit: 100            (the widely read legacy trio)
    X-RateLimit-Remaining: 97
    X-RateLimit-Reset: 1767225600     (Unix time the window resets)
    Retry-After: 1234567              (on 429 only: seconds until a request can succeed)
"""

from __future__ import annotations

import ipaddress
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from pipeline.core.clock import Window, window_bounds
from pipeline.service.accounts.state import LiveState
from pipeline.service.accounts.store import ApiKey
from pipeline.service.settings import ServiceConfig

# The anonymous loopback quota of the sandbox: no limit a person trying it could reach.
SANDBOX_PER_DAY: Final = 1_000_000


@dataclass(frozen=True)
class Identity:
    """Who a request is counted against."""

    ip: str
    key: ApiKey | None = None

    @property
    def subject(self) -> str:
        return f"key:{self.key.key_id}" if self.key else f"ip:{self.ip}"


@dataclass(frozen=True)
class Policy:
    name: str  # e.g. "email-month"
    limit: int
    window: Window


@dataclass(frozen=True)
class QuotaState:
    """One policy's position after (or without) counting a request."""

    policy: Policy
    used: int
    start: int
    end: int
    now: float

    @property
    def remaining(self) -> int:
        return max(0, self.policy.limit - self.used)

    @property
    def seconds_to_reset(self) -> int:
        return max(0, math.ceil(self.end - self.now))

    def policy_field(self) -> str:
        return f'"{self.policy.name}";q={self.policy.limit};w={self.end - self.start}'

    def state_field(self) -> str:
        return f'"{self.policy.name}";r={self.remaining};t={self.seconds_to_reset}'


@dataclass(frozen=True)
class Decision:
    allowed: bool
    quota: QuotaState  # the daily/monthly quota, reported in the headers
    burst: QuotaState | None = None  # the per-second cap, when the plan has one

    def headers(self) -> dict[str, str]:
        states = (self.quota,) if self.burst is None else (self.quota, self.burst)
        headers = {
            "RateLimit-Policy": ", ".join(s.policy_field() for s in states),
            "RateLimit": ", ".join(s.state_field() for s in states),
            "X-RateLimit-Limit": str(self.quota.policy.limit),
            "X-RateLimit-Remaining": str(self.quota.remaining),
            "X-RateLimit-Reset": str(self.quota.end),
        }
        if not self.allowed:
            blocking = self.burst if self.burst and not self.burst.remaining else self.quota
            headers["Retry-After"] = str(max(1, blocking.seconds_to_reset))
        return headers


class Quotas:
    """Decides whether a request may be served, and counts it when it is."""

    def __init__(
        self,
        config: ServiceConfig,
        store: LiveState,
        clock: Callable[[], float] = time.time,
        sandbox: bool = False,
    ) -> None:
        """*sandbox*: the service answers from the sandbox's world (see the module's text)."""
        self._config = config
        self._sandbox = sandbox
        self._store = store
        self._clock = clock
        self._bursts: dict[str, tuple[int, int]] = {}  # subject -> (second, requests in it)

    def policies(self, identity: Identity, endpoint: str) -> tuple[Policy, Policy | None]:
        if identity.key is None and self._sandbox and _loopback(identity.ip):
            return Policy(f"{endpoint}-sandbox-day", SANDBOX_PER_DAY, Window.DAY), None
        if identity.key is None:
            limit = getattr(self._config.anonymous, f"{endpoint}_per_day")
            return Policy(f"{endpoint}-day", limit, Window.DAY), None
        plan = self._config.plans.get(identity.key.plan)
        if plan is None:  # the operator removed a plan that keys are still on
            raise LookupError(
                f"API key {identity.key.key_id} is on plan {identity.key.plan!r}, which the "
                "service config does not define; add the plan back or move the key."
            )
        quota = Policy(f"{endpoint}-month", getattr(plan, f"{endpoint}_per_month"), Window.MONTH)
        burst = plan.burst_per_second
        return quota, Policy(f"{endpoint}-second", burst, Window.SECOND) if burst else None

    async def peek(self, identity: Identity, endpoint: str) -> Decision:
        """Where *identity* stands, without counting anything (for error responses)."""
        now = self._clock()
        policy, _ = self.policies(identity, endpoint)
        start, _ = window_bounds(policy.window, now)
        used = await self._store.used(identity.subject, policy.name, start)
        return self._standing(identity, endpoint, now, used)

    def peek_blocking(self, identity: Identity, endpoint: str) -> Decision:
        """:meth:`peek` for a caller that cannot wait (aiohttp's answer to a request it could
        not parse): the one place the state is read on the event loop whatever it is."""
        now = self._clock()
        policy, _ = self.policies(identity, endpoint)
        start, _ = window_bounds(policy.window, now)
        used = self._store.used_now(identity.subject, policy.name, start)
        return self._standing(identity, endpoint, now, used)

    def _standing(self, identity: Identity, endpoint: str, now: float, used: int) -> Decision:
        policy, burst_policy = self.policies(identity, endpoint)
        start, end = window_bounds(policy.window, now)
        quota = QuotaState(policy, used, start, end, now)
        burst = self._burst_state(identity.subject, burst_policy, now) if burst_policy else None
        return Decision(True, quota, burst)

    async def take(self, identity: Identity, endpoint: str) -> Decision:
        """Count one request if both the burst cap and the quota allow it. The burst cap is
        counted in memory first, and given back when the quota refuses."""
        now = self._clock()
        policy, burst_policy = self.policies(identity, endpoint)
        start, end = window_bounds(policy.window, now)
        burst = None
        if burst_policy is not None:
            burst = self._burst_state(identity.subject, burst_policy, now)
            if burst.remaining == 0:
                used = await self._store.used(identity.subject, policy.name, start)
                return Decision(False, QuotaState(policy, used, start, end, now), burst)
            burst = self._count_burst(identity.subject, burst, +1)
        allowed, used = await self._store.consume(
            identity.subject, policy.name, start, policy.limit
        )
        if not allowed and burst is not None:
            burst = self._count_burst(identity.subject, burst, -1)
        return Decision(allowed, QuotaState(policy, used, start, end, now), burst)

    def _count_burst(self, subject: str, burst: QuotaState, step: int) -> QuotaState:
        second, used = self._bursts.get(subject, (burst.start, 0))
        used = max(0, (used if second == burst.start else 0) + step)
        self._bursts[subject] = (burst.start, used)
        return QuotaState(burst.policy, used, burst.start, burst.end, burst.now)

    async def refund(self, identity: Identity, taken: Decision) -> Decision:
        """Give back the unit *taken* counted: the request failed on our side (a 5xx), and a
        caller is never charged for our failure. Returns where *identity* stands now."""
        quota = taken.quota
        await self._store.refund(identity.subject, quota.policy.name, quota.start)
        burst = taken.burst
        if burst is not None:
            burst = self._count_burst(identity.subject, burst, -1)
        quota = QuotaState(quota.policy, max(0, quota.used - 1), quota.start, quota.end, quota.now)
        return Decision(True, quota, burst)

    def _burst_state(self, subject: str, policy: Policy, now: float) -> QuotaState:
        start, end = window_bounds(Window.SECOND, now)
        second, used = self._bursts.get(subject, (start, 0))
        return QuotaState(policy, used if second == start else 0, start, end, now)


def _loopback(ip: str) -> bool:
    """Whether *ip* is this machine's (127.0.0.0/8, ::1, or IPv4 loopback mapped into IPv6)."""
    try:
        address = ipaddress.ip_address(ip)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))
