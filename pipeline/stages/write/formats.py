"""The output's format, chosen by ``-o``'s suffix or ``--output-format``, and what each can hold.

| format | chosen by | written as |
|---|---|---|
| ``parquet`` | ``.parquet``, or a name without a suffix | one file, a row group per batch |
| ``dataset`` | a trailing ``/`` or ``--output-format dataset`` | a folder of part files |
| ``csv`` | ``.csv`` | UTF-8 (``--csv-bom``: with a BOM, for Excel), appended batch by batch |
| ``xlsx`` | ``.xlsx`` | one sheet, streamed batch by batch, formatted for reading |

A suffix we do not write (``.json``, ``.clean``) or one that says another format than
``--output-format`` is a usage error before any work: ``-o list.clean.csv`` never silently
holds Parquet. A dataset may be a folder named ``*.parquet``, as Spark names them.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import PurePath
from typing import Final

from pipeline.core.errors import UsageError


class OutputFormat(StrEnum):
    PARQUET = "parquet"
    DATASET = "dataset"
    CSV = "csv"
    XLSX = "xlsx"


# Excel's sheet size (Microsoft, "Excel specifications and limits"): 1,048,576 rows, one of
# them our header, and 32,767 characters in a cell.
EXCEL_MAX_ROWS: Final = 1_048_576 - 1
EXCEL_MAX_CHARS: Final = 32_767

_BY_SUFFIX: Final = {
    ".parquet": OutputFormat.PARQUET,
    ".csv": OutputFormat.CSV,
    ".xlsx": OutputFormat.XLSX,
}
SUFFIXES: Final = {fmt: suffix for suffix, fmt in _BY_SUFFIX.items()}


def choose_format(output: str | None, flag: str | None) -> OutputFormat:
    """The output's format from its name and ``--output-format``; UsageError when they
    disagree or the suffix is not one we write."""
    asked = OutputFormat(flag) if flag else None
    if output is None:
        return asked or OutputFormat.PARQUET
    if output.endswith("/"):
        return _agree(OutputFormat.DATASET, asked, output)
    suffix = PurePath(output).suffix.lower()
    if not suffix:
        return asked or OutputFormat.PARQUET
    named = _BY_SUFFIX.get(suffix)
    if named is None:
        raise UsageError(
            f"The output {output!r} ends in {suffix!r}, a format listclean does not write. "
            "Name it .parquet, .csv or .xlsx (or end it with / for a folder of Parquet parts)."
        )
    if asked is OutputFormat.DATASET and named is OutputFormat.PARQUET:
        return asked  # a folder called list.parquet/, as Spark writes them
    return _agree(named, asked, output)


def _agree(named: OutputFormat, asked: OutputFormat | None, output: str) -> OutputFormat:
    if asked is None or asked is named:
        return named
    raise UsageError(
        f"--output-format {asked} does not match the output {output!r}, which names "
        f"{named} output. Drop --output-format, or name the output {_example(asked)}."
    )


def _example(fmt: OutputFormat) -> str:
    return "FOLDER/" if fmt is OutputFormat.DATASET else f"list.clean{SUFFIXES[fmt]}"


def stem_of(name: str) -> str:
    """*name* without the suffix of a format we write (the companions' stem)."""
    suffix = PurePath(name).suffix
    return name[: -len(suffix)] if suffix.lower() in _BY_SUFFIX else name


def check_capacity(fmt: OutputFormat, rows: int | None) -> None:
    """Before any work: a list known to hold more rows than an Excel sheet is refused."""
    if fmt is OutputFormat.XLSX and rows is not None and rows > EXCEL_MAX_ROWS:
        raise too_many_rows(rows)


def too_many_rows(rows: int | str) -> UsageError:
    shown = f"{rows:,}" if isinstance(rows, int) else rows
    return UsageError(
        f"The list holds {shown} rows and an Excel sheet holds at most {EXCEL_MAX_ROWS:,} "
        "below its header. Write .csv or .parquet instead."
    )
