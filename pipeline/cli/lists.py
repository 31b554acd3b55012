"""The list commands: ``clean`` a whole list, ``verify`` one address, ``doctor`` the host."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path
from typing import TextIO

from pipeline.cli.common import (
    common_options,
    effective_config,
    open_engine,
    sandbox_world,
    utf8_text,
    verify_config,
    verify_options,
)
from pipeline.core.config import load_config
from pipeline.core.doctor import run_doctor
from pipeline.core.engine import verify_once
from pipeline.core.mailboxes.smtp import smtp_settings
from pipeline.stages.runner import CleanJob, RunSummary, run_clean
from pipeline.stages.workdir import WorkDir, fingerprint
from pipeline.stages.write import default_output


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    clean = commands.add_parser("clean", help="clean a CSV or Parquet list into enriched Parquet")
    clean.add_argument("input", type=Path, metavar="INPUT", help="CSV or Parquet list")
    clean.add_argument("-o", "--output", type=Path, help="default: ./<input stem>.clean.parquet")
    clean.add_argument("--email-column", metavar="NAME", help="the column holding the addresses")
    clean.add_argument("--quiet", action="store_true", help="no progress bars or summary table")
    clean.add_argument("--work-dir", type=Path, metavar="DIR", help="default: <output>.work")
    common_options(clean)
    verify_options(clean)
    clean.set_defaults(handler=_clean)

    verify = commands.add_parser("verify", help="verify one address; prints the spec's JSON")
    verify.add_argument("address", type=utf8_text, metavar="ADDRESS")
    verify.add_argument("--domain", action="store_true", help="ADDRESS is a bare domain")
    common_options(verify)
    verify_options(verify)
    verify.set_defaults(handler=_verify, quiet=True)

    doctor = commands.add_parser("doctor", help="can this host verify? resolver, port 25, EHLO")
    common_options(doctor)
    verify_options(doctor)
    doctor.set_defaults(handler=_doctor, quiet=True)


def _clean(args: argparse.Namespace) -> int:
    output = args.output or default_output(args.input)
    with contextlib.ExitStack() as stack:
        work = None
        if verify_config(args, load_config(args.config)).mode in ("smtp", "api"):
            directory = args.work_dir or output.with_name(output.name + ".work")
            run_id = fingerprint(args.input.resolve(), output.resolve(), args.budget, args.config)
            work = stack.enter_context(WorkDir(directory, run_id))
        engine = stack.enter_context(open_engine(args, work))
        summary = run_clean(CleanJob(args.input, output, args.email_column), engine)
        if work is not None:
            work.finish()
    for warning in summary.warnings:
        print(f"listclean: warning: {warning}", file=sys.stderr)
    if not args.quiet:
        print_summary(summary, sys.stdout)
    return 0


def _verify(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        record = asyncio.run(verify_once(engine, args.address, domain_mode=args.domain))
    print(json.dumps(record, ensure_ascii=False, indent=2))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        config = sandbox_world(stack, args, effective_config(args))
        settings = smtp_settings(config.verify, loopback_only=args.sandbox)
        checks = asyncio.run(run_doctor(config, settings))
    for check in checks:
        print(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    return 0 if all(c.ok for c in checks) else 1


def print_summary(summary: RunSummary, out: TextIO) -> None:
    lines = [
        f"{'rows in':<22}{summary.rows_in:>12,}",
        f"{'rows out':<22}{summary.rows_out:>12,}",
        f"{'rows rejected':<22}{summary.rows_rejected:>12,}",
        f"{'distinct addresses':<22}{summary.normalized.distinct_addresses:>12,}",
        f"{'duplicates':<22}{summary.normalized.duplicates:>12,}",
        f"{'distinct domains':<22}{summary.domains.distinct_domains:>12,}",
        f"{'DNS queries sent':<22}{summary.dns_queries:>12,}",
        f"{'domain cache hits':<22}{summary.domains.cache_hits:>12,}",
        f"{'SMTP RCPTs sent':<22}{summary.sent('smtp'):>12,}",
        f"{'SMTP sessions':<22}{summary.smtp_sessions:>12,}",
        f"{'API requests':<22}{summary.sent('api'):>12,}",
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
