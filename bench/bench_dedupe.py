"""Benchmark the out-of-core duplicate marker against the in-memory polars rule, same run.

    python bench/bench_dedupe.py [--rows 10000000 50000000] [--distinct 0.92] [--out DIR]
    python bench/bench_dedupe.py --read-rows 10000000      # also: batched CSV read and write

For each list size the keys (lower-cased, trimmed addresses of bench/generate.py's list; ""
for the messy rows without one) are first written to an Arrow IPC file, one record batch per
``--batch`` rows. Then three fresh processes read that file batch by batch:

* ``floor``: only reads the batches (the cost every streaming run pays anyway);
* ``marker``: ``DuplicateMarker.add`` per batch, ``finish``, then ``flags`` per batch;
* ``memory``: concatenates the keys (as the whole-list engine holds them) and applies
  ``(KEY != "") & ~KEY.is_first_distinct()``.

Each process's peak RSS is its own ``os.wait4`` rusage, taken by a lean launcher (see measure).
Both markers report how many duplicates they found and the sum of their row numbers; the run
stops if they differ. ``--read-rows`` adds the same kind of measurement for reading a generated
CSV list in bounded batches (polars and pyarrow) and writing Parquet row group by row group.
Results are printed as Markdown and written to ``dedupe_results.json`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate import chunks, company_domains  # noqa: E402

from pipeline.stages.state.dedupe import DuplicateMarker  # noqa: E402

MIB = 1024 * 1024


def write_keys(path: Path, rows: int, distinct: float, batch: int, seed: int) -> None:
    """The list's keys, one record batch per *batch* rows, written chunk by chunk."""
    domains = company_domains(50_000, random.Random(seed))
    schema = pa.schema([("KEY", pa.large_string())])
    with ipc.new_file(str(path), schema) as writer:
        for frame in chunks(rows, domains, distinct, seed, chunk=batch):
            email = frame.get_column("email").str.strip_chars().str.to_lowercase()
            key = pl.when(email.str.contains("@@", literal=True)).then(pl.lit("")).otherwise(email)
            writer.write_table(pl.select(KEY=key).to_arrow().cast(schema))


def key_batches(path: Path) -> Iterator[pl.Series]:
    """The keys back, a batch at a time, read into the heap (no memory map: pages stay out)."""
    with pa.OSFile(str(path)) as source:
        reader = ipc.open_file(source)
        for index in range(reader.num_record_batches):
            table = pa.Table.from_batches([reader.get_batch(index)])
            yield pl.DataFrame(table).get_column("KEY")


def child_floor(keys: Path, work: Path) -> dict[str, Any]:
    rows = sum(len(batch) for batch in key_batches(keys))
    return {"rows": rows}


def child_marker(keys: Path, work: Path) -> dict[str, Any]:
    timings = {"add": 0.0, "finish": 0.0, "flags": 0.0}
    sizes: list[int] = []
    with DuplicateMarker(work) as marker:
        for batch in key_batches(keys):
            started = time.perf_counter()
            marker.add(batch)
            timings["add"] += time.perf_counter() - started
            sizes.append(len(batch))
        started = time.perf_counter()
        stats = marker.finish()
        timings["finish"] = time.perf_counter() - started
        started = time.perf_counter()
        offset, row_sum = 0, 0
        for size in sizes:
            flags = marker.flags(offset, size)
            row_sum += int(flags.arg_true().cast(pl.UInt64).sum()) + offset * int(flags.sum())
            offset += size
        timings["flags"] = time.perf_counter() - started
    return {"rows": stats.rows, "duplicates": stats.duplicates, "row_sum": row_sum, **timings}


def child_memory(keys: Path, work: Path) -> dict[str, Any]:
    column = pl.concat(list(key_batches(keys)), rechunk=True)
    started = time.perf_counter()
    duplicates = (column != "") & ~column.is_first_distinct()
    seconds = time.perf_counter() - started
    row_sum = int(duplicates.arg_true().cast(pl.UInt64).sum())
    return {"rows": len(column), "duplicates": int(duplicates.sum()), "row_sum": row_sum,
            "rule": seconds}  # fmt: skip


def child_read_polars(csv: Path, work: Path) -> dict[str, Any]:
    lazy = pl.scan_csv(csv, infer_schema=False)
    sizes = [frame.height for frame in lazy.collect_batches(chunk_size=1_000_000)]
    return {"rows": sum(sizes), "batches": len(sizes), "largest": max(sizes)}


def child_read_polars_whole(csv: Path, work: Path) -> dict[str, Any]:
    return {"rows": pl.read_csv(csv, infer_schema=False).height}


def child_read_pyarrow(csv: Path, work: Path) -> dict[str, Any]:
    header = csv.open(encoding="utf-8").readline().rstrip("\n").split(",")
    options = pacsv.ConvertOptions(column_types=dict.fromkeys(header, pa.string()))
    reader = pacsv.open_csv(
        csv, read_options=pacsv.ReadOptions(block_size=64 * MIB), convert_options=options
    )
    sizes = [pl.DataFrame(pa.Table.from_batches([batch])).height for batch in reader]
    return {"rows": sum(sizes), "batches": len(sizes), "largest": max(sizes)}


