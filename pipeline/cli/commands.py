"""Every command's arguments, and the module that runs it, imported only once it is chosen.

``listclean --help`` (and a mistyped flag) must answer at once, so building the parser imports
nothing heavy: the arguments are declared here, with the light helpers of :mod:`.options`, and
each command's ``command`` default imports its module (:mod:`.lists`, :mod:`.records`,
:mod:`.service`: polars, pyarrow, aiohttp and the engine) and gives its handler, once the
arguments are parsed (:func:`pipeline.cli.main` calls it while the command is still starting).
The imports are plain ``import`` statements, so the import checks see every module.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TypeAlias

from pipeline.cli.log import LogFormat
from pipeline.cli.options import common_options, share, utf8_path, utf8_text, verify_options
from pipeline.core.environment import prepare_polars
from pipeline.stages.write.formats import OutputFormat

# A string: the class is generic to type checkers only.
Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def add_commands(commands: Commands) -> None:
    """Every command, in the order of ``listclean --help``."""
    _list_commands(commands)
    _record_commands(commands)
    _calibrate_commands(commands)
    _service_commands(commands)


def _lists() -> ModuleType:
    """The list commands' module, polars told what the stages want of it first."""
    prepare_polars()
    from pipeline.cli import lists

    return lists


def _records() -> ModuleType:
    from pipeline.cli import records

    return records


def _service() -> ModuleType:
    from pipeline.cli import service

    return service


def _serving() -> Callable[[argparse.Namespace], int]:
    """``serve``'s handler. A service pass is a batch of at most ``batch_size`` rows: polars'
    pool of threads costs it more in handing work over than it saves (measured in
    bench/RESULTS.md), so the service's polars runs on one thread, unless POLARS_MAX_THREADS says
    otherwise. Set before polars is first imported; bulk jobs run in processes of their own,
    with their own number of threads."""
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
    handler: Callable[[argparse.Namespace], int] = _service().command_serve
    return handler


def _calibrate() -> ModuleType:
    from pipeline.cli import calibrate

    return calibrate


