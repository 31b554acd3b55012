"""SMTP checks on a cluster (a LocalCluster of two worker processes) against the sandbox world
served by the test itself, so that its mail servers tell which addresses were asked:

- the Dask run probes the addresses the local run probes, whatever budget binds, and writes
  the same rows; each group of providers is probed by one owner task, run once;
- a worker SIGKILLed while it probes: the same rows, no address asked twice but those in
  flight, and the budget spent as the local run spends it;
- a second run on the same cluster and cache sends no DNS query and no RCPT, with the caches
  on the shared folder beside the output and in PostgreSQL, and from another cache directory.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from distributed import Client, get_task_stream

from pipeline.cli import main
from pipeline.sandbox.dns_server import SandboxDNS, load_world
from pipeline.sandbox.files import SANDBOX_SETTINGS, SANDBOX_WORLD
from pipeline.sandbox.smtp_server import SandboxSMTP
from pipeline.sandbox.world import World, world_from_dict
from tests.stages.dask.clusters import two_workers

COLUMNS = ["EMAIL", "VERDICT", "SCORE", "REASON", "DUPLICATE", "DETAIL"]
CANARIES = ("gmail.com", "outlook.com", "yahoo.com")  # [dns] canaries


def mailboxes() -> dict[str, list[str]]:
    """Each mail domain of the sandbox world, and the mailboxes its servers know."""
    raw = json.loads(Path(SANDBOX_WORLD).read_text())
    found: dict[str, set[str]] = {}
    for host in raw["smtp"].values():
        for domain, served in host.get("domains", {}).items():
            found.setdefault(domain, set()).update(served.get("mailboxes", []))
    return {d: sorted(m) for d, m in sorted(found.items())}


def people_list(
    path: Path,
    rows: int = 2_400,
    seed: int = 27,
    leave_out: tuple[str, ...] = (),
    real: float = 0.7,
) -> list[str]:
    """*rows* addresses over the sandbox world's mail domains (but *leave_out*), some
    repeated: a share *real* of them mailboxes that exist, the rest made up."""
    rng = random.Random(seed)
    known = mailboxes()
    domains = [d for d in known if d not in leave_out]
    emails = []
    for _ in range(rows):
        domain = rng.choice(domains)
        exists = known[domain] and rng.random() < real
        local = rng.choice(known[domain]) if exists else f"user{rng.randrange(3_000)}"
        emails.append(f"{local}@{domain}")
    pl.DataFrame({"email": emails}).write_csv(path)
    return emails


def hosts_of(world: World) -> set[str]:
    """The world's mail servers (their addresses)."""
    return set(world.smtp)


def slow_world(delay_ms: int = 0) -> World:
    raw = json.loads(Path(SANDBOX_WORLD).read_text())
    for host in raw["smtp"].values():
        host["delay_ms"] = delay_ms
    return world_from_dict(raw)


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[SandboxDNS, SandboxSMTP]]:
    w = load_world(SANDBOX_WORLD)
    with SandboxDNS(w, query_log_limit=1_000_000) as dns, SandboxSMTP(w.smtp) as smtp:
        yield dns, smtp


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    with two_workers(tmp_path_factory.mktemp("workers")) as client:
        yield client


def arguments(
    tmp: Path, dns: SandboxDNS, smtp: SandboxSMTP, output: str, cache: str, *extra: str
) -> list[str]:
    return [
        "clean",
        f"file://{tmp / 'list.csv'}",
        "-o",
        f"file://{tmp / output}",
        "--resolver",
        dns.address,
        "--smtp-port",
        str(smtp.port),
        "--helo",
        "probe.example.net",
        "--config",
        str(SANDBOX_SETTINGS),
        "--cache-dir",
        str(tmp / cache),
        "--verify",
        "smtp",
        "--quiet",
        "--memory",
        "64",
        *extra,
    ]


def clean(
    tmp: Path, dns: SandboxDNS, smtp: SandboxSMTP, output: str, cache: str, *extra: str
) -> Any:
    assert main(arguments(tmp, dns, smtp, output, cache, *extra)) == 0
    return json.loads((tmp / output.replace(".parquet", ".summary.json")).read_text())


