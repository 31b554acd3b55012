"""What the workers of a Dask run write, and where: folders beside the output (a place every
worker reaches: the command line holds a cluster's paths to that), staged by the run and
removed unless published at its commit point (:mod:`pipeline.stages.write.publish`).

The output rows never pass through the driver: each input part's rows, still in input
order, become one part file written by the worker holding them; a dataset output
(``-o out/``) is the folder of those parts; a single Parquet file is made of them by one
more worker task, row group by row group.
The driver merges the parts' tallies, in order, for the summary."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from pipeline.stages.dask.tasks import write_part
from pipeline.stages.job import CleanJob
from pipeline.stages.summary import Tally
from pipeline.stages.write.formats import OutputFormat
from pipeline.stages.write.outputs import (
    OutputPaths,
    concat_parts,
    guard,
    make_folder,
    sweep_stale,
    write_part_file,
)
from pipeline.stages.write.publish import tmp_of


def workers_write(job: CleanJob) -> bool:
    """Whether the workers write the output: a dataset (``-o out/``), or one Parquet file
    made of the parts they wrote, on a file system every worker reaches (the command line
    holds a cluster's paths to that), not split by verdict. Other outputs (CSV, xlsx,
    --split, an object store's) are written by the driver."""
    paths = job.paths
    kinds = (OutputFormat.DATASET, OutputFormat.PARQUET)
    return paths.format in kinds and paths.upload is None and not job.split


@contextlib.contextmanager
def staging_folder(final: Path, kind: str = "") -> Iterator[Path]:
    """The dataset's staging folder beside *final* (or, of *kind*, a folder of the run's
    own there, where every worker reaches it), removed unless published."""
    make_folder(final.parent)
    sweep_stale(final)
    staging = final.with_name(f".{final.name}.{os.getpid()}.{kind}") if kind else tmp_of(final)
    guard(final, staging.mkdir)
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@contextlib.contextmanager
def staging_file(final: Path) -> Iterator[Path]:
    """The temporary name *final* is written under (by a worker), removed unless published."""
    staging = tmp_of(final)
    try:
        yield staging
    finally:
        staging.unlink(missing_ok=True)


@dataclass
class Output:
    """The output the workers write: where, its columns, the provenance in its metadata."""

    paths: OutputPaths
    schema: pa.Schema
    facts: dict[str, Any]
    staged: Path = field(default=Path())  # what the run publishes: the folder, or the file


def write_by_workers(
    submit: Callable[..., Any],
    decided: list[Any],
    output: Output,
    stack: contextlib.ExitStack,
) -> Tally:
    """Each input part's rows (*decided*, one future a part, in input order), written by a
    worker as one part file; then, for one Parquet file, the parts joined in order by one
    worker. Sets ``output.staged``; returns the merged tallies."""
    final = output.paths.parquet
    whole = output.paths.format is OutputFormat.PARQUET
    folder = stack.enter_context(staging_folder(final, "parts" if whole else ""))
    written = [
        submit(
            write_part,
            str(folder),
            index,
            output.schema,
            output.facts,
            part,
        )
        for index, part in enumerate(decided)
    ]
    if not decided:  # an empty list still gets a part with every column
        empty = pl.from_arrow(output.schema.empty_table())
        assert isinstance(empty, pl.DataFrame)
        write_part_file(empty, folder / "part-00000.parquet", output.schema, output.facts)
    tally = Tally()
    for index, future in enumerate(written):
        tally.merge(future.result())
        written[index] = None  # let the cluster forget it
    output.staged = folder
    if whole:
        output.staged = stack.enter_context(staging_file(final))
        submit(concat_parts, folder, output.staged, output.schema, output.facts).result()
    return tally
