"""Benchmark SMTP RCPT probing: the project's prober against one connection per address.

    python bench/bench_smtp.py [--addresses 100000] [--domains 2000] [--hosts 20]
                               [--sessions-per-host 2] [--rcpts-per-session 20]
                               [--naive-sample 20000] [--out bench/out]

Generates a loopback world (``smtp_world.json`` in --out): *domains* domains over *hosts* MX
hosts, each host a sandbox mail server on its own loopback address (127.0.0.100, .101, ...), a
few providers' hosts serving many domains (host weights 1/sqrt(rank)), addresses spread over the
domains with a mild skew (weights 1/sqrt(rank)); about 80% of the addresses exist, 15% are
unknown users, 2.5% full and 2.5% disabled mailboxes, and 1% of the domains are catch-all. No
greylisting, throttling or blocking: those are functional-test matters, this measures throughput.

The DNS server and the mail servers each run in their own process (this file with ``--serve``),
so they do not share the measured process's interpreter lock. Then, in one run:

1. the project's prober (``pipeline.core.mailboxes.prober.Prober``) over every address, with
   the project's session settings (``--sessions-per-host``, ``--rcpts-per-session``) and pacing
   turned off; it resolves MX hosts itself, so its time includes those DNS queries;
2. a naive prober over a random sample of ``--naive-sample`` addresses: one connection per
   address (EHLO, MAIL FROM, RCPT TO, RSET, QUIT with ``probe_session`` and one recipient) to the
   domain's first MX address, resolved beforehand (outside the timing), with at most
   sessions-per-host x hosts connections open at once, the most the project's prober may have.
   Its full-list time is extrapolated from the sample's rate, and the output says so.

Both answers are compared address by address on the sample, and with the world's truth. Prints a
Markdown table for bench/RESULTS.md and writes ``smtp.json`` to --out.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import os
import platform
import random
import select
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HELO = "bench.example.net"
MAIL_FROM = f"postmaster@{HELO}"
FIRST_HOST_ADDRESS = ipaddress.IPv4Address("127.0.0.100")
LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
UNPACED = 1_000_000_000  # RCPTs per minute: pacing never waits
SMTP_TIMEOUT = 5.0
SHARES = {"mailbox_ok": 0.80, "no_such_user": 0.15, "mailbox_full": 0.025}  # rest: disabled
CATCH_ALL_SHARE = 0.01
NAMES = ("anna", "ben", "chloe", "david", "emma", "felix", "grace", "hugo", "iris", "jack")
READY_SECONDS = 60.0  # a server process must print its address within this
REPLY_SECONDS = 60.0  # and answer a "stats" request within this


# --------------------------------------------------------------------------------------------
# The world


@dataclass(frozen=True)
class Generated:
    world: dict[str, Any]
    addresses: list[tuple[str, str]]  # (address, domain), in list order
    truth: dict[str, str]  # address -> expected Mailbox value (catch_all domains: catch_all)
    catch_all: frozenset[str]
    host_of: dict[str, str]  # domain -> MX host name


def make_world(addresses: int, domains: int, hosts: int, seed: int) -> Generated:
    """A loopback world and its address list; see the module docstring for the shape."""
    if hosts < 1 or domains < 1 or addresses < domains:
        raise SystemExit("need hosts >= 1, domains >= 1 and addresses >= domains")
    if int(FIRST_HOST_ADDRESS) + hosts - 1 > int(LOOPBACK.broadcast_address) - 1:
        raise SystemExit(f"--hosts {hosts} does not fit in 127.0.0.0/8 from {FIRST_HOST_ADDRESS}")
    rng = random.Random(seed)
    host_names = [f"mx.provider{j:03d}.test" for j in range(hosts)]
    host_addresses = [str(FIRST_HOST_ADDRESS + j) for j in range(hosts)]
    domain_names = [f"company{i:05d}.test" for i in range(domains)]
    assigned = rng.choices(range(hosts), weights=[(j + 1) ** -0.5 for j in range(hosts)], k=domains)
    host_of = {d: host_names[j] for d, j in zip(domain_names, assigned, strict=True)}
    n_catch_all = max(1, round(domains * CATCH_ALL_SHARE)) if domains >= 10 else 0
    catch_all = frozenset(rng.sample(domain_names, n_catch_all))

    # Every domain gets at least one address; the rest follow weights 1/sqrt(rank).
    picks = list(domain_names) + rng.choices(
        domain_names, weights=[(i + 1) ** -0.5 for i in range(domains)], k=addresses - domains
    )
    rng.shuffle(picks)
    listed: list[tuple[str, str]] = []
    truth: dict[str, str] = {}
    boxes: dict[str, dict[str, list[str]]] = {
        d: {"mailboxes": [], "full": [], "disabled": []} for d in domain_names
    }
    for i, domain in enumerate(picks):
        local = f"{NAMES[i % len(NAMES)]}.{i}"
        address = f"{local}@{domain}"
        listed.append((address, domain))
        if domain in catch_all:
            truth[address] = "catch_all"
            continue
        r = rng.random()
        if r < SHARES["mailbox_ok"]:
            truth[address], kind = "mailbox_ok", "mailboxes"
        elif r < SHARES["mailbox_ok"] + SHARES["no_such_user"]:
            truth[address], kind = "no_such_user", ""
        elif r < SHARES["mailbox_ok"] + SHARES["no_such_user"] + SHARES["mailbox_full"]:
            truth[address], kind = "mailbox_full", "full"
        else:
            truth[address], kind = "mailbox_disabled", "disabled"
        if kind:
            boxes[domain][kind].append(local)

    zones: dict[str, Any] = {}
    smtp: dict[str, Any] = {}
    for name, address in zip(host_names, host_addresses, strict=True):
        zones[name] = {"a": [address]}
        smtp[address] = {"name": name, "domains": {}}
    address_of = dict(zip(host_names, host_addresses, strict=True))
    for domain in domain_names:
        host = host_of[domain]
        zones[domain] = {"mx": [[10, host]]}
        served: dict[str, Any] = {"catch_all": True} if domain in catch_all else boxes[domain]
        smtp[address_of[host]]["domains"][domain] = served
    return Generated({"zones": zones, "smtp": smtp}, listed, truth, catch_all, host_of)


# --------------------------------------------------------------------------------------------
# The server processes (this file with --serve dns|smtp WORLD)


def serve(kind: str, world_path: str, max_seconds: float) -> None:
    """Serve until standard input closes or *max_seconds* pass; "stats" lines get counts.

    The first line printed is JSON with the address (DNS) or port (SMTP). For SMTP, each
    ``stats`` line read is answered with one JSON line of what the servers saw since the last
    one (sessions, most concurrent sessions and RCPTs per host, DATA attempts), then the counts
    are reset.
    """
    from pipeline.sandbox.dns_server import SandboxDNS, load_world
    from pipeline.sandbox.smtp_server import SandboxSMTP

    world = load_world(world_path)
    server: SandboxDNS | SandboxSMTP = (
        SandboxDNS(world, query_log_limit=1) if kind == "dns" else SandboxSMTP(world.smtp)
    )
    # SIGINT from a terminal's ^C reaches the whole process group: leave stopping to the parent.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with server:
        ready = (
            {"address": server.address}
            if isinstance(server, SandboxDNS)
            else {"port": server.port, "hosts": len(world.smtp)}
        )
        print(json.dumps(ready), flush=True)
        deadline = time.monotonic() + max_seconds
        pending = b""
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([0], [], [], min(left, 1.0))
            if not readable:
                continue
            chunk = os.read(0, 4096)
            if not chunk:
                return  # the parent closed our input (or is gone): stop
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip() == b"stats":
                    print(json.dumps(_smtp_stats(server, world.smtp)), flush=True)


def _smtp_stats(server: Any, hosts: Any) -> dict[str, Any]:
    if not hasattr(server, "rcpts"):
        return {"queries": server.query_count}
    rcpts = Counter(host for host, _, _ in server.rcpts())
    stats = {
        "hosts": {
            address: {
                "sessions": server.sessions(address),
                "max_open": server.max_concurrent_sessions(address),
                "rcpts": rcpts[address],
            }
            for address in hosts
        },
        "rcpts": sum(rcpts.values()),
        "data_attempts": server.data_attempts(),
    }
    server.reset_counts()
    return stats


class ServerProcess:
    """One ``--serve`` child: its ready line, stats on request, CPU seconds, a clean stop."""

    def __init__(self, kind: str, world: Path, max_seconds: float) -> None:
        self.kind = kind
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", kind, str(world)]
        self.proc = subprocess.Popen(
            [*command, "--max-seconds", str(max_seconds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
        )
        self._buffer = b""
        self.ready: dict[str, Any] = self._line(READY_SECONDS)

    def _line(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SystemExit(f"the {self.kind} server did not answer within {timeout:g} s")
            readable, _, _ = select.select([fd], [], [], left)
            if not readable:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise SystemExit(f"the {self.kind} server exited (code {self.proc.wait()})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        result: dict[str, Any] = json.loads(line)
        return result

    def stats(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"stats\n")
        self.proc.stdin.flush()
        return self._line(REPLY_SECONDS)

    def cpu_seconds(self) -> float:
        """User + system CPU seconds of the process (all threads), from /proc."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        """Close its input (it stops by itself), then SIGKILL if it has not ended in 20 s."""
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                self.proc.communicate(timeout=20)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@contextlib.contextmanager
def servers(world: Path, max_seconds: float) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    started: list[ServerProcess] = []
    try:
        started.append(ServerProcess("dns", world, max_seconds))
        started.append(ServerProcess("smtp", world, max_seconds))
        yield started[0], started[1]
    finally:
        for server in reversed(started):
            server.stop()


# --------------------------------------------------------------------------------------------
# The two probers


def _spread(counts: dict[str, int]) -> dict[str, float]:
    values = list(counts.values()) or [0]
    return {"max": max(values), "mean": sum(values) / len(values), "hosts": len(counts)}


async def run_project(
    args: argparse.Namespace, dns_address: str, port: int, gen: Generated
) -> tuple[dict[str, Any], dict[str, str]]:
    from pipeline.core.config import DnsConfig, VerifyConfig
    from pipeline.core.domains.dns import DnsStatus, Resolver
    from pipeline.core.lists import load_lists
    from pipeline.core.mailboxes.prober import Budget, Prober, Target
    from pipeline.core.mailboxes.smtp import SmtpSettings

    resolver = Resolver(DnsConfig(nameservers=(dns_address,), timeout=2.0))
    config = VerifyConfig(
        port=port,
        sessions_per_host=args.sessions_per_host,
        rcpts_per_session=args.rcpts_per_session,
        rcpts_per_minute_per_host=UNPACED,
        rcpts_per_minute_per_provider=UNPACED,
        greylist_delays=(),
        timeout=SMTP_TIMEOUT,
    )
    settings = SmtpSettings(port, HELO, MAIL_FROM, SMTP_TIMEOUT, loopback_only=True)
    prober = Prober(
        resolver, config, settings, load_lists(), Budget(None), on_result=lambda k, r: None
    )
    targets = [Target(a, a, d, DnsStatus.MX) for a, d in gen.addresses]
    try:
        cpu, started = time.process_time(), time.perf_counter()
        results = await asyncio.wait_for(prober.run(targets), args.max_seconds)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        await resolver.close()
    stats = prober.stats
    outcomes = {key: r.outcome.value for key, r in results.items()}
    expected = {"mailbox_ok", "no_such_user", "mailbox_full", "mailbox_disabled", "catch_all"}
    failures = Counter(
        f"{r.outcome.value}: {r.reply}" for r in results.values() if r.outcome.value not in expected
    )
    measured = {
        "addresses": len(targets),
        "answered": len(results),
        "rcpts": stats.rcpts,
        "sessions": stats.sessions,
        "sessions_per_host": _spread(stats.sessions_per_host),
        "rcpts_per_second": stats.rcpts / seconds,
        "addresses_per_second": len(targets) / seconds,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "dns_queries": resolver.queries_sent,
        "catch_all_found": sorted(d for d, yes in prober.catch_all.items() if yes),
        "outcomes": dict(Counter(outcomes.values())),
        "failures": dict(failures),
    }
    return measured, outcomes


async def resolve_first_mx(dns_address: str, domains: set[str]) -> dict[str, str]:
    """Each domain's first MX host's first loopback address (done before the naive run)."""
    from pipeline.core.config import DnsConfig
    from pipeline.core.domains.dns import DnsStatus, Resolver, host_addresses, mail_hosts

    resolver = Resolver(DnsConfig(nameservers=(dns_address,), timeout=2.0))
    gate = asyncio.Semaphore(100)
    first_host: dict[str, str] = {}
    try:

        async def domain_host(domain: str) -> None:
            async with gate:
                hosts = await mail_hosts(resolver, domain, DnsStatus.MX)
            if hosts:
                first_host[domain] = hosts[0]

        await asyncio.gather(*(domain_host(d) for d in sorted(domains)))
        addresses: dict[str, str] = {}
        for host in sorted(set(first_host.values())):  # once per host
            found = await host_addresses(resolver, host)
            loopback = [a for a in found if ipaddress.ip_address(a).is_loopback]
            if loopback:
                addresses[host] = loopback[0]
    finally:
        await resolver.close()
    return {d: addresses[h] for d, h in first_host.items() if h in addresses}


async def run_naive(
    args: argparse.Namespace, port: int, sample: list[tuple[str, str]], mx: dict[str, str]
) -> tuple[dict[str, Any], dict[str, str]]:
    from pipeline.core.mailboxes.smtp import Mailbox, SmtpSettings, classify, probe_session

    settings = SmtpSettings(port, HELO, MAIL_FROM, SMTP_TIMEOUT, loopback_only=True)
    concurrency = args.sessions_per_host * args.hosts
    gate = asyncio.Semaphore(concurrency)
    outcomes: dict[str, str] = {}
    per_host: Counter[str] = Counter()
    rcpts = 0

    async def one(address: str, domain: str) -> None:
        nonlocal rcpts
        host = mx.get(domain)
        if host is None:
            outcomes[address] = Mailbox.UNREACHABLE.value
            return
        async with gate:
            per_host[host] += 1
            session = await probe_session(host, [address], settings)
        reply = session.replies.get(address)
        if reply is not None:
            rcpts += 1
            outcomes[address] = classify(reply).value
        else:
            outcomes[address] = (session.failure or Mailbox.UNREACHABLE).value

    cpu, started = time.process_time(), time.perf_counter()
    await asyncio.wait_for(asyncio.gather(*(one(a, d) for a, d in sample)), args.max_seconds)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    measured = {
        "addresses": len(sample),
        "rcpts": rcpts,
        "sessions": sum(per_host.values()),
        "sessions_per_host": _spread(dict(per_host)),
        "concurrency": concurrency,
        "rcpts_per_second": rcpts / seconds,
        "addresses_per_second": len(sample) / seconds,
        "seconds": seconds,
        "cpu_seconds": cpu,
        "outcomes": dict(Counter(outcomes.values())),
    }
    return measured, outcomes


def compare(project: dict[str, str], naive: dict[str, str], gen: Generated) -> dict[str, Any]:
    """Address by address on the sample: project vs naive, and each vs the world's truth."""
    both = [a for a in naive if a in project]
    domain_of = dict(gen.addresses)
    mismatches: Counter[str] = Counter()
    at_catch_all: Counter[str] = Counter()
    examples: list[dict[str, str]] = []
    for address in both:
        p, n = project[address], naive[address]
        if p == n:
            continue
        if domain_of[address] in gen.catch_all:
            at_catch_all[f"{p} vs {n}"] += 1
            continue
        mismatches[f"{p} vs {n}"] += 1
        if len(examples) < 10:
            examples.append({"address": address, "project": p, "naive": n})

    def wrong(outcomes: dict[str, str], catch_all_as: str) -> int:
        def expected(a: str) -> str:
            return catch_all_as if gen.truth[a] == "catch_all" else gen.truth[a]

        return sum(outcomes[a] != expected(a) for a in outcomes)

    return {
        "compared": len(both),
        "mismatches": sum(mismatches.values()),
        "mismatch_kinds": dict(mismatches),
        "mismatch_examples": examples,
        "at_catch_all_domains": sum(at_catch_all.values()),
        "catch_all_kinds": dict(at_catch_all),
        # The truth for an address at a catch-all domain: the project says catch_all (the 250 is
        # meaningless there), the naive prober can only report the 250 it got.
        "project_wrong_vs_truth": wrong(project, "catch_all"),
        "naive_wrong_vs_truth": wrong(naive, "mailbox_ok"),
    }


