"""Benchmark the Dask engine against the local engine on a generated list (10M rows by default).

    python bench/bench_dask.py [--rows N] [--domains N] [--out bench/out-dask]

Runs, in one go and each as a fresh process with an empty domain cache (so every run resolves
every domain against the loopback DNS server, which runs in its own process): the local engine,
then ``--engine dask`` on a LocalCluster of 1 and of 2 worker processes. The DNS server counts
the questions each run asked it and how often. Checks that the three outputs are equal and that
the three runs asked the same MX questions (every distinct domain's), reports the questions that
came more than once (sent again after a late answer, or asked twice), prints a Markdown table
for bench/RESULTS.md, writes ``results.json`` (every question with its count included) beside the
list, and deletes the list and the outputs.
The driver's peak RSS is the ``listclean`` process's own; the largest worker's is the
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
from bench_clean import run, served_world

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
    server.stdin.write(f"count {out / f'{stem}.questions.txt'}\n")
    server.stdin.flush()
    measured["server"] = json.loads(server.stdout.readline())
    asked = questions(out / f"{stem}.questions.txt")
    (out / f"{stem}.questions.txt").unlink()
    summary = json.loads((out / f"{stem}.summary.json").read_text())
    measured.update(
        rows=summary["rows_in"],
        distinct_domains=summary["distinct_domains"],
        dns_queries=summary["dns_queries"],
        output=str(out / f"{stem}.parquet"),
        asked=asked,
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
    with served_world(out / "world.json", out) as (server, config):
        results = {name: clean(out, name, config, w, server) for name, w in ENGINES.items()}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(table(results))
    check(results)
    for path in [out / "list.csv", *out.glob("*.parquet"), out / "cache"]:
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def check(results: dict[str, dict[str, Any]]) -> None:
    """Same output for every engine, and the same MX questions (every distinct domain of the
    list asked). Raises when not; how often each came is in the table.

    The mail hosts' address questions (A, AAAA) are counted, not compared: when a query is lost
    under load and times out, the exchange check asks the host's other address type or the next
    host, so which of them are asked depends on which queries were lost. The run's own count of
    queries is reported, not compared either: it counts every question asked of its resolver,
    those c-ares answered from its cache and those sent again after a loss included."""
    local = results["local"]
    mx = {n: {q for q in m["asked"] if q.endswith(" MX")} for n, m in results.items()}
    for name in results:
        if mx[name] != mx["local"]:
            only_local = sorted(mx["local"] - mx[name])
            only_here = sorted(mx[name] - mx["local"])
            raise SystemExit(
                f"{name} asked other MX questions than the local engine: "
                f"{len(only_local)} only by local ({', '.join(only_local[:20])}), "
                f"{len(only_here)} only by {name} ({', '.join(only_here[:20])})"
            )
    expected = pl.read_parquet(local["output"])
    for name, measured in results.items():
        if not pl.read_parquet(measured["output"]).equals(expected):
            raise SystemExit(f"{name} wrote another output than the local engine")


def questions(path: Path) -> dict[str, int]:
    """A dns_serve.py dump ("NAME TYPE TIMES" lines): how often each "NAME TYPE" was asked."""
    pairs = (line.rsplit(" ", 1) for line in path.read_text().splitlines())
    return {question: int(times) for question, times in pairs}


def table(r: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| engine | seconds | rows/s | rows/s per worker | DNS queries (run's count) "
        "| distinct questions received (MX / host A, AAAA) | questions received more than once "
        "| driver peak RSS MiB | largest worker peak RSS MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in r.items():
        secs, rows = m["process_seconds"], m["rows"]
        child = m.get("child_peak_rss_mib", 0)
        worker = f"{child:.0f}" if child else "-"
        asked: dict[str, int] = m["asked"]
        mx = sum(1 for q in asked if q.endswith(" MX"))
        hosts = len(asked) - mx
        again = sum(1 for t in asked.values() if t > 1)
        lines.append(
            f"| {name} | {secs:.1f} | {rows / secs:,.0f} | {rows / secs / m['workers']:,.0f} | "
            f"{m['dns_queries']:,} | {m['server']['questions']:,} ({mx:,} / {hosts:,}) | "
            f"{again:,} | {m['peak_rss_mib']:.0f} "
            f"| {worker} |"
        )
    lines.append("")
    local = r["local"]
    lines.append(f"rows: {local['rows']:,}; distinct domains: {local['distinct_domains']:,}")
    for name, m in r.items():
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in m["stages"].items())
        lines.append(f"{name} stages: {stages}")
    for name, m in r.items():
        again = [f"{q} x{t}" for q, t in m["asked"].items() if t > 1 and q.endswith(" MX")]
        shown = ", ".join(again[:10]) + (f" and {len(again) - 10} more" if len(again) > 10 else "")
        lines.append(f"{name}: MX questions received more than once: {shown or 'none'}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
