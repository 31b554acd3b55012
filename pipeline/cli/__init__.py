"""The ``listclean`` command line.

    listclean clean INPUT [-o OUTPUT] [--email-column NAME] [--quiet] [--work-dir DIR]
                    [--split] [--fail-on-invalid SHARE] [--fail-on-rejected SHARE]
                    [--log-format text|json] [common options] [verify options]
    listclean verify ADDRESS [--domain] [common options] [verify options]
    listclean doctor [common options] [verify options]
    listclean bounces import FILE... | list [--email ADDR] [--limit N]  [store options]
    listclean contacts import FILE [--source NAME]
                     | suppress (--email ADDR | --phone NUMBER)
                     | erase (--email ADDR | --phone NUMBER)
                     | audit [--since DATE] [--format csv|json]  [store options]
    listclean calibrate [--list-name NAME] [--since DATE] [--format text|json]
                      | show [--list-name NAME] [--format text|json]
                      | remove [--list-name NAME]  [store options]
    listclean serve [--host H] [--port P] [--db PATH|URL] [common options]
    listclean keys create --plan NAME [--label TEXT] | list | revoke KEY_ID
                   [--db PATH|URL] [--config FILE]
    listclean db migrate [--db PATH|URL] [--config FILE]

    common options: --config FILE, --resolver HOST[:PORT]..., --cache-dir DIR, --offline,
                    --sandbox, --world FILE
    verify options: --verify none|smtp|api, --smtp-port PORT, --budget N, --helo NAME,
                    --mail-from ADDR, --api-url URL, --api-key KEY, --concurrency N
    store options:  --db PATH|URL, --cache-dir DIR, --config FILE, --sandbox
    (a postgresql:// URL for --db is a PostgreSQL database; a path, a SQLite file)

Exit codes: 0 ok, 1 unexpected error or a failed ``doctor`` check, 2 bad usage or input,
3 resolver unhealthy or no outbound SMTP, 4 every file written but the results crossed a
``--fail-on-*`` share, 130 stopped by SIGINT, 143 stopped by SIGTERM
(:mod:`pipeline.stages.signals`).

One module per concern: :mod:`.commands` declares every command's arguments (with the light
helpers of :mod:`.options`), importing nothing heavy, so that ``--help`` and ``--version``
answer at once; each command's handler imports its module when the command runs:
:mod:`.lists` the list commands (clean, verify, doctor), :mod:`.records` the bounce ledger and
the contact store, :mod:`.calibrate` SCORE calibrated on a list's sends, :mod:`.service` the
HTTP service and its API keys. :mod:`.common` holds
what they share (the effective config, the sandbox, the engine), :mod:`.log` what a command
writes on standard error (text or JSON, progress), :mod:`.outcome` what ``clean`` reports
when it is done.
"""

from __future__ import annotations

import _signal  # signal's core, without the enums the signal module makes on import
import contextlib
import gc
import os
import sys

# First and alone: what the program imports before main() takes the signals is a window in
# which Python's own handling would answer SIGINT with a traceback. Everything else is
# imported inside main(), and the type names only by type checkers (typing itself included).
from pipeline.stages.signals import SIGNALS, Interrupted, deferred, handled, interruption

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import NoReturn

    from pipeline.cli.log import Log, LogFormat

