"""Do two commits answer alike? Runs the demo's commands from each and compares what they wrote.

    python bench/compare_commits.py OLD [NEW]      # NEW: the work tree as it is

Each commit is checked out into a temporary work tree (``git worktree``) and run with this
virtual environment's Python, its own tree first on ``PYTHONPATH``: the sample list cleaned in
the sandbox world with ``--verify smtp`` (after the sample bounces and contacts are imported),
``verify`` of the demo's address, the sample list cleaned ``--offline`` into CSV with
``--split``, and ``listclean serve`` in the same sandbox asked ``/api/email`` about every address
of the sample list and a few variants of each, twice, 16 requests at a time (so answers come
from batches of many sizes, and from the service's answer shapes the second time). Then the
Parquet outputs are compared as frames (VERIFIED_AT left out: a clock),
every other file byte for byte, and ``summary.json`` key by key (timings, run metadata, file paths
and the history's run id and store left out). Exit 1 when anything differs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
import polars as pl
from bench_clean import serving_url

ROOT = Path(__file__).resolve().parent.parent
VOLATILE = ("run", "seconds_per_stage", "stages", "files", "output", "rejects_file")
RUN_OWN = ("run_id", "store")


def _demo(tree: Path, out: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cache = ["--sandbox", "--cache-dir", str(out / "cache")]
    commands = [
        ["bounces", "import", "sample_data/bounces.csv", "sample_data/bounces.mbox", *cache],
        ["contacts", "import", "sample_data/contacts.csv", *cache],
        ["clean", "sample_data/list.csv", "-o", str(out / "list.clean.parquet"), *cache,
         "--verify", "smtp", "--quiet"],
        ["clean", "sample_data/list.csv", "-o", str(out / "offline.csv"), "--offline", "--split",
         "--cache-dir", str(out / "offline-cache"), "--quiet"],
    ]  # fmt: skip
    for command in commands:
        subprocess.run([sys.executable, "-m", "pipeline", *command], cwd=tree, env=env, check=True)
    verify = ["verify", "John.Doe@gmial.com", *cache]
    answer = subprocess.run(
        [sys.executable, "-m", "pipeline", *verify], cwd=tree, env=env, check=True,
        capture_output=True, text=True,
    ).stdout  # fmt: skip
    (out / "verify.json").write_text(answer)
    _serve_answers(tree, env, cache, out / "service.jsonl")


def _serve_answers(tree: Path, env: dict[str, str], cache: list[str], to: Path) -> None:
    """``listclean serve`` in the demo's sandbox, asked about the sample list's addresses (and
    their variants) twice; each value's two answers, in the list's order, to *to*."""
    emails = pl.read_csv(tree / "sample_data" / "list.csv", infer_schema=False)["Email Address"]
    values = []
    for email in emails.fill_null("").to_list():
        local, _, domain = email.partition("@")
        values += [email, f"{local}@{domain.upper()}", f"{local}x@{domain}", f" {email} "]
    log = to.with_suffix(".log")
    argv = [sys.executable, "-m", "pipeline", "serve", "--host", "127.0.0.1", "--port", "0",
            "--db", str(Path(cache[-1]) / "service.sqlite"), *cache]  # fmt: skip
    with log.open("wb") as out:
        server = subprocess.Popen(argv, cwd=tree, env=env, stdout=out, stderr=out)
    try:
        base = serving_url(server, log, 60)
        answers = asyncio.run(_ask(base, values))
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    log.unlink()
    to.write_text("".join(json.dumps([v, *a]) + "\n" for v, a in zip(values, answers, strict=True)))


async def _ask(base: str, values: list[str]) -> list[list[str]]:
    answers: list[list[str]] = [[] for _ in values]
    gate = asyncio.Semaphore(16)
    async with aiohttp.ClientSession() as session:

        async def one(i: int) -> None:
            async with gate, session.get(f"{base}/api/email", params={"email": values[i]}) as r:
                answers[i].append(f"{r.status} {await r.text()}")

        for _ in range(2):
            await asyncio.gather(*(one(i) for i in range(len(values))))
    return answers


def _frame(path: Path) -> pl.DataFrame:
    return pl.read_parquet(path).drop("VERIFIED_AT", strict=False)


def _summary(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    kept = {k: v for k, v in data.items() if k not in VOLATILE}
    if isinstance(kept.get("history"), dict):  # a run's own id, and where its store is
        kept["history"] = {k: v for k, v in kept["history"].items() if k not in RUN_OWN}
    return kept


def _differences(old: Path, new: Path) -> list[str]:
    found = []
    names = sorted(p.name for p in old.iterdir() if p.is_file())
    if names != sorted(p.name for p in new.iterdir() if p.is_file()):
        found.append(f"files: {names} against {sorted(p.name for p in new.iterdir())}")
    for name in names:
        a, b = old / name, new / name
        if name.endswith(".parquet"):
            same = _frame(a).equals(_frame(b))
        elif name.endswith(".summary.json"):
            was, now = _summary(a), _summary(b)
            same = was == now
            keys = sorted(k for k in {*was, *now} if was.get(k) != now.get(k))
            name += f" ({', '.join(keys)})" if keys else ""
        elif name.endswith(".html"):
            continue  # the report shows the run's own times and paths
        else:
            same = a.read_bytes() == b.read_bytes()
        if not same:
            found.append(name)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new", nargs="?", help="a commit; default: the work tree as it is")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="listclean-compare-") as scratch:
        top = Path(scratch)
        trees = []
        for label, commit in (("old", args.old), ("new", args.new)):
            if commit is None:
                trees.append((label, ROOT))
                continue
            tree = top / f"tree-{label}"
            subprocess.run(["git", "worktree", "add", "-q", "--detach", str(tree), commit],
                           cwd=ROOT, check=True)  # fmt: skip
            trees.append((label, tree))
        try:
            for label, tree in trees:
                _demo(tree, top / label)
            differ = _differences(top / "old", top / "new")
        finally:
            for _, tree in trees:
                if tree != ROOT:
                    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT)
    if differ:
        sys.exit(f"the outputs differ: {', '.join(differ)}")
    print(f"same outputs: {args.old} and {args.new or 'the work tree'}")


if __name__ == "__main__":
    main()
