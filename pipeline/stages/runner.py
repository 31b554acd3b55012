"""The batch runner: read -> normalize -> domains -> verify -> write, timed and summarized.

A run is one event loop: the engine's one resolver is made (and health-checked) the first time
a stage needs the network, and closed when the run ends.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.core.engine import DomainStats, Engine
from pipeline.core.mailboxes.types import CheckStats
from pipeline.stages.base import Batch, StageSummary
from pipeline.stages.domains import domains
from pipeline.stages.job import CleanJob
from pipeline.stages.normalize import NormalizeStats, normalize
from pipeline.stages.read import read_list
from pipeline.stages.verify import verify
from pipeline.stages.write import OutputPaths, output_frame, write_outputs, write_summary

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


@dataclass(frozen=True)
class RunSummary:
    """What a run did, from its stages' typed results; :meth:`as_dict` is ``summary.json``."""

    input: str
    output: str
    rejects_file: str
    rows_in: int
    rows_out: int
    rows_rejected: int
    normalized: NormalizeStats
    domains: DomainStats
    checks: CheckStats | None  # None: no address-level checker ran
    dns_queries: int  # every query the run sent: domains, mail hosts, canaries
    verdicts: dict[str, int]
    reasons: dict[str, int]
    stages: list[StageSummary]
    warnings: list[str] = field(default_factory=list)

    def sent(self, kind: str) -> int:
        """Requests the *kind* ("smtp" or "api") checker sent."""
        return self.checks.requests if self.checks and self.checks.kind == kind else 0

    @property
    def smtp_sessions(self) -> int:
        return self.checks.sessions if self.checks else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "output": self.output,
            "rejects_file": self.rejects_file,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "rows_rejected": self.rows_rejected,
            "distinct_addresses": self.normalized.distinct_addresses,
            "duplicates": self.normalized.duplicates,
            "distinct_domains": self.domains.distinct_domains,
            "dns_queries": self.dns_queries,
            "cache_hits": self.domains.cache_hits,
            "rcpts_sent": self.sent("smtp"),
            "smtp_sessions": self.smtp_sessions,
            "api_requests": self.sent("api"),
            "verdicts": self.verdicts,
            "reasons": self.reasons,
            "stages": [dataclasses.asdict(s) for s in self.stages],
            "warnings": self.warnings,
        }


class _Clock:
    """Times each stage from the end of the one before."""

    def __init__(self) -> None:
        self.stages: list[StageSummary] = []
        self._last = time.perf_counter()

    def lap(
        self, name: str, rows_in: int, rows_out: int, stats: DataclassInstance | None = None
    ) -> None:
        now = time.perf_counter()
        details = dataclasses.asdict(stats) if stats is not None else {}
        seconds = round(now - self._last, 3)
        self.stages.append(StageSummary(name, rows_in, rows_out, seconds, details))
        self._last = now


def run_clean(job: CleanJob, engine: Engine) -> RunSummary:
    """Clean one list in one event loop."""
    return asyncio.run(_clean(job, engine))


async def _clean(job: CleanJob, engine: Engine) -> RunSummary:
    try:
        return await _stages(job, engine)
    finally:
        await engine.dns.close()


async def _stages(job: CleanJob, engine: Engine) -> RunSummary:
    clock = _Clock()
    read = read_list(job.input, job.email_column)
    originals = read.frame
    clock.lap("read", 0, originals.height)
    work, norm = normalize(originals, read.email_column, engine.lists)
    clock.lap("normalize", originals.height, work.height, norm)
    work, dom = await domains(engine, work)
    clock.lap("domains", work.height, work.height, dom)
    work, checks = await verify(engine, work)
    clock.lap("verify", work.height, work.height, checks)
    if work.height != originals.height:  # a bug, never an input problem
        raise AssertionError(f"{originals.height} rows read but {work.height} rows decided")
    paths = OutputPaths.for_output(job.output)
    frame = output_frame(Batch(originals, work))
    write_outputs(frame, read.rejects, paths)
    clock.lap("write", frame.height, frame.height)
    summary = RunSummary(
        input=job.name or str(job.input),
        output=str(paths.parquet),
        rejects_file=str(paths.rejects),
        rows_in=originals.height + read.rejects.height,
        rows_out=frame.height,
        rows_rejected=read.rejects.height,
        normalized=norm,
        domains=dom,
        checks=checks,
        dns_queries=engine.dns.queries_sent,
        verdicts=_counts(work.get_column("VERDICT")),
        reasons=_reason_counts(work.get_column("REASON")),
        stages=clock.stages,
        warnings=list(read.warnings),
    )
    write_summary(summary.as_dict(), paths.summary)
    return summary


def _reason_counts(reasons: pl.Series) -> dict[str, int]:
    """Rows per reason code; split once per distinct REASON string, not once per row."""
    per_string = reasons.value_counts(name="n")
    codes = per_string.with_columns(pl.col(reasons.name).str.split(";")).explode(reasons.name)
    totals = codes.filter(pl.col(reasons.name) != "").group_by(reasons.name).agg(pl.col("n").sum())
    ordered = totals.sort(["n", reasons.name], descending=[True, False])
    return {str(code): int(n) for code, n in ordered.iter_rows()}


def _counts(values: pl.Series) -> dict[str, int]:
    counted = values.filter(values.is_not_null() & (values != "")).value_counts(sort=True)
    return {str(k): int(v) for k, v in counted.iter_rows()}