def asked(smtp: SandboxSMTP) -> Counter[str]:
    """The addresses the mail servers were asked about (not the catch-all probes), and how
    often; the counts start again."""
    counts = Counter(r.lower() for _, r, _ in smtp.rcpts() if not r.startswith("lc-probe"))
    smtp.reset_counts()
    return counts


def probed_domains(smtp: SandboxSMTP) -> set[str]:
    return {r.rsplit("@", 1)[1] for _, r, _ in smtp.rcpts() if r.startswith("lc-probe")}


def dask(cluster: Client) -> tuple[str, ...]:
    return ("--engine", "dask", "--scheduler", cluster.scheduler.address)


@pytest.mark.parametrize("budget", [300, 600])
def test_the_dask_run_probes_what_the_local_run_probes(
    world: tuple[SandboxDNS, SandboxSMTP], cluster: Client, tmp_path: Path, budget: int
) -> None:
    dns, smtp = world
    people_list(tmp_path / "list.csv", real=0.0)  # "no such user" for most: held, then kept
    limit = ("--budget", str(budget))
    smtp.reset_counts()
    local = clean(tmp_path, dns, smtp, "local.parquet", "cache-local", *limit)
    local_probes = probed_domains(smtp)
    by_local = asked(smtp)
    with get_task_stream(cluster) as stream:
        spread = clean(tmp_path, dns, smtp, "dask.parquet", "cache-dask", *limit, *dask(cluster))
    assert probed_domains(smtp) == local_probes
    by_dask = asked(smtp)
    assert by_dask == by_local and len(by_local) > 50  # the same addresses, as often
    assert spread["rcpts_sent"] == local["rcpts_sent"] <= budget
    assert spread["reasons"] == local["reasons"]
    same_rows(tmp_path / "dask.parquet", tmp_path / "local.parquet")
    owners = Counter(str(t["key"]) for t in stream.data if str(t["key"]).startswith("probe_group"))
    assert len(owners) == 2 and set(owners.values()) == {1}  # two owners, each run once


def test_a_second_run_sends_nothing_from_the_shared_folder(
    world: tuple[SandboxDNS, SandboxSMTP], cluster: Client, tmp_path: Path
) -> None:
    """The caches live beside the output (.listclean-cache/), where every worker reaches
    them: a second run from another cache directory sends no DNS query and no RCPT. The first
    asks each canary once (the driver's health check; the owners connect to the canaries' mail
    hosts it found)."""
    dns, smtp = world
    people_list(tmp_path / "list.csv", rows=600, leave_out=CANARIES)
    dns.reset_counts()
    first = clean(tmp_path, dns, smtp, "first.parquet", "cache-a", *dask(cluster))
    assert first["rcpts_sent"] > 0 and first["dns_queries"] > 0
    asked_dns = Counter(dns.queries())
    assert [asked_dns[(canary, "MX")] for canary in CANARIES] == [1, 1, 1]
    assert (tmp_path / ".listclean-cache" / "domains").is_dir()
    assert (tmp_path / ".listclean-cache" / "mailboxes").is_dir()
    assert not (tmp_path / ".listclean-cache" / "runs").exists() or not any(
        (tmp_path / ".listclean-cache" / "runs").iterdir()
    )  # each run's own folder goes with it
    asked(smtp)
    dns.reset_counts()
    again = clean(tmp_path, dns, smtp, "again.parquet", "cache-b", *dask(cluster))
    assert again["dns_queries"] == 0 and again["rcpts_sent"] == 0
    assert dns.query_count == 0 and not asked(smtp)
    expected = pl.read_parquet(tmp_path / "first.parquet").select(COLUMNS)
    assert pl.read_parquet(tmp_path / "again.parquet").select(COLUMNS).equals(expected)


