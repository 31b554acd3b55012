"""A list read in many batches gives exactly what one batch gives; a short list is read once,
a longer one twice, with the same output; datasets in and out; a domain-level run killed
mid-way keeps its DNS answers."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from pipeline.sandbox.files import SANDBOX_SETTINGS
from pipeline.stages import runner
from pipeline.stages.read.csv_source import CsvSource
from pipeline.stages.read.email_column import SAMPLE_ROWS
from pipeline.stages.runner import batch_rows

FAST = str(SANDBOX_SETTINGS)
ROWS = 40_000


def messy_list(path: Path, rows: int = ROWS, seed: int = 7) -> list[str]:
    """A list whose repeats are far apart (first seen early, repeated in later batches), with
    malformed and empty cells, over a few hundred domains of the sample world."""
    rng = random.Random(seed)
    domains = ["gmail.com", "yahoo.com", "outlook.com", "acme-widgets.com", "gmial.com"]
    people = [f"person{i}" for i in range(rows // 3)]
    emails = []
    for i in range(rows):
        kind = rng.random()
        if kind < 0.02:
            emails.append("not an address")
        elif kind < 0.03:
            emails.append("")
        else:
            local = rng.choice(people)
            emails.append(f" {local.upper() if kind < 0.2 else local}@{rng.choice(domains)} ")
        if i == rows - 1:
            emails[-1] = "person0@gmail.com"  # the very first address again, at the very end
    frame = pl.DataFrame({"id": [str(i) for i in range(rows)], "email": emails})
    frame.write_csv(path)
    return emails


def run(tmp: Path, source: Path, output: str, *extra: str) -> dict[str, object]:
    code = main(
        [
            "clean",
            str(source),
            "-o",
            f"{tmp}/{output}",  # a trailing / asks for a dataset
            "--offline",
            "--cache-dir",
            str(tmp / "cache"),
            "--quiet",
            *extra,
        ]
    )
    assert code == 0
    summary_path = tmp / (output.rstrip("/").removesuffix(".parquet") + ".summary.json")
    summary: dict[str, object] = json.loads(summary_path.read_text())
    return summary


def comparable(summary: dict[str, object]) -> dict[str, object]:
    varying = ("stages", "output", "rejects_file", "files", "run", "history", "since_last_run")
    varying += ("list_name",)  # named after its input
    return {k: v for k, v in summary.items() if k not in varying}


def test_many_batches_give_what_one_batch_gives(tmp_path: Path) -> None:
    source = tmp_path / "list.csv"
    messy_list(source)
    assert batch_rows(64, source.stat().st_size / ROWS) < ROWS // 2  # several batches
    small = run(tmp_path, source, "small.parquet", "--memory", "64")
    whole = run(tmp_path, source, "whole.parquet", "--memory", "65536")
    assert comparable(small) == comparable(whole)
    a = pl.read_parquet(tmp_path / "small.parquet")
    b = pl.read_parquet(tmp_path / "whole.parquet")
    assert a.equals(b)
    assert a.height == ROWS and a.get_column("id").to_list() == [str(i) for i in range(ROWS)]
    # The last row repeats the first row's address: a duplicate across batches, same verdict.
    first = a.filter(pl.col("EMAIL") == "person0@gmail.com").row(0, named=True)
    last = a.row(ROWS - 1, named=True)
    assert last["DUPLICATE"] and not first["DUPLICATE"]
    assert (last["VERDICT"], last["SCORE"]) == (first["VERDICT"], first["SCORE"])


@pytest.mark.parametrize(
    ("share", "reads"),
    [(16, 1), (2_000, 2), (2**40, 2)],
    ids=["all-kept", "kept-then-let-go", "none-kept"],
)
def test_a_list_is_read_once_when_its_batches_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, share: int, reads: int
) -> None:
    """Pass 2 takes pass 1's batches when they all fit in the run's share for them, and reads
    the file again when they do not (the share makes the budget 4 MiB, about 33 KB, 0 bytes,
    against about 1 MB of batches): the output is the same either way."""
    source = tmp_path / "list.csv"
    messy_list(source)
    opened: list[int] = []
    batches = CsvSource.batches

    def counted(self: CsvSource, rows: int) -> object:
        opened.append(rows)
        return batches(self, rows)

    monkeypatch.setattr(CsvSource, "batches", counted)
    monkeypatch.setattr(runner, "_ONCE_SHARE", share)
    summary = run(tmp_path, source, "out.parquet", "--memory", "64")
    passes = [rows for rows in opened if rows != SAMPLE_ROWS]  # not the email column's sample
    assert len(passes) == reads and passes[0] > SAMPLE_ROWS
    monkeypatch.setattr(runner, "_ONCE_SHARE", 16)
    kept = run(tmp_path, source, "kept.parquet", "--memory", "64")
    assert comparable(summary) == comparable(kept)
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out.equals(pl.read_parquet(tmp_path / "kept.parquet"))
    assert out.height == ROWS and out.get_column("id").to_list() == [str(i) for i in range(ROWS)]


def test_ragged_rows_read_exactly_in_batches(tmp_path: Path) -> None:
    source = tmp_path / "list.csv"
    messy_list(source)
    lines = source.read_text().splitlines()
    lines[30_000] += ",extra"  # one ragged row late in the file: the exact reader takes over
    source.write_text("\n".join(lines) + "\n")
    small = run(tmp_path, source, "small.parquet", "--memory", "64")
    whole = run(tmp_path, source, "whole.parquet", "--memory", "65536")
    assert comparable(small) == comparable(whole)
    assert small["rows_rejected"] == 1 and small["rows_in"] == ROWS
    assert pl.read_parquet(tmp_path / "small.parquet").equals(
        pl.read_parquet(tmp_path / "whole.parquet")
    )


def test_a_parquet_dataset_reads_as_its_shards_in_order(tmp_path: Path) -> None:
    source = tmp_path / "list.csv"
    messy_list(source, rows=9_000)
    frame = pl.read_csv(source, infer_schema=False)
    shards = tmp_path / "export"
    shards.mkdir()
    for n, start in enumerate(range(0, frame.height, 3_000)):
        frame.slice(start, 3_000).write_parquet(shards / f"part-{n:05d}.parquet")
    frame.write_parquet(tmp_path / "whole.parquet")
    one = run(tmp_path, tmp_path / "whole.parquet", "one.parquet")
    many = run(tmp_path, shards, "many.parquet")
    globbed = run(tmp_path, Path(f"{shards}/part-*.parquet"), "globbed.parquet")
    assert comparable(one) | {"input": ""} == comparable(many) | {"input": ""}
    expected = pl.read_parquet(tmp_path / "one.parquet")
    assert pl.read_parquet(tmp_path / "many.parquet").equals(expected)
    assert pl.read_parquet(tmp_path / "globbed.parquet").equals(expected)
    assert globbed["rows_in"] == 9_000


def test_a_dataset_output_is_a_folder_of_parts(tmp_path: Path) -> None:
    source = tmp_path / "list.csv"
    messy_list(source, rows=5_000)
    run(tmp_path, source, "file.parquet")
    summary = run(tmp_path, source, "folder/")
    parts = sorted((tmp_path / "folder").iterdir())
    assert parts and all(p.name.startswith("part-") for p in parts)
    assert pl.read_parquet(tmp_path / "folder").equals(pl.read_parquet(tmp_path / "file.parquet"))
    assert summary["rows_out"] == 5_000
    again = run(tmp_path, source, "folder", "--output-format", "dataset")  # replaced whole
    assert again["rows_out"] == 5_000 and len(list((tmp_path / "folder").iterdir())) == len(parts)


def slow_world(domains: list[str]) -> dict[str, object]:
    zones: dict[str, object] = {
        c: {"mx": [[5, f"mx.{c}"]]} for c in ("gmail.com", "outlook.com", "yahoo.com")
    }
    zones.update({d: {"mx": [[10, f"mx.{d}"]]} for d in domains})
    return {"latency_ms": 25, "zones": zones}


def test_a_killed_domain_level_run_keeps_its_dns_answers(tmp_path: Path) -> None:
    domains = [f"company{i}.example-mail.net" for i in range(1_500)]
    (tmp_path / "list.csv").write_text("email\n" + "\n".join(f"ann@{d}" for d in domains) + "\n")
    config = tmp_path / "slow.toml"
    config.write_text("[dns]\ntimeout = 2.0\nconcurrency = 20\n")
    world = world_from_dict(slow_world(domains))

    def start(dns: SandboxDNS, cache: str, out: str) -> subprocess.Popen[bytes]:
        command = ["clean", str(tmp_path / "list.csv"), "-o", str(tmp_path / out), "--quiet"]
        command += ["--resolver", dns.address, "--cache-dir", str(tmp_path / cache)]
        command += ["--config", str(config)]
        return subprocess.Popen([sys.executable, "-m", "pipeline", *command])

    with SandboxDNS(world) as dns:
        killed = start(dns, "cache", "out.parquet")
        deadline = time.monotonic() + 30
        while dns.query_count < 1_800 and time.monotonic() < deadline:
            time.sleep(0.02)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        before_kill = dns.query_count
        dns.reset_counts()
        assert start(dns, "cache", "out.parquet").wait(timeout=120) == 0
        rerun = dns.query_count
        dns.reset_counts()
        assert start(dns, "ref-cache", "ref.parquet").wait(timeout=120) == 0
        cold = dns.query_count
    # Answers are cached in groups of 500 domains or every second: the rerun asks only about
    # the rest, and the two runs together send at most one group's queries (3 a domain: MX,
    # then the MX host's A and AAAA) and those in flight more than one uninterrupted run.
    # Caching at the end of the lookup round would lose every answer.
    assert rerun < cold - 300
    assert before_kill + rerun <= cold + 3 * 500 + 60
    assert pl.read_parquet(tmp_path / "out.parquet").equals(
        pl.read_parquet(tmp_path / "ref.parquet")
    )
