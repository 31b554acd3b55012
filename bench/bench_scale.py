"""Lists of any size: time, peak memory and disk of `listclean clean` against a bare floor.

    python bench/bench_scale.py [--rows 10000000 50000000] [--runs 3] [--dir DIR] [--keep]

For each size, generates a list (bench/generate.py, about 92% distinct addresses), then runs in
turn, ``--runs`` times each, interleaved (floor, clean, floor, clean, ...):

- the floor: polars ``scan_csv`` -> two string expressions -> ``sink_parquet`` of the same file,
  the least any tool that reads, touches and writes every row can do here;
- ``listclean clean --offline`` (every stage but DNS; the domain checks answer "offline").

Each run is a fresh process; its wall time and its own peak RSS (``wait4``) are recorded, and the
clean run's disk use (its work folder and outputs, sampled every half second). Prints medians and
the clean/floor ratio taken pair by pair, as a Markdown table for the README. Generated files are
deleted unless ``--keep``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FLOOR = """
import sys, polars as pl
scan = pl.scan_csv(sys.argv[1], infer_schema=False)
scan.with_columns(
    pl.col("email").str.strip_chars().str.to_lowercase().alias("key"),
    pl.col("email").str.split("@").list.last().alias("domain"),
).sink_parquet(sys.argv[2])
"""


def measure(command: list[str], watch: Path | None = None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, peak bytes under *watch*) of one child process."""
    peak_disk = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            if watch is not None:
                peak_disk[0] = max(peak_disk[0], disk_use(watch))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{command[:4]} failed with {status}")
    return seconds, usage.ru_maxrss / 1024, peak_disk[0]


def disk_use(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):  # a file removed while we walked
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def one_size(rows: int, runs: int, where: Path, keep: bool) -> dict[str, object]:
    data = where / f"list-{rows}"
    generate = [sys.executable, str(HERE / "generate.py"), "--rows", str(rows)]
    subprocess.run(
        [*generate, "--out", str(data), "--distinct", "0.92"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    source = data / "list.csv"
    # The floor writes beside the clean run's folder, not in it: the disk peak is the run's own.
    floor_out = where / f"floor-{rows}"
    floor_out.mkdir()
    out = where / f"out-{rows}"
    floor_cmd = [sys.executable, "-c", FLOOR, str(source), str(floor_out / "floor.parquet")]
    clean_cmd = [sys.executable, "-m", "pipeline", "clean", str(source), "-o"]
    clean_cmd += [str(out / "clean.parquet"), "--offline", "--quiet"]
    clean_cmd += ["--cache-dir", str(out / "cache")]
    floors, cleans = [], []
    for _ in range(runs):
        floors.append(measure(floor_cmd))
        # Each clean run starts from an empty folder, as a first run does (no earlier output).
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        cleans.append(measure(clean_cmd, watch=out))
    ratios = [c[0] / f[0] for f, c in zip(floors, cleans, strict=True)]
    result = {
        "rows": rows,
        "csv_bytes": source.stat().st_size,
        "floor_s": statistics.median(f[0] for f in floors),
        "floor_rss": statistics.median(f[1] for f in floors),
        "clean_s": statistics.median(c[0] for c in cleans),
        "clean_rss": statistics.median(c[1] for c in cleans),
        "clean_rss_max": max(c[1] for c in cleans),
        "disk_peak": max(c[2] for c in cleans),
        "ratio": statistics.median(ratios),
        "ratio_range": (min(ratios), max(ratios)),
    }
    if not keep:
        for folder in (data, floor_out, out):
            shutil.rmtree(folder, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000_000, 50_000_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", type=Path, help="where to generate (default: a temp folder)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    where = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.dir))
    try:
        results = [one_size(rows, args.runs, where, args.keep) for rows in args.rows]
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    print(
        "| rows | CSV GiB | floor s | floor peak MiB | clean s | clean peak MiB "
        "| disk peak GiB | clean / floor (median, range) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        low, high = r["ratio_range"]  # type: ignore[misc]
        print(
            f"| {r['rows']:,} | {r['csv_bytes'] / 2**30:.2f} | {r['floor_s']:.1f} | "
            f"{r['floor_rss']:.0f} | {r['clean_s']:.1f} | {r['clean_rss']:.0f} "
            f"(max {r['clean_rss_max']:.0f}) | {r['disk_peak'] / 2**30:.2f} | "
            f"{r['ratio']:.2f}x ({low:.2f}-{high:.2f}) |"
        )


if __name__ == "__main__":
    main()
