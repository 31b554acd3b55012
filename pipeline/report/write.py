"""Writing the report beside the summary, atomically.

Like every file a run writes (see :mod:`pipeline.stages.write`), the page goes to a temporary
name in its folder first and is renamed over the final name (``os.replace`` is atomic on POSIX),
so a reader never sees half a page. The temporary name has the same shape as the other files'
(``.<name>.<pid>.tmp``), so a killed run's leftovers are swept the same way.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pipeline.core.errors import OutputError
from pipeline.report.html import render_report


def write_report(
    summary: Mapping[str, Any], path: Path, publish: Callable[[Path], None] | None = None
) -> None:
    """Write the report of *summary* to *path*; then hand it to *publish* (an upload), if any."""
    page = render_report(summary)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise OutputError(f"Cannot write the report {path}: {why}. Nothing was replaced.") from exc
    finally:
        tmp.unlink(missing_ok=True)
    if publish is not None:
        publish(path)


def report_path(summary_path: Path) -> Path:
    """``<output stem>.report.html`` beside ``<output stem>.summary.json``."""
    name = summary_path.name.removesuffix(".summary.json")
    return summary_path.with_name(name + ".report.html")
