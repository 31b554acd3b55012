"""How right is `listclean clean`? Verdicts on the evaluation world, measured against its truth.

    python bench/bench_accuracy.py [--seed N] [--keep DIR]

Generates the evaluation world (pipeline/sandbox/evaluation/world.py: about 6,500 addresses whose
deliverability is known) into a temporary directory, then runs `listclean clean` on its list
three times, each with a fresh cache: in the sandbox with ``--verify smtp`` and with
``--verify none`` (the sandbox settings, default HELO name and envelope sender), and
``--offline``. Joined with truth.csv it prints:

* truth (deliverable or not) by VERDICT, for the SMTP and the DNS-only run;
* the share of deliverable addresses marked Invalid (the harm: real customers dropped),
  Invalid precision (undeliverable among Invalid) and Valid precision (deliverable among
  Valid);
* per class of the world, the wrong answers: deliverable marked Invalid, undeliverable marked
  Valid; and the replies behind deliverable addresses marked Invalid;
* typo suggestions per distinct domain: recall on squatted typos not in known_typos.txt, and
  the other typo classes; suggestions given to real near-provider domains (online, offline);
* a sweep beyond the world's sample: every one-edit typing slip of the world's typo targets that
  is no listed domain, as a squatter would register it (MX at a parking service's host), and
  the share that gets the right suggestion.

The sandbox gives the probes names of its own (probe.listclean-sandbox.net), which the world's
DNS does not know: its servers that check senders refuse them, as real ones refuse
postmaster@localhost.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.core.domains.suggest import suggest_domain  # noqa: E402
from pipeline.core.lists import load_lists  # noqa: E402
from pipeline.sandbox.files import SANDBOX_SETTINGS  # noqa: E402
from worlds.evaluation.names import (  # noqa: E402
    NEAR_PROVIDER,
    TYPO_TARGETS,
    one_edit_typos,
    shipped_list,
    shipped_pairs,
)
from worlds.evaluation.world import SEED, generate  # noqa: E402

CONFIG = SANDBOX_SETTINGS
VERDICTS = ("Valid", "Risky", "Invalid")
TYPO_CLASSES = (
    "typo_squatted",
    "typo_squatted_known",
    "typo_unregistered",
    "typo_unregistered_known",
    "typo_tld_misspelt",
)


def clean(work: Path, name: str, extra: list[str]) -> tuple[pl.DataFrame, float]:
    """Run `listclean clean` on the world's list; its output frame and wall seconds."""
    out = work / f"{name}.parquet"
    command = [sys.executable, "-m", "pipeline", "clean", str(work / "list.csv"), "-o", str(out)]
    command += ["--config", str(CONFIG), "--cache-dir", str(work / f"cache-{name}"), "--quiet"]
    started = time.perf_counter()
    subprocess.run([*command, *extra], check=True, cwd=ROOT)
    seconds = time.perf_counter() - started
    # The list's `email` column sits beside our EMAIL: the output keeps it as `input_email`.
    output = pl.read_parquet(out).rename({"input_email": "email"})
    return output.select("email", "VERDICT", "REASON", "SUGGESTION"), seconds


def judged(truth: pl.DataFrame, output: pl.DataFrame) -> pl.DataFrame:
    joined = truth.join(output, on="email", how="left")
    if joined["VERDICT"].null_count():
        raise SystemExit("some addresses of the list are missing from the output")
    return joined.with_columns(
        pl.col("SUGGESTION").str.split("@").list.last().fill_null("").alias("suggested")
    )


def confusion(rows: pl.DataFrame, title: str) -> None:
    print(f"\n{title}: truth by VERDICT")
    print(f"  {'truth':14}" + "".join(f"{v:>9}" for v in VERDICTS) + f"{'total':>9}")
    for deliverable in (True, False):
        part = rows.filter(pl.col("deliverable") == deliverable)
        counts = [part.filter(pl.col("VERDICT") == v).height for v in VERDICTS]
        label = "deliverable" if deliverable else "undeliverable"
        print(f"  {label:14}" + "".join(f"{n:>9,}" for n in counts) + f"{part.height:>9,}")
    good = rows.filter(pl.col("deliverable"))
    invalid = rows.filter(pl.col("VERDICT") == "Invalid")
    valid = rows.filter(pl.col("VERDICT") == "Valid")
    harmed = good.filter(pl.col("VERDICT") == "Invalid").height
    print(
        f"  deliverable marked Invalid: {harmed:,} of {good.height:,} ({_pct(harmed, good.height)})"
    )
    right_invalid = invalid.filter(~pl.col("deliverable")).height
    share = _pct(right_invalid, invalid.height)
    print(f"  Invalid precision: {share} ({right_invalid:,}/{invalid.height:,})")
    right_valid = valid.filter(pl.col("deliverable")).height
    print(
        f"  Valid precision:   {_pct(right_valid, valid.height)} ({right_valid:,}/{valid.height:,})"
    )


