"""Benchmark the HTTP service: ``GET /api/email`` with a key on plan ``scale``, cached domains.

    python bench/bench_service.py [--seconds 10] [--warmup 2] [--concurrency 64] [--out bench/out]
                                  [--profile [--profile-seconds 10] [--py-spy PATH]]

Measures, in one run on this machine, requests/s and p50/p99 latency of the real service
(``listclean serve`` over the loopback DNS world of the sample list,
``pipeline/sandbox/data/world.json``) and of a bare
aiohttp handler answering a fixed JSON object of the same size (``bench/bare_server.py``), each
driven the same way: one aiohttp client process, one connector (limit = concurrency, keep-alive),
*concurrency* workers, a warm-up phase, then a measured phase of fixed duration. Every request
carries the key (``Authorization: Bearer``) and asks about one of a few hundred addresses at
gmail.com, outlook.com and yahoo.com, whose domains are put in the cache before measuring. Both
servers log each request as ``listclean serve`` does (``RedactingAccessLogger`` at INFO, to a
file). Any answer other than 200 aborts the run.

The client, the server and the DNS server share the machine's cores, so the client's CPU time is
taken from the server's: the ratio to the bare handler, measured the same way in the same run,
is the number to compare across machines. Prints a Markdown table for bench/RESULTS.md and writes
``service.json`` to --out. With --profile, a last phase drives the service again while py-spy
samples it (``pip install --target /tmp/pyspy py-spy``, then ``--py-spy /tmp/pyspy/bin/py-spy``)
and prints where its time goes; that phase is not in the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pipeline.sandbox.files import SANDBOX_SETTINGS, SANDBOX_WORLD

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORLD = SANDBOX_WORLD
CONFIG = SANDBOX_SETTINGS
DOMAINS = ("gmail.com", "outlook.com", "yahoo.com")
PLAN = "scale"
# Per loadgen run. The scale plan allows 1,000,000 requests a month: at the few thousand
# requests a second measured here, a run's phases against the service (the settling one, the
# rounds, the profile) send a fraction of that, so the quota is never what stops it.
MAX_REQUESTS = 400_000
SETTLE = 3.0  # seconds of each target's uncounted first phase (see measure_rounds)
TARGETS = {"requests_per_second": 2_000, "ratio_to_bare": 0.5}


# --------------------------------------------------------------------------------------------
# The load generator (run as its own process: `bench_service.py --loadgen SPEC.json`)


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process *pid* (all its threads), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


async def _drive(spec: dict[str, Any]) -> dict[str, Any]:
    import aiohttp
    from yarl import URL

    urls = [URL(spec["base"] + path, encoded=True) for path in spec["paths"]]
    concurrency: int = spec["concurrency"]
    clock = time.perf_counter
    began = clock()
    measure_from = began + spec["warmup"]
    measure_to = measure_from + spec["seconds"]
    latencies: list[float] = []  # of the requests that completed inside the measured window
    statuses: Counter[int] = Counter()
    errors: Counter[str] = Counter()
    failures: list[dict[str, Any]] = []
    body_bytes: list[int] = []
    sent = 0
    cpu: dict[str, tuple[float, float | None, float]] = {}  # phase -> (time, server, own)

    async def probe() -> None:
        for name, at in (("from", measure_from), ("to", measure_to)):
            await asyncio.sleep(max(0.0, at - clock()))
            cpu[name] = (clock(), _cpu_seconds(spec["server_pid"]), time.process_time())

    async def worker(session: aiohttp.ClientSession, first: int) -> None:
        nonlocal sent
        index = first
        while sent < spec["max_requests"] and not failures:
            started = clock()
            if started >= measure_to:
                return
            sent += 1
            url = urls[index % len(urls)]
            index += concurrency
            try:
                async with session.get(url) as response:
                    body = await response.read()
                    status = response.status
            except (aiohttp.ClientError, TimeoutError) as exc:
                errors[type(exc).__name__] += 1
                failures.append({"url": str(url), "error": repr(exc)})
                return
            done = clock()
            statuses[status] += 1
            if status != 200:
                failures.append({"url": str(url), "status": status, "body": body[:800].decode()})
                return
            if measure_from <= done <= measure_to:
                latencies.append(done - started)
                if len(body_bytes) < 1000:
                    body_bytes.append(len(body))

    connector = aiohttp.TCPConnector(limit=concurrency)  # keep-alive is aiohttp's default
    timeout = aiohttp.ClientTimeout(total=spec["timeout"])
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, headers=spec["headers"]
    ) as session:
        prober = asyncio.create_task(probe())
        await asyncio.gather(*(worker(session, i) for i in range(concurrency)))
        if not failures:
            await prober
        prober.cancel()
    if sent >= spec["max_requests"]:
        failures.append({"error": f"stopped at {sent:,} requests, before the phase's end"})

    result: dict[str, Any] = {
        "requests": len(latencies),
        "requests_sent_all_phases": sent,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "errors": dict(errors),
        "failures": failures[:5],
    }
    if failures or not latencies:
        return result
    window = cpu["to"][0] - cpu["from"][0]
    ordered = sorted(latencies)
    result.update(
        seconds=spec["seconds"],
        requests_per_second=len(latencies) / spec["seconds"],
        latency_ms={
            "mean": 1000 * sum(ordered) / len(ordered),
            "p50": 1000 * _percentile(ordered, 0.50),
            "p90": 1000 * _percentile(ordered, 0.90),
            "p99": 1000 * _percentile(ordered, 0.99),
            "max": 1000 * ordered[-1],
        },
        mean_body_bytes=sum(body_bytes) / len(body_bytes),
        loadgen_cpu_cores=(cpu["to"][2] - cpu["from"][2]) / window,
    )
    server_from, server_to = cpu["from"][1], cpu["to"][1]
    if server_from is not None and server_to is not None:
        busy = server_to - server_from
        result["server_cpu_cores"] = busy / window
        result["server_cpu_ms_per_request"] = 1000 * busy / len(latencies)
    return result


def loadgen(spec_path: Path) -> None:
    spec = json.loads(spec_path.read_text())
    print(json.dumps(asyncio.run(_drive(spec))))


# --------------------------------------------------------------------------------------------
# The orchestrator


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, headers: dict[str, str], timeout: float = 5.0) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_healthy(name: str, proc: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited with {proc.returncode} on start:\n{tail(log)}")
        with contextlib.suppress(OSError):
            if get(f"{base}/healthz", {}, timeout=1.0)[0] == 200:
                return
        time.sleep(0.1)
    raise SystemExit(f"{name} did not answer {base}/healthz within 60 s:\n{tail(log)}")


def tail(log: Path, lines: int = 8) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def server(name: str, command: list[str], log: Path, base: str) -> Iterator[int]:
    """Run a server until the block ends (SIGINT for a graceful stop, then SIGKILL); its pid."""
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        wait_healthy(name, proc, base, log)
        yield proc.pid
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextlib.contextmanager
def dns_server() -> Iterator[str]:
    """The loopback DNS world in its own process (bench/dns_serve.py); its address."""
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "dns_serve.py"), str(WORLD)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().strip()
        if not address:
            raise SystemExit(f"bench/dns_serve.py printed no address (exit {proc.wait()})")
        yield address
    finally:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            proc.communicate(input="", timeout=10)
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def run_loadgen(tmp: Path, name: str, spec: dict[str, Any]) -> subprocess.Popen[str]:
    path = tmp / f"loadgen-{name}.json"
    path.write_text(json.dumps(spec))
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--loadgen", str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def loadgen_result(name: str, proc: subprocess.Popen[str], spec: dict[str, Any]) -> dict[str, Any]:
    try:
        out, _ = proc.communicate(timeout=spec["warmup"] + spec["seconds"] + 120)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"the load generator for {name} did not finish in time") from None
    finally:
        if proc.poll() is None:  # timed out, or this process is being stopped
            proc.kill()
            proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"the load generator for {name} exited with {proc.returncode}")
    result: dict[str, Any] = json.loads(out)
    if result["failures"] or not result["requests"]:
        raise SystemExit(
            f"ABORTED: {name} answered something other than 200 (or nothing in the measured "
            f"phase). statuses {result['statuses']}, errors {result['errors']}, "
            f"first failures:\n{json.dumps(result['failures'], indent=2)}"
        )
    return result


def measure(tmp: Path, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    print(
        f"{name}: {spec['warmup']:g} s warm-up + {spec['seconds']:g} s measured, "
        f"{spec['concurrency']} connections ...",
        file=sys.stderr,
        flush=True,
    )
    return loadgen_result(name, run_loadgen(tmp, name, spec), spec)


def addresses(count: int) -> list[str]:
    per_domain = max(1, count // len(DOMAINS))
    return [f"bench.user{i:04d}@{d}" for i in range(per_domain) for d in DOMAINS]


def warm_cache(base: str, headers: dict[str, str], cache_db: Path) -> list[bytes]:
    """One request per domain, so every measured request finds its domain in the cache."""
    bodies = []
    for domain in DOMAINS:
        query = urllib.parse.urlencode({"email": f"bench.user9999@{domain}"})
        status, body = get(f"{base}/api/email?{query}", headers)
        answer = json.loads(body)
        if status != 200 or not answer.get("MX"):
            raise SystemExit(f"warming {domain} failed: {status} {body[:500]!r}")
        bodies.append(body)
    with contextlib.closing(sqlite3.connect(f"file:{cache_db}?mode=ro", uri=True)) as db:
        cached = {row[0] for row in db.execute("SELECT domain FROM domains")}
    if not set(DOMAINS) <= cached:
        raise SystemExit(f"the domain cache {cache_db} lacks {sorted(set(DOMAINS) - cached)}")
    return bodies


# --------------------------------------------------------------------------------------------
# py-spy


def find_py_spy(given: Path | None) -> Path:
    candidates = [given] if given else []
    found = shutil.which("py-spy")
    candidates += [Path(sys.executable).with_name("py-spy"), Path(found) if found else None]
    for candidate in candidates:
        if candidate and candidate.exists():
            return candidate
    raise SystemExit(
        "--profile needs py-spy: `pip install --target /tmp/pyspy py-spy`, "
        "then pass --py-spy /tmp/pyspy/bin/py-spy"
    )


def profile(
    tmp: Path, out: Path, py_spy: Path, pid: int, spec: dict[str, Any], seconds: float
) -> dict[str, Any]:
    spec = {**spec, "seconds": seconds + 2}
    print(f"profile: py-spy on the service for {seconds:g} s under load ...", file=sys.stderr)
    raw = out / "service.py-spy.txt"
    load = run_loadgen(tmp, "profile", spec)
    try:
        time.sleep(spec["warmup"])
        subprocess.run(
            [
                str(py_spy),
                "record",
                "--pid",
                str(pid),
                "--duration",
                str(math.ceil(seconds)),
                "--rate",
                "250",
                "--idle",  # keep the loop's waits, to tell idle from busy (see hotspots)
                "--format",
                "raw",
                "--output",
                str(raw),
            ],
            check=True,
            timeout=seconds + 60,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    finally:
        under = loadgen_result("profile", load, spec)
    report = hotspots(raw)
    report["load_under_profiler"] = under
    report["raw_stacks"] = str(raw)
    return report


def _frame(text: str) -> tuple[str, str, str]:
    """(function, file, line) of a py-spy raw frame "function (file:line)"."""
    function, _, where = text.rpartition(" (")
    path, _, line = where.rstrip(")").rpartition(":")
    return function or text, path, line


def _package(path: str) -> str:
    head = path.split("/", 1)[0]
    return head.removesuffix(".py") if head == path else head


def _is_idle(leaf: tuple[str, str, str]) -> bool:
    """The event loop waiting for sockets: nothing to do."""
    function, path, _ = leaf
    return path == "selectors.py" and function.endswith((".select", ".poll"))


def hotspots(raw: Path, top: int = 20) -> dict[str, Any]:
    """Where the event-loop thread spends its time, from py-spy's raw (collapsed) stacks.

    Shares are of the loop thread's busy samples (those not waiting in select). A polars call
    counts where the loop thread waits for it, its worker threads' work included; other Python
    threads (pycares' shutdown thread, which sleeps) are reported apart.
    """
    stacks: list[tuple[list[tuple[str, str, str]], int]] = []
    for text in raw.read_text().splitlines():
        stack, _, count = text.rpartition(" ")
        if stack and count.isdigit():
            stacks.append(([_frame(f) for f in stack.split(";")], int(count)))
    loop = [(frames, n) for frames, n in stacks if frames[0][0] != "Thread._bootstrap"]
    total = sum(n for _, n in loop)
    idle = sum(n for frames, n in loop if _is_idle(frames[-1]))
    busy = max(1, total - idle)
    own: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    project: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    for frames, n in loop:
        if _is_idle(frames[-1]):
            continue
        function, path, _ = frames[-1]
        own[f"{function} ({path})"] += n
        packages[_package(path)] += n
        for name in {f"{f} ({p})" for f, p, _ in frames}:
            inclusive[name] += n
        for name in {f"{f} ({p})" for f, p, _ in frames if p.startswith("pipeline/")}:
            project[name] += n
        for name in {f"{f} ({p}:{line})" for f, p, line in frames if p.startswith("pipeline/")}:
            lines[name] += n

    def shares(counter: Counter[str], n: int, below: float = 1.0) -> list[tuple[str, float]]:
        ranked = [(k, v / busy) for k, v in counter.most_common() if v / busy < below]
        return [(k, round(share, 4)) for k, share in ranked[:n]]

    return {
        "loop_thread_samples": total,
        "other_thread_samples": sum(n for _, n in stacks) - total,
        "idle_share": round(idle / max(1, total), 4),
        "packages_self": shares(packages, 10),
        "self": shares(own, top),
        # without the frames every busy sample has (run_app, run_forever, ...)
        "inclusive": shares(inclusive, top, below=0.98),
        "project_inclusive": shares(project, top, below=0.98),
        "project_lines_inclusive": shares(lines, top, below=0.98),
    }


def print_hotspots(report: dict[str, Any]) -> None:
    under = report["load_under_profiler"]
    print(
        f"\nService profile: py-spy, {report['loop_thread_samples']} samples of the event-loop "
        f"thread, idle in select for {report['idle_share']:.1%} of them; shares below are of "
        f"its busy samples. Load meanwhile: {under['requests_per_second']:,.0f} requests/s, "
        f"p50 {under['latency_ms']['p50']:.1f} ms."
    )
    for title, key in (
        ("self time by package", "packages_self"),
        ("self time by function", "self"),
        ("inclusive time by function", "inclusive"),
        ("inclusive time, pipeline/ functions", "project_inclusive"),
        ("inclusive time, pipeline/ lines", "project_lines_inclusive"),
    ):
        print(f"\n{title}:")
        for name, share in report[key]:
            print(f"  {share:6.1%}  {name}")


# --------------------------------------------------------------------------------------------


LABELS = {
    "bare": "bare aiohttp handler (fixed JSON)",
    "service": "`listclean serve`: GET /api/email (key, cached domain)",
}


def table(results: dict[str, dict[str, Any]], settings: dict[str, Any], ratios: list[float]) -> str:
    """The RESULTS.md table, from the round with the median ratio; *ratios* are every round's."""
    bare_rps = results["bare"]["requests_per_second"]
    lines = [
        "| target | requests/s | p50 ms | p99 ms | ratio to bare |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, label in LABELS.items():
        r = results[name]
        lines.append(
            f"| {label} | {r['requests_per_second']:,.0f} | {r['latency_ms']['p50']:.1f} | "
            f"{r['latency_ms']['p99']:.1f} | {r['requests_per_second'] / bare_rps:.0%} |"
        )
    rps = results["service"]["requests_per_second"]

    def met(ok: bool) -> str:
        return "met" if ok else "NOT met"

    cpu = ", ".join(
        f"{name} {results[name].get('server_cpu_ms_per_request', math.nan):.2f} ms "
        f"({results[name].get('server_cpu_cores', math.nan):.2f} cores busy)"
        for name in LABELS
    )
    client = ", ".join(f"{name} {results[name]['loadgen_cpu_cores']:.2f}" for name in LABELS)
    lines += [
        "",
        f"{settings['concurrency']} concurrent keep-alive connections from one aiohttp client "
        f"process asking about {settings['addresses']:,} distinct addresses in turn; "
        f"{settings['rounds']} rounds, each measuring both targets back to back "
        f"({settings['warmup']:g} s warm-up, then {settings['seconds']:g} s), the order "
        "alternating; the table shows the round with the median ratio; ratios of all rounds: "
        + ", ".join(f"{r:.0%}" for r in ratios)
        + f". Access log {settings['access_log']}; {settings['cpus']} CPUs shared by client, "
        f"server and DNS server; Python {settings['python']}, aiohttp {settings['aiohttp']}.",
        f"Server CPU per request: {cpu}. Client CPU, cores: {client}. Mean body: service "
        f"{results['service']['mean_body_bytes']:.0f} bytes, bare "
        f"{results['bare']['mean_body_bytes']:.0f} bytes.",
        *_starved(results),
        f"Targets: >= {TARGETS['requests_per_second']:,} requests/s "
        f"{met(rps >= TARGETS['requests_per_second'])}; >= {TARGETS['ratio_to_bare']:.0%} of "
        f"the bare handler {met(rps / bare_rps >= TARGETS['ratio_to_bare'])}.",
    ]
    return "\n".join(lines)


def _starved(results: dict[str, dict[str, Any]]) -> list[str]:
    """A warning when the bare handler and its client together got less than one core: then
    other work had the CPUs, both targets were throttled by it, and the ratio says little."""
    bare = results["bare"]
    had = bare.get("server_cpu_cores", math.nan) + bare.get("loadgen_cpu_cores", math.nan)
    if not had < 1.0:
        return []
    return [
        f"WARNING: the bare handler and its client got {had:.2f} cores between them: the "
        "machine was busy with other work, so this ratio measures the machine, not the service."
    ]


def machine_busy(seconds: float = 1.0) -> float | None:
    """The share of all CPUs' time that was busy over *seconds*, from /proc/stat."""

    def sample() -> tuple[int, int]:
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return sum(values), values[3] + values[4]  # total, idle + iowait

    try:
        total_before, idle_before = sample()
        time.sleep(seconds)
        total_after, idle_after = sample()
    except (OSError, ValueError, IndexError):
        return None
    total = total_after - total_before
    return 1 - (idle_after - idle_before) / total if total else None


def service_command(port: int, db: Path, cache: Path, dns: str) -> list[str]:
    script = Path(sys.executable).with_name("listclean")
    listclean = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline.cli"]
    return [
        *listclean,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--db",
        str(db),
        "--cache-dir",
        str(cache),
        "--resolver",
        dns,
        "--config",
        str(CONFIG),
    ]


def measure_rounds(
    tmp: Path, rounds: int, specs: dict[str, dict[str, Any]]
) -> list[dict[str, dict[str, Any]]]:
    """Measure both targets *rounds* times, back to back, alternating which goes first.

    On a machine shared with other work the capacity drifts over seconds; a ratio taken from
    two phases measured one after the other, in both orders, is what stays comparable. A
    phase of each, not counted, comes first: the first phase of a run, whichever target it
    drives, was a quarter slower than the same phase in later rounds (the servers and the
    machine settling after the start), which made the first round's ratio the odd one out."""
    for name in ("bare", "service"):
        measure(tmp, f"{name} (settling, not counted)", {**specs[name], "seconds": SETTLE})
    measured = []
    for number in range(rounds):
        order = ("bare", "service") if number % 2 == 0 else ("service", "bare")
        measured.append(
            {name: measure(tmp, f"{name} (round {number + 1})", specs[name]) for name in order}
        )
    return measured


def median_round(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The round whose ratio (service / bare requests/s) is the median of all rounds."""
    ranked = sorted(rounds, key=ratio)
    return ranked[len(ranked) // 2]


def ratio(measured: dict[str, dict[str, Any]]) -> float:
    return float(
        measured["service"]["requests_per_second"] / measured["bare"]["requests_per_second"]
    )


def run(
    args: argparse.Namespace, tmp: Path, py_spy: Path | None
) -> tuple[list[dict[str, dict[str, Any]]], dict[str, Any] | None]:
    """Start the DNS world, the service and the bare server; measure both, in rounds; stop all
    three."""
    from pipeline.service.accounts.store import ServiceStore

    db, cache = tmp / "service.sqlite", tmp / "cache"
    with ServiceStore(db) as store:
        _key, secret = store.create_key(PLAN, "bench")
    headers = {"Authorization": f"Bearer {secret}"}
    paths = [
        f"/api/email?{urllib.parse.urlencode({'email': a})}" for a in addresses(args.addresses)
    ]
    spec = {
        "paths": paths,
        "headers": headers,
        "concurrency": args.concurrency,
        "warmup": args.warmup,
        "seconds": args.seconds,
        "max_requests": MAX_REQUESTS,
        "timeout": 30.0,
    }
    service_port, bare_port = free_port(), free_port()
    service_base = f"http://127.0.0.1:{service_port}"
    bare_base = f"http://127.0.0.1:{bare_port}"
    with contextlib.ExitStack() as stack:
        dns = stack.enter_context(dns_server())
        command = service_command(service_port, db, cache, dns)
        service_pid = stack.enter_context(
            server("the service", command, tmp / "service.log", service_base)
        )
        bodies = warm_cache(service_base, headers, cache / "domains.sqlite")
        mean = sum(map(len, bodies)) / len(bodies)
        (tmp / "body.json").write_bytes(min(bodies, key=lambda b: abs(len(b) - mean)))
        command = [
            sys.executable,
            str(HERE / "bare_server.py"),
            str(bare_port),
            str(tmp / "body.json"),
        ]
        bare_pid = stack.enter_context(
            server("the bare server", command, tmp / "bare.log", bare_base)
        )
        service_spec = {**spec, "base": service_base, "server_pid": service_pid}
        specs = {
            "bare": {**spec, "base": bare_base, "server_pid": bare_pid},
            "service": service_spec,
        }
        results = measure_rounds(tmp, args.rounds, specs)
        if py_spy is None:
            return results, None
        profile_spec = {**service_spec, "warmup": 1.0}
        return results, profile(
            tmp, args.out, py_spy, service_pid, profile_spec, args.profile_seconds
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measured phase per target")
    parser.add_argument("--warmup", type=float, default=2.0, help="warm-up phase per target")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument(
        "--addresses", type=int, default=12_000, help="distinct addresses sent, in turn"
    )
    parser.add_argument("--rounds", type=int, default=3, help="measurements of each target")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--profile", action="store_true", help="py-spy the service afterwards")
    parser.add_argument("--profile-seconds", type=float, default=10.0)
    parser.add_argument("--py-spy", type=Path, help="the py-spy executable")
    parser.add_argument("--loadgen", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loadgen:
        loadgen(args.loadgen)
        return
    if not (0 < args.seconds <= 300 and 0 <= args.warmup <= 60 and args.concurrency > 0):
        parser.error("need 0 < --seconds <= 300, 0 <= --warmup <= 60 and --concurrency > 0")
    if args.profile and not 0 < args.profile_seconds <= 300:
        parser.error("need 0 < --profile-seconds <= 300")
    py_spy = find_py_spy(args.py_spy) if args.profile else None
    # A SIGTERM to this process still stops every process it started (the finally blocks).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    args.out.mkdir(parents=True, exist_ok=True)

    import aiohttp

    settings = {
        "seconds": args.seconds,
        "warmup": args.warmup,
        "concurrency": args.concurrency,
        "addresses": args.addresses,
        "rounds": args.rounds,
        "domains": list(DOMAINS),
        "plan": PLAN,
        "access_log": "on in both (RedactingAccessLogger at INFO, to a file)",
        "cpus": os.cpu_count(),
        "cpu_busy_before": machine_busy(),
        "python": platform.python_version(),
        "aiohttp": aiohttp.__version__,
        "platform": platform.platform(),
    }
    if (settings["cpu_busy_before"] or 0) > 0.2:
        print(
            f"warning: the CPUs were {settings['cpu_busy_before']:.0%} busy before the run; "
            "other work on this machine skews the numbers",
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory(prefix="bench-service-") as tmp_name:
        tmp = Path(tmp_name)
        try:
            rounds, hot = run(args, tmp, py_spy)
        except (Exception, SystemExit) as exc:
            if isinstance(exc, SystemExit) and not isinstance(exc.code, str):
                raise  # stopped (SIGTERM), not failed
            for log in ("service.log", "bare.log"):
                if (tmp / log).exists():
                    print(f"--- last lines of {log}:\n{tail(tmp / log)}", file=sys.stderr)
            raise
    elapsed = time.perf_counter() - started
    results = median_round(rounds)
    markdown = table(results, settings, [ratio(r) for r in rounds])
    document = {
        "settings": settings,
        "results": results,
        "rounds": rounds,
        "targets": TARGETS,
        "ratio_to_bare": ratio(results),
        "ratios_of_rounds": [ratio(r) for r in rounds],
        "markdown": markdown,
        "profile": hot,
        "run_seconds": elapsed,
    }
    (args.out / "service.json").write_text(json.dumps(document, indent=2))
    print(markdown)
    if hot is not None:
        print_hotspots(hot)
    print(f"\nrun took {elapsed:.1f} s; wrote {args.out / 'service.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
