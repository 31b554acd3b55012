"""Benchmark the nightly run's history: what remembering a run costs, and how answers fall due.

    python bench/bench_nightly.py [--rows N] [--domains N] [--rounds N] [--out bench/out-nightly]
    python bench/bench_nightly.py --month-only [--addresses N]

1. **The history's cost, paired.** A generated list of ``--rows`` rows (``bench/generate.py``)
   is cleaned once cold (the domain cache filled, the list's first run recorded), then a second
   night's list is made from it with 3% of its rows given new addresses. Its warm run is timed,
   in rounds that alternate, with the history off (``[history] record = false``: the baseline)
   and on (the run compared with the first night's, recorded, and ``--changes`` written); each
   "on" run starts from the same history (a copy of the one the cold run left). Each run is a
   fresh process timed by ``bench/measure.py`` (wall time from its start, peak RSS).
2. **A simulated month of nights.** ``--addresses`` addresses verified by the real budget order
   (:class:`~pipeline.core.mailboxes.checkers.SmtpChecker`'s ``assign``) against a mailbox
   cache on a simulated clock, one night a day: the first night verifies the whole list, every
   later night has a budget of 10% of the list; each answer the budget reaches is answered
   again that night (no mail server: the order and the lifetimes are what is measured). It
   counts the answers that fall due each night, with ``verify.ttl_floor`` at its default and
   at 1.0 (no jitter), for 90 nights: the first cycle ends on night 31, when the last answer
   of night 1 has fallen due (the TTL is 30 days).

Prints Markdown tables for bench/RESULTS.md and writes ``nightly.json`` into ``--out``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_clean import run, served_world  # noqa: E402

from pipeline.core.config import VerifyConfig  # noqa: E402
from pipeline.core.lists import load_lists  # noqa: E402
from pipeline.core.mailboxes.cache import MailboxCache  # noqa: E402
from pipeline.core.mailboxes.checkers import SmtpChecker  # noqa: E402
from pipeline.core.mailboxes.smtp import smtp_settings  # noqa: E402
from pipeline.core.mailboxes.types import Budget, Mailbox, MailboxResult  # noqa: E402

DAY = 86400.0
NEW_SHARE = 0.03


def second_night(first: Path, second: Path) -> int:
    """The first night's list with 3% of its rows given addresses never seen; how many."""
    frame = pl.read_csv(first, infer_schema=False)
    renew = (pl.col("id").cast(pl.Int64) % round(1 / NEW_SHARE) == 0) & pl.col(
        "email"
    ).str.contains("@")
    fresh = pl.concat_str(
        pl.lit("fresh"), pl.col("id"), pl.lit("@"), pl.col("email").str.split("@").list.last()
    )
    out = frame.with_columns(email=pl.when(renew).then(fresh).otherwise(pl.col("email")))
    out.write_csv(second)
    return int(frame.select(renew.sum()).item())


def clean(out: Path, name: str, source: Path, config: Path, *extra: str) -> dict[str, Any]:
    args = [
        "clean", str(source), "-o", str(out / f"{name}.parquet"), "--config", str(config),
        "--cache-dir", str(out / "cache"), "--quiet", "--list-name", "bench", *extra,
    ]  # fmt: skip
    measured = run(out, name, args)
    summary = json.loads((out / f"{name}.summary.json").read_text())
    measured.update(
        rows=summary["rows_in"],
        distinct=summary["distinct_addresses"],
        since_last_run=summary["since_last_run"],
        stages={s["name"]: s["seconds"] for s in summary["stages"]},
    )
    return measured


def paired(args: argparse.Namespace) -> dict[str, Any]:
    out: Path = args.out
    subprocess.run(
        [sys.executable, str(HERE / "generate.py"), "--rows", str(args.rows),
         "--domains", str(args.domains), "--out", str(out)],
        check=True,
    )  # fmt: skip
    shutil.rmtree(out / "cache", ignore_errors=True)
    renewed = second_night(out / "list.csv", out / "night2.csv")
    history = out / "cache" / "history.sqlite"
    with served_world(out / "world.json", out) as (_, base):
        on, off = out / "on.toml", out / "off.toml"
        on.write_text(base.read_text())
        off.write_text(base.read_text() + "\n[history]\nrecord = false\n")
        cold = clean(out, "cold", out / "list.csv", on)
        shutil.copy(history, out / "history-after-night1.sqlite")
        runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
        for round_ in range(args.rounds):
            order = ("off", "on") if round_ % 2 == 0 else ("on", "off")
            for kind in order:
                for suffix in ("", "-wal", "-shm"):
                    Path(f"{history}{suffix}").unlink(missing_ok=True)
                shutil.copy(out / "history-after-night1.sqlite", history)
                extra = ("--changes", str(out / "changes.csv")) if kind == "on" else ()
                config = on if kind == "on" else off
                runs[kind].append(
                    clean(out, f"warm-{kind}-{round_}", out / "night2.csv", config, *extra)
                )
    return {"cold": cold, "renewed_rows": renewed, "runs": runs}


def median(values: list[float]) -> float:
    return statistics.median(values)


