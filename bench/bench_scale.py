"""Lists of any size: time, peak memory and disk of `listclean clean` against a bare floor.

    python bench/bench_scale.py [--rows 10000000 50000000] [--runs 3] [--warm] [--dir DIR]
                                [--json FILE] [--keep]

For each size, generates a list (bench/generate.py, about 92% distinct addresses over 50,000
company domains and six big providers), then runs in turn, ``--runs`` times each, interleaved
(floor, clean, floor, clean, ...):

- the floor: polars ``scan_csv`` -> two string expressions -> ``sink_parquet`` of the same file,
  the least any tool that reads, touches and writes every row can do here;
- ``listclean clean --offline`` (every stage but DNS; the domain checks answer "offline");
- with ``--warm``, also ``listclean clean`` warm: the list's DNS world is served on loopback in
  its own process, one cold run fills a domain cache (timed and reported apart), and each warm
  run answers every domain from it (0 DNS queries), as a rerun of a list does.

Each run is a fresh process; its wall time and its own peak RSS (``wait4``) are recorded, and
each clean run's disk use (its work folder and outputs, sampled every half second; each clean
run starts from an empty folder, the floor writes elsewhere). Prints medians, the clean/floor
ratio taken pair by pair and the last run's stage times, as Markdown for bench/RESULTS.md, and
progress lines on standard error. Generated files are deleted unless ``--keep``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_clean import ROOT, compiled, served_world

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


def one_size(rows: int, runs: int, where: Path, warm: bool, keep: bool) -> dict[str, Any]:
    data = where / f"list-{rows}"
    generate = [sys.executable, str(HERE / "generate.py"), "--rows", str(rows)]
    started = time.perf_counter()
    subprocess.run(
        [*generate, "--out", str(data), "--distinct", "0.92"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    note(f"{rows:,} rows generated in {time.perf_counter() - started:.0f} s")
    source = data / "list.csv"
    # The floor writes beside the clean run's folder, not in it: the disk peak is the run's own.
    floor_out = where / f"floor-{rows}"
    floor_out.mkdir(exist_ok=True)
    out = where / f"out-{rows}"
    floor_cmd = [sys.executable, "-c", FLOOR, str(source), str(floor_out / "floor.parquet")]
    clean_cmd = [sys.executable, "-m", "pipeline", "clean", str(source), "-o"]
    clean_cmd += [str(out / "clean.parquet"), "--quiet"]
    modes = {"offline": [*clean_cmd, "--offline", "--cache-dir", str(out / "cache")]}
    with contextlib.ExitStack() as stack:
        cold = None
        if warm:
            # Warm: the domain cache (kept outside the run's folder) filled by one cold run
            # against the loopback DNS world, then every domain answered from it.
            cache = where / f"cache-{rows}"
            _, config = stack.enter_context(served_world(data / "world.json", where))
            dns = [*clean_cmd, "--config", str(config), "--cache-dir", str(cache)]
            cold = clean_run(dns, out, "cold")
            modes["warm"] = dns
        runs_of: dict[str, list[dict[str, Any]]] = {m: [] for m in ["floor", *modes]}
        for turn in range(runs):
            seconds, rss, _ = measure(floor_cmd)
            runs_of["floor"].append({"seconds": seconds, "rss_mib": rss})
            note(f"run {turn + 1}: floor {seconds:.1f} s, {rss:.0f} MiB")
            for mode, command in modes.items():
                runs_of[mode].append(clean_run(command, out, mode))
    result: dict[str, Any] = {
        "rows": rows,
        "csv_bytes": source.stat().st_size,
        "runs": runs_of,
        "cold": cold,
    }
    floors = [f["seconds"] for f in runs_of["floor"]]
    for mode in modes:
        cleans = runs_of[mode]
        ratios = [c["seconds"] / f for f, c in zip(floors, cleans, strict=True)]
        result[mode] = {
            "seconds": statistics.median(c["seconds"] for c in cleans),
            "rss_mib": statistics.median(c["rss_mib"] for c in cleans),
            "rss_mib_max": max(c["rss_mib"] for c in cleans),
            "disk_peak": max(c["disk_peak"] for c in cleans),
            "ratio": statistics.median(ratios),
            "ratio_range": (min(ratios), max(ratios)),
            "stages": cleans[-1]["stages"],
        }
    result["floor"] = {
        "seconds": statistics.median(floors),
        "rss_mib": statistics.median(f["rss_mib"] for f in runs_of["floor"]),
    }
    if not keep:
        for folder in (data, floor_out, out):
            shutil.rmtree(folder, ignore_errors=True)
    return result


def clean_run(command: list[str], out: Path, mode: str) -> dict[str, Any]:
    """One clean run from an empty folder, as a first run starts (no earlier output)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir()
    seconds, rss, disk = measure(command, watch=out)
    summary = json.loads((out / "clean.summary.json").read_text())
    stages = {s["name"]: s["seconds"] for s in summary["stages"]}
    note(f"{mode}: {seconds:.1f} s, {rss:.0f} MiB, disk {disk / 2**30:.2f} GiB, {stages}")
    return {
        "seconds": seconds,
        "rss_mib": rss,
        "disk_peak": disk,
        "stages": stages,
        "dns_queries": summary["dns_queries"],
        "distinct_share": summary["distinct_addresses"] / summary["rows_in"],
    }


def note(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[10_000_000, 50_000_000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--warm", action="store_true", help="also time warm runs (see above)")
    parser.add_argument("--dir", type=Path, help="where to generate (default: a temp folder)")
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    compiled(ROOT)
    where = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.dir))
    try:
        results = [one_size(rows, args.runs, where, args.warm, args.keep) for rows in args.rows]
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print(table(results))


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| rows | distinct addresses | CSV GiB | run | floor s | floor peak MiB | clean s "
        "| clean peak MiB | disk peak GiB | clean / floor (median, range) |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        floor = r["floor"]
        for mode in ("offline", "warm"):
            if mode not in r:
                continue
            m = r[mode]
            low, high = m["ratio_range"]
            lines.append(
                f"| {r['rows']:,} | {r['runs'][mode][0]['distinct_share']:.1%} | "
                f"{r['csv_bytes'] / 2**30:.2f} | {mode} | "
                f"{floor['seconds']:.1f} | {floor['rss_mib']:.0f} | {m['seconds']:.1f} | "
                f"{m['rss_mib']:.0f} (max {m['rss_mib_max']:.0f}) | "
                f"{m['disk_peak'] / 2**30:.2f} | {m['ratio']:.2f}x ({low:.2f}-{high:.2f}) |"
            )
    lines.append("")
    for r in results:
        for mode in ("cold", "offline", "warm"):
            if r.get(mode):
                text = ", ".join(f"{k} {v:.1f} s" for k, v in r[mode]["stages"].items())
                lines.append(f"- {r['rows']:,} rows, {mode} stages (last run): {text}")
        if r.get("cold"):
            c = r["cold"]
            lines.append(
                f"- {r['rows']:,} rows, cold run filling the cache: {c['seconds']:.1f} s, "
                f"{c['rss_mib']:.0f} MiB, {c['dns_queries']:,} DNS queries"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
