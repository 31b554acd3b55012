"""Benchmark the Dask engine against the local engine on a generated list (10M rows by default).

    python bench/bench_dask.py [--rows N] [--domains N] [--out bench/out-dask]
        [--processes] [--kill-after SECONDS]

Runs, in one go and each as a fresh process with an empty domain cache (so every run resolves
every domain against the loopback DNS server, which runs in its own process): the local engine,
then ``--engine dask`` on a LocalCluster of 1 and of 2 worker processes. The DNS server counts
the questions each run asked it and how often. Checks that the three outputs are equal and that
the three runs asked the same MX questions (every distinct domain's), reports the questions that
were asked more than once (under another query id) and those whose packet was only sent again
while the resolver waited (the same id), prints a Markdown table
for bench/RESULTS.md, writes ``results.json`` (every question with its count included) beside the
list, and deletes the list and the outputs.
The driver's peak RSS is the ``listclean`` process's own; the largest worker's is the
biggest of the LocalCluster's worker processes (``measure.py``'s children).

``--processes-only`` leaves out the LocalCluster runs (for the larger lists); ``--trace``
runs the process cluster's driver under strace and reports the bytes it read of the input, its
network bytes and what it wrote to the output's files.
``--processes`` adds a run on a cluster started as a team would start one: ``dask scheduler``
and two ``dask worker --nthreads 1 --memory-limit 2GiB`` processes (nannies on), joined with
``--scheduler`` and ``file://`` paths; its workers' peak RSS and whether any was restarted are
asked of the workers themselves. ``--kill-after S`` adds one more such run in which one worker
process is SIGKILLed S seconds after the run starts (its nanny starts a new one).

``--warm`` runs the local engine and the process cluster a second time each, right after their
first run, with the caches that run left (named "..., warm"); their outputs are compared with
the local engine's first too, and their MX questions are not (a warm run asks none).

``--smtp-budget N`` adds the driver's memory with address checks: on the same list and a
LocalCluster of 2 workers, ``--verify none`` and then ``--verify smtp --budget N`` (each with
empty caches), against one loopback mail server (in its own process) that serves every domain
of the world and knows no mailbox; the driver's peak RSS of the second run is compared with the
first's (the target: within 10%). ``--smtp-only`` runs only those two.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
from bench_clean import run, served_world
from bench_smtp import ServerProcess

HERE = Path(__file__).resolve().parent
SHELF = ".listclean-cache"  # where a Dask run keeps its caches, beside its output
ENGINES = {"local": [], "dask, 1 worker": ["1"], "dask, 2 workers": ["2"]}
BASELINE = "dask, 2 processes, the list's first 20,000 rows"
_MIB = 2**20


_IO = "read,pread64,readv,preadv,recvfrom,recvmsg,write,pwrite64,writev,pwritev,sendto,sendmsg"
# strace -y: `1234 read(7</path/to/file>, ..., 65536) = 65536`, sockets as `socket:[inode]`
_CALL = re.compile(r"^\d+\s+(\w+)\(\d+<([^>]*)>.*\)\s+=\s+(\d+)")


def traced_bytes(trace: Path, source: Path, output: Path) -> dict[str, int]:
    """From an strace log of the driver: the bytes it read of the input file, read and
    written on sockets (the network, the cluster's comms among them), and written to the
    output's rows (its file, its temporary names, its parts; not the summary or the report)."""
    counts = {"input_read": 0, "socket_read": 0, "socket_written": 0, "output_written": 0}
    with trace.open() as lines:
        for line in lines:
            found = _CALL.match(line)
            if found is None:
                continue
            call, place, size = found.group(1), found.group(2), int(found.group(3))
            reading = call.startswith(("read", "pread", "recv"))
            if place.startswith("socket:") or place.startswith("TCP"):
                counts["socket_read" if reading else "socket_written"] += size
            elif reading and place == str(source):
                counts["input_read"] += size
            elif not reading and output.name in place:  # the rows' file, or its temporary
                counts["output_written"] += size
    return counts


def baseline(out: Path, rows: int = 20_000) -> str:
    """The list's first *rows* rows as a list of their own (what the driver reads of a small
    list is the baseline its reads of the whole list are measured against)."""
    with (out / "list.csv").open("rb") as whole, (out / "small.csv").open("wb") as small:
        for _ in range(rows + 1):
            small.write(whole.readline())
    return "small.csv"


def clean(
    out: Path,
    name: str,
    config: Path,
    workers: list[str],
    server: subprocess.Popen[str],
    scheduler: str = "",
    source: str = "list.csv",
    traced: bool = False,
    extra: tuple[str, ...] = (),
    warm: bool = False,
) -> dict[str, Any]:
    cache = out / "cache"
    if not warm:  # the caches the run before left, kept for a warm run
        shutil.rmtree(cache, ignore_errors=True)
        shutil.rmtree(out / SHELF, ignore_errors=True)  # a Dask run's caches, beside its output
    stem = _stem(name)
    engine = ["--engine", "dask", "--dask-workers", *workers] if workers else []
    places = [str(out / source), str(out / f"{stem}.parquet")]
    if scheduler:
        engine = ["--engine", "dask", "--scheduler", scheduler]
        places = [f"file://{p}" for p in places]
    args = ["clean", places[0], "-o", places[1]]
    args += ["--config", str(config), "--cache-dir", str(cache), "--quiet", *engine, *extra]
    trace = out / f"{stem}.strace"
    wrapper = ("strace", "-f", "-qq", "-s", "0", "-y", "-e", f"trace={_IO}", "-o", str(trace))
    measured = run(out, stem, args, wrapper if traced else ())
    if traced:
        measured["traced"] = traced_bytes(trace, out / source, out / f"{stem}.parquet")
        trace.unlink()
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(f"count {out / f'{stem}.questions.txt'}\n")
    server.stdin.flush()
    measured["server"] = json.loads(server.stdout.readline())
    asked, ids = questions(out / f"{stem}.questions.txt")
    (out / f"{stem}.questions.txt").unlink()
    summary = json.loads((out / f"{stem}.summary.json").read_text())
    measured.update(
        rows=summary["rows_in"],
        distinct_domains=summary["distinct_domains"],
        dns_queries=summary["dns_queries"],
        output=str(out / f"{stem}.parquet"),
        asked=asked,
        ids=ids,
        workers=int(workers[0]) if workers else 2 if scheduler else 1,
        stages={s["name"]: s["seconds"] for s in summary["stages"]},
    )
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--domains", type=int, default=50_000)
    parser.add_argument("--out", type=Path, default=HERE / "out-dask")
    parser.add_argument("--processes", action="store_true", help="also a real 2-worker cluster")
    parser.add_argument("--kill-after", type=float, default=0.0, help="kill a worker after S s")
    parser.add_argument(
        "--cluster-only",
        action="store_true",
        help="only the process cluster's run (no local run: memory and restarts, no comparison)",
    )
    parser.add_argument(
        "--processes-only",
        action="store_true",
        help="with --processes: skip the LocalCluster runs (the local engine still runs)",
    )
    parser.add_argument(
        "--trace",
        action="store_true",
        help="run the process cluster's driver under strace: its input reads, network bytes",
    )
    parser.add_argument(
        "--smtp-budget", type=int, default=0, help="the driver's memory with --verify smtp"
    )
    parser.add_argument("--smtp-only", action="store_true", help="only the --smtp-budget runs")
    parser.add_argument(
        "--warm", action="store_true", help="each engine run again with its first run's caches"
    )
    args = parser.parse_args()
    out: Path = args.out
    generate = [sys.executable, str(HERE / "generate.py"), "--rows", str(args.rows)]
    subprocess.run([*generate, "--domains", str(args.domains), "--out", str(out)], check=True)
    if args.smtp_budget:
        driver_memory(out, args.smtp_budget)
    if args.smtp_only:
        remove_outputs(out)
        return
    with served_world(out / "world.json", out) as (server, config):
        engines = {"local": []} if args.processes_only else ENGINES
        if args.cluster_only:
            engines = {}
        results = {}
        for name, w in engines.items():
            results[name] = clean(out, name, config, w, server)
            if args.warm:
                results[f"{name}, warm"] = clean(out, f"{name}, warm", config, w, server, warm=True)
        if args.processes or args.kill_after or args.cluster_only:
            runs = {"dask, 2 processes of 2 GiB": 0.0}
            if args.kill_after:
                runs[f"dask, 2 processes, one killed at {args.kill_after:g}s"] = args.kill_after
            for name, kill in runs.items():
                with process_cluster(out, 2, "2GiB") as address:
                    traced = args.trace and not kill
                    results[name] = on_processes(
                        out, name, config, server, address, kill, traced=traced
                    )
                    if args.warm and not kill:
                        results[f"{name}, warm"] = on_processes(
                            out, f"{name}, warm", config, server, address, 0.0, warm=True
                        )
            with process_cluster(out, 2, "2GiB") as address:
                small = baseline(out)
                results[BASELINE] = on_processes(
                    out, BASELINE, config, server, address, 0.0, small, args.trace
                )
    first = next(iter(results.values()))
    first["input_mib"] = (out / "list.csv").stat().st_size / _MIB
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(table(results))
    check(results)
    remove_outputs(out)


def remove_outputs(out: Path) -> None:
    """The list, the outputs and the caches gone; the results stay."""
    for path in [out / "list.csv", out / "small.csv", *out.glob("*.parquet"), out / "cache"]:
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)
    shutil.rmtree(out / SHELF, ignore_errors=True)