__all__ = ["command", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    # SIGINT and SIGTERM are ours before the heavy imports of the commands: a signal at any
    # moment ends the command with a line and an exit code, never a traceback. While the
    # command starts (its arguments read, its modules imported) a signal waits for the start to
    # end: raised in the middle of making a class, Python would hide it in another error.
    asked = sys.argv[1:] if argv is None else argv
    with handled():
        log: Log | None = None
        try:
            with deferred():
                from pipeline.cli.log import Log, LogFormat

                log = _start_log(asked)
                args = _parser().parse_args(argv)
                args.log = log = Log(LogFormat(getattr(args, "log_format", LogFormat.TEXT)))
                # The command's module (the heavy imports), still part of starting.
                args.handler = args.command()
        except Interrupted as exc:  # the signal came once the start was done, or before it
            log = log or _start_log(asked)
            log.error("interrupted", f"stopped by {exc.name} while starting; nothing was done.")
            return exc.exit_code
        log = args.log
        try:
            return _run(args)
        except BaseException as exc:
            stop = interruption(exc)
            if stop is None:
                raise
            log.error(
                "interrupted",
                interrupted_text(stop),
                exit_code=stop.exit_code,
                signal=stop.name,
                written=list(stop.written),
                kept=stop.kept,
            )
            return stop.exit_code


def command() -> NoReturn:
    """The ``listclean`` program: :func:`main`, then the process's exit. Everything the command
    built is handed to the exit frozen (``gc.freeze``): the collector's last passes over it as
    the interpreter finishes took about 0.08 s of a 1M-row ``clean`` (a thirtieth of it) and
    free nothing the exit does not. Every file was closed, and every output published or
    removed, before :func:`main` returned."""
    try:
        code = main()
    except SystemExit as exc:  # --help, --version and a usage error
        gc.freeze()
        _ending(exc.code if isinstance(exc.code, int) else int(exc.code is not None))
        raise
    gc.freeze()
    _ending(code)
    sys.exit(code)


def _ending(code: int) -> None:
    """From here the process only ends: a signal ends it at once, with *code*. Everything was
    written, closed and published (or removed) before :func:`main` returned, and its last
    message said so; Python's own handling would end it without a word, as killed."""

    def end(signum: int, frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)

    for sig in SIGNALS:
        _signal.signal(sig, end)


def interrupted_text(exc: Interrupted) -> str:
    """What a stopped command did and did not write, and how to go on."""
    text = f"stopped by {exc.name}"
    if exc.written and exc.left:
        text += f" while publishing: written {', '.join(exc.written)}; "
        text += f"not written {', '.join(exc.left)}."
    elif exc.written:
        text += f" after the commit point: every file was written ({', '.join(exc.written)})."
    elif exc.output is not None:
        text += f" before the commit point: no output was written ({exc.output} and its "
        text += "companion files are as they were; temporary files were removed)."
    else:
        text += "."
    if exc.kept:
        text += f" The work folder {exc.kept} keeps the run's place: run the same command again"
        text += " to resume."
    return text


def _start_log(argv: Sequence[str]) -> Log:
    """The log of a command whose arguments are not read yet: in the format they ask for."""
    from pipeline.cli.log import Log

    return Log(_format_asked(argv))


def _format_asked(argv: Sequence[str]) -> LogFormat:
    """The log format the arguments ask for, before they are parsed (a signal may come first)."""
    from pipeline.cli.log import LogFormat

    words = list(argv)
    for index, word in enumerate(words):
        value = word.partition("=")[2] if word.startswith("--log-format=") else None
        if word == "--log-format" and index + 1 < len(words):
            value = words[index + 1]
        if value == LogFormat.JSON.value:
            return LogFormat.JSON
    return LogFormat.TEXT


def _run(args: argparse.Namespace) -> int:
    from pipeline.cli.common import warn_service_links
    from pipeline.core.errors import ListcleanError

    log: Log = args.log
    warn_service_links(log)
    try:
        return int(args.handler(args))
    except ListcleanError as exc:
        log.error(type(exc).__name__, str(exc), exit_code=exc.exit_code)
        return exc.exit_code
    except OSError as exc:  # a path the user named could not be read or written
        where = f"{exc.filename}: " if exc.filename else ""
        log.error("OSError", f"{where}{exc.strerror or exc}.", exit_code=2)
        return 2


def _parser() -> argparse.ArgumentParser:
    import argparse

    from pipeline.cli import commands
    from pipeline.version import __version__

    parser = argparse.ArgumentParser(
        prog="listclean", description="Clean mailing lists and verify email addresses."
    )
    parser.add_argument("--version", action="version", version=f"listclean {__version__}")
    commands.add_commands(parser.add_subparsers(required=True, metavar="COMMAND"))
    return parser
