"""The ``listclean`` command line.

    listclean clean INPUT [-o OUTPUT] [--email-column NAME] [common options]
    listclean verify ADDRESS [--domain] [common options]
    listclean doctor [common options]
    listclean serve [--host H] [--port P] [--db PATH] [common options]
    listclean keys create --plan NAME | list | revoke KEY_ID  [--db PATH] [--config FILE]

Exit codes: 0 ok, 1 unexpected error, 2 bad usage or input, 3 resolver unhealthy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import dataclasses
import datetime as dt
import ipaddress
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

import platformdirs
from tqdm import tqdm

from pipeline import __version__
from pipeline.core.bounces import BounceLedger, ledger_path
from pipeline.core.config import Config, VerifyConfig, load_config
from pipeline.core.contacts import ContactStore
from pipeline.core.doctor import run_doctor
from pipeline.core.engine import Engine, Progress, verify_one
from pipeline.core.errors import ListcleanError, UsageError
from pipeline.core.lists import load_lists
from pipeline.core.mailbox_store import MailboxCache
from pipeline.core.mailboxes import MailboxChecker, Plan, RemoteChecker
from pipeline.core.probe import Budget
from pipeline.core.smtp import SmtpSettings
from pipeline.core.store import DomainCache
from pipeline.service.settings import ServiceConfig, load_service_config
from pipeline.service.store import ServiceStore
from pipeline.stages.runner import CleanJob, RunSummary, run_clean
from pipeline.stages.workdir import WorkDir, fingerprint
from pipeline.stages.write import default_output

_REPO_WORLD = Path(__file__).resolve().parent.parent / "sample_data" / "world.json"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except ListcleanError as exc:
        print(f"listclean: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("listclean: interrupted; no output was written.", file=sys.stderr)
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="listclean", description="Clean mailing lists and verify email addresses."
    )
    parser.add_argument("--version", action="version", version=f"listclean {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    clean = commands.add_parser("clean", help="clean a CSV or Parquet list into enriched Parquet")
    clean.add_argument("input", type=Path, metavar="INPUT", help="CSV or Parquet list")
    clean.add_argument("-o", "--output", type=Path, help="default: ./<input stem>.clean.parquet")
    clean.add_argument("--email-column", metavar="NAME", help="the column holding the addresses")
    clean.add_argument("--quiet", action="store_true", help="no progress bars or summary table")
    clean.add_argument("--work-dir", type=Path, metavar="DIR", help="default: <output>.work")
    _common_options(clean)
    _verify_options(clean)
    clean.set_defaults(handler=_clean)

    verify = commands.add_parser("verify", help="verify one address; prints the spec's JSON")
    verify.add_argument("address", metavar="ADDRESS")
    verify.add_argument("--domain", action="store_true", help="ADDRESS is a bare domain")
    _common_options(verify)
    _verify_options(verify)
    verify.set_defaults(handler=_verify, quiet=True)

    doctor = commands.add_parser("doctor", help="can this host verify? resolver, port 25, EHLO")
    _common_options(doctor)
    _verify_options(doctor)
    doctor.set_defaults(handler=_doctor, quiet=True)

    bounces = commands.add_parser("bounces", help="the bounce ledger: import reports, list events")
    bounce_commands = bounces.add_subparsers(required=True, metavar="ACTION")
    importing = bounce_commands.add_parser(
        "import", help="import CSV/Parquet bounce exports or RFC 3464 DSNs (.eml, mbox)"
    )
    importing.add_argument("files", nargs="+", type=Path, metavar="FILE")
    importing.set_defaults(handler=_bounces_import)
    showing = bounce_commands.add_parser("list", help="list recorded events, newest first")
    showing.add_argument("--email", metavar="ADDR", help="only this address (any spelling)")
    showing.add_argument("--limit", type=int, default=100, metavar="N")
    showing.set_defaults(handler=_bounces_list)
    for sub in (importing, showing):
        sub.add_argument("--db", type=Path, metavar="PATH", help="ledger file (default: cache)")
        sub.add_argument("--cache-dir", type=Path, metavar="DIR", help="cache directory")
        sub.add_argument("--config", type=Path, metavar="FILE", help="settings (TOML)")
        sub.add_argument("--sandbox", action="store_true", help="the sandbox's ledger")

    contacts = commands.add_parser("contacts", help="the contact store behind /api/find")
    contact_commands = contacts.add_subparsers(required=True, metavar="ACTION")
    c_import = contact_commands.add_parser("import", help="import CSV/Parquet public records")
    c_import.add_argument("file", type=Path, metavar="FILE")
    c_import.add_argument("--source", help="where the records come from (default: file name)")
    c_import.set_defaults(handler=_contacts_import)
    c_suppress = contact_commands.add_parser(
        "suppress", help="opt-out: never return this person again (kept only hashed)"
    )
    c_erase = contact_commands.add_parser("erase", help="delete the person's records and suppress")
    for sub, handler in ((c_suppress, _contacts_suppress), (c_erase, _contacts_erase)):
        who = sub.add_mutually_exclusive_group(required=True)
        who.add_argument("--email", metavar="ADDR")
        who.add_argument("--phone", metavar="NUMBER")
        sub.set_defaults(handler=handler)
    c_audit = contact_commands.add_parser(
        "audit", help="who looked up what, when, with what outcome"
    )
    c_audit.add_argument("--since", metavar="DATE", help="ISO date or date-time (UTC)")
    c_audit.add_argument("--format", choices=("csv", "json"), default="csv")
    c_audit.set_defaults(handler=_contacts_audit)
    for sub in (c_import, c_suppress, c_erase, c_audit):
        sub.add_argument("--db", type=Path, metavar="PATH", help="contact store (default: cache)")
        sub.add_argument("--cache-dir", type=Path, metavar="DIR", help="cache directory")
        sub.add_argument("--config", type=Path, metavar="FILE", help="settings (TOML)")
        sub.add_argument("--sandbox", action="store_true", help="the sandbox's contact store")

    serve = commands.add_parser("serve", help="run the HTTP verification service")
    serve.add_argument("--host", help="address to listen on (default from [service] host)")
    serve.add_argument("--port", type=int, help="TCP port (default from [service] port)")
    serve.add_argument("--db", type=Path, metavar="PATH", help="keys and quota counters (SQLite)")
    _common_options(serve)
    serve.set_defaults(handler=_serve, quiet=True)

    keys = commands.add_parser("keys", help="create, list and revoke API keys")
    key_commands = keys.add_subparsers(required=True, metavar="ACTION")
    create = key_commands.add_parser("create", help="create a key; prints its secret once")
    create.add_argument("--plan", required=True, metavar="NAME", help="plan the key is on")
    create.add_argument("--label", default="", help="a note for whom the key is")
    create.set_defaults(handler=_keys_create)
    listing = key_commands.add_parser("list", help="list keys (never their secrets)")
    listing.set_defaults(handler=_keys_list)
    revoke = key_commands.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id", metavar="KEY_ID")
    revoke.set_defaults(handler=_keys_revoke)
    for sub in (create, listing, revoke):
        sub.add_argument("--db", type=Path, metavar="PATH", help="keys and quota counters")
        sub.add_argument("--config", type=Path, metavar="FILE", help="service settings (TOML)")
    return parser


def _common_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, metavar="FILE", help="settings (TOML)")
    parser.add_argument(
        "--resolver",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="DNS resolver IP address to use (repeatable); overrides [dns] nameservers",
    )
    parser.add_argument("--cache-dir", type=Path, metavar="DIR", help="domain cache directory")
    parser.add_argument("--offline", action="store_true", help="skip DNS; domains become Risky")
    parser.add_argument(
        "--sandbox",
        action="store_true",
        help="answer DNS from a built-in server on 127.0.0.1 serving --world (no network needed)",
    )
    parser.add_argument(
        "--world", type=Path, default=_REPO_WORLD, metavar="FILE", help="sandbox world file"
    )


def _verify_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verify",
        choices=("none", "smtp", "api"),
        help="address-level checks (default [verify] mode)",
    )
    parser.add_argument("--smtp-port", type=int, metavar="PORT", help="mail servers' port (25)")
    parser.add_argument("--budget", type=int, metavar="N", help="most RCPTs this run may send")
    parser.add_argument("--helo", metavar="NAME", help="EHLO name (default: this host's FQDN)")
    parser.add_argument("--mail-from", metavar="ADDR", help="envelope sender of probes")
    parser.add_argument("--api-url", metavar="URL", help="remote /api/email service (--verify api)")
    parser.add_argument(
        "--api-key", metavar="KEY", help="its API key (default: env LISTCLEAN_API_KEY)"
    )
    parser.add_argument("--concurrency", type=int, metavar="N", help="API requests in flight")


def _clean(args: argparse.Namespace) -> int:
    output = args.output or default_output(args.input)
    with contextlib.ExitStack() as stack:
        work = None
        if _verify_config(args, load_config(args.config)).mode in ("smtp", "api"):
            directory = args.work_dir or output.with_name(output.name + ".work")
            run_id = fingerprint(args.input.resolve(), output.resolve(), args.budget, args.config)
            work = stack.enter_context(WorkDir(directory, run_id))
        engine = stack.enter_context(_engine(args, work))
        summary = run_clean(CleanJob(args.input, output, args.email_column), engine)
        if work is not None:
            work.finish()
    for warning in summary.warnings:
        print(f"listclean: warning: {warning}", file=sys.stderr)
    if not args.quiet:
        print_summary(summary, sys.stdout)
    return 0


def _verify(args: argparse.Namespace) -> int:
    with _engine(args) as engine:
        record = asyncio.run(verify_one(engine, args.address, domain_mode=args.domain))
    print(json.dumps(record, ensure_ascii=False, indent=2))
    return 0


@contextlib.contextmanager
def _engine(args: argparse.Namespace, work: WorkDir | None = None) -> Iterator[Engine]:
    with contextlib.ExitStack() as stack:
        config = _world(stack, args, _config(args))
        cache = stack.enter_context(DomainCache(_cache_path(args, config), config.cache))
        lists = load_lists(config.lists.extra_disposable, config.lists.extra_free)
        show = not args.quiet and sys.stderr.isatty()
        checker: MailboxChecker | RemoteChecker | None = None
        if config.verify.mode == "smtp" and not args.offline:
            checker = _mailbox_checker(stack, args, config, work)
        elif config.verify.mode == "api" and not args.offline:
            checker = _remote_checker(stack, args, config, work)
        ledger = stack.enter_context(BounceLedger(_ledger_path(args, config), config.bounces))
        yield Engine(
            config, lists, cache, args.offline, _progress if show else None, None, checker, ledger
        )


def _mailbox_checker(
    stack: contextlib.ExitStack, args: argparse.Namespace, config: Config, work: WorkDir | None
) -> MailboxChecker:
    verify = config.verify
    path = _cache_path(args, config).with_name(
        ("sandbox-" if args.sandbox else "") + "mailboxes.sqlite"
    )
    helo = verify.helo or socket.getfqdn()
    # In the sandbox, probes may only go to loopback: the world's made-up addresses
    # (192.0.2.x and the like) must never be connected to.
    sender = verify.mail_from or f"postmaster@{helo}"
    settings = SmtpSettings(verify.port, helo, sender, verify.timeout, loopback_only=args.sandbox)
    budget = Budget(verify.budget or None, work.spent if work else 0)
    quiet = args.quiet

    def show_plan(plan: Plan) -> None:
        if not quiet:
            print(plan_text(plan), file=sys.stderr)

    return MailboxChecker(
        verify,
        settings,
        stack.enter_context(MailboxCache(path, verify)),
        budget,
        on_plan=show_plan,
        on_spent=work.record_spent if work else None,
    )


def _remote_checker(
    stack: contextlib.ExitStack, args: argparse.Namespace, config: Config, work: WorkDir | None
) -> RemoteChecker:
    api = config.api
    if not api.url:
        raise UsageError("--verify api needs the service's address: pass --api-url URL.")
    key = getattr(args, "api_key", None) or os.environ.get("LISTCLEAN_API_KEY") or None
    path = _cache_path(args, config).with_name(
        ("sandbox-" if args.sandbox else "") + "mailboxes.sqlite"
    )
    budget = Budget(config.verify.budget or None, work.spent if work else 0)
    quiet = args.quiet

    def show_plan(plan: Plan) -> None:
        if not quiet:
            print(plan_text(plan).replace("SMTP check", "API request"), file=sys.stderr)

    return RemoteChecker(
        api,
        key,
        stack.enter_context(MailboxCache(path, config.verify)),
        budget,
        on_plan=show_plan,
        on_spent=work.record_spent if work else None,
    )


def plan_text(plan: Plan) -> str:
    budget = "no limit" if plan.budget is None else f"{plan.budget:,} RCPTs"
    return (
        f"pre-flight: {plan.distinct_addresses:,} distinct addresses; "
        f"{plan.cached:,} answered from the cache; {plan.need_checks:,} need an SMTP check; "
        f"budget {budget} covers {plan.covered:,} of them."
    )


def _verify_config(args: argparse.Namespace, config: Config) -> VerifyConfig:
    overrides = {
        "mode": getattr(args, "verify", None),
        "port": getattr(args, "smtp_port", None),
        "budget": getattr(args, "budget", None),
        "helo": getattr(args, "helo", None),
        "mail_from": getattr(args, "mail_from", None),
    }
    given = {k: v for k, v in overrides.items() if v is not None}
    if given.get("budget", 0) < 0:
        raise UsageError(f"--budget must be 0 (no limit) or more, got {given['budget']}.")
    return dataclasses.replace(config.verify, **given)


def _config(args: argparse.Namespace) -> Config:
    config = _with_resolvers(load_config(args.config), args.resolver)
    api = config.api
    if getattr(args, "api_url", None):
        api = dataclasses.replace(api, url=args.api_url)
    if getattr(args, "concurrency", None):
        api = dataclasses.replace(api, concurrency=args.concurrency)
    return dataclasses.replace(config, verify=_verify_config(args, config), api=api)


def _with_resolvers(config: Config, resolvers: Sequence[str]) -> Config:
    if not resolvers:
        return config
    servers = tuple(_nameserver(r) for r in resolvers)
    return dataclasses.replace(config, dns=dataclasses.replace(config.dns, nameservers=servers))


def _world(stack: contextlib.ExitStack, args: argparse.Namespace, config: Config) -> Config:
    """With --sandbox, start the loopback world (closed with *stack*) and point at it.

    The world's DNS server answers every query, and its mail servers (if it has any) listen on
    loopback addresses on one port, which becomes the SMTP port unless --smtp-port is given.
    """
    if not args.sandbox:
        return config
    address, smtp_port = stack.enter_context(_sandbox(args.world))
    verify = config.verify
    if smtp_port is not None and getattr(args, "smtp_port", None) is None:
        verify = dataclasses.replace(verify, port=smtp_port)
    dns = dataclasses.replace(config.dns, nameservers=(address,))
    return dataclasses.replace(config, dns=dns, verify=verify)


def _ledger(args: argparse.Namespace, config: Config) -> BounceLedger:
    path = Path(args.db) if getattr(args, "db", None) else _ledger_path(args, config)
    return BounceLedger(path, config.bounces)


def _ledger_path(args: argparse.Namespace, config: Config) -> Path:
    cache = _cache_path(args, config)
    default = ledger_path(config.bounces, cache.parent)
    return (
        default.with_name("sandbox-" + default.name)
        if args.sandbox and not config.bounces.db
        else default
    )


def _bounces_import(args: argparse.Namespace) -> int:
    config = load_config(args.config)
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
    with _ledger(args, load_config(args.config)) as ledger:
        events = ledger.events(args.email, args.limit)
    print(f"{'WHEN (UTC)':<20} {'KIND':<10} {'STATUS':<7} {'EMAIL':<40} REASON")
    for e in events:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(e.at))
        print(f"{when:<20} {e.kind.value:<10} {e.status:<7} {e.email:<40} {e.reason[:60]}")
    return 0


def _contact_store(args: argparse.Namespace) -> ContactStore:
    config = load_config(args.config)
    if args.db:
        path = Path(args.db)
    elif config.contacts.db:
        path = Path(config.contacts.db)
    else:
        cache = _cache_path(args, config)  # the service looks beside its domain cache too
        path = cache.with_name(("sandbox-" if args.sandbox else "") + "contacts.sqlite")
    return ContactStore(path, config.contacts)


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


def _contacts_suppress(args: argparse.Namespace) -> int:
    with _contact_store(args) as store:
        affected = store.suppress(email=args.email, phone=args.phone)
    print(f"Suppressed; {affected} record(s) will no longer be returned.")
    return 0


def _contacts_erase(args: argparse.Namespace) -> int:
    with _contact_store(args) as store:
        erased = store.erase(email=args.email, phone=args.phone)
    print(f"Erased {erased} record(s); the person is suppressed from any later import.")
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


def _doctor(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        config = _world(stack, args, _config(args))
        helo = config.verify.helo or socket.getfqdn()
        checks = asyncio.run(run_doctor(config, helo, loopback_only=args.sandbox))
    for check in checks:
        print(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    return 0 if all(c.ok for c in checks) else 1


def _serve(args: argparse.Namespace) -> int:
    from aiohttp import web

    from pipeline.service.app import Paths, RedactingAccessLogger, create_app

    service = load_service_config(args.config)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    with contextlib.ExitStack() as stack:
        engine = _world(stack, args, _with_resolvers(service.engine, args.resolver))
        service = dataclasses.replace(service, engine=engine)
        paths = Paths(db=_db_path(args, service), cache=_cache_path(args, engine))
        web.run_app(
            create_app(service, paths, offline=args.offline, loopback_only=args.sandbox),
            host=args.host or service.service.host,
            port=args.port if args.port is not None else service.service.port,
            shutdown_timeout=service.service.shutdown_timeout,
            access_log_class=RedactingAccessLogger,
            print=lambda message: logging.getLogger("listclean.service").info("%s", message),
        )
    return 0


def _db_path(args: argparse.Namespace, service: ServiceConfig) -> Path:
    if args.db:
        return Path(args.db)
    if service.service.db:
        return Path(service.service.db)
    return Path(platformdirs.user_data_dir("listclean")) / "service.sqlite"


def _keys_create(args: argparse.Namespace) -> int:
    service = load_service_config(args.config)
    if args.plan not in service.plans:
        raise UsageError(
            f"There is no plan named {args.plan!r}; the plans are {', '.join(service.plans)}. "
            "Add one as a [plans.NAME] table in the service config."
        )
    with ServiceStore(_db_path(args, service)) as store:
        key, secret = store.create_key(args.plan, args.label)
    print(f"Created API key {key.key_id} on plan {key.plan}. Its secret, shown only this once:")
    print(secret)
    return 0


def _keys_list(args: argparse.Namespace) -> int:
    with ServiceStore(_db_path(args, load_service_config(args.config))) as store:
        keys = store.list_keys()
    print(f"{'KEY_ID':<12} {'PLAN':<10} {'CREATED (UTC)':<20} {'STATUS':<8} LABEL")
    for key in keys:
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(key.created_at))
        status = "active" if key.active else "revoked"
        print(f"{key.key_id:<12} {key.plan:<10} {created:<20} {status:<8} {key.label}")
    return 0


def _keys_revoke(args: argparse.Namespace) -> int:
    with ServiceStore(_db_path(args, load_service_config(args.config))) as store:
        key = store.revoke_key(args.key_id)
    print(f"API key {key.key_id} is revoked.")
    return 0


def _nameserver(text: str) -> str:
    """Check HOST[:PORT]; c-ares wants an IP address, with IPv6 in brackets when a port follows."""
    host, port = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, port = text.split(":")
    try:
        ip = ipaddress.ip_address(host)
        if port and not 0 < int(port) < 65536:
            raise ValueError(port)
    except ValueError as exc:
        raise UsageError(
            f"--resolver {text!r} is not an IP address with an optional port. "
            "Write it as 192.0.2.53, 192.0.2.53:5353 or [2001:db8::53]:5353."
        ) from exc
    if not port:
        return str(ip)
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def _cache_path(args: argparse.Namespace, config: Config) -> Path:
    root = args.cache_dir or (Path(config.cache.dir) if config.cache.dir else None)
    root = root or Path(platformdirs.user_cache_dir("listclean"))
    # Sandbox answers are made up: they must never be mixed into the real cache.
    return root / ("sandbox-domains.sqlite" if args.sandbox else "domains.sqlite")


@contextlib.contextmanager
def _sandbox(world_path: Path) -> Iterator[tuple[str, int | None]]:
    from pipeline.sandbox.dns_server import SandboxDNS, load_world
    from pipeline.sandbox.smtp_server import SandboxSMTP

    try:
        world = load_world(world_path)
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"Cannot load the sandbox world {world_path}: {exc}. Pass a world file with --world."
        ) from exc
    with SandboxDNS(world) as dns, SandboxSMTP(world.smtp) as smtp:
        yield dns.address, smtp.port if world.smtp else None


def _progress(total: int, label: str) -> Progress:
    bar: Progress = tqdm(total=total, desc=label, unit="domain", leave=False, file=sys.stderr)
    return bar


def print_summary(summary: RunSummary, out: TextIO) -> None:
    lines = [
        f"{'rows in':<22}{summary.rows_in:>12,}",
        f"{'rows out':<22}{summary.rows_out:>12,}",
        f"{'rows rejected':<22}{summary.rows_rejected:>12,}",
        f"{'distinct addresses':<22}{summary.distinct_addresses:>12,}",
        f"{'duplicates':<22}{summary.duplicates:>12,}",
        f"{'distinct domains':<22}{summary.distinct_domains:>12,}",
        f"{'DNS queries sent':<22}{summary.dns_queries:>12,}",
        f"{'domain cache hits':<22}{summary.cache_hits:>12,}",
        f"{'SMTP RCPTs sent':<22}{summary.rcpts_sent:>12,}",
        f"{'SMTP sessions':<22}{summary.smtp_sessions:>12,}",
        f"{'API requests':<22}{summary.api_requests:>12,}",
        "",
        "VERDICT",
        *(f"  {k:<20}{v:>12,}" for k, v in summary.verdicts.items()),
        "REASON",
        *(f"  {k:<20}{v:>12,}" for k, v in summary.reasons.items()),
        "seconds per stage",
        *(f"  {s.name:<20}{s.seconds:>12.3f}" for s in summary.stages),
        "",
        f"output   {summary.output}",
        f"rejects  {summary.rejects_file}",
    ]
    out.write("\n".join(lines) + "\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
