"""What the workers of a Dask run write, and where. Every file of rows the run makes, the output
in any format, ``--split``'s files and the rejects, is written by the workers
(:mod:`pipeline.stages.dask.parts`); the driver plans the places, merges the parts' small
tallies, and stages what they made for the run's one commit point
(:mod:`pipeline.stages.write.publish`). No output row passes through it.

Each file the run publishes gets a staging folder beside it, named for the driver's process
(``.list.clean.csv.<pid>.tmp/``): on a path every worker reaches (the command line holds a
cluster's paths to that), or under the same prefix of the object store the output goes to.
Each input part becomes one part file there, written by the worker that holds the part's rows;
then, by the output's format:

- ``-o out/`` (a dataset): Parquet parts; the folder of parts is the output, published whole.
- ``-o out.parquet``: Parquet parts, joined in order into one file by one worker, row group by
  row group.
- ``-o out.csv``: CSV parts (rows only), joined by one worker into one file: the header (and
  BOM), then the parts' bytes as they are.
- ``-o out.xlsx``: Parquet parts, from which one worker builds the workbook, one part at a time.
- the rejects: CSV parts; beside a dataset, a folder ``out.rejects/`` (never inside the
  dataset) of parts that each start with the header; beside one file, joined into the rejects
  file as a CSV output is.

With ``--split``, each part's rows of each verdict go to that role's own folder and are
published like the output. A staging folder not published is removed when the run ends,
whatever ends it (after the run's tasks are cancelled); what a killed driver left locally is
swept by the next run that writes the same file.
"""

from __future__ import annotations

import contextlib
import shutil
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from pipeline.stages.dask.parts import (
    OUTPUT,
    PartFiles,
    RejectParts,
    Written,
    domain_row_pieces,
    part_name,
    top_domains_of,
    write_joined_csv,
    write_joined_parquet,
    write_part,
    write_reject_part,
    write_workbook,
    written_tally,
)
from pipeline.stages.dask.places import Place
from pipeline.stages.dask.shuffle import Exchange
from pipeline.stages.summary import Tally
from pipeline.stages.write.formats import OutputFormat
from pipeline.stages.write.outputs import (
    OutputPaths,
    guard,
    make_folder,
    rejects_head,
    sweep_stale,
)
from pipeline.stages.write.publish import Publication, tmp_name, tmp_of
from pipeline.stages.write.sinks import csv_head

_PARTS_A_BUCKET = 32  # parts whose rows per domain one bucket of the domains' tally sums


@contextlib.contextmanager
def staging_folder(final: Path, kind: str = "") -> Iterator[Path]:
    """A local folder beside *final* (of *kind*: a folder of the run's own there, where every
    worker reaches it; else *final*'s staging folder), removed unless published."""
    make_folder(final.parent)
    sweep_stale(final)
    staging = final.with_name(tmp_name(final.name, kind)) if kind else tmp_of(final)
    guard(final, staging.mkdir)
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


@dataclass(frozen=True)
class Staging:
    """Where one run's workers write: its tasks, the files it writes
    (:meth:`OutputPaths.in_parts`), the exit stack that removes what is not published, the
    commit point that publishes the rest, and how to cancel the run's tasks."""

    exchange: Exchange  # its task submitter, and its way to exchange narrow tables
    paths: OutputPaths
    stack: contextlib.ExitStack
    publication: Publication
    cancel: Callable[[], None]

    @property
    def submit(self) -> Callable[..., Any]:
        return self.exchange.submit

    def folder_of(self, final: Path) -> Place:
        """The staging folder of *final*, beside it (or beside its URL in the object store),
        removed when the run ends unless published; a run that ends early cancels its tasks
        first, so that none goes on writing there (a task already running still ends)."""
        upload = self.paths.upload
        if upload is None:
            self.stack.enter_context(staging_folder(final))
            place = Place(str(tmp_of(final)))
        else:
            parent, name = upload.name(final).rsplit("/", 1)
            place = Place(f"{parent}/{tmp_name(name)}", upload.fs)
            self.stack.callback(upload.remove, f"{place.where}/")
        self.stack.callback(self.cancel)  # on the way out, before the removal above
        return place


@dataclass(frozen=True)
class Output:
    """The rows the workers write: their columns, the provenance in a Parquet file's metadata,
    and the run's asks (``--split``, ``--csv-bom``)."""

    schema: pa.Schema
    facts: dict[str, Any]
    split: bool = False
    bom: bool = False