def mail_world(out: Path) -> Path:
    """The list's world with one loopback mail server (127.0.0.2) for every MX host, serving
    every domain, with no mailbox: each address asked is answered "no such user"."""
    world = json.loads((out / "world.json").read_text())
    zones: dict[str, Any] = world["zones"]
    for zone in zones.values():
        if zone.get("a") == ["203.0.114.25"]:  # an MX host (bench/generate.py)
            zone["a"] = ["127.0.0.2"]
    served = [d for d, z in zones.items() if z.get("mx") and z["mx"][0][1] != "."]
    domains = {d: {"mailboxes": []} for d in served}
    world["smtp"] = {"127.0.0.2": {"name": "mx.bench.example", "domains": domains}}
    path = out / "mail_world.json"
    path.write_text(json.dumps(world))
    return path


def driver_memory(out: Path, budget: int) -> None:
    """The driver's peak RSS with ``--verify none`` and with ``--verify smtp --budget N``, on a
    LocalCluster of 2 workers; prints them and whether the second is within 10% of the first."""
    world = mail_world(out)
    smtp = ServerProcess("smtp", world, 6 * 3600)
    try:
        with served_world(world, out) as (server, config):
            config.write_text(
                config.read_text()
                + "[verify]\nrcpts_per_minute_per_host = 6000000\n"
                + "rcpts_per_minute_per_provider = 6000000\ngreylist_delays = [0.1]\n"
            )
            probes = ("--verify", "smtp", "--budget", str(budget), "--helo", "probe.example.net")
            probes += ("--smtp-port", str(smtp.ready["port"]))
            runs = {
                "dask, 2 workers, --verify none": ("--verify", "none"),
                f"dask, 2 workers, --verify smtp --budget {budget}": probes,
            }
            results = {n: clean(out, n, config, ["2"], server, extra=x) for n, x in runs.items()}
    finally:
        smtp.stop()
    none, smtp_run = results.values()
    ratio = smtp_run["peak_rss_mib"] / none["peak_rss_mib"]
    summary = json.loads((out / f"{_stem(list(runs)[1])}.summary.json").read_text())
    lines = ["| run | seconds | driver peak RSS MiB | largest worker peak RSS MiB | RCPTs |"]
    lines.append("|---|---:|---:|---:|---:|")
    for name, m in results.items():
        rcpts = summary["rcpts_sent"] if m is smtp_run else 0
        lines.append(
            f"| {name} | {m['process_seconds']:.1f} | {m['peak_rss_mib']:.0f} "
            f"| {m.get('child_peak_rss_mib', 0):.0f} | {rcpts:,} |"
        )
    lines.append(
        f"rows: {none['rows']:,}; the driver's peak with SMTP checks / without: {ratio:.3f}"
    )
    print("\n".join(lines))
    (out / "driver_memory.json").write_text(json.dumps(results, indent=2))
    if ratio > 1.10:
        raise SystemExit(f"the driver's peak RSS grew by {ratio - 1:.1%} with --verify smtp")


