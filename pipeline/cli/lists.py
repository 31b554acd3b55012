"""The list commands: ``clean`` a whole list, ``verify`` one address, ``doctor`` the host."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from pathlib import Path

from pipeline.cli.common import (
    cache_path,
    common_options,
    decoding_of,
    effective_config,
    open_engine,
    sandbox_world,
    settings,
    utf8_text,
    verify_config,
    verify_options,
)
from pipeline.cli.log import Log, LogFormat
from pipeline.cli.outcome import judge, share, tell
from pipeline.core.assembly.doctor import run_doctor
from pipeline.core.config import Config, method_keys
from pipeline.core.engine import Engine, verify_once
from pipeline.core.errors import UsageError
from pipeline.core.lists import load_lists
from pipeline.core.mailboxes.smtp import smtp_settings
from pipeline.stages.history import HistoryPlan, plan_history
from pipeline.stages.job import CleanJob, CleanRequest, open_job
from pipeline.stages.objects import is_object_url, local_path
from pipeline.stages.runner import run_clean
from pipeline.stages.signals import Interrupted
from pipeline.stages.state.workdir import WorkDir, fingerprint, work_folder
from pipeline.stages.summary import RunSummary
from pipeline.stages.write.formats import OutputFormat


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    clean = commands.add_parser(
        "clean", help="clean a list (CSV, Parquet, xlsx, zip, gzip) into Parquet, CSV or xlsx"
    )
    # Strings, not Paths: a Path would fold the "//" of a URL into a local folder name.
    clean.add_argument("input", metavar="INPUT", help="CSV or Parquet list; - reads stdin")
    clean.add_argument(
        "-o", "--output", help="default: <input stem>.clean.parquet beside the input"
    )
    clean.add_argument("--email-column", metavar="NAME", help="the column holding the addresses")
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
    clean.set_defaults(handler=_clean)

    verify = commands.add_parser("verify", help="verify one address; prints the spec's JSON")
    verify.add_argument("address", type=utf8_text, metavar="ADDRESS")
    verify.add_argument("--domain", action="store_true", help="ADDRESS is a bare domain")
    common_options(verify)
    verify_options(verify)
    verify.set_defaults(handler=_verify, quiet=True)

    doctor = commands.add_parser(
        "doctor", help="can this host verify? resolver, port 25, EHLO, a paid verifier's key"
    )
    common_options(doctor)
    verify_options(doctor)
    doctor.set_defaults(handler=_doctor, quiet=True)


def _clean(args: argparse.Namespace) -> int:
    _check_engine(args)
    config = settings(args)
    addressed = verify_config(args, config).mode != "none" or bool(config.routing.routes)
    request = CleanRequest(
        args.input,
        args.output,
        args.email_column,
        args.output_format,
        args.split,
        args.csv_bom,
        args.member,
        args.sheet,
        args.memory if args.memory is not None else config.run.memory,
        decoding_of(args.encoding, config.input),
    )
    work: WorkDir | None = None
    named = args.output
    try:
        with contextlib.ExitStack() as stack:
            job = stack.enter_context(open_job(request, config.storage, config.read))
            named = job.named
            history = _history(args, config, job)
            directory = args.work_dir or _work_dir(job, args, config)
            folder = stack.enter_context(work_folder(directory))
            if addressed:
                source = _identity(local_path(args.input))
                run_id = fingerprint(source, named, args.budget, args.config)
                work = stack.enter_context(WorkDir(folder, run_id))
            engine = stack.enter_context(open_engine(args, work))
            summary = _run(args, job, engine, folder.path, history)
            if work is not None:
                work.finish()
    except Interrupted as exc:
        exc.output = named or "the output"
        exc.kept = str(work.directory.resolve()) if work is not None and work.kept else None
        raise
    log: Log = args.log
    tell(log, summary, quiet=args.quiet)
    return judge(log, summary, args.fail_on_invalid, args.fail_on_rejected)


def _history(args: argparse.Namespace, config: Config, job: CleanJob) -> HistoryPlan:
    """Where the run is recorded and under which list name; --changes checked before any
    work: it may be none of the run's other files."""
    plan = plan_history(
        config,
        args.input,
        cache_path(args, config),
        list_name=args.list_name,
        sandbox=args.sandbox,
        changes=args.changes,
    )
    if plan.changes is not None:
        others = [*job.paths.files(job.split).values(), Path(local_path(args.input))]
        if any(plan.changes.resolve() == p.resolve() for p in others):
            raise UsageError(
                f"--changes {args.changes} is also the input or one of the run's files; "
                "name a file of its own, such as list.changes.csv."
            )
    return plan


def _work_dir(job: CleanJob, args: argparse.Namespace, config: Config) -> Path:
    """``<output>.work``; for an object-store output, a folder of the user's cache named after
    it, so a killed run started again finds its state."""
    if job.upload is None:
        return job.output.with_name(job.output.name + ".work")
    return cache_path(args, config).parent / "work" / fingerprint(job.named)


def _check_engine(args: argparse.Namespace) -> None:
    """Dask options only with the Dask engine; a remote cluster only with shared places."""
    if args.engine != "dask" and args.scheduler:
        raise UsageError("--scheduler joins a Dask cluster: add --engine dask.")
    if args.dask_workers < 1:
        raise UsageError(f"--dask-workers must be at least 1, got {args.dask_workers}.")
    if args.engine != "dask" or not args.scheduler:
        return
    places = [("input", args.input), ("output", args.output)]
    places += [("--changes file", args.changes)] if args.changes else []
    for role, text in places:
        if text is None or not (is_object_url(text) or text.startswith("file://")):
            shown = text if text is not None else "(the default, in this folder)"
            raise UsageError(
                f"With --scheduler the {role} must be a place every machine of the cluster can "
                f"reach, and {shown} is a path on this machine. Use an object-store URL "
                "(s3://bucket/key), or write a path every machine mounts at the same place as "
                "file:///shared/path."
            )


def _run(
    args: argparse.Namespace, job: CleanJob, engine: Engine, folder: Path, history: HistoryPlan
) -> RunSummary:
    if args.engine == "local":
        return run_clean(job, engine, folder, history)
    from pipeline.stages.dask.cluster import connect
    from pipeline.stages.dask.engine import run_clean_dask

    with connect(args.scheduler, args.dask_workers) as cluster:
        return run_clean_dask(job, engine, folder, cluster, history)


def _identity(text: str) -> str:
    return text if is_object_url(text) else str(Path(text).resolve())


def _verify(args: argparse.Namespace) -> int:
    with open_engine(args) as engine:
        record = asyncio.run(verify_once(engine, args.address, domain_mode=args.domain))
    print(json.dumps(record, ensure_ascii=False, indent=2))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    with contextlib.ExitStack() as stack:
        config = sandbox_world(stack, args, effective_config(args))
        settings = smtp_settings(config.verify, loopback_only=args.sandbox)
        lists = load_lists(
            config.lists.extra_disposable, config.lists.extra_free, config.lists.extra_legitimate
        )
        keys = method_keys(config.verify.mode, getattr(args, "api_key", None))
        checks = asyncio.run(run_doctor(config, settings, lists, keys))
    for check in checks:
        print(f"{'ok  ' if check.ok else 'FAIL'}  {check.name}: {check.detail}")
    return 0 if all(c.ok for c in checks) else 1