def write_rows(staging: Staging, decided: list[Any], output: Output) -> Tally:
    """Each input part's output rows (*decided*: one future a part, in input order, each let
    go once written) written by a worker as part files, then made into the output's files and
    staged; returns the merged tallies."""
    paths = staging.paths
    finals = {OUTPUT: paths.parquet, **(paths.split if output.split else {})}
    folders = {role: staging.folder_of(final) for role, final in finals.items()}
    fmt = paths.format
    files = PartFiles(
        folders,
        output.schema,
        output.facts,
        csv=fmt is OutputFormat.CSV,
        dataset=fmt is OutputFormat.DATASET,
    )
    if not decided:  # an empty list still gets its files, with every column
        decided.append(_empty(output.schema))
    # A part's write runs before any other part's decide that waits beside it, so a worker
    # holds one decided part at a time rather than every part it has decided so far.
    writes = [
        staging.submit(write_part, part, i, files, priority=1) for i, part in enumerate(decided)
    ]
    # The rows per domain are summed by domain buckets on the workers: the driver gets each
    # bucket's top domains, never a table of every domain.
    buckets = max(1, -(-len(writes) // _PARTS_A_BUCKET))
    pieces = [staging.submit(domain_row_pieces, w, buckets) for w in writes]
    tops = [
        staging.submit(top_domains_of, *column)
        for column in staging.exchange.to_buckets(pieces, buckets)
    ]
    futures = [staging.submit(written_tally, w) for w in writes]
    del writes, pieces  # each let go by the cluster once the tasks that read it are done
    tally = Tally()
    written: list[tuple[str, ...]] = []
    for index, future in enumerate(futures):
        done: Written = future.result()
        tally.merge(done.tally)
        written.append(done.roles)
        futures[index] = decided[index] = None  # let the cluster forget the part's rows
    for top in tops:
        if (rows := top.result()) is not None:
            tally.add_domain_rows(rows)
    made = {}
    for role, folder in folders.items():
        ours = [i for i, roles in enumerate(written) if role in roles]
        parts = [folder / part_name(i, files.suffix) for i in ours]
        made[role] = _made(staging, folder, parts, output)
    for role, (staged, joining) in made.items():
        if joining is not None:
            joining.result()
        staging.publication.stage(staged, finals[role])
    return tally


def _made(
    staging: Staging, folder: Place, parts: list[Place], output: Output
) -> tuple[Path | str, Any]:
    """What is published of one role's folder of parts, and the task making it (None for a
    dataset: the folder is the output)."""
    fmt = staging.paths.format
    if fmt is OutputFormat.DATASET:
        return folder.as_folder(), None
    target = folder / f"joined.{fmt.value}"
    names = output.schema.names
    if fmt is OutputFormat.CSV:
        head = csv_head(names, output.bom)
        return target.as_file(), staging.submit(write_joined_csv, parts, target, head)
    if fmt is OutputFormat.XLSX:
        return target.as_file(), staging.submit(write_workbook, parts, target, names)
    joining = staging.submit(write_joined_parquet, parts, target, output.schema, output.facts)
    return target.as_file(), joining


def write_rejects(
    staging: Staging, rejects: Sequence[Any], columns: Mapping[str, pl.DataType]
) -> Counter[str]:
    """Each part's rejected records, written by the workers and staged: *rejects* holds one
    future a part, in input order, each resolving to a polars frame of *columns* (the
    reader's ``reject_schema``). Beside a dataset output they are a folder of CSV parts
    (``out.rejects/``), each with the header; beside one file, the parts are joined in order
    by one worker into the rejects file, the local engine's bytes. Returns the rejected
    records per reason, for the summary."""
    final = staging.paths.rejects
    dataset = staging.paths.format is OutputFormat.DATASET
    folder = staging.folder_of(final)
    head = rejects_head(list(columns))
    spec = RejectParts(folder, head if dataset else b"", dataset)
    frames = list(rejects) or ([pl.DataFrame(schema=dict(columns))] if dataset else [])
    futures = [staging.submit(write_reject_part, frame, i, spec) for i, frame in enumerate(frames)]
    reasons: Counter[str] = Counter()
    parts = []
    for index, future in enumerate(futures):
        counted, wrote = future.result()
        reasons.update(counted)
        if wrote:
            parts.append(folder / part_name(index, "csv"))
    if dataset:
        staging.publication.stage(folder.as_folder(), final)
    else:
        target = folder / "joined.csv"
        staging.submit(write_joined_csv, parts, target, head).result()
        staging.publication.stage(target.as_file(), final)
    return reasons


def _empty(schema: pa.Schema) -> pl.DataFrame:
    frame = pl.from_arrow(schema.empty_table())
    assert isinstance(frame, pl.DataFrame)
    return frame