def child_write_parquet(csv: Path, work: Path) -> dict[str, Any]:
    """Batches from polars' batched reader, written one row group each by ParquetWriter."""
    out = work / "write.parquet"
    writer: pq.ParquetWriter | None = None
    for frame in pl.scan_csv(csv, infer_schema=False).collect_batches(chunk_size=1_000_000):
        table = frame.to_arrow()
        writer = writer or pq.ParquetWriter(out, table.schema, compression="zstd")
        writer.write_table(table)
    assert writer is not None
    writer.close()
    meta = pq.ParquetFile(out).metadata
    size = out.stat().st_size
    out.unlink()
    return {"rows": meta.num_rows, "row_groups": meta.num_row_groups, "mib": size / MIB}


CHILDREN = {
    "floor": child_floor,
    "marker": child_marker,
    "memory": child_memory,
    "read_polars_batched": child_read_polars,
    "read_polars_whole": child_read_polars_whole,
    "read_pyarrow_batched": child_read_pyarrow,
    "write_parquet": child_write_parquet,
}


# A child forked from this (big) process would inherit its peak RSS: Linux keeps the high-water
# mark across fork and exec. So a lean interpreter (no polars) starts each child and reports the
# child's own rusage from os.wait4 on the line after the child's output.
_LAUNCHER = (
    "import json, os, subprocess, sys\n"
    "child = subprocess.Popen(sys.argv[1:])\n"
    "_, status, usage = os.wait4(child.pid, 0)\n"
    "cpu = usage.ru_utime + usage.ru_stime\n"
    "print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss, cpu]), flush=True)\n"
)


def measure(mode: str, source: Path, work: Path) -> dict[str, Any]:
    """Run one child; its result with wall seconds and its own peak RSS."""
    child = [sys.executable, __file__, "--child", mode, str(source), str(work)]
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _LAUNCHER, *child], stdout=subprocess.PIPE, text=True, check=True
    )
    seconds = time.perf_counter() - started
    *output, last = done.stdout.strip().splitlines()
    code, peak_kib, cpu = json.loads(last)
    if code != 0:
        raise SystemExit(f"{mode} failed with exit code {code}")
    result: dict[str, Any] = json.loads(output[-1])
    return {**result, "seconds": seconds, "cpu_seconds": cpu, "peak_rss_mib": peak_kib / 1024}


def bench_keys(args: argparse.Namespace, rows: int) -> dict[str, Any]:
    keys = args.out / f"keys-{rows}.arrow"
    if not keys.exists():
        write_keys(keys, rows, args.distinct, args.batch, args.seed)
    work = args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    results = {mode: measure(mode, keys, work) for mode in ("floor", "marker", "memory")}
    marker, memory = results["marker"], results["memory"]
    if (marker["duplicates"], marker["row_sum"]) != (memory["duplicates"], memory["row_sum"]):
        raise SystemExit(f"the marker and the in-memory rule disagree at {rows:,} rows")
    if any(work.iterdir()):
        raise SystemExit(f"the marker left files in {work}")
    return results


def bench_read(args: argparse.Namespace) -> dict[str, Any]:
    folder = args.out / f"list-{args.read_rows}"
    if not (folder / "list.csv").exists():
        subprocess.run(
            [sys.executable, str(HERE / "generate.py"), "--rows", str(args.read_rows),
             "--distinct", str(args.distinct), "--out", str(folder)],
            check=True,
        )  # fmt: skip
    csv = folder / "list.csv"
    modes = ("read_polars_batched", "read_pyarrow_batched", "read_polars_whole", "write_parquet")
    results = {mode: measure(mode, csv, args.out) for mode in modes}
    results["csv_mib"] = csv.stat().st_size / MIB
    return results


def table(keys: dict[int, dict[str, Any]], read: dict[str, Any] | None) -> str:
    lines = [
        "| rows | run | seconds | CPU s | peak RSS MiB | duplicates | detail |",
        "|---:|---|---:|---:|---:|---:|---|",
    ]
    for rows, runs in keys.items():
        for mode, r in runs.items():
            detail = (
                f"add {r['add']:.1f}s, finish {r['finish']:.1f}s, flags {r['flags']:.2f}s"
                if mode == "marker"
                else f"rule {r['rule']:.1f}s"
                if mode == "memory"
                else "read the key batches only"
            )
            dups = f"{r['duplicates']:,}" if "duplicates" in r else "-"
            lines.append(
                f"| {rows:,} | {mode} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} "
                f"| {r['peak_rss_mib']:.0f} "
                f"| {dups} | {detail} |"
            )
    if read:
        lines += ["", "| CSV read/write | seconds | CPU s | rows/s | MiB/s | peak RSS MiB |"]
        lines.append("|---|---:|---:|---:|---:|---:|")
        for mode, r in read.items():
            if isinstance(r, dict):
                rows = r.get("rows", 0)
                lines.append(
                    f"| {mode} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} "
                    f"| {rows / r['seconds']:,.0f} "
                    f"| {read['csv_mib'] / r['seconds']:.0f} | {r['peak_rss_mib']:.0f} |"
                )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        mode, source, work = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
        print(json.dumps(CHILDREN[mode](source, work)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000_000, 50_000_000])
    parser.add_argument("--distinct", type=float, default=0.92)
    parser.add_argument("--batch", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--read-rows", type=int, default=0, help="also bench CSV reading")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    keys = {rows: bench_keys(args, rows) for rows in args.rows}
    read = bench_read(args) if args.read_rows else None
    results = {"keys": {str(k): v for k, v in keys.items()}, "read": read}
    (args.out / "dedupe_results.json").write_text(json.dumps(results, indent=2))
    print(table(keys, read))


if __name__ == "__main__":
    main()
