"""bench_clean's warm ratio to the email-validator loop, for this code and an earlier checkout.

    python bench/bench_before.py --before DIR [--rows N] [--domains N] [--rounds 5] [--out DIR]
                                 [--messy]

*DIR* is another checkout of the project with its own ``.venv`` (``git worktree add DIR REV``,
then ``make venv`` there). One list is generated with this checkout's generator, its DNS world
served on loopback in its own process, and each checkout's ``clean`` run once cold, with its own
domain cache, to fill it. Then, ``--rounds`` times, in an order that alternates from round to
round: the warm ``clean`` of each checkout and python-email-validator's syntax-only loop over the
same addresses. Each checkout's package is byte-compiled first, as an installed one is
(``bench_clean.compiled``). Each run is a fresh process started through that checkout's
``bench/measure.py`` and timed from start to exit, as ``bench/bench_clean.py`` times them, so
on a machine shared with other work the ratios are taken round by round: each warm run against
the loop run beside it.
Prints a Markdown table and writes ``before.json`` beside the list, which it then deletes.
``--messy``: the list as real exports are (``generate.py --messy``: 2% of the rows with a space
before the ``@``, 3% with an upper-case domain).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_clean import compiled, served_world

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run(checkout: Path, result: Path, args: list[str]) -> dict[str, Any]:
    """One fresh process of *checkout*'s own interpreter and ``bench/measure.py``."""
    python = checkout / ".venv" / "bin" / "python"
    started = time.perf_counter()
    command = [str(python), str(checkout / "bench" / "measure.py"), str(result), *args]
    subprocess.run(command, check=True, cwd=checkout)
    measured: dict[str, Any] = json.loads(result.read_text())
    measured["process_seconds"] = time.perf_counter() - started
    if measured["exit"] != 0:
        raise SystemExit(f"{checkout}: {args[0]} exited with {measured['exit']}")
    return measured


def clean(checkout: Path, out: Path, name: str, config: Path) -> dict[str, Any]:
    output = out / f"{name}.parquet"
    args = ["clean", str(out / "list.csv"), "-o", str(output), "--config", str(config)]
    args += ["--cache-dir", str(out / f"cache-{name}"), "--quiet"]
    measured = run(checkout, out / f"run-{name}.json", args)
    summary = json.loads((out / f"{name}.summary.json").read_text())
    measured.update(rows=summary["rows_in"], dns_queries=summary["dns_queries"])
    measured["stages"] = {s["name"]: s["seconds"] for s in summary["stages"]}
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the earlier checkout")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--domains", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, default=HERE / "out-before")
    parser.add_argument("--messy", action="store_true", help="the messy mix of real exports")
    args = parser.parse_args()
    out: Path = args.out
    checkouts = {"before": args.before.resolve(), "after": ROOT}
    for checkout in checkouts.values():
        compiled(checkout)
    generate = [sys.executable, str(HERE / "generate.py"), "--rows", str(args.rows)]
    generate += ["--domains", str(args.domains), "--out", str(out)]
    subprocess.run([*generate, *(["--messy"] if args.messy else [])], check=True)
    for name in checkouts:
        shutil.rmtree(out / f"cache-{name}", ignore_errors=True)
    with served_world(out / "world.json", out) as (_, config):
        cold = {name: clean(path, out, name, config) for name, path in checkouts.items()}
        rounds = []
        for turn in range(args.rounds):
            order = ["email_validator", "before", "after"]
            order = order if turn % 2 == 0 else order[::-1]
            measured = {}
            for name in order:
                if name == "email_validator":
                    loop = ["--email-validator", str(out / "list.csv")]
                    measured[name] = run(ROOT, out / "run-email_validator.json", loop)
                else:
                    measured[name] = clean(checkouts[name], out, name, config)
            rounds.append(measured)
            seconds = {k: round(v["process_seconds"], 2) for k, v in measured.items()}
            print(f"round {turn + 1}: {seconds}", file=sys.stderr, flush=True)
    results = {"checkouts": {k: str(v) for k, v in checkouts.items()}, "cold": cold}
    results["rounds"] = rounds
    (out / "before.json").write_text(json.dumps(results, indent=2))
    print(table(results))
    for path in [out / "list.csv", *out.glob("*.parquet"), *out.glob("cache-*")]:
        shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def table(results: dict[str, Any]) -> str:
    rounds = results["rounds"]
    lines = [
        "| code | warm s (median, range) | peak RSS MiB | DNS queries warm "
        "| speed vs email-validator (median, range) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in ("before", "after"):
        secs = [r[name]["process_seconds"] for r in rounds]
        ratios = [
            r["email_validator"]["process_seconds"] / r[name]["process_seconds"] for r in rounds
        ]
        lines.append(
            f"| {name} | {statistics.median(secs):.2f} ({min(secs):.2f}-{max(secs):.2f}) | "
            f"{statistics.median(r[name]['peak_rss_mib'] for r in rounds):.0f} | "
            f"{max(r[name]['dns_queries'] for r in rounds)} | "
            f"{statistics.median(ratios):.1f}x ({min(ratios):.1f}-{max(ratios):.1f}) |"
        )
    loop = [r["email_validator"]["process_seconds"] for r in rounds]
    lines.append(
        f"| email-validator loop | {statistics.median(loop):.2f} ({min(loop):.2f}-{max(loop):.2f}) "
        f"| {statistics.median(r['email_validator']['peak_rss_mib'] for r in rounds):.0f} | - "
        "| 1.0x |"
    )
    paired = [r["after"]["process_seconds"] / r["before"]["process_seconds"] for r in rounds]
    lines.append("")
    lines.append(
        f"after / before, round by round: {statistics.median(paired):.2f} "
        f"({min(paired):.2f}-{max(paired):.2f}); rows: {rounds[0]['after']['rows']:,}"
    )
    for name in ("before", "after"):
        c = results["cold"][name]
        stages = ", ".join(f"{k} {v:.2f} s" for k, v in rounds[-1][name]["stages"].items())
        lines.append(
            f"{name}: cold {c['process_seconds']:.1f} s, {c['dns_queries']:,} DNS queries; "
            f"last warm stages: {stages}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
