"""The list commands: ``clean`` a whole list, ``verify`` one address, ``doctor`` the host."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from pathlib import Path

from pipeline.cli.common import (
    cache_path,
    decoding_of,
    effective_config,
    open_engine,
    sandbox_world,
    settings,
    verify_config,
)
from pipeline.cli.log import Log
from pipeline.cli.outcome import FAILED_CHECK, judge, tell
from pipeline.core.assembly.doctor import run_doctor
from pipeline.core.config import Config, method_keys
from pipeline.core.engine import Engine, verify_once
from pipeline.core.errors import UsageError
from pipeline.core.lists import load_lists
from pipeline.core.mailboxes.smtp import smtp_settings
from pipeline.core.verdict import RULES, Reason, Verdict
from pipeline.stages.history import HistoryPlan, plan_history
from pipeline.stages.job import CleanJob, CleanRequest, open_job
from pipeline.stages.objects import is_object_url, local_path
from pipeline.stages.runner import run_clean
from pipeline.stages.signals import Interrupted
from pipeline.stages.state.workdir import WorkDir, fingerprint, work_folder
from pipeline.stages.summary import RunSummary


def command_clean(args: argparse.Namespace) -> int:
    _check_engine(args)
    config = settings(args)
    addressed = verify_config(args, config).mode != "none" or bool(config.routing.routes)
    columns = args.email_column or [None]
    request = CleanRequest(
        args.input,
        args.output,
        columns[0],
        args.output_format,
        args.split,
        args.csv_bom,
        args.member,
        args.sheet,
        args.memory if args.memory is not None else config.run.memory,
        decoding_of(args.encoding, config.input),
        header_row=args.header_row,
        further=tuple(columns[1:]),
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


def command_verify(args: argparse.Namespace) -> int:
    """The spec's JSON on standard output; on standard error, the verdict's reasons in words,
    and a hint when a bare domain was asked about as an address."""
    with open_engine(args) as engine:
        record = asyncio.run(verify_once(engine, args.address, domain_mode=args.domain))
    print(json.dumps(record, ensure_ascii=False, indent=2))
    log: Log = args.log
    log.info("verdict", verdict_words(record))
    if not args.domain and _bare_domain(args.address):
        log.warning(
            "bare_domain",
            f"{args.address!r} has no @: it is not an address. To ask about the domain, "
            f"run: listclean verify {args.address} --domain",
        )
    invalid = record["VERDICT"] == Verdict.INVALID.value
    return FAILED_CHECK if invalid and args.fail_on_invalid else 0


def verdict_words(record: dict[str, object]) -> str:
    """A verify answer in words: the verdict, what each reason code means, and DETAIL."""
    codes = [c for c in str(record["REASON"]).split(";") if c]
    meanings = [
        f"{code} ({RULES[Reason(code)].meaning})" if Reason(code) in RULES else code
        for code in codes
    ]
    text = f"{record['VERDICT']}: " + ("; ".join(meanings) if meanings else "no reason to doubt it")
    return text + (f". {record['DETAIL']}" if record.get("DETAIL") else "")


def _bare_domain(value: str) -> bool:
    text = value.strip()
    return "@" not in text and "." in text.strip(".") and " " not in text


def command_doctor(args: argparse.Namespace) -> int:
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
