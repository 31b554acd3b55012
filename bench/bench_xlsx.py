"""Benchmark writing a workbook against writing CSV: the same generated list cleaned twice,
``-o list.clean.csv`` and ``-o list.clean.xlsx``, each a fresh process timed from start to exit.

    python bench/bench_xlsx.py [--rows 200000] [--domains 20000] [--out bench/out-xlsx]
    python bench/bench_xlsx.py --workbook-rows 1000000     # also: a workbook in, a workbook out

The list is made at run time by ``generate.py`` (id, email, first_name, country), cleaned
``--offline`` (no DNS: what is measured is reading, normalizing and writing). The figure of
merit is the xlsx run's time over the CSV run's (the issue's bound: within 3x). With
``--workbook-rows N`` a workbook of N rows (numeric ids, dates, booleans) is also made (by our
own sheet writer) and cleaned into a workbook, and its ids are checked to come back as numbers.
Prints a Markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def run(out: Path, name: str, args: list[str]) -> dict[str, Any]:
    result = out / f"{name}.json"
    started = time.perf_counter()
    subprocess.run([sys.executable, str(HERE / "measure.py"), str(result), *args], check=True)
    measured: dict[str, Any] = json.loads(result.read_text())
    measured["process_seconds"] = time.perf_counter() - started
    if measured["exit"] != 0:
        raise SystemExit(f"{name} exited with {measured['exit']}")
    return measured


def clean(out: Path, source: Path, output: str) -> dict[str, Any]:
    target = out / output
    args = ["clean", str(source), "-o", str(target), "--offline", "--quiet"]
    measured = run(out, output, [*args, "--cache-dir", str(out / "cache")])
    measured["bytes"] = target.stat().st_size
    return measured


def workbook(path: Path, rows: int) -> None:
    """A workbook of *rows* rows: a numeric id, an address, a date, a boolean."""
    import polars as pl

    from pipeline.stages.write.sheet import SheetWriter

    number = pl.int_range(0, rows)
    frame = pl.select(
        (number + 100_000).alias("Record ID"),
        pl.format("person{}@example.com", number).alias("Email"),
        (pl.lit(dt.date(2020, 1, 1)) + pl.duration(days=number % 2000)).alias("Create Date"),
        (number % 3 == 0).alias("Subscribed"),
    )
    writer = SheetWriter(path, frame.columns, "Sheet1", {})
    for start in range(0, rows, 100_000):
        writer.write(frame.slice(start, 100_000))
    writer.finish()


def ids_are_numbers(path: Path) -> bool:
    import openpyxl

    book = openpyxl.load_workbook(path, read_only=True)
    try:
        rows = book.active.iter_rows(min_row=2, max_row=1001, max_col=1, values_only=True)  # type: ignore[union-attr]
        return all(isinstance(row[0], int) for row in rows)
    finally:
        book.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--domains", type=int, default=20_000)
    parser.add_argument("--workbook-rows", type=int, default=0)
    parser.add_argument("--out", type=Path, default=HERE / "out-xlsx")
    args = parser.parse_args()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    generate = [sys.executable, str(HERE / "generate.py"), "--rows", str(args.rows)]
    generate += ["--domains", str(args.domains), "--out", str(out)]
    subprocess.run(generate, check=True, stdout=subprocess.DEVNULL)
    results = {
        "csv": clean(out, out / "list.csv", "list.clean.csv"),
        "xlsx": clean(out, out / "list.csv", "list.clean.xlsx"),
    }
    if args.workbook_rows:
        book = out / "book.xlsx"
        started = time.perf_counter()
        workbook(book, args.workbook_rows)
        made = time.perf_counter() - started
        results["workbook"] = clean(out, book, "book.clean.xlsx")
        results["workbook"].update(
            made_seconds=made, ids_are_numbers=ids_are_numbers(out / "book.clean.xlsx")
        )
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(table(results, args.rows))


def table(r: dict[str, dict[str, Any]], rows: int) -> str:
    lines = [
        "| output | seconds | rows/s | MB written | peak RSS MiB |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in ("csv", "xlsx"):
        m = r[name]
        secs = m["process_seconds"]
        lines.append(
            f"| {name} | {secs:.2f} | {rows / secs:,.0f} | {m['bytes'] / 1e6:.1f} "
            f"| {m['peak_rss_mib']:.0f} |"
        )
    ratio = r["xlsx"]["process_seconds"] / r["csv"]["process_seconds"]
    lines += ["", f"xlsx / csv: {ratio:.2f}x ({rows:,} rows, 4 input columns + 17 of ours)"]
    if "workbook" in r:
        m = r["workbook"]
        lines.append(
            f"workbook in, workbook out: {m['process_seconds']:.1f} s, peak RSS "
            f"{m['peak_rss_mib']:.0f} MiB; ids come back as numbers: {m['ids_are_numbers']}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
