"""Benchmark `listclean clean` on a generated 1,000,000-row list over ~50,000 domains.

    python bench/bench_clean.py [--rows N] [--domains N] [--out bench/out] [--messy]

Measures, in one run on this machine: the whole clean cold (empty domain cache, every domain
resolved against the loopback DNS server) and warm (cache filled by the cold run), and
python-email-validator's syntax-only loop over the same addresses as the baseline. Each is a
fresh process, timed from the command line's start (imports included) to its exit, the
checkout's package byte-compiled beforehand as an installed one is (:func:`compiled`). Prints a
Markdown table for bench/RESULTS.md and writes ``results.json`` beside the list. ``--messy``
makes the list as real exports are (``generate.py --messy``: 2% of the rows with a space before
the ``@``, 3% with an upper-case domain). ``bench/bench_before.py`` times the same runs for this
code and an earlier checkout, round by round.
"""

from __future__ import annotations

import argparse
import contextlib
import json
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


def compiled(checkout: Path) -> None:
    """*checkout*'s package byte-compiled, as installing it compiles it (pip does, the image
    too): a checkout is installed editable, and where PYTHONDONTWRITEBYTECODE is set (these
    machines set it) no run writes what it compiles, so each timed run would compile some
    200 modules again, about 0.12 s of a run's start (2026-11-28: a 1,000-row clean 0.61 s
    against 0.73 s, farm-bench -n 10)."""
    python = checkout / ".venv" / "bin" / "python"
    python = python if python.exists() else Path(sys.executable)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [str(python), "-m", "compileall", "-q", str(checkout / "pipeline")]
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)


SERVING = re.compile(r"Serving on (http://127\.0\.0\.1:\d+)")


def serving_url(process: subprocess.Popen[bytes], log: Path, seconds: float) -> str:
    """The URL ``listclean serve`` (*process*, writing its log to *log*) says it serves on;
    exits with the log if the process stops first or says nothing within *seconds*."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = SERVING.search(log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"listclean serve did not start: {log.read_text(errors='replace')}")


def run(out: Path, name: str, args: list[str], wrapper: tuple[str, ...] = ()) -> dict[str, Any]:
    """*args* run by measure.py (under *wrapper*, a command such as strace, when given)."""
    result = out / f"{name}.json"
    started = time.perf_counter()
    command = [*wrapper, sys.executable, str(HERE / "measure.py"), str(result), *args]
    subprocess.run(command, check=True)
    measured: dict[str, Any] = json.loads(result.read_text())
    measured["process_seconds"] = time.perf_counter() - started
    if measured["exit"] != 0:
        raise SystemExit(f"{name} exited with {measured['exit']}")
    return measured


def clean(out: Path, name: str, config: Path) -> dict[str, Any]:
    args = [
        "clean",
        str(out / "list.csv"),
        "-o",
        str(out / "list.clean.parquet"),
        "--config",
        str(config),
        "--cache-dir",
        str(out / "cache"),
        "--quiet",
    ]
    measured = run(out, name, args)
    summary = json.loads((out / "list.clean.summary.json").read_text())
    measured.update(
        rows=summary["rows_in"],
        distinct_domains=summary["distinct_domains"],
        dns_queries=summary["dns_queries"],
        stages={s["name"]: s["seconds"] for s in summary["stages"]},
    )
    return measured


@contextlib.contextmanager
def served_world(world: Path, where: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """The list's DNS world served on loopback in its own process (``dns_serve.py``, which
    answers ``count`` lines on its standard input); yields it and a settings file in *where*
    that points at it."""
    server = subprocess.Popen(
        [sys.executable, str(HERE / "dns_serve.py"), str(world)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        address = server.stdout.readline().strip()
        config = where / "bench.toml"
        config.write_text(f'[dns]\nnameservers = ["{address}"]\ntimeout = 2.0\nconcurrency = 200\n')
        yield server, config
    finally:
        server.communicate(input="")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--domains", type=int, default=50_000)
    parser.add_argument("--out", type=Path, default=HERE / "out")
    parser.add_argument("--messy", action="store_true", help="the messy mix of real exports")
    args = parser.parse_args()
    out: Path = args.out
    compiled(ROOT)
    generate = [sys.executable, str(HERE / "generate.py"), "--rows", str(args.rows)]
    generate += ["--domains", str(args.domains), "--out", str(out)]
    subprocess.run([*generate, *(["--messy"] if args.messy else [])], check=True)
    shutil.rmtree(out / "cache", ignore_errors=True)
    with served_world(out / "world.json", out) as (_, config):
        cold = clean(out, "cold", config)
        warm = clean(out, "warm", config)
    baseline = run(out, "email_validator", ["--email-validator", str(out / "list.csv")])
    results = {"cold": cold, "warm": warm, "email_validator": baseline}
    (out / "results.json").write_text(json.dumps(results, indent=2))
    print(table(results))


def table(r: dict[str, dict[str, Any]]) -> str:
    rows = r["cold"]["rows"]
    base = r["email_validator"]["process_seconds"]
    lines = [
        "| run | seconds | rows/s | DNS queries | queries per distinct domain "
        "| peak RSS MiB | speed vs email-validator |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name in ("cold", "warm", "email_validator"):
        m = r[name]
        secs = m["process_seconds"]
        queries = m.get("dns_queries")
        per_domain = f"{queries / m['distinct_domains']:.2f}" if queries is not None else "-"
        lines.append(
            f"| {name} | {secs:.2f} | {rows / secs:,.0f} | "
            f"{queries if queries is not None else '-'} | {per_domain} | "
            f"{m['peak_rss_mib']:.0f} | {base / secs:.1f}x |"
        )
    lines.append("")
    lines.append(f"rows: {rows:,}; distinct domains: {r['cold']['distinct_domains']:,}")
    for name in ("cold", "warm"):
        stages = ", ".join(f"{k} {v:.2f}s" for k, v in r[name]["stages"].items())
        lines.append(f"{name} stages: {stages}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
