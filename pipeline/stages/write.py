"""Stage 5, write: the enriched Parquet, the rejects file and the run summary.

Every file is written to a temporary name in the target directory and then renamed over the
final one (``os.replace`` is atomic on POSIX), so a killed run never leaves a half-written
output that looks complete. The temporary name carries the writer's process id
(``.out.parquet.<pid>.tmp``): what a killed run left behind is removed by the next run that
writes the same output, once no process of that id is alive.
"""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.errors import OutputError
from pipeline.core.schema import OUTPUT_COLUMNS
from pipeline.stages.base import Batch


@dataclass(frozen=True)
class OutputPaths:
    parquet: Path
    rejects: Path
    summary: Path

    @classmethod
    def for_output(cls, output: Path) -> OutputPaths:
        stem = output.with_suffix("") if output.suffix == ".parquet" else output
        return cls(
            parquet=output,
            rejects=stem.with_name(stem.name + ".rejects.csv"),
            summary=stem.with_name(stem.name + ".summary.json"),
        )


def default_output(input_path: Path) -> Path:
    """``<input stem>.clean.parquet`` in the current directory (``stdin.clean.parquet`` for -)."""
    stem = "stdin" if str(input_path) == "-" else input_path.stem
    return Path.cwd() / f"{stem}.clean.parquet"


def output_frame(batch: Batch) -> pl.DataFrame:
    """The input's columns, then the spec's fields, REASON and DUPLICATE, typed as declared."""
    ours = batch.work.select(pl.col(name).cast(dtype) for name, dtype in OUTPUT_COLUMNS.items())
    return pl.concat([batch.originals, ours], how="horizontal")


def write_outputs(frame: pl.DataFrame, rejects: pl.DataFrame, paths: OutputPaths) -> None:
    try:
        paths.parquet.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(
            f"Cannot create the output's folder {paths.parquet.parent}: {exc.strerror}."
        ) from exc
    for path in (paths.parquet, paths.rejects, paths.summary):
        sweep_stale(path)
    _atomically(paths.parquet, lambda tmp: frame.write_parquet(tmp))
    _atomically(paths.rejects, lambda tmp: rejects.write_csv(tmp))


def write_summary(summary: Mapping[str, Any], path: Path) -> None:
    text = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    _atomically(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _atomically(path: Path, write: Callable[[Path], object]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OutputError(f"Cannot write {path}: {why}. Nothing was replaced.") from exc
    finally:
        tmp.unlink(missing_ok=True)


def sweep_stale(path: Path) -> None:
    """Remove the temporary files an earlier, killed writer of *path* left beside it."""
    for tmp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        pid = tmp.name.removeprefix(f".{path.name}.").removesuffix(".tmp")
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, and belongs to someone else
        return True
    return True
