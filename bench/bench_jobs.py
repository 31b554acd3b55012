"""Benchmark bulk jobs: a list uploaded to ``listclean serve`` against ``clean`` on the same file
in the same run, /api/email's latency while a job runs, and the service's memory on a big job.

    python bench/bench_jobs.py [--rows 1000000] [--domains 50000] [--memory-rows 10000000]
                               [--rounds 2] [--out bench/out-jobs]

Generates the list and its DNS world at run time (``bench/generate.py``, never committed) and
serves the world from the loopback DNS server in a process of its own (``dns_serve.py``); the
service runs with that resolver, its jobs on ``[jobs] cores`` (default: all but one), and is
warmed by one small job first (as an instance that served any job is). Then, in one run:

1. **Paired** (``--rounds`` times, the commands interleaved): ``clean`` of the list, pinned to
   the jobs' cores with as many polars threads, cold (empty cache) and warm (the cache of the
   cold run); and the same list as a job, uploaded to the service and polled until done, cold
   (a service whose domain cache is empty) and warm. A job's time runs from the first byte of
   its upload to the poll that sees it done. Each pair's ratio is job / clean.
2. **Latency**: ``GET /api/email`` at a fixed rate (``--rate`` a second, cached domains) from a
   process of its own, for ``--seconds`` with no job, then while a job of the list runs; p50
   and p99 of each, and their ratio.
3. **Memory** (unless ``--memory-rows 0``): a list of ``--memory-rows`` rows cleaned warm by
   ``clean`` (its peak RSS) and as a job (the service's peak RSS, and its job process's, sampled
   from /proc every 0.2 s).

Prints Markdown tables for bench/RESULTS.md and writes ``results.json`` to --out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from bench_clean import served_world, serving_url  # noqa: E402

from pipeline.service.jobs.runner import job_cpus  # noqa: E402

LISTCLEAN = [sys.executable, "-m", "pipeline"]
PLAN = "bench"


def generate(out: Path, rows: int, domains: int) -> Path:
    if not (out / "list.csv").exists():
        command = [
            sys.executable,
            str(HERE / "generate.py"),
            "--rows",
            str(rows),
            "--domains",
            str(domains),
            "--out",
            str(out),
        ]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return out / "list.csv"


def settings_file(dns_config: Path, out: Path) -> Path:
    """The service's settings: the world's resolver, and a plan no run can use up."""
    text = dns_config.read_text() + (
        f"\n[plans.{PLAN}]\nemail_per_month = 1000000000\nfind_per_month = 5\n"
    )
    path = out / "service.toml"
    path.write_text(text)
    return path


@contextlib.contextmanager
def service(out: Path, config: Path, name: str) -> Iterator[tuple[str, str, int]]:
    """``listclean serve`` with an empty domain cache: its URL, a key, its pid."""
    root = out / name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    db = ["--db", str(root / "service.sqlite")]
    made = subprocess.run(
        [*LISTCLEAN, "keys", "create", "--plan", PLAN, *db, "--config", str(config)],
        capture_output=True,
        text=True,
        check=True,
    )
    secret = made.stdout.strip().splitlines()[-1]
    env = {**os.environ, "LISTCLEAN_JOBS_STORAGE": str(root / "jobs"), "LISTCLEAN_JOBS_POLL": "0.2"}
    log = root / "serve.log"
    command = [
        *LISTCLEAN,
        "serve",
        "--config",
        str(config),
        "--port",
        "0",
        "--cache-dir",
        str(root / "cache"),
        *db,
    ]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=sink, env=env, cwd=ROOT)
    try:
        yield serving_url(process, log, 120), secret, process.pid
    finally:
        process.terminate()
        process.wait(timeout=60)


async def run_job(url: str, secret: str, path: Path, watch: Any = None) -> dict[str, Any]:
    """Upload *path* as a job and poll it until done: seconds from the upload's first byte."""
    import aiohttp

    headers = {"Authorization": f"Bearer {secret}"}
    started = time.perf_counter()
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as s:
        with path.open("rb") as handle:
            body = aiohttp.FormData()
            body.add_field("file", handle, filename=path.name, content_type="text/csv")
            async with s.post(f"{url}/api/jobs", data=body, headers=headers) as reply:
                created = await reply.json()
        uploaded = time.perf_counter() - started
        if reply.status != 202:
            raise SystemExit(f"the job was refused: {created}")
        while True:
            async with s.get(f"{url}/api/jobs/{created['id']}", headers=headers) as reply:
                status = await reply.json()
            if watch is not None:
                watch(status)
            if status["state"] in ("done", "failed", "cancelled"):
                break
            await asyncio.sleep(0.2)
    if status["state"] != "done":
        raise SystemExit(f"the job ended {status['state']}: {status.get('error')}")
    summary = status["summary"]
    return {
        "seconds": time.perf_counter() - started,
        "upload_seconds": uploaded,
        "rows": summary["rows_in"],
        "units": status["units"]["charged"],
        "stages": {s["name"]: s["seconds"] for s in summary["stages"]},
    }


