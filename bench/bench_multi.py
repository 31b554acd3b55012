"""Benchmark the service on its stores: one instance on SQLite, one and three on PostgreSQL.

    python bench/bench_multi.py [--seconds 8] [--warmup 2] [--concurrency 64] [--out bench/out]

In one run on this machine: the loopback DNS world in its own process, a PostgreSQL cluster of
its own on 127.0.0.1 (the tests' ``tests/pg.py``: fsync off, since the cluster is thrown away;
the service still asks for ``synchronous_commit``), then, one after the other, ``listclean
serve`` with its state in a SQLite file (one instance), in PostgreSQL (one instance) and in
PostgreSQL (three instances, one load generator spreading its requests over them as a load
balancer would). Every request carries a key on plan ``scale`` and asks about an address at a
cached domain, so each is one quota take and one engine pass's share. Any answer other than 200
aborts the run. Prints a Markdown table for bench/RESULTS.md and writes ``multi.json`` to --out.

All of it shares the machine's cores: three instances, the database server and the load
generator on two cores measure what the store costs per request, not what three hosts give.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from bench_service import (  # noqa: E402
    PLAN,
    _cpu_seconds,
    addresses,
    dns_server,
    free_port,
    server,
    service_command,
    warm_cache,
)

from tests import pg  # noqa: E402


async def _drive(spec: dict[str, Any]) -> dict[str, Any]:
    import aiohttp

    bases: list[str] = spec["bases"]
    clock = time.perf_counter
    start = clock() + spec["warmup"]
    end = start + spec["seconds"]
    latencies: list[float] = []
    statuses: Counter[int] = Counter()

    async def worker(session: aiohttp.ClientSession, first: int) -> None:
        index = first
        while (began := clock()) < end:
            base = bases[index % len(bases)]
            path = spec["paths"][index % len(spec["paths"])]
            index += spec["concurrency"]
            async with session.get(base + path) as response:
                await response.read()
                statuses[response.status] += 1
                if response.status != 200:
                    raise SystemExit(f"{base}{path} answered {response.status}")
            if start <= (done := clock()) <= end:
                latencies.append(done - began)

    connector = aiohttp.TCPConnector(limit=spec["concurrency"])
    async with aiohttp.ClientSession(connector=connector, headers=spec["headers"]) as session:
        await asyncio.gather(*(worker(session, i) for i in range(spec["concurrency"])))
    ordered = sorted(latencies)
    return {
        "requests_per_second": len(ordered) / spec["seconds"],
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "statuses": dict(statuses),
    }


def children(pid: int) -> list[int]:
    """The processes *pid* started (a PostgreSQL server's backends), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def cpu(pids: list[int]) -> dict[int, float]:
    return {pid: _cpu_seconds(pid) or 0.0 for pid in pids}


def measure(
    tmp: Path, name: str, spec: dict[str, Any], services: list[int], database: int | None
) -> dict[str, Any]:
    """Drive the targets; the CPU seconds the instances and the database server spent in the
    measured window, per request."""
    print(f"{name}: {spec['warmup']:g} s warm-up + {spec['seconds']:g} s ...", file=sys.stderr)
    path = tmp / "spec.json"
    path.write_text(json.dumps(spec))
    loadgen = subprocess.Popen(
        [sys.executable, __file__, "--loadgen", str(path)], stdout=subprocess.PIPE, text=True,
        cwd=ROOT,
    )  # fmt: skip
    time.sleep(spec["warmup"])
    server_pids = [*children(database), database] if database else []
    before = cpu(services), cpu(server_pids)
    time.sleep(spec["seconds"])
    after = cpu(services), cpu(server_pids + children(database or -1))
    out, _ = loadgen.communicate(timeout=60)
    result: dict[str, Any] = json.loads(out)
    requests = result["requests_per_second"] * spec["seconds"]
    for part, was, now in (("service", before[0], after[0]), ("database", before[1], after[1])):
        spent = sum(now.values()) - sum(was.get(pid, 0.0) for pid in now)
        result[f"{part}_cpu_ms_per_request"] = 1000 * spent / requests
    return result


def target(
    tmp: Path,
    name: str,
    db: Path | str,
    count: int,
    dns: str,
    spec: dict[str, Any],
    database: int | None,
) -> dict[str, Any]:
    from pipeline.service.accounts.store import ServiceStore

    state = ServiceStore(db)
    try:
        _, secret = state.create_key(PLAN, "bench")
    finally:
        state.close()
    headers = {"Authorization": f"Bearer {secret}"}
    with contextlib.ExitStack() as stack:
        bases, pids = [], []
        for n in range(count):
            port = free_port()
            base, cache = f"http://127.0.0.1:{port}", tmp / f"{name}-cache{n}"
            command = service_command(port, db, cache, dns)  # type: ignore[arg-type]
            log = tmp / f"{name}{n}.log"
            pids.append(stack.enter_context(server(f"{name} #{n}", command, log, base)))
            warm_cache(base, headers, cache / "domains.sqlite")
            bases.append(base)
        return measure(tmp, name, {**spec, "bases": bases, "headers": headers}, pids, database)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--loadgen", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loadgen:
        print(json.dumps(asyncio.run(_drive(json.loads(args.loadgen.read_text())))))
        return
    reason = pg.available()
    if reason:
        raise SystemExit(f"PostgreSQL is needed: {reason}")
    paths = [f"/api/email?{urllib.parse.urlencode({'email': a})}" for a in addresses(3000)]
    spec = {
        "paths": paths, "concurrency": args.concurrency, "warmup": args.warmup,
        "seconds": args.seconds,
    }  # fmt: skip
    results: dict[str, dict[str, Any]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="bench-multi-") as folder,
        dns_server() as dns,
        pg.cluster() as cluster,
    ):
        tmp = Path(folder)
        postmaster = int((cluster.data / "postmaster.pid").read_text().split()[0])
        runs = [
            ("SQLite, 1 instance", tmp / "service.sqlite", 1),
            ("PostgreSQL, 1 instance", cluster.database(), 1),
            ("PostgreSQL, 3 instances", cluster.database(), 3),
        ]
        for name, db, count in runs:
            database = postmaster if isinstance(db, str) else None
            label = name.split(",")[0] + str(count)
            results[name] = target(tmp, label, db, count, dns, spec, database)
    base = results["SQLite, 1 instance"]["requests_per_second"]
    print(
        "| store, instances | requests/s | p50 ms | p99 ms | vs SQLite, 1 instance "
        "| service CPU ms/request | database CPU ms/request |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        rps = r["requests_per_second"]
        print(
            f"| {name} | {rps:,.0f} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
            f"{rps / base:.0%} | {r['service_cpu_ms_per_request']:.2f} | "
            f"{r['database_cpu_ms_per_request']:.2f} |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "multi.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
