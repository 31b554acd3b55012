"""The batch runner: read -> normalize -> domains -> verify -> write, timed and summarized."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from pipeline.core.engine import Engine
from pipeline.stages.base import Batch, StageSummary
from pipeline.stages.domains import domains
from pipeline.stages.normalize import normalize
from pipeline.stages.read import read_list
from pipeline.stages.verify import verify
from pipeline.stages.write import OutputPaths, output_frame, write_outputs, write_summary

T = TypeVar("T")


@dataclass(frozen=True)
class CleanJob:
    input: Path
    output: Path
    email_column: str | None = None


@dataclass(frozen=True)
class RunSummary:
    input: str
    output: str
    rejects_file: str
    rows_in: int
    rows_out: int
    rows_rejected: int
    distinct_addresses: int
    duplicates: int
    distinct_domains: int
    dns_queries: int
    cache_hits: int
    rcpts_sent: int
    smtp_sessions: int
    api_requests: int
    verdicts: dict[str, int]
    reasons: dict[str, int]
    stages: list[StageSummary]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class _Clock:
    """Times each stage and keeps its summary."""

    def __init__(self) -> None:
        self.stages: list[StageSummary] = []

    def run(
        self, name: str, rows_in: int, step: Callable[[], T], rows_out: Callable[[T], int]
    ) -> T:
        started = time.perf_counter()
        result = step()
        seconds = time.perf_counter() - started
        self.stages.append(StageSummary(name, rows_in, rows_out(result), round(seconds, 3)))
        return result


def run_clean(job: CleanJob, engine: Engine) -> RunSummary:
    clock = _Clock()
    read = clock.run(
        "read", 0, lambda: read_list(job.input, job.email_column), lambda r: r.frame.height
    )
    originals = read.frame
    work, norm = clock.run(
        "normalize",
        originals.height,
        lambda: normalize(originals, read.email_column, engine.lists),
        lambda r: r[0].height,
    )
    work, dom = clock.run(
        "domains", work.height, lambda: asyncio.run(domains(engine, work)), lambda r: r[0].height
    )
    work, ver = clock.run(
        "verify", work.height, lambda: asyncio.run(verify(engine, work)), lambda r: r[0].height
    )
    if work.height != originals.height:  # a bug, never an input problem
        raise AssertionError(f"{originals.height} rows read but {work.height} rows decided")
    paths = OutputPaths.for_output(job.output)
    frame = output_frame(Batch(originals, work))
    clock.run(
        "write",
        frame.height,
        lambda: write_outputs(frame, read.rejects, paths),
        lambda _: frame.height,
    )
    summary = RunSummary(
        input=str(job.input),
        output=str(paths.parquet),
        rejects_file=str(paths.rejects),
        rows_in=originals.height + read.rejects.height,
        rows_out=frame.height,
        rows_rejected=read.rejects.height,
        distinct_addresses=int(norm["distinct_addresses"]),
        duplicates=int(norm["duplicates"]),
        distinct_domains=int(dom["distinct_domains"]),
        dns_queries=int(dom["dns_queries"]),
        cache_hits=int(dom["cache_hits"]),
        rcpts_sent=int(ver.get("rcpts_sent", 0)),
        smtp_sessions=int(ver.get("smtp_sessions", 0)),
        api_requests=int(ver.get("api_requests", 0)),
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