def pinned(cpus: list[int]) -> Any:
    def limit() -> None:
        os.sched_setaffinity(0, set(cpus))

    return limit


def run_clean(path: Path, config: Path, cache: Path, cpus: list[int], out: Path) -> dict[str, Any]:
    """``clean`` of *path* pinned to *cpus* (as many polars threads), timed by measure.py."""
    result = out / "clean.json"
    output = out / "clean-out" / "list.clean.parquet"
    command = [
        sys.executable,
        str(HERE / "measure.py"),
        str(result),
        "clean",
        str(path),
        "-o",
        str(output),
        "--config",
        str(config),
        "--cache-dir",
        str(cache),
        "--quiet",
    ]
    env = {**os.environ, "POLARS_MAX_THREADS": str(len(cpus))}
    started = time.perf_counter()
    subprocess.run(command, check=True, env=env, preexec_fn=pinned(cpus), cwd=ROOT)
    seconds = time.perf_counter() - started
    measured: dict[str, Any] = json.loads(result.read_text())
    summary = json.loads(output.with_name("list.clean.summary.json").read_text())
    return {
        "seconds": seconds,
        "peak_rss_mib": measured["peak_rss_mib"],
        "rows": summary["rows_in"],
        "stages": {s["name"]: s["seconds"] for s in summary["stages"]},
    }


def paired(
    args: argparse.Namespace, path: Path, configs: tuple[Path, Path], cpus: list[int]
) -> list[Any]:
    """*configs*: clean's settings (the resolver), the service's (the resolver, the plan)."""
    dns, config = configs
    rounds = []
    for number in range(args.rounds):
        cache = args.out / f"clean-cache-{number}"
        shutil.rmtree(cache, ignore_errors=True)
        one: dict[str, Any] = {"clean_cold": run_clean(path, dns, cache, cpus, args.out)}
        one["clean_warm"] = run_clean(path, dns, cache, cpus, args.out)
        with service(args.out, config, f"service-{number}") as (url, secret, _):
            asyncio.run(run_job(url, secret, small_list(args.out)))  # the instance warmed
            one["job_cold"] = asyncio.run(run_job(url, secret, path))
            one["job_warm"] = asyncio.run(run_job(url, secret, path))
        rounds.append(one)
        print(json.dumps({k: round(v["seconds"], 2) for k, v in one.items()}), flush=True)
    return rounds


def small_list(out: Path) -> Path:
    path = out / "small.csv"
    path.write_text("email\nwarm.up@gmail.com\n")
    return path


# --- /api/email while a job runs -------------------------------------------------------------


async def _probe(spec: dict[str, Any]) -> dict[str, Any]:
    """GET /api/email at spec['rate'] a second for spec['seconds']: each request's latency."""
    import aiohttp

    headers = {"Authorization": f"Bearer {spec['secret']}"}
    latencies: list[float] = []
    failures = 0
    async with aiohttp.ClientSession(headers=headers) as s:

        async def one(number: int) -> None:
            nonlocal failures
            started = time.perf_counter()
            url = f"{spec['url']}/api/email?email=probe{number % 500}@gmail.com"
            async with s.get(url) as reply:
                await reply.read()
                if reply.status != 200:
                    failures += 1
            latencies.append(time.perf_counter() - started)

        tasks = []
        began = time.perf_counter()
        count = int(spec["rate"] * spec["seconds"])
        for number in range(count):
            await asyncio.sleep(max(0.0, began + number / spec["rate"] - time.perf_counter()))
            tasks.append(asyncio.create_task(one(number)))
        await asyncio.gather(*tasks)
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "failures": failures,
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)],
    }


def probe(url: str, secret: str, rate: float, seconds: float) -> subprocess.Popen[str]:
    spec = json.dumps({"url": url, "secret": secret, "rate": rate, "seconds": seconds})
    return subprocess.Popen(
        [sys.executable, str(Path(__file__)), "--probe", spec], stdout=subprocess.PIPE, text=True
    )