def per_class(rows: pl.DataFrame, title: str) -> None:
    print(f"\n{title}: wrong answers per class (D = deliverable)")
    table = (
        rows.group_by("class")
        .agg(
            pl.len().alias("rows"),
            pl.col("deliverable").sum().alias("D"),
            (pl.col("deliverable") & (pl.col("VERDICT") == "Invalid")).sum().alias("D→Invalid"),
            (~pl.col("deliverable") & (pl.col("VERDICT") == "Valid")).sum().alias("¬D→Valid"),
            (~pl.col("deliverable") & (pl.col("VERDICT") == "Risky")).sum().alias("¬D→Risky"),
            (pl.col("deliverable") & (pl.col("VERDICT") == "Risky")).sum().alias("D→Risky"),
        )
        .sort("class")
    )
    header = ("class", "rows", "D", "D→Invalid", "¬D→Valid", "¬D→Risky", "D→Risky")
    print(f"  {header[0]:26}" + "".join(f"{h:>10}" for h in header[1:]))
    for row in table.iter_rows():
        print(f"  {row[0]:26}" + "".join(f"{n:>10,}" for n in row[1:]))


def harmful_replies(rows: pl.DataFrame) -> None:
    bad = rows.filter(pl.col("deliverable") & (pl.col("VERDICT") == "Invalid"))
    print("\ndeliverable marked Invalid, by the corpus reply behind them (SMTP run):")
    counts = bad.group_by("class", "reply", "REASON").len().sort("len", descending=True)
    for cls, reply, reason, n in counts.iter_rows():
        print(f"  {n:5,}  {cls:22} {reply or '-':34} {reason}")


def typo_report(rows: pl.DataFrame, title: str) -> None:
    domains = rows.with_columns(pl.col("email").str.split("@").list.last().alias("domain"))
    per_domain = domains.group_by("domain").agg(
        pl.col("class").first(), pl.col("intended_domain").first(), pl.col("suggested").first()
    )
    print(f"\n{title}: typo suggestions per distinct domain")
    for cls in TYPO_CLASSES:
        part = per_domain.filter(pl.col("class") == cls)
        right = part.filter(pl.col("suggested") == pl.col("intended_domain")).height
        wrong = part.filter(
            (pl.col("suggested") != "") & (pl.col("suggested") != pl.col("intended_domain"))
        )
        missed = sorted(part.filter(pl.col("suggested") == "")["domain"].to_list())
        note = ", ".join(
            f"{d}→{s}" for d, s in wrong.sort("domain").select("domain", "suggested").iter_rows()
        )
        print(
            f"  {cls:24} recall {_pct(right, part.height):>6} ({right}/{part.height}); "
            f"none {len(missed)}{' (' + ', '.join(missed) + ')' if missed else ''}; "
            f"wrong {wrong.height}{': ' + note if note else ''}"
        )
    near = per_domain.filter((pl.col("class") == "near_provider") & (pl.col("suggested") != ""))
    total = per_domain.filter(pl.col("class") == "near_provider").height
    listed = ", ".join(
        f"{d}→{s}" for d, s in near.select("domain", "suggested").sort("domain").iter_rows()
    )
    suffix = f": {listed}" if listed else ""
    print(f"  near-provider domains given a suggestion: {near.height}/{total}{suffix}")


def typo_sweep() -> None:
    """Every unlisted one-edit slip of the typo targets, squatted (MX at a parking host)."""
    lists = load_lists()
    listed = shipped_list("popular_domains.txt") | shipped_list("free_providers.txt")
    listed |= set(shipped_pairs("known_typos.txt")) | set(NEAR_PROVIDER)
    print("\nsweep: every unlisted one-edit slip of a typo target, MX at a parking host")
    total = found = 0
    for target in TYPO_TARGETS:
        slips = [t for t in one_edit_typos(target) if t not in listed]
        right = sum(
            suggest_domain(t, has_working_mx=True, lists=lists, mx="park-mx.above.com") == target
            for t in slips
        )
        total, found = total + len(slips), found + right
        print(f"  {target:16} recall {_pct(right, len(slips)):>6} ({right}/{len(slips)})")
    print(f"  {'all':16} recall {_pct(found, total):>6} ({found}/{total})")


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--keep", type=Path, help="write the world and outputs here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="accuracy-") as scratch:
        work = args.keep or Path(scratch)
        evaluation = generate(args.seed)
        evaluation.write(work)
        truth = pl.read_csv(work / "truth.csv", infer_schema_length=0).with_columns(
            pl.col("deliverable") == "true", pl.col("intended_domain").fill_null("")
        )
        world = ["--sandbox", "--world", str(work / "world.json")]
        smtp, smtp_s = clean(work, "smtp", [*world, "--verify", "smtp"])
        dns, dns_s = clean(work, "none", [*world, "--verify", "none"])
        offline, offline_s = clean(work, "offline", ["--offline", "--verify", "none"])
        domains = truth["email"].str.split("@").list.last().n_unique()
        undeliverable = truth.filter(~pl.col("deliverable")).height
        print(
            f"world: seed {args.seed}, {truth.height:,} addresses, {domains} domains, "
            f"{undeliverable:,} undeliverable"
        )
        print(
            f"runs: --verify smtp {smtp_s:.1f} s, --verify none {dns_s:.1f} s, "
            f"--offline {offline_s:.1f} s"
        )
        smtp_rows = judged(truth, smtp)
        confusion(smtp_rows, "--verify smtp")
        confusion(judged(truth, dns), "--verify none")
        per_class(smtp_rows, "--verify smtp")
        harmful_replies(smtp_rows)
        typo_report(judged(truth, dns), "online (--verify none)")
        typo_report(judged(truth, offline), "offline")
        typo_sweep()


if __name__ == "__main__":
    main()
