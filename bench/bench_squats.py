"""Typo suggestions on squatted and plain typo domains of every major provider, and on real
domains that must be left alone: `listclean clean` measured against the squat world's truth.

    python bench/bench_squats.py [--half report|tune] [--seed N] [--keep DIR] [--markdown FILE]
                                 [--code DIR]

Generates the squat world (worlds/squats/world.py) at run time from packages fetched into
bench/out/sources (npm and PyPI, pinned versions; see worlds/squats/sources.py), writes it into
a temporary directory, and cleans its list twice with fresh caches: in the sandbox with
``--verify none`` (online: DNS answers, the world's MX hosts) and ``--offline`` (the lists
alone). Per distinct domain (one address each), it prints:

* squats (typo domains with a mail host): right suggestion / none / wrong (another domain), per
  provider, per typing operation, per kind of mail host (own name, parking) and TLD;
* plain typos (NXDOMAIN): the same, online and offline;
* real near-provider domains and ordinary organisations: any suggestion given (must be none),
  and how many of the near ones listclean's shipped lists know;
* the rows' verdicts: a squat given a suggestion must be Risky ``typo_suspected``, never
  Invalid and never SAFE_TO_SEND.

``--half tune`` is the world the rule may be tuned on; ``--half report`` (the default) is held
out: its typo domains are disjoint from the tune half's, and its real domains come from other
sources than both listclean's shipped lists and the tune half.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.sandbox.files import SANDBOX_SETTINGS  # noqa: E402
from worlds.evaluation.names import shipped_list  # noqa: E402
from worlds.squats.sources import fetch  # noqa: E402
from worlds.squats.typos import OPERATIONS  # noqa: E402
from worlds.squats.world import generate  # noqa: E402

SEEDS = {"tune": 7, "report": 20261126}
SOURCES = ROOT / "bench" / "out" / "sources"


def settings(work: Path) -> Path:
    """The sandbox settings with a patient resolver: a loaded machine must not turn a slow
    answer into a timeout (and so into the offline rule) from one run to the next."""
    path = work / "settings.toml"
    text = SANDBOX_SETTINGS.read_text(encoding="utf-8").replace("timeout = 0.3", "timeout = 3.0")
    path.write_text(text, encoding="utf-8")
    return path


def clean(work: Path, name: str, extra: list[str], code: Path) -> tuple[pl.DataFrame, float]:
    out = work / f"{name}.parquet"
    command = [sys.executable, "-m", "pipeline", "clean", str(work / "list.csv"), "-o", str(out)]
    command += ["--config", str(settings(work)), "--cache-dir", str(work / f"cache-{name}")]
    started = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(code)}
    run = [*command, "--quiet", "--verify", "none", *extra]
    subprocess.run(run, check=True, cwd=code, env=env)
    seconds = time.perf_counter() - started
    output = pl.read_parquet(out).rename({"input_email": "email"})
    columns = ("email", "VERDICT", "REASON", "SUGGESTION", "SAFE_TO_SEND", "DETAIL")
    return output.select(*columns), seconds


def judged(truth: pl.DataFrame, output: pl.DataFrame) -> pl.DataFrame:
    rows = truth.join(output, on="email", how="left")
    if rows["VERDICT"].null_count():
        raise SystemExit("some addresses of the list are missing from the output")
    suggested = pl.col("SUGGESTION").str.split("@").list.last().fill_null("")
    return rows.with_columns(suggested.alias("suggested")).with_columns(
        outcome=pl.when(pl.col("suggested") == "")
        .then(pl.lit("none"))
        .when(pl.col("suggested") == pl.col("intended"))
        .then(pl.lit("right"))
        .otherwise(pl.lit("wrong"))
    )


class Report:
    """Prints, and keeps the Markdown tables for ``--markdown``."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def say(self, text: str = "") -> None:
        print(text)
        self.lines.append(text)

    def table(self, title: str, rows: pl.DataFrame, by: str, sort: str | None = None) -> None:
        counts = (
            rows.group_by(by)
            .agg(
                pl.len().alias("domains"),
                (pl.col("outcome") == "right").sum().alias("right"),
                (pl.col("outcome") == "wrong").sum().alias("wrong"),
            )
            .sort(sort or by)
        )
        self.say(f"\n{title}\n")
        self.say(f"| {by} | domains | right | recall | wrong |")
        self.say("|---|---:|---:|---:|---:|")
        for key, n, right, wrong in counts.iter_rows():
            self.say(f"| {key} | {n:,} | {right:,} | {_pct(right, n)} | {wrong} |")
        n, right = rows.height, int((rows["outcome"] == "right").sum())
        wrong = int((rows["outcome"] == "wrong").sum())
        self.say(f"| **all** | {n:,} | {right:,} | {_pct(right, n)} | {wrong} |")

    def summary(self, name: str, rows: pl.DataFrame) -> None:
        right = int((rows["outcome"] == "right").sum())
        wrong = int((rows["outcome"] == "wrong").sum())
        share = _pct(right, rows.height)
        self.say(f"  {name:34} recall {share:>6} ({right:,}/{rows.height:,}), wrong {wrong}")


