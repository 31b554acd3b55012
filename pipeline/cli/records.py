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

from pipeline.cli.common import bounce_ledger_path, cache_path, settings, utf8_path, utf8_text
from pipeline.core.assembly.forget import Request, forget
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.config import Config
from pipeline.core.contacts.store import ContactStore
from pipeline.core.db.database import Where, exists, is_url, store_where
from pipeline.core.db.sqlite import beside_domain_cache
from pipeline.core.errors import UsageError
from pipeline.core.history.store import RunHistory
from pipeline.core.mailboxes.cache import MailboxCache
from pipeline.core.mailboxes.vendors.store import PaidAnswers


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bounces = commands.add_parser("bounces", help="the bounce ledger: import reports, list events")
    bounce_commands = bounces.add_subparsers(required=True, metavar="ACTION")
    importing = bounce_commands.add_parser(
        "import", help="import CSV/Parquet bounce exports or RFC 3464 DSNs (.eml, mbox)"
    )
    importing.add_argument("files", nargs="+", type=utf8_path, metavar="FILE")
    importing.set_defaults(handler=_bounces_import)
    showing = bounce_commands.add_parser("list", help="list recorded events, newest first")
    showing.add_argument(
        "--email", type=utf8_text, metavar="ADDR", help="only this address (any spelling)"
    )
    showing.add_argument("--limit", type=int, default=100, metavar="N")
    showing.set_defaults(handler=_bounces_list)
    for sub in (importing, showing):
        sub.add_argument(
            "--db",
            type=utf8_text,
            metavar="PATH|URL",
            help="ledger file or postgresql:// URL (default: cache)",
        )
        sub.add_argument("--cache-dir", type=Path, metavar="DIR", help="cache directory")
        sub.add_argument("--config", type=Path, metavar="FILE", help="settings (TOML)")
        sub.add_argument("--sandbox", action="store_true", help="the sandbox's ledger")

    contacts = commands.add_parser("contacts", help="the contact store behind /api/find")
    contact_commands = contacts.add_subparsers(required=True, metavar="ACTION")
    c_import = contact_commands.add_parser("import", help="import CSV/Parquet public records")
    c_import.add_argument("file", type=utf8_path, metavar="FILE")
    c_import.add_argument(
        "--source", type=utf8_text, help="where the records come from (default: file name)"
    )
    c_import.set_defaults(handler=_contacts_import)
    c_suppress = contact_commands.add_parser(
        "suppress", help="opt-out: never return this person again (kept only hashed)"
    )
    c_erase = contact_commands.add_parser("erase", help="delete the person's records and suppress")
    for sub, request in ((c_suppress, Request.SUPPRESS), (c_erase, Request.ERASE)):
        sub.add_argument(
            "--email", type=utf8_text, metavar="ADDR", help="the person's email address"
        )
        sub.add_argument(
            "--phone", type=utf8_text, metavar="NUMBER", help="the person's phone number"
        )
        sub.add_argument(
            "--name",
            type=utf8_text,
            metavar="NAME",
            help="their name, to reach records only it leads to",
        )
        sub.set_defaults(handler=_contacts_forget, request=request)
    c_audit = contact_commands.add_parser(
        "audit", help="who looked up what, when, with what outcome"
    )
    c_audit.add_argument(
        "--since", type=utf8_text, metavar="DATE", help="ISO date or date-time (UTC)"
    )
    c_audit.add_argument("--format", choices=("csv", "json"), default="csv")
    c_audit.set_defaults(handler=_contacts_audit)
    for sub in (c_import, c_suppress, c_erase, c_audit):
        sub.add_argument(
            "--db",
            type=utf8_text,
            metavar="PATH|URL",
            help="contact store file or postgresql:// URL (default: cache)",
        )
        sub.add_argument("--cache-dir", type=Path, metavar="DIR", help="cache directory")
        sub.add_argument("--config", type=Path, metavar="FILE", help="settings (TOML)")
        sub.add_argument("--sandbox", action="store_true", help="the sandbox's contact store")


# --- bounces ----------------------------------------------------------------------------------


def _given(db: str | None) -> Where | None:
    """A --db value: a postgresql:// URL, or a file."""
    if not db:
        return None
    return db if is_url(db) else Path(db)


def _ledger(args: argparse.Namespace, config: Config) -> BounceLedger:
    return BounceLedger(_given(args.db) or bounce_ledger_path(args, config), config.bounces)


def _bounces_import(args: argparse.Namespace) -> int:
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


def _bounces_list(args: argparse.Namespace) -> int:
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


def _contacts_import(args: argparse.Namespace) -> int:
    with _contact_store(args) as store:
        report = store.import_file(args.file, args.source or args.file.name)
    print(
        f"{args.file}: {report.read:,} rows read, {report.imported:,} imported, "
        f"{report.merged:,} merged into earlier records, {len(report.rejected):,} rejected"
    )
    for where, why in report.rejected[:20]:
        print(f"  rejected {where}: {why}")
    return 0


def _contacts_forget(args: argparse.Namespace) -> int:
    """Suppress or erase a person in every store that holds them (see
    pipeline.core.assembly.forget)."""
    if not (args.email or args.phone):
        raise UsageError("Name the person by --email, by --phone or both (--name may follow).")
    config = settings(args)
    answers = beside_domain_cache(cache_path(args, config), "mailboxes")
    # A database named by --db holds the ledger too, as it does for `serve --db URL`.
    shared = args.db if is_url(args.db) and not config.bounces.db else None
    events = shared or bounce_ledger_path(args, config)
    with contextlib.ExitStack() as stack:
        contacts = stack.enter_context(_contact_store(args))
        # A store that was never made holds nothing about anyone: it is not made now.
        cache = (
            stack.enter_context(MailboxCache(answers, config.verify)) if answers.exists() else None
        )
        ledger = (
            stack.enter_context(BounceLedger(events, config.bounces)) if exists(events) else None
        )
        bought = store_where(cache_path(args, config), "vendor-answers", config.vendor.db)
        paid = stack.enter_context(PaidAnswers(bought, config.vendor)) if exists(bought) else None
        runs = store_where(cache_path(args, config), "history", config.history.db)
        history = stack.enter_context(RunHistory(runs)) if exists(runs) else None
        done = forget(
            args.request, contacts, cache, ledger, email=args.email, phone=args.phone,
            name=args.name, paid=paid, history=history,
        )  # fmt: skip
    reached = done.contacts
    verb = "Erased" if args.request is Request.ERASE else "Suppressed"
    print(
        f"{verb}: {reached.records} record(s) of the person, {reached.lookalikes} more that may "
        f"be theirs hidden; {reached.audit} audit record(s), {done.mailbox_answers} cached "
        f"mailbox answer(s), {done.bounce_events} bounce event(s) and {done.history_entries} "
        "run history entries no longer about them. "
        "They are suppressed from any later import."
    )
    return 0


def _contacts_audit(args: argparse.Namespace) -> int:
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