def paired_table(r: dict[str, Any]) -> str:
    off, on = r["runs"]["off"], r["runs"]["on"]
    lines = [
        "| warm run, second night | seconds (median, range) | CPU seconds (median, range) "
        "| peak RSS MiB (median) |",
        "|---|---|---|---:|",
    ]
    for name, runs in (("history off (baseline)", off), ("history on, --changes", on)):
        secs = [m["process_seconds"] for m in runs]
        cpu = [m["cpu_seconds"] for m in runs]
        rss = [m["peak_rss_mib"] for m in runs]
        lines.append(
            f"| {name} | {median(secs):.2f} ({min(secs):.2f}-{max(secs):.2f}) | "
            f"{median(cpu):.2f} ({min(cpu):.2f}-{max(cpu):.2f}) | {median(rss):.0f} |"
        )
    ratios = [b["process_seconds"] / a["process_seconds"] for a, b in zip(off, on, strict=True)]
    cpus = [b["cpu_seconds"] / a["cpu_seconds"] for a, b in zip(off, on, strict=True)]
    mem = [b["peak_rss_mib"] / a["peak_rss_mib"] for a, b in zip(off, on, strict=True)]
    since = on[0]["since_last_run"]
    lines += [
        "",
        f"rows: {on[0]['rows']:,}; distinct addresses: {on[0]['distinct']:,}; rows given a new "
        f"address: {r['renewed_rows']:,}; since_last_run: new {since['new']:,}, gone "
        f"{since['gone']:,}, unchanged {since['unchanged']:,}",
        f"time on/off, round by round: median {median(ratios):.3f} "
        f"({min(ratios):.3f}-{max(ratios):.3f}); CPU time on/off: median {median(cpus):.3f} "
        f"({min(cpus):.3f}-{max(cpus):.3f}); peak RSS on/off: median {median(mem):.3f} "
        f"({min(mem):.3f}-{max(mem):.3f})",
        f"history stage, on: median {median([m['stages']['history'] for m in on]):.3f} s",
    ]
    return "\n".join(lines)


def rows_of(addresses: int, domains: int = 200) -> pl.DataFrame:
    """*addresses* the address step would probe, over *domains* good domains."""
    keys = [f"person{i}@d{i % domains}.example" for i in range(addresses)]
    n = len(keys)
    return pl.DataFrame(
        {
            "KEY": keys, "EMAIL": keys, "DOMAIN": [k.split("@")[1] for k in keys],
            "MX": [f"mx.{k.split('@')[1]}" for k in keys], "DNS_STATUS": ["mx"] * n,
            "SYNTAX": ["ok"] * n, "DUPLICATE": [False] * n, "DISPOSABLE": [False] * n,
            "SUGGESTED_DOMAIN": [""] * n,
        }
    )  # fmt: skip


class Clock:
    def __init__(self) -> None:
        self.at = 1_800_000_000.0

    def __call__(self) -> float:
        return self.at


def month(addresses: int, floor: float, nights: int = 90) -> list[dict[str, int]]:
    """Night by night: answers that fell due since the night before, the due answers waiting
    (fallen due, not yet refreshed), and the answers the budget refreshed."""
    clock = Clock()
    lists = load_lists()
    frame = rows_of(addresses)
    config = VerifyConfig(helo="probe.example.net", mail_from="p@example.net", ttl_floor=floor)
    settings = smtp_settings(config)
    with (
        tempfile.TemporaryDirectory() as folder,
        MailboxCache(Path(folder) / "mailboxes.sqlite", config, clock) as cache,
    ):
        cache.put_catch_all({d: False for d in frame["DOMAIN"].unique()})
        left = 0  # due answers the last night's budget did not reach
        nights_seen = []
        for night in range(nights):
            budget = Budget(None if night == 0 else addresses // 10)
            work = SmtpChecker(config, settings, cache, budget).assign(frame, lists)
            fell_due = work.refresh.due - left
            for target in work.reached:
                cache.put(target.key, MailboxResult(Mailbox.OK, "250 ok", clock.at))
            left = work.refresh.due - work.refresh.refreshed
            nights_seen.append(
                {"night": night + 1, "fell_due": fell_due, "waiting": work.refresh.due,
                 "refreshed": work.refresh.refreshed}
            )  # fmt: skip
            clock.at += DAY
            cache.put_catch_all({d: False for d in frame["DOMAIN"].unique()})
    return nights_seen


def month_table(addresses: int, runs: dict[str, list[dict[str, int]]]) -> str:
    lines = [
        f"{addresses:,} addresses, verify.ttl_good 30 days; night 1 verifies the whole list, "
        f"every later night has a budget of {addresses // 10:,} (10% of the list).",
        "",
        "| ttl_floor | nights | falling due per night: mean | max | max / mean "
        "| waiting unrefreshed at most | nights with any waiting |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for floor, nights in runs.items():
        # The first cycle: the answers of night 1 fall due by night 1 + the TTL's 30 days.
        for first, last in ((32, 61), (32, 90)):
            span = [n for n in nights if first <= n["night"] <= last]
            fell = [n["fell_due"] for n in span]
            waiting = [n["waiting"] - n["refreshed"] for n in span]
            mean = sum(fell) / len(fell)
            lines.append(
                f"| {floor} | {first}-{last} | {mean:,.0f} | {max(fell):,} | "
                f"{max(fell) / mean if mean else 0:.2f} | {max(waiting):,} | "
                f"{sum(1 for w in waiting if w):,} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--domains", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--addresses", type=int, default=20_000)
    parser.add_argument("--month-only", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "out-nightly")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    if not args.month_only:
        results["paired"] = paired(args)
        print(paired_table(results["paired"]))
        print()
    default = VerifyConfig().ttl_floor
    results["month"] = {str(f): month(args.addresses, f) for f in (default, 1.0)}
    print(month_table(args.addresses, results["month"]))
    (args.out / "nightly.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