def latency(args: argparse.Namespace, path: Path, config: Path) -> dict[str, Any]:
    with service(args.out, config, "service-latency") as (url, secret, _):
        asyncio.run(run_job(url, secret, path))  # warm: the processes and the domain cache
        idle = probe(url, secret, args.rate, 3)  # the addresses' domains cached, then measured
        idle.communicate()
        idle = probe(url, secret, args.rate, args.seconds)
        idle_result = json.loads(idle.communicate()[0])
        running: dict[str, Any] = {}

        def watch(status: dict[str, Any]) -> None:
            if status["state"] == "running" and "probe" not in running:
                running["probe"] = probe(url, secret, args.rate, args.seconds)

        job = asyncio.run(run_job(url, secret, path, watch))
        busy = json.loads(running["probe"].communicate()[0])
    return {
        "idle": idle_result,
        "job_running": busy,
        "job": job,
        "ratio_p99": busy["p99_ms"] / idle_result["p99_ms"],
    }


# --- memory on a big job -----------------------------------------------------------------------


def rss_mib(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    found = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(found.group(1)) / 1024 if found else 0.0


def children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def memory(args: argparse.Namespace, configs: tuple[Path, Path], cpus: list[int]) -> dict[str, Any]:
    dns, config = configs
    big = generate(args.out / "big", args.memory_rows, args.domains)
    cache = args.out / "clean-cache-big"
    run_clean(big, dns, cache, cpus, args.out)  # the cache filled: both runs warm
    clean = run_clean(big, dns, cache, cpus, args.out)
    with service(args.out, config, "service-memory") as (url, secret, pid):
        asyncio.run(run_job(url, secret, small_list(args.out)))
        peaks = {"service": 0.0, "job_process": 0.0}
        done = False

        async def sample() -> None:
            while not done:
                peaks["service"] = max(peaks["service"], rss_mib(pid))
                for child in children(pid):
                    peaks["job_process"] = max(peaks["job_process"], rss_mib(child))
                await asyncio.sleep(0.2)

        async def both() -> dict[str, Any]:
            nonlocal done
            sampler = asyncio.create_task(sample())
            try:
                return await run_job(url, secret, big)
            finally:
                done = True
                await sampler

        job = asyncio.run(both())
    return {"clean": clean, "job": job, "peak_rss_mib": peaks}


def tables(results: dict[str, Any]) -> str:
    lines = [
        "| round | clean cold s | job cold s | ratio | clean warm s | job warm s | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for number, one in enumerate(results["paired"], start=1):
        cc, jc = one["clean_cold"]["seconds"], one["job_cold"]["seconds"]
        cw, jw = one["clean_warm"]["seconds"], one["job_warm"]["seconds"]
        lines.append(
            f"| {number} | {cc:.2f} | {jc:.2f} | {jc / cc:.2f} | {cw:.2f} | {jw:.2f} "
            f"| {jw / cw:.2f} |"
        )
    if "latency" in results:
        lat = results["latency"]
        lines += ["", "| /api/email | requests | p50 ms | p99 ms |", "|---|---:|---:|---:|"]
        for name in ("idle", "job_running"):
            m = lat[name]
            lines.append(f"| {name} | {m['requests']} | {m['p50_ms']:.1f} | {m['p99_ms']:.1f} |")
        lines.append(f"\np99 while a job runs / idle: {lat['ratio_p99']:.2f}")
    if "memory" in results:
        mem = results["memory"]
        lines += [
            "",
            f"{mem['clean']['rows']:,} rows: clean peak RSS {mem['clean']['peak_rss_mib']:.0f} "
            f"MiB ({mem['clean']['seconds']:.1f} s); as a job ({mem['job']['seconds']:.1f} s) "
            f"the service peaked at {mem['peak_rss_mib']['service']:.0f} MiB and its job "
            f"process at {mem['peak_rss_mib']['job_process']:.0f} MiB.",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--domains", type=int, default=50_000)
    parser.add_argument("--memory-rows", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=100.0, help="/api/email requests a second")
    parser.add_argument("--seconds", type=float, default=8.0, help="of each latency phase")
    parser.add_argument("--out", type=Path, default=HERE / "out-jobs")
    parser.add_argument("--probe", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(asyncio.run(_probe(json.loads(args.probe)))))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = generate(args.out, args.rows, args.domains)
    cpus = job_cpus(0)
    results: dict[str, Any] = {"cpus": cpus, "load_before": os.getloadavg()}
    with served_world(args.out / "world.json", args.out) as (_, dns_config):
        config = settings_file(dns_config, args.out)
        configs = (dns_config, config)
        results["paired"] = paired(args, path, configs, cpus)
        results["latency"] = latency(args, path, config)
        if args.memory_rows:
            results["memory"] = memory(args, configs, cpus)
    results["load_after"] = os.getloadavg()
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    print(tables(results))
    print(
        f"\njobs' cores: {cpus}; load average before {results['load_before']}, "
        f"after {results['load_after']}"
    )


if __name__ == "__main__":
    main()
