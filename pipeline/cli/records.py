"""The record stores: the ``bounces`` ledger and the ``contacts`` store behind /api/find."""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import json
import sys
import time
from pathlib import Path

from pipeline.cli.common import bounce_ledger_path, cache_path, settings
from pipeline.core.assembly.forget import Request, forget
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.config import Config
from pipeline.core.contacts.store import ContactStore
from pipeline.core.db.database import Where, cache_where, exists, is_url, store_where
from pipeline.core.errors import UsageError
from pipeline.core.history.store import RunHistory
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.vendors.store import PaidAnswers

# --- bounces ----------------------------------------------------------------------------------


def _given(db: str | None) -> Where | None:
    """A --db value: a postgresql:// URL, or a file."""
    if not db:
        return None
    return db if is_url(db) else Path(db)


def _ledger(args: argparse.Namespace, config: Config) -> BounceLedger:
    return BounceLedger(_given(args.db) or bounce_ledger_path(args, config), config.bounces)


def command_bounces_import(args: argparse.Namespace) -> int:
    config = settings(args)
    with _ledger(args, config) as ledger:
        for path in args.files:
            report = ledger.import_file(path)
            print(
                f"{path}: {report.read:,} events read, {report.added:,} added, "
                f"{report.duplicates:,} already known, {len(report.rejected):,} rejected"
            )
            for where, why in report.rejected[:20]:
                print(f"  rejected {where}: {why}")
            if len(report.rejected) > 20:
                print(f"  … and {len(report.rejected) - 20:,} more rejected")
    return 0


def command_bounces_list(args: argparse.Namespace) -> int:
    with _ledger(args, settings(args)) as ledger:
        events = ledger.events(args.email, args.limit)
    print(f"{'WHEN (UTC)':<20} {'KIND':<10} {'STATUS':<7} {'EMAIL':<40} REASON")
    for e in events:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.at))
        print(f"{when:<20} {e.kind.value:<10} {e.status:<7} {e.email:<40} {e.reason[:60]}")
    return 0


# --- contacts ---------------------------------------------------------------------------------


def _contact_store(args: argparse.Namespace) -> ContactStore:
    config = settings(args)
    # The service looks beside its domain cache too: both find the same store.
    where = _given(args.db) or store_where(cache_path(args, config), "contacts", config.contacts.db)
    return ContactStore(where, config.contacts)


def command_contacts_import(args: argparse.Namespace) -> int:
    with _contact_store(args) as store:
        report = store.import_file(args.file, args.source or args.file.name)
    print(
        f"{args.file}: {report.read:,} rows read, {report.imported:,} imported, "
        f"{report.merged:,} merged into earlier records, {len(report.rejected):,} rejected"
    )
    for where, why in report.rejected[:20]:
        print(f"  rejected {where}: {why}")
    return 0


def command_contacts_forget(args: argparse.Namespace) -> int:
    """Suppress or erase a person in every store that holds them (see
    pipeline.core.assembly.forget)."""
    if not (args.email or args.phone):
        raise UsageError("Name the person by --email, by --phone or both (--name may follow).")
    config = settings(args)
    answers, family = cache_where(cache_path(args, config), "mailboxes", config.cache.db)
    # A database named by --db holds the ledger too, as it does for `serve --db URL`.
    shared = args.db if is_url(args.db) and not config.bounces.db else None
    events = shared or bounce_ledger_path(args, config)
    with contextlib.ExitStack() as stack:
        contacts = stack.enter_context(_contact_store(args))
        # A store that was never made holds nothing about anyone: it is not made now.
        cache = (
            stack.enter_context(MailboxCache(answers, config.verify, family=family))
            if exists(answers)
            else None
        )
        ledger = (
            stack.enter_context(BounceLedger(events, config.bounces)) if exists(events) else None
        )
        bought = store_where(cache_path(args, config), "vendor-answers", config.vendor.db)
        paid = stack.enter_context(PaidAnswers(bought, config.vendor)) if exists(bought) else None
        runs = store_where(cache_path(args, config), "history", config.history.db)
        history = stack.enter_context(RunHistory(runs)) if exists(runs) else None
        done = forget(
            Request(args.request), contacts, cache, ledger, email=args.email, phone=args.phone,
            name=args.name, paid=paid, history=history,
        )  # fmt: skip
    reached = done.contacts
    verb = "Erased" if Request(args.request) is Request.ERASE else "Suppressed"
    print(
        f"{verb}: {reached.records} record(s) of the person, {reached.lookalikes} more that may "
        f"be theirs hidden; {reached.audit} audit record(s), {done.mailbox_answers} cached "
        f"mailbox answer(s), {done.bounce_events} bounce event(s) and {done.history_entries} "
        "run history entries no longer about them. "
        "They are suppressed from any later import."
    )
    return 0


def command_contacts_audit(args: argparse.Namespace) -> int:
    since = None
    if args.since:
        try:
            moment = dt.datetime.fromisoformat(args.since)
        except ValueError as exc:
            raise UsageError(f"--since {args.since!r} is not an ISO date like 2026-11-01.") from exc
        since = moment.replace(tzinfo=moment.tzinfo or dt.UTC).timestamp()
    with _contact_store(args) as store:
        records = store.audit_records(since)
    if args.format == "json":
        print(json.dumps(records, indent=2))
        return 0
    writer = csv.DictWriter(sys.stdout, fieldnames=list(records[0]) if records else ["at"])
    writer.writeheader()
    writer.writerows(records)
    return 0
