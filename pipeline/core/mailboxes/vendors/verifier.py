"""One run's requests to one vendor: per address or in bulk, within the credits the run may
spend, each answer committed as it comes, and the jobs a killed run left collected, never
submitted again.

The checker (:mod:`.checker`) decides *which* addresses before anything is spent: the cache's
answers, the bounce ledger's, the budget's and the balance's share-out. This module spends:

- **Per address** when the run has few addresses (``[vendor] single_max``, at most 100 for
  NeverBounce), at most the vendor's concurrency in flight and at its published pace.
- **In bulk** otherwise: jobs of at most the vendor's largest size. Each job is committed to
  the store the moment the vendor names it, then polled every ``poll_interval`` seconds for at
  most ``job_timeout``; a job still running then is left open, its rows keep their
  domain-level verdict (``not_verified_budget``), and the next run collects it.
- **Credits:** a credit is taken from the run's budget before each request (a job's size
  before it is submitted) and given back for each answer the vendor does not bill (ZeroBounce's
  and Kickbox's unknowns) and each request that got no answer.
- **Failures are never verdicts:** a refused key stops the run (:class:`VendorKeyRefusedError`,
  exit 2); an empty balance stops the sending, and the addresses left are
  ``not_verified_credits``; a malformed answer, a failed job or a vendor that stays
  unavailable after the retries is ``api_error`` for its addresses only.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Final, Protocol

from pipeline.core.config import VendorConfig
from pipeline.core.errors import VendorUnavailableError
from pipeline.core.mailboxes.remote import key_fingerprint
from pipeline.core.mailboxes.types import Budget, Target
from pipeline.core.mailboxes.vendors.http import BAD_REQUESTS, Adapter, VendorHttp
from pipeline.core.mailboxes.vendors.types import (
    Failure,
    Job,
    VendorAnswer,
    VendorError,
    VendorKeyRefusedError,
    not_answered,
)
from pipeline.core.verdict import Reason

Answers = dict[str, VendorAnswer]
_INFINITE: Final = 10**12
STILL_RUNNING: Final = "still running"  # the words of a job left for the next run


class Ledger(Protocol):
    """Where a verifier commits what it learns, as it learns it: the paid-answer store (a
    local run), or events the driver commits (a Dask worker)."""

    def open_jobs(self) -> list[Job]: ...
    def add_job(self, job: Job) -> None: ...
    def close_job(self, job: Job, state: str) -> None: ...
    def answered(self, key: str, answer: VendorAnswer) -> None: ...


def refused(vendor: str, detail: str) -> VendorKeyRefusedError:
    return VendorKeyRefusedError(
        f"{vendor} refused the API key ({detail}); nothing was sent for the list. Check "
        f"--api-key, LISTCLEAN_API_KEY or LISTCLEAN_{vendor.upper()}_API_KEY."
    )


class VendorVerifier:
    """Asks one vendor about a run's addresses (see the module's docstring)."""

    def __init__(
        self,
        adapter: Adapter,
        key: str,
        config: VendorConfig,
        ledger: Ledger,
        budget: Budget,
        *,
        base: str = "",
        on_progress: Callable[[int], object] | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.adapter = adapter
        self.vendor = adapter.name
        self._key = key
        self.key_fp = key_fingerprint(key)
        self._config = config
        self._ledger = ledger
        self.budget = budget
        self._base = base
        self._moved = on_progress or (lambda n: None)
        self._sleep = sleep
        self._clock = clock
        self.requests = 0  # HTTP requests sent
        self.credits = 0  # answers the vendor bills
        self.stopped = ""  # why the sending stopped (an empty balance), once it has

    def on_progress(self, moved: Callable[[int], object]) -> None:
        """Tell *moved* how many more addresses are done, as they are (bulk jobs: as the
        vendor's status reports them)."""
        self._moved = moved

    def open_jobs(self) -> list[Job]:
        """The bulk jobs of this vendor and key that a run left open."""
        return self._ledger.open_jobs()

    def http(self) -> VendorHttp:
        adapter = self.adapter
        return VendorHttp(
            self.vendor,
            adapter.origins,
            self._key,
            self._config,
            adapter.limits,
            base=self._base,
            sleep=self._sleep,
        )

    async def balance(self) -> int | None:
        """The credits left (None: the vendor does not say); a refused key raises
        :class:`VendorKeyRefusedError` here, before the list is spent, and a vendor that does
        not answer :class:`VendorUnavailableError`."""
        async with self.http() as http:
            try:
                return await http.retrying(lambda: self.adapter.balance(http))
            except VendorError as exc:
                if exc.failure is Failure.KEY_REFUSED:
                    raise refused(self.vendor, exc.detail) from None
                raise VendorUnavailableError(
                    f"{self.vendor} could not tell its balance ({exc.detail}); nothing was "
                    "sent for the list. Try again later, or check --api-url."
                ) from None
            finally:
                self.requests += http.requests

    def single_max(self) -> int:
        """Most addresses this run asks about one at a time."""
        published = self.adapter.limits.single_max
        return min(self._config.single_max, published if published is not None else _INFINITE)

    async def run(self, targets: Sequence[Target]) -> Answers:
        """An answer (or the reason there is none) for every target."""
        async with self.http() as http:
            try:
                answers = await self._resume(http, targets)
                rest = [t for t in targets if t.key not in answers]
                if len(rest) <= self.single_max():
                    answers |= await self._one_by_one(http, rest)
                else:
                    answers |= await self._in_bulk(http, rest)
            finally:
                self.requests += http.requests
        return answers

    # --- per address --------------------------------------------------------------------------

    async def _one_by_one(self, http: VendorHttp, targets: Sequence[Target]) -> Answers:
        answers: Answers = {}
        gate = asyncio.Semaphore(http.concurrency)

        async def one(target: Target) -> None:
            async with gate:
                answers[target.key] = await self._ask(http, target)

        await asyncio.gather(*(one(t) for t in targets))
        return answers

    async def _ask(self, http: VendorHttp, target: Target) -> VendorAnswer:
        if self.stopped:
            return not_answered(self.vendor, Reason.NOT_VERIFIED_CREDITS, self.stopped)
        if http.bad_requests >= BAD_REQUESTS:
            why = f"stopped after {BAD_REQUESTS} bad requests, before the vendor blocks the key"
            return not_answered(self.vendor, Reason.API_ERROR, why)
        if not self.budget.take():
            return not_answered(self.vendor, Reason.NOT_VERIFIED_BUDGET, "the run's budget")
        await http.pace()
        try:
            answer = await http.retrying(lambda: self.adapter.check(http, target.address))
        except VendorError as exc:
            answer = self._failed(exc)
        self._commit(target.key, answer, reserved=True)
        self._moved(1)
        return answer

    # --- in bulk --------------------------------------------------------------------------------

    async def _in_bulk(self, http: VendorHttp, targets: Sequence[Target]) -> Answers:
        size = self.adapter.limits.bulk_max
        chunks = [list(targets[i : i + size]) for i in range(0, len(targets), size)]
        answers: Answers = {}
        jobs: list[Job] = []
        for chunk in chunks:
            if self.stopped:
                why = self.stopped
                answers |= {
                    t.key: not_answered(self.vendor, Reason.NOT_VERIFIED_CREDITS, why)
                    for t in chunk
                }
                continue
            job = await self._submit(http, chunk, answers)
            if job is not None:
                jobs.append(job)
        for found in await asyncio.gather(*(self._collect(http, job) for job in jobs)):
            answers |= found
        return answers

    async def _submit(self, http: VendorHttp, chunk: list[Target], answers: Answers) -> Job | None:
        self.budget.spent += len(chunk)  # the share-out made sure the budget covers it
        try:
            addresses = [t.address for t in chunk]
            job_id = await http.retrying(lambda: self.adapter.submit(http, addresses))
        except VendorError as exc:
            self.budget.spent -= len(chunk)
            failed = self._failed(exc)
            answers |= dict.fromkeys((t.key for t in chunk), failed)
            return None
        job = Job(
            self.vendor, self.key_fp, job_id, tuple((t.key, t.address) for t in chunk), time.time()
        )
        self._ledger.add_job(job)  # before anything else: a run killed now collects it later
        return job

    async def _resume(self, http: VendorHttp, targets: Sequence[Target]) -> Answers:
        """The answers of the open jobs that hold any of *targets* (a killed run's), collected."""
        wanted = {t.key for t in targets}
        jobs = [j for j in self._ledger.open_jobs() if wanted & {k for k, _ in j.targets}]
        answers: Answers = {}
        for found in await asyncio.gather(*(self._collect(http, j, paid=True) for j in jobs)):
            answers |= {k: a for k, a in found.items() if k in wanted}
        return answers

    async def _collect(self, http: VendorHttp, job: Job, paid: bool = False) -> Answers:
        """A job's answers once it is done, or why there are none. *paid*: a job an earlier
        run submitted, whose credits this run's budget does not hold."""
        keys = [k for k, _ in job.targets]
        try:
            done = await self._wait(http, job)
            if not done:
                why = (
                    f"job {job.job_id} {STILL_RUNNING} after {self._config.job_timeout:g} s "
                    "(vendor.job_timeout); the next run collects it"
                )
                return self._all(keys, not_answered(self.vendor, Reason.NOT_VERIFIED_BUDGET, why))
            found = await http.retrying(lambda: self.adapter.results(http, job.job_id))
        except VendorError as exc:
            if exc.failure is Failure.KEY_REFUSED:
                raise refused(self.vendor, exc.detail) from None
            self._ledger.close_job(job, "failed")
            return self._refunded(keys, self._failed(exc), paid)
        answers = {}
        for key, address in job.targets:
            answer = found.get(address.lower())
            if answer is None:
                why = f"job {job.job_id} gave no answer for the address"
                answer = not_answered(self.vendor, Reason.API_ERROR, why)
            self._commit(key, answer, reserved=not paid)
            answers[key] = answer
        self._ledger.close_job(job, "collected")
        return answers

    async def _wait(self, http: VendorHttp, job: Job) -> bool:
        """Poll *job* until it is done (True) or job_timeout has passed (False)."""
        deadline = self._clock() + self._config.job_timeout
        shown = 0
        while True:
            status = await http.retrying(lambda: self.adapter.status(http, job.job_id))
            if status.failed:
                raise VendorError(
                    Failure.JOB_FAILED, f"{self.vendor} job {job.job_id}: {status.failed}"
                )
            if status.progress is not None:
                now = int(status.progress * len(job.targets))
                self._moved(max(0, now - shown))
                shown = max(shown, now)
            if status.done:
                self._moved(len(job.targets) - shown)
                return True
            if self._clock() >= deadline:
                return False
            await self._sleep(self._config.poll_interval)

    # --- what an answer or a failure does -----------------------------------------------------

    def _commit(self, key: str, answer: VendorAnswer, reserved: bool) -> None:
        """Keep *answer*; the credit *reserved* for it is this run's if the vendor bills it,
        and goes back to the budget if not (an unbilled unknown, a failure)."""
        if reserved:
            if answer.answered and answer.billed:
                self.credits += 1
            else:
                self.budget.spent -= 1
        self._ledger.answered(key, answer)

    def _failed(self, exc: VendorError) -> VendorAnswer:
        """What a failure leaves a row with; a refused key stops the run."""
        if exc.failure is Failure.KEY_REFUSED:
            raise refused(self.vendor, exc.detail) from None
        if exc.failure is Failure.NO_CREDITS:
            self.stopped = self.stopped or f"out of credits: {exc.detail}"
            return not_answered(self.vendor, Reason.NOT_VERIFIED_CREDITS, self.stopped)
        return not_answered(self.vendor, Reason.API_ERROR, exc.detail)

    def _all(self, keys: Iterable[str], answer: VendorAnswer) -> Answers:
        return dict.fromkeys(keys, answer)

    def _refunded(self, keys: list[str], answer: VendorAnswer, paid: bool) -> Answers:
        if not paid:
            self.budget.spent -= len(keys)
        return self._all(keys, answer)
