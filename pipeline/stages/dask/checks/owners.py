"""The owners of a Dask run's address checks: the tasks that send the requests.

One task owns each group of mail providers (SMTP: every provider in exactly one group, so one
prober paces each provider, keeps its session limits and breakers and sends its catch-all
probes), one owns a remote API, one each paid verifier. An owner is a task like any other: the
scheduler places it, and if its worker is lost it runs again on another, from the same
targets. Nothing it learned is lost with the worker, because it is never only there:

- each answer, catch-all finding, quota count and bulk job id is committed to the shared store
  (:mod:`pipeline.stages.dask.stores`) the moment it is known, by a thread of the owner's
  (:class:`Committer`), with what each domain has spent so far (the run's journal);
- an owner that starts again reads them back: the targets answered meanwhile are not asked
  again, a domain goes on with what its allowance has left, a vendor's open job is collected,
  never submitted again. What was in flight on the lost worker (at most one RCPT per open
  session, the requests in flight to an API) is asked again, and not charged twice.

Each owner also sends the driver how much it has spent (a Dask event), for the run's meter and
its work directory (a killed run goes on with the budget it had left).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipeline.core.config import ApiConfig, DnsConfig, ListsConfig, VendorConfig, VerifyConfig
from pipeline.core.domains.dns import SharedResolver
from pipeline.core.mailboxes.checkers import outbound_works
from pipeline.core.mailboxes.prober import Prober
from pipeline.core.mailboxes.remote import QuotaLedger, RemoteVerifier, key_fingerprint
from pipeline.core.mailboxes.replies import Reply, classify
from pipeline.core.mailboxes.smtp import SmtpSettings, result_of
from pipeline.core.mailboxes.step import mailbox_table, remote_table
from pipeline.core.mailboxes.types import (
    Budget,
    CheckStats,
    Mailbox,
    MailboxResult,
    RemoteAnswer,
    Target,
)
from pipeline.core.mailboxes.vendors.checker import adapter_for, vendor_stats, vendor_table
from pipeline.core.mailboxes.vendors.types import Job, VendorAnswer
from pipeline.core.mailboxes.vendors.verifier import VendorVerifier
from pipeline.stages.dask.checks.plan import as_targets
from pipeline.stages.dask.sizes import size_of
from pipeline.stages.dask.stores import Stores, journal, mailbox_store, paid_store
from pipeline.stages.dask.tasks import worker_lists


class Forward:
    """Tells the driver what an owner has spent, as it spends it (a Dask event topic)."""

    def __init__(self, topic: str, owner: int) -> None:
        from distributed import get_worker

        self._worker = get_worker()
        self._topic = topic
        self._owner = owner

    def spent(self, spent: int, answered: int) -> None:
        self._worker.log_event(self._topic, [self._owner, spent, answered])


class Committer:
    """Commits what an owner learns from a thread of its own, in the order it comes, so the
    owner's event loop never waits on the store: each item reaches the store a moment after it
    arrives, together with whatever arrived meanwhile."""

    def __init__(self, write: Callable[[list[Any]], None]) -> None:
        self._write = write
        self._items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="listclean-commit", daemon=True)
        self._thread.start()

    def put(self, item: Any) -> None:
        if self._failed is not None:
            raise self._failed
        self._items.put(item)

    def close(self) -> None:
        """Everything put committed (or the store's failure raised)."""
        self._items.put(None)
        self._thread.join()
        if self._failed is not None:
            raise self._failed

    def _run(self) -> None:
        done = False
        while not done:
            batch = [self._items.get()]
            while True:
                try:
                    batch.append(self._items.get_nowait())
                except queue.Empty:
                    break
            done = batch[-1] is None
            items = [i for i in batch if i is not None]
            if items and self._failed is None:
                try:
                    self._write(items)
                except BaseException as exc:  # raised in the owner at its next put or close
                    self._failed = exc


@dataclass(frozen=True)
class Owned:
    """What an owner answered (a table by KEY, for every target it owned) and sent."""

    table: pl.DataFrame
    stats: CheckStats
    spent: int

    def __sizeof__(self) -> int:
        return size_of(self.table) + 64


# --- SMTP --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SmtpOrder:
    """One group of mail providers' probing: what each of its domains may spend (None: no
    limit), where to commit, and the canaries' mail hosts the driver resolved (port 25 is
    checked from the owner's own process against them, with no DNS query)."""

    owner: int
    allowances: dict[str, int] | None
    stores: Stores
    topic: str
    config: VerifyConfig
    settings: SmtpSettings
    dns: DnsConfig
    lists: ListsConfig
    canaries: tuple[tuple[str, str], ...]


def probe_group(order: SmtpOrder, *pieces: pl.DataFrame) -> Owned:
    """SMTP answers for one group of providers (one prober: pacing, breakers and catch-all
    probes exact), committed as they arrive; resumed from the store when run again."""
    return asyncio.run(_probe(order, as_targets(pieces)[1]))


async def _probe(order: SmtpOrder, targets: list[Target]) -> Owned:
    store = mailbox_store(order.stores)
    done = store.get_many([t.key for t in targets])  # answered by an earlier run of this owner
    domains = sorted({t.domain for t in targets})
    known = store.catch_all(domains)
    before, earlier = _journal(order.stores, domains, set(done), set(known))
    left = None
    if order.allowances is not None:
        left = {d: order.allowances.get(d, 0) - before.get(d, 0) for d in domains}
    remaining = [t for t in targets if t.key not in done]
    forward = Forward(order.topic, order.owner)
    committer = Committer(lambda items: _commit_smtp(order.stores, items))
    key_of = {t.address: t.key for t in remaining}
    replies: Counter[tuple[str, str, bool]] = Counter()
    sent_before = sum(before.values())
    prober: Prober

    def answered(key: str, result: MailboxResult) -> None:
        committer.put(("answer", key, result))
        forward.spent(sent_before + prober.stats.rcpts, 1)

    def replied(domain: str, reply: Reply) -> None:
        # "": the domain's catch-all probe. A reply that asks to be asked again (a deferral,
        # a 452, a 421) is spent whatever comes next; an answer, once it is kept.
        outcome = classify(reply)
        again = reply.code == 421 or outcome in (Mailbox.DEFERRED, Mailbox.TOO_MANY)
        at = (domain, key_of.get(reply.recipient, ""), again)
        replies[at] += 1
        result = None if again else result_of(reply, outcome)
        committer.put(("replied", at, (replies[at], result)))

    shared = SharedResolver(order.dns, check=False)
    try:
        resolver = await shared.get()
        if remaining:
            await outbound_works(list(order.canaries), order.settings)  # port 25, from here
        prober = Prober(
            resolver, order.config, order.settings, worker_lists(order.lists), Budget(None),
            answered, dns_concurrency=order.dns.concurrency,
            on_catch_all=lambda domain, flag: committer.put(("catch_all", domain, flag)),
            on_replied=replied,
        )  # fmt: skip
        # The answers kept and held count as this run's, so that each domain decides on all
        # of its replies (a "no such user" stands once another address was accepted).
        found = await prober.run(targets, known, left, {**earlier, **done})
    finally:
        await shared.close()
        committer.close()
    sent = prober.stats
    busiest = max(sent.sessions_per_host.values(), default=0)
    total = sent_before + sent.rcpts
    stats = CheckStats("smtp", total, sent.sessions, busiest)
    return Owned(mailbox_table({**done, **found}), stats, total)


def _journal(
    stores: Stores, domains: list[str], answered: set[str], known: set[str]
) -> tuple[dict[str, int], dict[str, MailboxResult]]:
    """What an earlier run of this owner spent on each domain, as the journal tells it, and
    the answers it got but did not keep (a "no such user" held back until its domain tells
    mailboxes apart), which are not asked again. Charged: every RCPT that got a reply, but the
    catch-all probe's when its finding was not kept (it is asked again); an RCPT in flight had
    none, and is asked again and charged once. Nothing, the first time."""
    rows = journal(stores).get(domains)
    charged: Counter[str] = Counter()
    earlier: dict[str, MailboxResult] = {}
    columns = ("domain", "key", "again", "replies", "outcome", "reply", "at")
    for domain, key, again, n, outcome, reply, at in rows.select(columns).iter_rows():
        if key == "" and again == "0" and domain not in known:
            continue
        charged[domain] += n
        if again == "0" and key and key not in answered and outcome is not None:
            earlier[key] = MailboxResult(Mailbox(outcome), reply, at)
    return dict(charged), earlier


_JOURNAL = {
    "domain": pl.String,
    "key": pl.String,
    "again": pl.String,
    "replies": pl.Int64,
    "outcome": pl.String,
    "reply": pl.String,
    "at": pl.Float64,
}


def _parts(result: MailboxResult | None) -> tuple[str | None, str | None, float | None]:
    if result is None:
        return None, None, None
    return result.outcome.value, result.reply, result.at


def _commit_smtp(stores: Stores, items: list[Any]) -> None:
    """Each address's replies so far first (a run killed between the two charges an answer
    it has), then the answers and the catch-all findings."""
    replied = {at: got for kind, at, got in items if kind == "replied"}  # each one's latest
    if replied:
        rows = [
            (d, k, str(int(again)), n, *(_parts(result)))
            for (d, k, again), (n, result) in replied.items()
        ]
        journal(stores).put(pl.DataFrame(rows, schema=_JOURNAL, orient="row"))
    store = mailbox_store(stores)
    answers = {key: result for kind, key, result in items if kind == "answer"}
    if answers:
        store.put_many(answers)
    flags = {domain: flag for kind, domain, flag in items if kind == "catch_all"}
    if flags:
        store.put_catch_all(flags)


# --- a remote API --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiOrder:
    """A remote API's requests, from one owner (one client: the quota stays exact)."""

    limit: int | None  # requests the run may send; None: no limit
    stores: Stores
    topic: str
    config: ApiConfig
    key: str | None


def ask_api(order: ApiOrder, *pieces: pl.DataFrame) -> Owned:
    """The remote service's answers for its targets, each committed as it arrives, with the
    quota the shared ledger keeps."""
    targets = as_targets(pieces)[1]
    store = mailbox_store(order.stores)
    api = order.config.url.rstrip("/")
    done = store.remote_answers([t.key for t in targets], api)
    remaining = [t for t in targets if t.key not in done]
    limit = None if order.limit is None else max(0, order.limit - len(done))
    forward = Forward(order.topic, 0)
    committer = Committer(lambda items: _commit_api(order.stores, api, items))
    answers: dict[str, RemoteAnswer] = {}
    ledger = QuotaLedger(
        store.quota_spent, store.add_quota_spent, store.quota_limit, store.set_quota_limit
    )
    budget = Budget(limit)

    def remember(key: str, answer: RemoteAnswer) -> None:
        committer.put((key, answer))
        forward.spent(len(done) + budget.spent, 1)

    verifier = RemoteVerifier(order.config, order.key, ledger, budget, remember)
    try:
        if remaining:
            answers = asyncio.run(verifier.run(remaining))
    finally:
        committer.close()
    stats = CheckStats("api", verifier.requests)
    return Owned(remote_table({**done, **answers}), stats, len(done) + budget.spent)


def _commit_api(stores: Stores, api: str, items: list[Any]) -> None:
    store = mailbox_store(stores)
    for key, answer in items:
        store.put_remote_answer(key, api, answer)


# --- a paid verifier ---------------------------------------------------------------------------


@dataclass(frozen=True)
class VendorOrder:
    """A paid verifier's requests (or bulk jobs), from one owner."""

    vendor: str
    limit: int | None  # credits the run may spend; None: no limit
    stores: Stores
    topic: str
    config: VendorConfig
    key: str
    base: str


class _StoreLedger:
    """A worker's ledger: the shared paid-answer store, written the moment a job is named or
    an answer comes (through the committer: in order, off the owner's loop)."""

    def __init__(self, order: VendorOrder, key_fp: str, committer: Committer) -> None:
        self._order = order
        self._fp = key_fp
        self._committer = committer

    def open_jobs(self) -> list[Job]:
        return paid_store(self._order.stores).open_jobs(self._order.vendor, self._fp)

    def add_job(self, job: Job) -> None:
        # Before anything else: an owner run again collects this job, never submits it again.
        paid_store(self._order.stores).add_job(job)

    def close_job(self, job: Job, state: str) -> None:
        self._committer.put(("close", job, state))

    def answered(self, key: str, answer: VendorAnswer) -> None:
        self._committer.put(("answer", key, answer))


def ask_vendor(order: VendorOrder, *pieces: pl.DataFrame) -> Owned:
    """The vendor's answers for its targets (bulk jobs resumed, never sent twice)."""
    targets = as_targets(pieces)[1]
    store = paid_store(order.stores)
    done = store.answers([t.key for t in targets])
    remaining = [t for t in targets if t.key not in done]
    limit = None if order.limit is None else max(0, order.limit - len(done))
    budget = Budget(limit)
    forward = Forward(order.topic, 0)
    committer = Committer(lambda items: _commit_vendor(order.stores, items))
    ledger = _StoreLedger(order, key_fingerprint(order.key), committer)
    verifier = VendorVerifier(
        adapter_for(order.vendor), order.key, order.config, ledger, budget, base=order.base
    )
    verifier.on_progress(lambda n: forward.spent(len(done) + budget.spent, n))
    found: dict[str, VendorAnswer] = {}
    try:
        if remaining:
            found = asyncio.run(verifier.run(remaining))
    finally:
        committer.close()
    stats = vendor_stats(order.vendor, (), found, verifier)
    return Owned(vendor_table({**done, **found}), stats, len(done) + budget.spent)


def _commit_vendor(stores: Stores, items: list[Any]) -> None:
    store = paid_store(stores)
    for kind, *values in items:
        if kind == "answer":
            store.put(*values)
        else:
            store.close_job(*values)
