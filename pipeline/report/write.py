"""Writing the report beside the summary, atomically.

Like every file a run writes (see :mod:`pipeline.core.publish`), the page goes to a temporary
name in its folder first and is renamed over the final name (``os.replace`` is atomic on POSIX),
so a reader never sees half a page; a run stages it with its other files and publishes them all
together.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pipeline.core.publish import Publication
from pipeline.report.html import render_report


def write_report(summary: Mapping[str, Any], path: Path, into: Publication | None = None) -> None:
    """The report of *summary* at *path*: staged in *into* (a run's commit point), or, without
    one, put in place at once."""
    if into is not None:
        into.write_text(path, render_report(summary))
        return
    with Publication() as alone:
        alone.write_text(path, render_report(summary))
        alone.commit()


def report_path(summary_path: Path) -> Path:
    """``<output stem>.report.html`` beside ``<output stem>.summary.json``."""
    name = summary_path.name.removesuffix(".summary.json")
    return summary_path.with_name(name + ".report.html")