def _stem(name: str) -> str:
    return name.replace(",", "").replace(" ", "-").replace("(", "").replace(")", "")


@contextlib.contextmanager
def process_cluster(out: Path, workers: int, memory: str) -> Iterator[str]:
    """``dask scheduler`` and *workers* ``dask worker`` processes on loopback; its address."""
    file = out / "scheduler.json"
    file.unlink(missing_ok=True)
    dask = str(Path(sys.executable).with_name("dask"))
    log = (out / "cluster.log").open("a")
    loopback = ["--host", "127.0.0.1"]
    scheduler = ["--port", "0", "--dashboard-address", ":0", "--scheduler-file", str(file)]
    worker = ["--scheduler-file", str(file), "--nthreads", "1", "--memory-limit", memory]
    started = [
        subprocess.Popen(
            [dask, "scheduler", *loopback, *scheduler],
            stdout=log,
            stderr=log,
        )
    ]
    try:
        while not file.exists():
            time.sleep(0.1)
        for _ in range(workers):
            started.append(
                subprocess.Popen(
                    [dask, "worker", *loopback, *worker, "--local-directory", str(out / "workers")],
                    stdout=log,
                    stderr=log,
                )
            )
        address: str = json.loads(file.read_text())["address"]
        from distributed import Client

        with Client(address) as client:
            client.wait_for_workers(workers)
        yield address
    finally:
        for process in reversed(started):
            process.terminate()
        for process in started:
            process.wait(timeout=60)
        log.close()


