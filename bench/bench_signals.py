"""How fast `listclean clean` stops on SIGINT or SIGTERM, at every stage of a real run.

    python bench/bench_signals.py [--rows 1000000] [--out DIR]

Makes a list with bench/generate.py (``--rows`` rows), runs it once to its end (the earlier
output, and the length of a whole run), then starts the same run again and again, sending
SIGINT or SIGTERM at evenly spaced moments over that length (start-up, reading, deciding,
writing). For each it measures the time from the signal to the process's exit, and checks what
the issue asks: exit 130 or 143, the earlier output byte for byte, no temporary file, one last
line. A run that finished before its signal is counted apart, and so is one whose signal came
after its commit point: it exits 130 or 143 saying every file was written, and its files must
be the whole set, each replaced. Results are printed as Markdown and written to
``signals_results.json`` in ``--out``.

    python bench/bench_signals.py --early 120

sends SIGINT and SIGTERM in turn at moments 1.5 ms apart from the start of ``python -m
pipeline clean`` (a 297-row list) through its first 90 ms, *N* runs in all, and counts how
each ended: the command's one line, or Python's (a traceback through the program's code, the
interpreter's own start failing, or the process ended by the signal without a word).
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COMMAND = [sys.executable, "-m", "pipeline", "clean", "list.csv", "-o", "out.parquet"]


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name.startswith(("out.", ".out."))
    }


# The last line of a run stopped once every file was published (pipeline.cli.interrupted_text).
_PUBLISHED = "after the commit point: every file was written"


def _replaced(now: dict[str, str], earlier: dict[str, str]) -> bool:
    """Whether the summary, written last at the commit point, is a new one."""
    summaries = [name for name in now if name.endswith(".summary.json")]
    return bool(summaries) and all(now[name] != earlier[name] for name in summaries)


def _run(folder: Path, cache: Path, at: float | None, sig: int) -> dict[str, Any]:
    process = subprocess.Popen(
        [*COMMAND, "--offline", "--quiet", "--cache-dir", str(cache)],
        cwd=folder,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
    )
    started = time.perf_counter()
    sent = None
    if at is not None:
        time.sleep(at)
        sent = time.perf_counter()
        process.send_signal(sig)
    _, err = process.communicate()
    ended = time.perf_counter()
    return {
        "code": process.returncode,
        "seconds": ended - started,
        "stop_seconds": None if sent is None else ended - sent,
        "last_line": err.decode(errors="replace").strip().splitlines()[-1:] or [""],
    }


def early(runs: int) -> None:
    """Signals in a command's first 90 ms: how each run ended (see the module's text)."""
    sample = HERE.parent / "sample_data" / "list.csv"
    seen: collections.Counter[str] = collections.Counter()
    with tempfile.TemporaryDirectory() as folder:
        command = [*COMMAND[:4], str(sample), "-o", "out.parquet", "--offline", "--quiet"]
        for index in range(runs):
            process = subprocess.Popen(
                command, cwd=folder, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
            )
            time.sleep(0.0015 * (index % 60))
            process.send_signal((signal.SIGINT, signal.SIGTERM)[index % 2])
            _, err = process.communicate()
            seen[_ended(process.returncode, err.decode(errors="replace"))] += 1
    print("| how the run ended | runs |\n|---|---:|")
    for how, count in seen.most_common():
        print(f"| {how} | {count} |")
    if seen["a traceback through the program's code"]:
        sys.exit("a signal in the command's start ended it with a traceback")


def _ended(code: int, err: str) -> str:
    if code in (130, 143) and err.strip().startswith("listclean: error: stopped by"):
        return f"the command's line, exit {code}"
    if "Traceback" in err and "/pipeline/" in err:
        return "a traceback through the program's code"
    if "init_import_site" in err:
        return "the interpreter's start failed (its own message)"
    if code < 0 and not err.strip():
        return f"ended by signal {-code} without a word"
    return f"exit {code}: {err.strip().splitlines()[-1:]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--points", type=int, default=12, help="signals sent over a run")
    parser.add_argument("--out", type=Path, default=Path("build/bench_signals"))
    parser.add_argument("--early", type=int, metavar="N", help="N runs signalled at their start")
    args = parser.parse_args()
    if args.early:
        early(args.early)
        return
    folder = args.out.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / "list.csv").exists():
        subprocess.run(
            [sys.executable, str(HERE / "generate.py"), "--rows", str(args.rows), "--out", folder],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    cache = folder / "cache"
    whole = _run(folder, cache, None, 0)
    assert whole["code"] == 0, whole
    earlier = _digest(folder)
    rows = []
    for index in range(args.points):
        at = whole["seconds"] * (index + 0.5) / args.points
        sig = (signal.SIGINT, signal.SIGTERM)[index % 2]
        ran = _run(folder, cache, at, sig)
        now = _digest(folder)
        published = ran["code"] in (130, 143) and _PUBLISHED in ran["last_line"][0]
        # Published: the same files, each written anew (the summary and report name the run).
        untouched = now == earlier or (
            published and now.keys() == earlier.keys() and _replaced(now, earlier)
        )
        rows.append(
            {
                "at": round(at, 2),
                "signal": signal.Signals(sig).name,
                **ran,
                "published": published,
                "untouched": untouched,
            }
        )
        if ran["code"] == 0 or published:  # the files are new and complete
            earlier = now
    stopped = [r for r in rows if r["code"] in (130, 143)]
    print("| sent at (s) | signal | exit | signal to exit (s) | earlier files untouched |")
    print("|---|---|---|---|---|")
    for r in rows:
        stop = f"{r['stop_seconds']:.3f}" if r["stop_seconds"] is not None else ""
        kept = "published (after the commit point)" if r["published"] else r["untouched"]
        print(f"| {r['at']} | {r['signal']} | {r['code']} | {stop} | {kept} |")
    worst = max((r["stop_seconds"] for r in stopped), default=0.0)
    print(
        f"\nwhole run {whole['seconds']:.2f} s over {args.rows:,} rows; {len(stopped)} of "
        f"{len(rows)} runs stopped by their signal ({sum(r['published'] for r in rows)} after "
        f"the commit point); slowest stop {worst:.3f} s"
    )
    (folder / "signals_results.json").write_text(
        json.dumps({"rows": args.rows, "whole_seconds": whole["seconds"], "runs": rows}, indent=2)
    )
    bad = [r for r in stopped if not r["untouched"]]
    if bad or any(r["code"] not in (0, 130, 143) for r in rows):
        sys.exit(f"a stopped run changed the earlier output or exited wrongly: {bad or rows}")
    leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    if leftovers:
        sys.exit(f"temporary files left: {leftovers}")


if __name__ == "__main__":
    main()
