"""The vendors' value types: what a vendor answered about an address, why it could not, its
bulk jobs and its published limits. Everything else in the vendors' room builds on these."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field
from typing import Final

from pipeline.core.errors import UsageError
from pipeline.core.verdict import Reason

# Reasons that are no answer of the vendor's: the row keeps its domain-level verdict (or, for
# api_error, is Risky), and nothing is kept in the paid-answer cache.
NOT_ANSWERED: Final = frozenset(
    {Reason.API_ERROR, Reason.NOT_VERIFIED_CREDITS, Reason.NOT_VERIFIED_BUDGET}
)
# Answers that could not decide: kept for vendor.ttl_unknown only.
UNDECIDED: Final = frozenset(
    {
        Reason.VENDOR_UNKNOWN,
        Reason.GREYLISTED,
        Reason.SMTP_TIMEOUT,
        Reason.SMTP_UNREACHABLE,
        Reason.SMTP_BLOCKED,
        Reason.DNS_TIMEOUT,
        Reason.DNS_SERVFAIL,
    }
)


@dataclass(frozen=True)
class VendorAnswer:
    """What a vendor said about one address (or why there is no answer: see NOT_ANSWERED)."""

    reason: Reason  # the vendor's words as our reason code (verdicts.py)
    status: str  # the vendor's own words, "invalid/mailbox_not_found": DETAIL shows them
    vendor: str
    billed: bool = True  # whether the vendor charges a credit for this answer
    at: float = field(default_factory=time.time)

    @property
    def answered(self) -> bool:
        return self.reason not in NOT_ANSWERED

    @property
    def detail(self) -> str:
        return f"{self.vendor}: {self.status}" if self.status else self.vendor


def not_answered(vendor: str, reason: Reason, why: str) -> VendorAnswer:
    """The stand-in of an answer that did not come: *reason* says which kind, *why* in words."""
    return VendorAnswer(reason, why, vendor, billed=False)


class Failure(enum.StrEnum):
    """Why a vendor gave no answer, whatever status code or body it said it with."""

    KEY_REFUSED = "key_refused"  # a stop: exit 2
    NO_CREDITS = "no_credits"  # a clean stop: the rest not_verified_credits
    THROTTLED = "throttled"  # ask again after a wait
    UNAVAILABLE = "unavailable"  # 5xx, timeouts, connections: ask again after a wait
    BAD_ANSWER = "bad_answer"  # not the documented shape: api_error for the address
    JOB_FAILED = "job_failed"  # a bulk job the vendor gave up on: api_error for its addresses

    @property
    def passing(self) -> bool:
        """Whether waiting it out may help."""
        return self in (Failure.THROTTLED, Failure.UNAVAILABLE)


class VendorError(Exception):
    """A vendor's failure, in words that hold neither the key nor an address."""

    def __init__(self, failure: Failure, detail: str, *, retried: bool = False) -> None:
        super().__init__(detail)
        self.failure = failure
        self.detail = detail
        self.retried = retried  # asked again already, as often as the settings allow


class VendorKeyRefusedError(UsageError):
    """The vendor does not accept the key: the run stops (exit 2) before the list is spent."""


@dataclass(frozen=True)
class Limits:
    """What a vendor publishes about itself, and the rules of its own we keep."""

    concurrency: int  # per-address requests in flight at most
    per_minute: int  # per-address requests a minute at most (0: none published)
    single_max: int | None  # most addresses a run may walk one by one (None: our setting)
    bulk_max: int  # most addresses one bulk job takes
    bills_unknown: bool  # whether an answer that could not decide costs a credit


@dataclass(frozen=True)
class JobStatus:
    """Where a vendor's bulk job stands."""

    done: bool
    failed: str = ""  # the vendor's reason, when it gave up on the job
    progress: float | None = None  # 0 to 1, when the vendor says


@dataclass(frozen=True)
class Job:
    """A bulk job as the paid-answer store keeps it from the moment it is created."""

    vendor: str
    key_fp: str  # the key's fingerprint, never the key
    job_id: str
    targets: tuple[tuple[str, str], ...]  # (dedupe key, address sent)
    created_at: float
