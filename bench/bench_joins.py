"""What the Dask engine's single-file pass costs: one list cleaned by two workers into a folder
(``-o out/``: no join) and into one file of each format, the pass that makes the file timed
on the worker that runs it.

    python bench/bench_joins.py [--rows 1000000] [--out bench/out-joins] [--formats ...]

Generates the list with ``bench/generate.py``, starts a LocalCluster of two worker processes
(one thread each), warms it with one untimed run, and runs ``listclean clean --offline`` in
this process for each output: with the local engine, then with ``--engine dask --scheduler
...`` and Dask's task stream on. Reports, per output: both runs' wall times; the compute time
of the task that makes the one file (``write_joined_parquet``, ``write_joined_csv``,
``write_workbook``: the longest such task, the rejects file's being far smaller); the part
writes' total compute time; the file's size; and, as the floor for a pass that only copies
bytes, ``shutil.copyfile`` of the same file. Prints a Markdown table for bench/RESULTS.md,
writes ``joins.json`` beside the list, and deletes the list and the outputs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from distributed import Client, LocalCluster, get_task_stream

from pipeline.cli import main as listclean

HERE = Path(__file__).resolve().parent
OUTPUTS = {"dataset": "out/", "parquet": "out.parquet", "csv": "out.csv", "xlsx": "out.xlsx"}
JOINS = ("write_joined_parquet", "write_joined_csv", "write_workbook")


def computed(stream: list[dict[str, Any]], names: tuple[str, ...]) -> list[float]:
    """Seconds each task of one of *names* computed."""
    return [
        sum(s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute")
        for task in stream
        if str(task["key"]).split("-")[0] in names
    ]


def run(out: Path, target: str, *engine: str) -> float:
    """Seconds to clean the list into *target* (under *out*)."""
    args = ["clean", f"file://{out / 'list.csv'}", "-o", f"file://{out}/{target}", "--offline"]
    args += ["--cache-dir", str(out / "cache"), "--quiet", *engine]
    started = time.perf_counter()
    assert listclean(args) == 0
    return time.perf_counter() - started


def clean(out: Path, fmt: str, client: Client) -> dict[str, Any]:
    target = OUTPUTS[fmt]
    local = run(out, f"local-{target}")
    with get_task_stream(client) as stream:
        wall = run(out, target, "--engine", "dask", "--scheduler", client.scheduler.address)
    joins = computed(stream.data, JOINS)  # the output's, and the rejects file's (far smaller)
    parts = computed(stream.data, ("write_part",))
    path = out / target.rstrip("/")
    size = sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size
    floor = 0.0
    if path.is_file():
        started = time.perf_counter()
        shutil.copyfile(path, out / "copy")
        floor = time.perf_counter() - started
        (out / "copy").unlink()
    return {
        "local": round(local, 1),
        "wall": round(wall, 1),
        "join": round(max(joins, default=0.0), 2),
        "parts": len(parts),
        "part_writes": round(sum(parts), 1),
        "bytes": size,
        "copy": round(floor, 3),
    }


def table(rows: int, results: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"| output ({rows:,} rows) | local run (s) | dask run (s) | one-file pass (s) "
        "| part writes, all (s) | parts | size (MiB) | copyfile (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for fmt, r in results.items():
        lines.append(
            f"| `-o {OUTPUTS[fmt]}` | {r['local']} | {r['wall']} | {r['join'] or '-'} "
            f"| {r['part_writes']} "
            f"| {r['parts']} | {r['bytes'] / 2**20:,.0f} | {r['copy'] or '-'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=HERE / "out-joins")
    parser.add_argument("--formats", nargs="+", default=list(OUTPUTS), choices=list(OUTPUTS))
    args = parser.parse_args()
    out: Path = args.out
    generate = [sys.executable, str(HERE / "generate.py"), "--rows", str(args.rows)]
    subprocess.run([*generate, "--out", str(out)], check=True)
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        run(out, "warm-up/", "--engine", "dask", "--scheduler", client.scheduler.address)
        results = {fmt: clean(out, fmt, client) for fmt in args.formats}
    (out / "joins.json").write_text(json.dumps(results, indent=2))
    print(table(args.rows, results))
    leftovers = [*out.glob("out*"), *out.glob("local-*"), *out.glob("warm-up*")]
    for path in [out / "list.csv", out / "cache", *leftovers]:
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