# --------------------------------------------------------------------------------------------
# Report


def table(r: dict[str, Any]) -> str:
    p, n, x = r["project"], r["naive"], r["naive_extrapolated"]
    cfg = r["config"]

    def row(name: str, m: dict[str, Any], approx: str = "") -> str:
        spread = m["sessions_per_host"]
        return (
            f"| {name} | {m['addresses']:,} | {approx}{m['rcpts']:,} | {approx}{m['sessions']:,} "
            f"| {approx}{spread['max']:,.0f} / {approx}{spread['mean']:,.0f} "
            f"| {m['rcpts_per_second']:,.0f} | {approx}{m['seconds']:,.1f} |"
        )

    lines = [
        "| prober | addresses | RCPTs | sessions | sessions per MX (max / mean) | RCPTs/s "
        "| seconds |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row(
            f"listclean `Prober` ({cfg['sessions_per_host']} sessions/host, "
            f"≤ {cfg['rcpts_per_session']} RCPTs/session)",
            p,
        ),
        row(f"naive: 1 connection per address, ≤ {n['concurrency']} open (measured sample)", n),
    ]
    if x is not None:
        lines.append(row("naive, extrapolated to the full list", x, "≈"))
    c = r["comparison"]
    lines += [
        "",
        f"Speed: the project's prober answered all {p['addresses']:,} addresses in "
        f"{p['seconds']:,.1f} s; the naive prober "
        + (
            f"would take ≈ {x['seconds']:,.0f} s (extrapolated from its measured "
            f"{n['addresses']:,}-address sample at {n['addresses_per_second']:,.0f} addresses/s)"
            if x is not None
            else f"took {n['seconds']:,.1f} s"
        )
        + f": {r['speedup_time']:.1f}x faster per address; RCPTs/s ratio "
        f"{r['speedup_rcpts_per_second']:.1f}x.",
        f"Agreement: {c['compared']:,} addresses probed by both; {c['mismatches']} mismatches "
        f"outside catch-all domains; {c['at_catch_all_domains']:,} differ at the "
        f"{len(r['world']['catch_all_domains'])} catch-all domains "
        f"({', '.join(f'{k}: {v}' for k, v in c['catch_all_kinds'].items()) or 'none'}), "
        "where the project's prober asks one random local part, gets 250 and reports every "
        "address as catch_all without asking, while the naive prober reports the meaningless "
        f"250 as mailbox_ok. Against the world's truth: project {c['project_wrong_vs_truth']} "
        f"wrong, naive {c['naive_wrong_vs_truth']} wrong."
        + (
            " Mismatches: "
            + ", ".join(f"{k}: {v}" for k, v in c["mismatch_kinds"].items())
            + " (project vs naive); the project's prober answered other than a mailbox for "
            + ", ".join(f"{v:,} x {k!r}" for k, v in p["failures"].items())
            + "."
            if c["mismatches"] or p["failures"]
            else ""
        ),
        f"CPU: prober process {p['cpu_seconds']:.1f} s and mail-server process "
        f"{r['server_cpu']['project']:.1f} s during the project's run; "
        f"{n['cpu_seconds']:.1f} s and {r['server_cpu']['naive']:.1f} s during the naive run "
        f"({r['machine']['cpus']} cores). The project's time includes its own "
        f"{p['dns_queries']:,} DNS queries for {r['world']['domains']:,} domains on "
        f"{r['world']['hosts']} MX hosts"
        + " (the prober keeps at most 100 in flight); the naive prober's MX addresses were "
        "resolved beforehand.",
        "Mail servers saw: "
        + "; ".join(
            f"{name} {seen['rcpts']:,} RCPTs in "
            f"{sum(h['sessions'] for h in seen['hosts'].values()):,} sessions, at most "
            f"{max((h['max_open'] for h in seen['hosts'].values()), default=0)} open to one host"
            for name, seen in r["server_seen"].items()
        )
        + f"; DATA commands: {sum(s['data_attempts'] for s in r['server_seen'].values())}.",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Main


async def measure(
    args: argparse.Namespace, gen: Generated, dns: ServerProcess, smtp: ServerProcess
) -> dict[str, Any]:
    dns_address, port = dns.ready["address"], smtp.ready["port"]
    smtp.stats()  # start the counts from zero

    print(f"project prober: {len(gen.addresses):,} addresses ...", file=sys.stderr, flush=True)
    server_cpu = smtp.cpu_seconds()
    project, project_outcomes = await run_project(args, dns_address, port, gen)
    project_cpu = smtp.cpu_seconds() - server_cpu
    project_server = smtp.stats()

    sample_size = min(args.naive_sample, len(gen.addresses))
    sample = random.Random(args.seed + 1).sample(gen.addresses, sample_size)
    mx = await resolve_first_mx(dns_address, {d for _, d in sample})
    print(f"naive prober: {sample_size:,} addresses ...", file=sys.stderr, flush=True)
    server_cpu = smtp.cpu_seconds()
    naive, naive_outcomes = await run_naive(args, port, sample, mx)
    naive_cpu = smtp.cpu_seconds() - server_cpu
    naive_server = smtp.stats()

    full = len(gen.addresses)
    extrapolated = None
    if sample_size < full:
        scale = full / sample_size
        extrapolated = {
            "addresses": full,
            "rcpts": round(naive["rcpts"] * scale),
            "sessions": round(naive["sessions"] * scale),
            "sessions_per_host": {
                "max": naive["sessions_per_host"]["max"] * scale,
                "mean": naive["sessions_per_host"]["mean"] * scale,
                "hosts": naive["sessions_per_host"]["hosts"],
            },
            "rcpts_per_second": naive["rcpts_per_second"],
            "seconds": full / naive["addresses_per_second"],
            "note": "extrapolated from the sample's addresses/s, not measured",
        }
    naive_full_seconds = extrapolated["seconds"] if extrapolated else naive["seconds"]
    return {
        "project": project,
        "naive": naive,
        "naive_extrapolated": extrapolated,
        "speedup_time": naive_full_seconds / project["seconds"],
        "speedup_rcpts_per_second": project["rcpts_per_second"] / naive["rcpts_per_second"],
        "comparison": compare(project_outcomes, naive_outcomes, gen),
        "server_cpu": {"project": project_cpu, "naive": naive_cpu},
        "server_seen": {"project": project_server, "naive": naive_server},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addresses", type=int, default=100_000)
    parser.add_argument("--domains", type=int, default=2_000)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--sessions-per-host", type=int, default=2)
    parser.add_argument("--rcpts-per-session", type=int, default=20)
    parser.add_argument("--naive-sample", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--max-seconds", type=float, default=1800.0, help="limit for each measured run"
    )
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--serve", nargs=2, metavar=("dns|smtp", "WORLD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve[0], args.serve[1], args.max_seconds)
        return
    if min(args.sessions_per_host, args.rcpts_per_session, args.naive_sample) < 1:
        raise SystemExit("--sessions-per-host, --rcpts-per-session and --naive-sample must be ≥ 1")

    began = time.perf_counter()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    gen = make_world(args.addresses, args.domains, args.hosts, args.seed)
    world_path = out / "smtp_world.json"
    world_path.write_text(json.dumps(gen.world))
    # The servers outlive both measured runs (plus set-up) and then stop by themselves.
    with servers(world_path, 2 * args.max_seconds + 600) as (dns, smtp):
        results = asyncio.run(measure(args, gen, dns, smtp))
    truth = Counter(gen.truth.values())
    results["world"] = {
        "addresses": len(gen.addresses),
        "domains": args.domains,
        "hosts": args.hosts,
        "domains_per_host": _spread(dict(Counter(gen.host_of.values()))),
        "addresses_per_domain_max": max(Counter(d for _, d in gen.addresses).values()),
        "truth": dict(truth),
        "catch_all_domains": sorted(gen.catch_all),
        "seed": args.seed,
    }
    results["config"] = {
        "sessions_per_host": args.sessions_per_host,
        "rcpts_per_session": args.rcpts_per_session,
        "rcpts_per_minute": UNPACED,
        "naive_sample": min(args.naive_sample, len(gen.addresses)),
        "smtp_timeout": SMTP_TIMEOUT,
    }
    results["machine"] = {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    results["total_seconds"] = time.perf_counter() - began
    (out / "smtp.json").write_text(json.dumps(results, indent=2))
    print(table(results))
    print(f"\n(bench run: {results['total_seconds']:.0f} s; results in {out / 'smtp.json'})")


if __name__ == "__main__":
    main()
