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
"""

from __future__ import annotations

import argparse
import hashlib
import json
import signal
import subprocess
import sys
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--points", type=int, default=12, help="signals sent over a run")
    parser.add_argument("--out", type=Path, default=Path("build/bench_signals"))
    args = parser.parse_args()
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
