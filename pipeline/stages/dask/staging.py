"""Where the workers of a Dask run put what they write: folders beside the output (a place
every worker reaches: the command line holds a cluster's paths to that), staged by the run and
removed unless published at its commit point (:mod:`pipeline.stages.write.publish`)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from pipeline.stages.job import CleanJob
from pipeline.stages.write.formats import OutputFormat
from pipeline.stages.write.outputs import guard, make_folder, sweep_stale
from pipeline.stages.write.publish import tmp_of


def workers_write(job: CleanJob) -> bool:
    """Whether the workers write the output: a dataset (``-o out/``) on a file system every
    worker reaches (the command line holds a cluster's paths to that), not split by verdict.
    Other outputs (one file, CSV, xlsx, --split, an object store's) are written here."""
    paths = job.paths
    return paths.format is OutputFormat.DATASET and paths.upload is None and not job.split


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