def test_a_second_run_sends_nothing_from_postgresql(
    world: tuple[SandboxDNS, SandboxSMTP], cluster: Client, tmp_path: Path, pg_url: str
) -> None:
    """With [cache] db a PostgreSQL database, every worker reads and writes it: a second run,
    from another cache directory and another output folder, sends nothing."""
    dns, smtp = world
    people_list(tmp_path / "list.csv", rows=600)
    config = tmp_path / "pg.toml"
    config.write_text(SANDBOX_SETTINGS.read_text() + f'\n[cache]\ndb = "{pg_url}"\n')
    shared = ("--config", str(config), *dask(cluster))
    first = clean(tmp_path, dns, smtp, "one/first.parquet", "cache-a", *shared)
    assert first["rcpts_sent"] > 0 and first["dns_queries"] > 0
    assert not (tmp_path / "one" / ".listclean-cache" / "domains").exists()
    asked(smtp)
    dns.reset_counts()
    again = clean(tmp_path, dns, smtp, "two/again.parquet", "cache-b", *shared)
    assert again["dns_queries"] == 0 and again["rcpts_sent"] == 0
    assert dns.query_count == 0 and not asked(smtp)
    expected = pl.read_parquet(tmp_path / "one" / "first.parquet").select(COLUMNS)
    assert pl.read_parquet(tmp_path / "two" / "again.parquet").select(COLUMNS).equals(expected)


def same_rows(got: Path, expected: Path) -> None:
    """The rows of *got* are those of *expected* (the rows that differ shown if not)."""
    a = pl.read_parquet(got).select(COLUMNS).with_row_index()
    b = pl.read_parquet(expected).select(COLUMNS).with_row_index()
    differ = a.join(b, on="index", suffix="_expected").filter(
        pl.any_horizontal(pl.col(c).ne_missing(pl.col(f"{c}_expected")) for c in COLUMNS)
    )
    shown = ("EMAIL", "REASON", "REASON_expected", "DETAIL", "DETAIL_expected")
    assert differ.is_empty(), differ.select(shown).rows()


def worker_pids(client: Client) -> dict[str, int]:
    pids: dict[str, int] = client.run(os.getpid)
    return pids


def probing(client: Client) -> list[str]:
    """The workers running an owner of the SMTP checks now."""

    def running(dask_worker: Any) -> bool:
        return any("probe_group" in str(key) for key in dask_worker.state.executing)

    found: dict[str, bool] = client.run(running)
    return [address for address, busy in found.items() if busy]


def test_a_worker_killed_while_it_probes(tmp_path: Path) -> None:
    """SIGKILL the worker of an SMTP owner while it probes: its task runs again on the other
    worker, from what was committed. Same rows as the local run; no address asked twice but
    those that were in flight; the budget spent as the local run spends it. (The greylisting
    domain is left out: an address deferred and not yet asked again has no answer to commit,
    and is asked again from the start after a lost worker, as after a killed run.)"""
    people_list(tmp_path / "list.csv", leave_out=("initech.io",))
    budget = ("--budget", "900")
    w = slow_world(delay_ms=8)  # every reply after the banner takes a moment
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        local = clean(tmp_path, dns, smtp, "local.parquet", "cache-local", *budget)
        by_local = asked(smtp)
        with two_workers(tmp_path / "workers") as client:
            args = arguments(tmp_path, dns, smtp, "dask.parquet", "cache-dask", *budget)
            args += ["--engine", "dask", "--scheduler", client.scheduler.address]
            run = subprocess.Popen([sys.executable, "-m", "pipeline", *args])
            victim = None
            deadline = time.monotonic() + 120
            while victim is None and time.monotonic() < deadline and run.poll() is None:
                busy = probing(client)
                if busy and len(smtp.rcpts()) > 100:
                    victim = busy[0]
                time.sleep(0.05)
            assert victim is not None, "no owner was seen probing"
            os.kill(worker_pids(client)[victim], signal.SIGKILL)
            assert run.wait(timeout=300) == 0
    spread = json.loads((tmp_path / "dask.summary.json").read_text())
    by_dask = asked(smtp)
    assert set(by_dask) == set(by_local)
    twice = {a: n - by_local[a] for a, n in by_dask.items() if n > by_local[a]}
    # In flight: one RCPT per open session, at most sessions_per_host (2) to each mail host.
    assert set(twice.values()) <= {1} and len(twice) <= 2 * len(hosts_of(w))
    assert spread["rcpts_sent"] == local["rcpts_sent"] <= 900
    same_rows(tmp_path / "dask.parquet", tmp_path / "local.parquet")
