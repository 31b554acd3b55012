"""The options the commands share, and the argument types they parse with.

Light on purpose: ``listclean --help`` builds every command's parser from here and
:mod:`.commands` before anything heavy (polars, pyarrow, aiohttp) is imported.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import get_args

from pipeline.core.config.tables import METHODS, VerifyMode
from pipeline.core.text import invalid_at
from pipeline.sandbox.files import SANDBOX_WORLD


def utf8_text(value: str) -> str:
    """An argument that must be text (argparse ``type=``). On POSIX an argument is bytes, which
    Python decodes with ``surrogateescape``: a byte that is not UTF-8 becomes a lone surrogate
    that nothing downstream can encode, so it is refused here, naming the byte."""
    at = invalid_at(value)
    if at is None:
        return value
    raw = value.encode("utf-8", "surrogateescape")
    start = len(value[:at].encode("utf-8", "surrogateescape"))
    raise argparse.ArgumentTypeError(
        f"not valid UTF-8: byte 0x{raw[start]:02x} at byte {start} of {raw[:80]!r}; "
        "pass UTF-8 text (check the terminal's or the file's encoding)"
    )


def utf8_path(value: str) -> Path:
    """A file argument whose name must be text (argparse ``type=``): see :func:`utf8_text`."""
    return Path(utf8_text(value))


def common_options(parser: argparse.ArgumentParser) -> None:
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
        "--world", type=Path, default=SANDBOX_WORLD, metavar="FILE", help="sandbox world file"
    )


def verify_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--verify",
        choices=get_args(VerifyMode),
        help="address-level checks (default [verify] mode)",
    )
    parser.add_argument("--smtp-port", type=int, metavar="PORT", help="mail servers' port (25)")
    parser.add_argument(
        "--budget",
        action="append",
        type=budget_arg,
        metavar="N|METHOD=N",
        help="most RCPTs (a vendor: credits) this run may spend; METHOD=N for one method of "
        "[routing] (repeatable)",
    )
    parser.add_argument(
        "--helo", type=utf8_text, metavar="NAME", help="EHLO name (default: this host's FQDN)"
    )
    parser.add_argument(
        "--mail-from", type=utf8_text, metavar="ADDR", help="envelope sender of probes"
    )
    parser.add_argument(
        "--api-url",
        type=utf8_text,
        metavar="URL",
        help="remote /api/email service (--verify api), or the scheme://host:port standing in "
        "for a paid verifier's",
    )
    parser.add_argument(
        "--api-key",
        type=utf8_text,
        metavar="KEY",
        help="its API key (default: env LISTCLEAN_API_KEY)",
    )
    parser.add_argument("--concurrency", type=int, metavar="N", help="API requests in flight")


def budget_arg(text: str) -> tuple[str, int]:
    """A --budget value: N (the run's own method) or METHOD=N (argparse ``type=``)."""
    method, _, number = text.rpartition("=")
    method = method.strip().lower()
    if method and method not in METHODS:
        raise argparse.ArgumentTypeError(
            f"{method!r} is no method; write N, or METHOD=N with one of {', '.join(METHODS)}"
        )
    if not number.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a budget: write 0 (no limit) or more, or METHOD=N"
        )
    return method, int(number)


def share(text: str) -> float:
    """A share of the input's rows, 0 to 1 (argparse ``type=``)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share between 0 and 1 (e.g. 0.2)")
    return value