def suggestions_on_real(report: Report, rows: pl.DataFrame, title: str) -> None:
    given = rows.filter(pl.col("suggested") != "")
    listed = ", ".join(
        f"{d}→{s}" for d, s in given.select("domain", "suggested").sort("domain").iter_rows()
    )
    shown = f": {listed}" if listed else ""
    report.say(f"  {title:34} {given.height} of {rows.height:,} given a suggestion{shown}")


def verdict_check(report: Report, rows: pl.DataFrame) -> None:
    suggested = rows.filter(pl.col("suggested") != "")
    invalid = suggested.filter(pl.col("VERDICT") == "Invalid").height
    risky = suggested.filter(
        (pl.col("VERDICT") == "Risky") & pl.col("REASON").str.contains("typo_suspected")
    ).height
    safe = suggested.filter(pl.col("SAFE_TO_SEND")).height
    explained = suggested.filter(pl.col("DETAIL") != "").height
    report.say(
        f"  squats suggested: {suggested.height}; Risky typo_suspected {risky}, Invalid {invalid}, "
        f"SAFE_TO_SEND {safe}, with a DETAIL {explained}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--half", choices=tuple(SEEDS), default="report")
    parser.add_argument("--seed", type=int, help="default: 7 for tune, 20261126 for report")
    parser.add_argument("--keep", type=Path, help="write the world and outputs here and keep them")
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    parser.add_argument(
        "--code",
        type=Path,
        default=ROOT,
        help="run the listclean of this tree instead (another commit's, `git archive`d: the "
        "figures before a change)",
    )
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else SEEDS[args.half]
    sources = fetch(SOURCES)
    report = Report()
    with tempfile.TemporaryDirectory(prefix="squats-") as scratch:
        work = args.keep or Path(scratch)
        generate(seed, args.half, sources).write(work)
        truth = pl.read_csv(work / "truth.csv", infer_schema_length=0).with_columns(
            pl.col("real_tld") == "true", pl.col("intended").fill_null("")
        )
        world = ["--sandbox", "--world", str(work / "world.json")]
        online, online_s = clean(work, "online", world, args.code)
        offline, offline_s = clean(work, "offline", ["--offline"], args.code)
        on, off = judged(truth, online), judged(truth, offline)
        counts = dict(truth.group_by("class").len().iter_rows())
        report.say(
            f"squat world: half {args.half}, seed {seed}, {truth.height:,} domains: "
            f"{counts.get('squat', 0):,} squats, {counts.get('typo', 0):,} plain typos, "
            f"{counts.get('near', 0):,} near-provider domains, "
            f"{counts.get('business', 0):,} other organisations"
        )
        report.say(f"sources: {', '.join(f'{k} {v}' for k, v in sources.versions.items())}")
        report.say(f"runs: online {online_s:.1f} s, offline {offline_s:.1f} s")
        squats = on.filter(pl.col("class") == "squat")
        own = squats.filter(pl.col("mail_host") == "own").height
        real = squats.filter(pl.col("real_tld")).height
        report.say(
            f"squats with a mail host under their own name: {own:,} of {squats.height:,}; "
            f"under a real TLD: {real:,}; providers: {squats['intended'].n_unique()}; "
            f"operations: {squats['operation'].n_unique()} of {len(OPERATIONS)}"
        )
        report.say("\nsummary (per distinct domain)")
        report.summary("squats, online", squats)
        report.summary("squats, offline", off.filter(pl.col("class") == "squat"))
        report.summary("plain typos (no MX), online", on.filter(pl.col("class") == "typo"))
        report.summary("plain typos (no MX), offline", off.filter(pl.col("class") == "typo"))
        for label, rows in (("online", on), ("offline", off)):
            for cls in ("near", "business"):
                suggestions_on_real(report, rows.filter(pl.col("class") == cls), f"{cls}, {label}")
        near = on.filter(pl.col("class") == "near")
        known = shipped_list("near_providers.txt") if _shipped("near_providers.txt") else set()
        covered = near.filter(pl.col("domain").is_in(sorted(known))).height
        report.say(f"  near domains in the shipped near_providers.txt: {covered} of {near.height}")
        verdict_check(report, squats)
        report.table("Squats online, per provider", squats, "intended")
        report.table("Squats online, per typing operation", squats, "operation")
        report.table("Squats online, per mail host", squats, "mail_host")
        report.table(
            "Squats online, per TLD",
            squats.with_columns(
                pl.when(pl.col("real_tld"))
                .then(pl.lit("real"))
                .otherwise(pl.lit("not real"))
                .alias("tld")
            ),
            "tld",
        )
        typos = on.filter(pl.col("class") == "typo")
        report.table("Plain typos online, per typing operation", typos, "operation")
        report.table("Plain typos online, per provider", typos, "intended")
        wrong = pl.concat([squats, typos]).filter(pl.col("outcome") == "wrong")
        if wrong.height:
            report.say(
                "\nwrong suggestions: "
                + ", ".join(
                    f"{d}→{s} (meant {i})"
                    for d, s, i in wrong.select("domain", "suggested", "intended")
                    .sort("domain")
                    .iter_rows()
                )
            )
    if args.markdown:
        args.markdown.write_text("\n".join(report.lines) + "\n", encoding="utf-8")


def _shipped(name: str) -> bool:
    return (ROOT / "pipeline" / "data" / name).is_file()


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


if __name__ == "__main__":
    main()
