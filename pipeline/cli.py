"""The ``listclean`` command line.

    listclean clean INPUT [-o OUTPUT] [--email-column NAME] [common options]
    listclean verify ADDRESS [--domain] [common options]

Exit codes: 0 ok, 1 unexpected error, 2 bad usage or input, 3 resolver unhealthy.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import ipaddress
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

import platformdirs
from tqdm import tqdm

from pipeline import __version__
from pipeline.core.config import Config, load_config
from pipeline.core.engine import Engine, Progress, verify_one
from pipeline.core.errors import ListcleanError, UsageError
from pipeline.core.lists import load_lists
from pipeline.core.store import DomainCache
from pipeline.stages.runner import CleanJob, RunSummary, run_clean
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
    _common_options(clean)
    clean.set_defaults(handler=_clean)

    verify = commands.add_parser("verify", help="verify one address; prints the spec's JSON")
    verify.add_argument("address", metavar="ADDRESS")
    verify.add_argument("--domain", action="store_true", help="ADDRESS is a bare domain")
    _common_options(verify)
    verify.set_defaults(handler=_verify, quiet=True)
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


def _clean(args: argparse.Namespace) -> int:
    output = args.output or default_output(args.input)
    with _engine(args) as engine:
        summary = run_clean(CleanJob(args.input, output, args.email_column), engine)
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
def _engine(args: argparse.Namespace) -> Iterator[Engine]:
    config = _config(args)
    with contextlib.ExitStack() as stack:
        if args.sandbox:
            address = stack.enter_context(_sandbox(args.world))
            config = dataclasses.replace(
                config, dns=dataclasses.replace(config.dns, nameservers=(address,))
            )
        cache = stack.enter_context(DomainCache(_cache_path(args, config), config.cache))
        lists = load_lists(config.lists.extra_disposable, config.lists.extra_free)
        show = not args.quiet and sys.stderr.isatty()
        yield Engine(config, lists, cache, args.offline, _progress if show else None)


def _config(args: argparse.Namespace) -> Config:
    config = load_config(args.config)
    if args.resolver:
        servers = tuple(_nameserver(r) for r in args.resolver)
        config = dataclasses.replace(
            config, dns=dataclasses.replace(config.dns, nameservers=servers)
        )
    return config


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
def _sandbox(world_path: Path) -> Iterator[str]:
    from pipeline.sandbox.dns_server import SandboxDNS, load_world

    try:
        world = load_world(world_path)
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"Cannot load the sandbox world {world_path}: {exc}. Pass a world file with --world."
        ) from exc
    with SandboxDNS(world) as server:
        yield server.address


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