def _list_commands(commands: Commands) -> None:
    clean = commands.add_parser(
        "clean", help="clean a list (CSV, Parquet, xlsx, zip, gzip) into Parquet, CSV or xlsx"
    )
    # Strings, not Paths: a Path would fold the "//" of a URL into a local folder name.
    clean.add_argument("input", metavar="INPUT", help="CSV or Parquet list; - reads stdin")
    clean.add_argument(
        "-o", "--output", help="default: <input stem>.clean.parquet beside the input"
    )
    clean.add_argument(
        "--email-column",
        action="append",
        metavar="NAME",
        help="the column holding the addresses (default: found); again for each further "
        "column of addresses to check (gets NAME_VERDICT, NAME_REASON, NAME_SUGGESTION)",
    )
    clean.add_argument(
        "--header-row",
        type=int,
        metavar="N",
        help="the line (a sheet's row) the header is on (default: found, below a report's "
        "title rows)",
    )
    clean.add_argument(
        "--quiet", action="store_true", help="no progress or summary (warnings still shown)"
    )
    clean.add_argument(
        "--log-format",
        choices=[f.value for f in LogFormat],
        default=LogFormat.TEXT.value,
        help="standard error as text lines (default) or one JSON record a line",
    )
    clean.add_argument(
        "--split",
        action="store_true",
        help="also write the rows of each verdict to <stem>.valid/.risky/.invalid.<ext>",
    )
    clean.add_argument(
        "--fail-on-invalid",
        type=share,
        metavar="SHARE",
        help="exit 4 (after writing everything) when more than SHARE (0-1) of the input "
        "rows are Invalid",
    )
    clean.add_argument(
        "--fail-on-rejected",
        type=share,
        metavar="SHARE",
        help="exit 4 (after writing everything) when more than SHARE (0-1) of the input "
        "rows are rejected",
    )
    clean.add_argument("--work-dir", type=Path, metavar="DIR", help="default: <output>.work")
    clean.add_argument(
        "--memory", type=int, metavar="MiB", help="memory to stay within (default [run] memory)"
    )
    clean.add_argument(
        "--output-format",
        choices=[f.value for f in OutputFormat],
        help="default: from -o's suffix (.parquet, .csv, .xlsx); dataset: a folder of "
        "Parquet part files (also: -o DIR/)",
    )
    clean.add_argument(
        "--csv-bom", action="store_true", help="start a CSV output with a UTF-8 BOM (for Excel)"
    )
    clean.add_argument(
        "--member", metavar="NAME", help="zip input: read only this member (default: every CSV)"
    )
    clean.add_argument(
        "--sheet", metavar="NAME", help="xlsx input: read this sheet (default: the first)"
    )
    clean.add_argument(
        "--encoding",
        metavar="NAME",
        help="a text input's encoding (cp1251, cp932, utf-8...); default [input] encoding, "
        "else detected",
    )
    clean.add_argument(
        "--list-name",
        type=utf8_text,
        metavar="NAME",
        help="the list's name in the run history (default [history] list_name, else the input's "
        "file name without dates and times)",
    )
    clean.add_argument(
        "--changes",
        type=utf8_text,
        metavar="PATH",
        help="write the addresses new since the list's last run or whose VERDICT changed "
        "(.csv, .parquet, .jsonl, .xlsx)",
    )
    clean.add_argument(
        "--engine",
        choices=("local", "dask"),
        default="local",
        help="local: stream on this machine (default); dask: spread over a Dask cluster",
    )
    clean.add_argument(
        "--scheduler", metavar="tcp://HOST:PORT", help="with --engine dask: join this cluster"
    )
    clean.add_argument(
        "--dask-workers",
        type=int,
        default=2,
        metavar="N",
        help="with --engine dask and no --scheduler: worker processes of a local cluster (2)",
    )
    common_options(clean)
    verify_options(clean)
    clean.set_defaults(command=lambda: _lists().command_clean)

    verify = commands.add_parser("verify", help="verify one address; prints the spec's JSON")
    verify.add_argument("address", type=utf8_text, metavar="ADDRESS")
    verify.add_argument("--domain", action="store_true", help="ADDRESS is a bare domain")
    verify.add_argument(
        "--fail-on-invalid",
        action="store_true",
        help="exit 4 when the VERDICT is Invalid (for scripts)",
    )
    common_options(verify)
    verify_options(verify)
    verify.set_defaults(command=lambda: _lists().command_verify, quiet=True)

    doctor = commands.add_parser(
        "doctor", help="can this host verify? resolver, port 25, EHLO, a paid verifier's key"
    )
    common_options(doctor)
    verify_options(doctor)
    doctor.set_defaults(command=lambda: _lists().command_doctor, quiet=True)


def _record_commands(commands: Commands) -> None:
    bounces = commands.add_parser("bounces", help="the bounce ledger: import reports, list events")
    bounce_commands = bounces.add_subparsers(required=True, metavar="ACTION")
    importing = bounce_commands.add_parser(
        "import", help="import CSV/Parquet bounce exports or RFC 3464 DSNs (.eml, mbox)"
    )
    importing.add_argument("files", nargs="+", type=utf8_path, metavar="FILE")
    importing.set_defaults(command=lambda: _records().command_bounces_import)
    showing = bounce_commands.add_parser("list", help="list recorded events, newest first")
    showing.add_argument(
        "--email", type=utf8_text, metavar="ADDR", help="only this address (any spelling)"
    )
    showing.add_argument("--limit", type=int, default=100, metavar="N")
    showing.set_defaults(command=lambda: _records().command_bounces_list)
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
    c_import.set_defaults(command=lambda: _records().command_contacts_import)
    c_suppress = contact_commands.add_parser(
        "suppress", help="opt-out: never return this person again (kept only hashed)"
    )
    c_erase = contact_commands.add_parser("erase", help="delete the person's records and suppress")
    for sub, request in ((c_suppress, "suppress"), (c_erase, "erase")):
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
        sub.set_defaults(command=lambda: _records().command_contacts_forget, request=request)
    c_audit = contact_commands.add_parser(
        "audit", help="who looked up what, when, with what outcome"
    )
    c_audit.add_argument(
        "--since", type=utf8_text, metavar="DATE", help="ISO date or date-time (UTC)"
    )
    c_audit.add_argument("--format", choices=("csv", "json"), default="csv")
    c_audit.set_defaults(command=lambda: _records().command_contacts_audit)
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