def worker_facts() -> tuple[int, float]:
    """A worker's process id and peak RSS in MiB (run on each worker)."""
    return os.getpid(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def on_processes(
    out: Path,
    name: str,
    config: Path,
    server: subprocess.Popen[str],
    address: str,
    kill_after: float,
    source: str = "list.csv",
    traced: bool = False,
    warm: bool = False,
) -> dict[str, Any]:
    """One run on the process cluster at *address*; with *kill_after*, one worker SIGKILLed
    that many seconds in; with *warm*, with the caches the run before left. Adds the workers'
    peak RSS and how many were restarted."""
    from distributed import Client

    with Client(address) as client:
        before = {pid for pid, _ in client.run(worker_facts).values()}
        killer = threading.Timer(kill_after, os.kill, (min(before), signal.SIGKILL))
        if kill_after:
            killer.start()
        measured = clean(out, name, config, [], server, address, source, traced, warm=warm)
        killer.cancel()
        client.wait_for_workers(2)
        after = client.run(worker_facts)
    measured["child_peak_rss_mib"] = max(rss for _, rss in after.values())
    measured["restarted"] = len(before - {pid for pid, _ in after.values()})
    return measured


def check(results: dict[str, dict[str, Any]]) -> None:
    """Same output for every engine, and the same MX questions (every distinct domain of the
    list asked). Raises when not; how often each came is in the table.

    The mail hosts' address questions (A, AAAA) are counted, not compared: when a query is lost
    under load and times out, the exchange check asks the host's other address type or the next
    host, so which of them are asked depends on which queries were lost. The run's own count of
    queries is reported, not compared either: it counts every question asked of its resolver,
    those c-ares answered from its cache and those sent again after a loss included."""
    if "local" not in results:
        return  # nothing to compare with
    local = results["local"]
    mx = {n: {q for q in m["asked"] if q.endswith(" MX")} for n, m in results.items()}
    for name in results.keys() - {BASELINE}:
        if mx[name] != mx["local"] and not name.endswith(", warm"):
            only_local = sorted(mx["local"] - mx[name])
            only_here = sorted(mx[name] - mx["local"])
            raise SystemExit(
                f"{name} asked other MX questions than the local engine: "
                f"{len(only_local)} only by local ({', '.join(only_local[:20])}), "
                f"{len(only_here)} only by {name} ({', '.join(only_here[:20])})"
            )
    expected = pl.read_parquet(local["output"])
    for name, measured in results.items():
        if name != BASELINE and not pl.read_parquet(measured["output"]).equals(expected):
            raise SystemExit(f"{name} wrote another output than the local engine")


def questions(path: Path) -> tuple[dict[str, int], dict[str, int]]:
    """A dns_serve.py dump ("NAME TYPE TIMES IDS" lines): how often each "NAME TYPE" came, and
    under how many query ids (the times it was asked; a packet sent again keeps its id)."""
    rows = [line.rsplit(" ", 2) for line in path.read_text().splitlines()]
    return {q: int(times) for q, times, _ in rows}, {q: int(ids) for q, _, ids in rows}


def table(r: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| engine | seconds | rows/s | rows/s per worker | DNS queries (run's count) "
        "| distinct questions received (MX / host A, AAAA) "
        "| questions asked more than once (received more than once) "
        "| driver peak RSS MiB | largest worker peak RSS MiB | driver read / written MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in r.items():
        secs, rows = m["process_seconds"], m["rows"]
        child = m.get("child_peak_rss_mib", 0)
        worker = f"{child:.0f}" if child else "-"
        asked: dict[str, int] = m["asked"]
        mx = sum(1 for q in asked if q.endswith(" MX"))
        hosts = len(asked) - mx
        again = sum(1 for t in asked.values() if t > 1)
        twice = sum(1 for t in m["ids"].values() if t > 1)
        lines.append(
            f"| {name} | {secs:.1f} | {rows / secs:,.0f} | {rows / secs / m['workers']:,.0f} | "
            f"{m['dns_queries']:,} | {m['server']['questions']:,} ({mx:,} / {hosts:,}) | "
            f"{twice:,} ({again:,}) | {m['peak_rss_mib']:.0f} "
            f"| {worker} | {m['read_bytes'] / _MIB:,.0f} / {m['written_bytes'] / _MIB:,.0f} |"
        )
    lines.append("")
    local = next(iter(r.values()))
    lines.append(
        f"rows: {local['rows']:,}; distinct domains: {local['distinct_domains']:,}; "
        f"the list: {local.get('input_mib', 0):,.0f} MiB of CSV"
    )
    if BASELINE in r:
        small = r[BASELINE]
        for name, m in r.items():
            if "restarted" in m and name != BASELINE:
                read = (m["read_bytes"] - small["read_bytes"]) / _MIB
                written = (m["written_bytes"] - small["written_bytes"]) / _MIB
                lines.append(
                    f"{name}: the driver read {read:,.1f} MiB and wrote {written:,.1f} MiB more "
                    "than for the list's first 20,000 rows (files and network together)"
                )
    for name, m in r.items():
        if "traced" in m:
            t = {k: v / _MIB for k, v in m["traced"].items()}
            lines.append(
                f"{name} (driver under strace): read {t['input_read']:,.1f} MiB of the input; "
                f"network {t['socket_read']:,.1f} MiB in, {t['socket_written']:,.1f} MiB out; "
                f"wrote {t['output_written']:,.1f} MiB of the output's rows"
            )
    for name, m in r.items():
        if "restarted" in m:
            lines.append(f"{name}: workers restarted (or killed) during the run: {m['restarted']}")
    for name, m in r.items():
        stages = ", ".join(f"{k} {v:.1f}s" for k, v in m["stages"].items())
        lines.append(f"{name} stages: {stages}")
    for name, m in r.items():
        again = [f"{q} x{t}" for q, t in m["ids"].items() if t > 1 and q.endswith(" MX")]
        shown = ", ".join(again[:10]) + (f" and {len(again) - 10} more" if len(again) > 10 else "")
        lines.append(f"{name}: MX questions asked more than once: {shown or 'none'}")
        sent = sum(1 for q, t in m["asked"].items() if t > m["ids"][q] and q.endswith(" MX"))
        lines.append(f"{name}: MX questions whose packet was sent again while waiting: {sent:,}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
