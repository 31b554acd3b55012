"""Benchmark the Dask engine against the local engine on a generated list (10M rows by default).

    python bench/bench_dask.py [--rows N] [--domains N] [--out bench/out-dask]

Runs, in one go and each as a fresh process with an empty domain cache (so every run resolves
every domain against the loopback DNS server, which runs in its own process): the local engine,
then ``--engine dask`` on a LocalCluster of 1 and of 2 worker processes. Checks that the three
outputs are equal and that the three runs asked the DNS server the same number of distinct
questions (no domain resolved twice in the cluster; the server counts them), prints a Markdown
table for the README, writes ``results.json`` beside the list, and deletes the list and the
outputs. The driver's peak RSS is the ``listclean`` process's own; the largest worker's is the
biggest of the LocalCluster's worker processes (``measure.py``'s children).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
from bench_clean import run

HERE = Path(__file__).resolve().parent
ENGINES = {"local": [], "dask, 1 worker": ["1"], "dask, 2 workers": ["2"]}


def clean(
    out: Path, name: str, config: Path, workers: list[str], server: subprocess.Popen[str]
) -> dict[str, Any]:
    cache = out / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    stem = name.replace(",", "").replace(" ", "-")
    engine = ["--engine", "dask", "--dask-workers", *workers] if workers else []
    args = ["clean", str(out / "list.csv"), "-o", str(out / f"{stem}.parquet")]
    args += ["--config", str(config), "--cache-dir", str(cache), "--quiet", *engine]
    measured = run(out, stem, args)
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write("count\n")
    server.stdin.flush()
    measured["server"] = json.loads(server.stdout.readline())
    summary = json.loads((out / f"{stem}.summary.json").read_text())
    measured.update(
        rows=summary["rows_in"],
        distinct_domains=summary["distinct_domains"],
        dns_queries=summary["dns_queries"],
        output=str(out / f"{stem}.parquet"),
        workers=int(workers[0]) if workers else 1,
        stages={s["name"]: s["seconds"] for s in summary["stages"]},
    )
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--domains", type=int, default=50_000)
    parser.add_argument("--out", type=Path, default=HERE / "out-dask")
    args = parser.parse_args()
    out: Path = args.out
    generate = [sys.executable, str(HERE / "generate.py"), "--rows", str(args.rows)]
    subprocess.run([*generate, "--domains", str(args.domains), "--out", str(out)], check=True)
    server = subprocess.Popen(
        [sys.executable, str(HERE / "dns_serve.py"), str(out / "world.json")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        address = server.stdout.readline().strip()
        config = out / "bench.toml"
        config.write_text(f'[dns]\nnameservers = ["{address}"]\ntimeout = 2.0\nconcurrency = 200\n')
        results = {name: clean(out, name, config, w, server) for name, w in ENGINES.items()}
    finally:
        server.communicate(input="")
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(table(results))
    check(results)
    for path in [out / "list.csv", *out.glob("*.parquet"), out / "cache"]:
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def check(results: dict[str, dict[str, Any]]) -> None:
    """Same output for every engine, and the same number of distinct DNS questions (name and
    type, as the server counted them): no domain resolved twice. Queries are reported, not
    compared: a UDP answer lost under load is asked again, and how many are lost varies from
    run to run (two local runs differ too)."""
    local = results["local"]
    for name, measured in results.items():
        if measured["server"]["questions"] != local["server"]["questions"]:
            raise SystemExit(f"{name} asked other DNS questions than the local engine")
    expected = pl.read_parquet(local["output"])
    for name, measured in results.items():
        if not pl.read_parquet(measured["output"]).equals(expected):
            raise SystemExit(f"{name} wrote another output than the local engine")


def table(r: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| engine | seconds | rows/s | rows/s per worker | DNS queries | distinct questions "
        "| driver peak RSS MiB | largest worker peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in r.items():
        secs, rows = m["process_seconds"], m["rows"]
        child = m.get("child_peak_rss_mib", 0)
        worker = f"{child:.0f}" if child else "-"
        lines.append(
            f"| {name} | {secs:.1f} | {rows / secs:,.0f} | {rows / secs / m['workers']:,.0f} | "
            f"{m['dns_queries']:,} | {m['server']['questions']:,} | {m['peak_rss_mib']:.0f} "
            f"| {worker} |"
        )
    lines.append("")
    local = r["local"]
    lines.append(f"rows: {local['rows']:,}; distinct domains: {local['distinct_domains']:,}")
    for name, m in r.items():
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in m["stages"].items())
        lines.append(f"{name} stages: {stages}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