def _calibrate_commands(commands: Commands) -> None:
    """``calibrate`` (fit, print and store), ``calibrate show``, ``calibrate remove``: an
    action's options are its own, and one given before the action is kept (SUPPRESS)."""
    calibrate = commands.add_parser(
        "calibrate",
        help="calibrate SCORE on the list's own sends and hard bounces (the bounce ledger)",
    )
    calibrate.add_argument(
        "--since", type=utf8_text, metavar="DATE", help="only sends from DATE on (ISO, UTC)"
    )
    _calibrate_options(calibrate, None)
    calibrate.set_defaults(command=lambda: _calibrate().command_calibrate)
    actions = calibrate.add_subparsers(required=False, metavar="ACTION")
    show = actions.add_parser("show", help="the list's stored calibration")
    _calibrate_options(show, argparse.SUPPRESS)
    show.set_defaults(command=lambda: _calibrate().command_calibrate_show)
    remove = actions.add_parser("remove", help="remove it: the list's runs go back to the rules")
    _calibrate_options(remove, argparse.SUPPRESS)
    remove.set_defaults(command=lambda: _calibrate().command_calibrate_remove)


def _calibrate_options(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--list-name",
        type=utf8_text,
        metavar="NAME",
        default=default,
        help="the list (default [history] list_name, else the history's only list)",
    )
    parser.add_argument(
        "--format", choices=("text", "json"), default=default or "text", help="text or JSON"
    )
    parser.add_argument(
        "--db",
        type=utf8_text,
        metavar="PATH|URL",
        default=default,
        help="the run history: file or postgresql:// URL (default: [history] db, else cache)",
    )
    parser.add_argument(
        "--cache-dir", type=Path, metavar="DIR", default=default, help="cache directory"
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", default=default, help="settings (TOML)"
    )
    parser.add_argument(
        "--sandbox",
        action="store_true",
        default=default or False,
        help="the sandbox's history and ledger",
    )


def _service_commands(commands: Commands) -> None:
    serve = commands.add_parser("serve", help="run the HTTP verification service")
    serve.add_argument(
        "--host", type=utf8_text, help="address to listen on (default from [service] host)"
    )
    serve.add_argument("--port", type=int, help="TCP port (default from [service] port)")
    serve.add_argument(
        "--db",
        type=utf8_text,
        metavar="PATH|URL",
        help="keys, quota counters, contacts, bounces: a SQLite file or a postgresql:// URL",
    )
    common_options(serve)
    serve.set_defaults(command=_serving, quiet=True)

    keys = commands.add_parser("keys", help="create, list and revoke API keys")
    key_commands = keys.add_subparsers(required=True, metavar="ACTION")
    create = key_commands.add_parser("create", help="create a key; prints its secret once")
    create.add_argument(
        "--plan", required=True, type=utf8_text, metavar="NAME", help="plan the key is on"
    )
    create.add_argument("--label", type=utf8_text, default="", help="a note for whom the key is")
    create.set_defaults(command=lambda: _service().command_keys_create)
    listing = key_commands.add_parser("list", help="list keys (never their secrets)")
    listing.set_defaults(command=lambda: _service().command_keys_list)
    revoke = key_commands.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id", type=utf8_text, metavar="KEY_ID")
    revoke.set_defaults(command=lambda: _service().command_keys_revoke)
    database = commands.add_parser("db", help="the service's database")
    db_commands = database.add_subparsers(required=True, metavar="ACTION")
    migrate = db_commands.add_parser(
        "migrate", help="create or upgrade the tables of every store the service uses"
    )
    migrate.set_defaults(command=lambda: _service().command_db_migrate)
    for sub in (create, listing, revoke, migrate):
        sub.add_argument("--db", type=utf8_text, metavar="PATH|URL", help="keys and quota counters")
        sub.add_argument("--config", type=Path, metavar="FILE", help="service settings (TOML)")
