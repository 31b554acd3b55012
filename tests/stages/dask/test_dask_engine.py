"""The Dask engine gives the local engine's answers: a LocalCluster of two worker processes,
joined with --scheduler, against the sandbox world on loopback; both workers do part of the
work; a second run over the same list sends no DNS query; the budget is spent as a local run
spends it."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from distributed import Client, get_task_stream

from pipeline.cli import main
from pipeline.core.calibration.store import CalibrationStore
from pipeline.core.calibration.types import Calibration, Level, LevelStatus
from pipeline.core.config import CacheConfig, ReadConfig
from pipeline.core.db.buckets import Shelf
from pipeline.core.domains.cache import DomainBuckets
from pipeline.core.domains.dns import DnsAnswer, DnsStatus, HostStatus
from pipeline.core.history.store import RunHistory
from pipeline.sandbox.dns_server import SandboxDNS, load_world
from pipeline.sandbox.files import SANDBOX_SETTINGS, SANDBOX_WORLD
from pipeline.stages.dask import engine as dask_engine
from pipeline.stages.dask.stores import SHELF
from pipeline.stages.read.reader import Choice, open_list
from pipeline.stages.runner import batch_rows
from tests.conftest import SAMPLE_CSV, StoreAt
from tests.exports import salesforce_report
from tests.stages.dask.clusters import two_workers
from tests.stages.read.test_consent import (
    CLEANED,
    SUBSCRIBED,
    UNSUBSCRIBED,
    mailchimp_zip,
    repeated_person,
)
from tests.stages.test_streaming import messy_list

SANDBOX = str(SANDBOX_SETTINGS)
DOMAINS = "sandbox-domains.sqlite"  # the domain cache of a --sandbox run
OTHERS = ["yahoo.com", "outlook.com", "acme-widgets.com", "gmial.com"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Client]:
    """Two worker processes, each with a local directory of its own."""
    with two_workers(tmp_path_factory.mktemp("workers")) as client:
        yield client


def executed(client: Client) -> dict[str, int]:
    counts: dict[str, int] = client.run(lambda dask_worker: dask_worker.state.executed_count)
    return counts


def clean(
    tmp: Path, source: Path, output: str, cache: str, *extra: str, sandbox: bool = True
) -> dict[str, Any]:
    code = main(
        [
            "clean",
            f"file://{source}",
            "-o",
            f"file://{tmp / output}",
            *(["--sandbox"] if sandbox else []),
            "--config",
            SANDBOX,
            "--cache-dir",
            str(tmp / cache),
            "--quiet",
            "--memory",
            "64",
            *extra,
        ]
    )
    assert code == 0
    summary: dict[str, Any] = json.loads(
        (tmp / output.replace(".parquet", ".summary.json")).read_text()
    )
    return summary


def share_domains(cache: Path, output_folder: Path) -> None:
    """The domain answers of a local run's *cache*, as a --sandbox Dask run writing to
    *output_folder* finds them (the shared folder beside its output)."""
    with sqlite3.connect(cache) as db:
        domains = db.execute("SELECT domain, status, mx FROM domains").fetchall()
        hosts = db.execute("SELECT host, status FROM hosts").fetchall()
    shared = DomainBuckets(Shelf(str(output_folder / SHELF / "sandbox")), CacheConfig())
    shared.put_many({d: DnsAnswer(DnsStatus(s), mx) for d, s, mx in domains})
    shared.put_hosts({h: HostStatus(s) for h, s in hosts})


def same(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    # DNS queries are compared as the questions the server heard (see below): a UDP answer
    # lost on a busy machine is asked again, in either engine.
    drop = ("stages", "output", "rejects_file", "files", "run", "dns_queries", "history")
    drop += ("since_last_run",)  # each run is the next of the same list (the same history)
    assert {k: v for k, v in a.items() if k not in drop} == {
        k: v for k, v in b.items() if k not in drop
    }
    hashed = ("input_sha256", "input_hash_covers")  # by a worker in a Dask run
    assert {k: a["run"][k] for k in hashed} == {k: b["run"][k] for k in hashed}
    assert a["run"]["input_sha256"]
    return a


def test_the_dask_engine_gives_the_local_answers(cluster: Client, tmp_path: Path) -> None:
    source = tmp_path / "list.csv"
    messy_list(source, rows=40_000)  # several input parts at --memory 64
    sample = pl.read_csv(SAMPLE_CSV, infer_schema=False).get_column("Email Address")
    every_kind = pl.DataFrame({"id": [f"s{i}" for i in range(sample.len())], "email": sample})
    pl.concat([pl.read_csv(source, infer_schema=False), every_kind]).write_csv(source)
    with SandboxDNS(load_world(SANDBOX_WORLD), query_log_limit=1_000_000) as dns:
        heard = ("--resolver", dns.address)
        local = clean(tmp_path, source, "local.parquet", "cache-local", *heard, sandbox=False)
        asked_locally = sorted(dns.queries())
        dns.reset_counts()
        before = executed(cluster)
        dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address, *heard)
        spread = clean(tmp_path, source, "dask.parquet", "cache-dask", *dask, sandbox=False)
        after = executed(cluster)
        asked_by_dask = sorted(dns.queries())
    assert all(after[w] > before.get(w, 0) + 3 for w in after) and len(after) == 2
    same(local, spread)
    assert local["dns_queries"] > 0 and local["distinct_domains"] > 10
    # The same questions, each domain and mail host resolved once in the whole cluster.
    assert set(asked_by_dask) == set(asked_locally)
    assert spread["dns_queries"] >= len(set(asked_by_dask))
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)
    again = clean(tmp_path, source, "again.parquet", "cache-dask", *dask, sandbox=False)
    assert again["dns_queries"] == 0 and again["cache_hits"] == local["distinct_domains"]
    assert pl.read_parquet(tmp_path / "again.parquet").equals(expected)


LONG = ReadConfig(max_field_bytes=2_000)


def test_a_last_batch_of_rejects_only(cluster: Client, tmp_path: Path) -> None:
    """A list of exactly one batch of rows and then blank rows: its second batch has rejects
    and no row, which neither engine may trip on; a field over read.max_field_bytes is
    rejected in its place by both."""
    blank, row = 3, "N{:06d}," + "n" * 1_980 + ",user{:06d}@gmail.com\n"
    rows = 1_000
    for _ in range(5):  # the batch size follows from the bytes per row, which follow from it
        size = len("name,about,email\n") + rows * len(row.format(0, 0)) + blank
        rows = batch_rows(64, size / (rows + blank))
    long = "Bob,about," + "b" * 3_000 + "@x.com\n"
    text = "name,about,email\n" + long + "".join(row.format(i, i) for i in range(rows - 1))
    source = tmp_path / "list.csv"
    source.write_text(text + "\n" * blank)
    reader = open_list(str(source), source, tmp_path, None, choice=Choice(limits=LONG))
    heights = [b.frame.height for b in reader.batches(batch_rows(64, reader.bytes_per_row))]
    assert len(heights) > 1 and heights[-1] == 0, heights  # the case this test is about
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address, "--offline")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LISTCLEAN_READ_MAX_FIELD_BYTES", str(LONG.max_field_bytes))
        local = clean(tmp_path, source, "local.parquet", "cache", "--offline", sandbox=False)
        spread = clean(tmp_path, source, "dask.parquet", "cache", *dask, sandbox=False)
    same(local, spread)
    assert (local["rows_in"], local["rows_out"]) == (rows + blank, rows - 1)
    assert local["rejects_by_reason"] == {"empty_row": blank, "field_too_long": 1}
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)


def test_smtp_checks_spread_by_provider_spend_the_local_budget(
    cluster: Client, tmp_path: Path
) -> None:
    smtp = ("--verify", "smtp", "--budget", "40")
    local = clean(tmp_path, SAMPLE_CSV, "local.parquet", "cache-local", *smtp)
    # The two runs share their domain answers (the local run's cache, copied to the shared
    # folder the Dask run's workers read), so that what is compared is the spreading of the
    # address checks: a DNS answer late on a busy machine (the sandbox's servers share the
    # test process) would otherwise make one domain Risky in one run only.
    share_domains(tmp_path / "cache-local" / DOMAINS, tmp_path)
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address)
    spread = clean(tmp_path, SAMPLE_CSV, "dask.parquet", "cache-dask", *smtp, *dask)
    assert spread["rcpts_sent"] == local["rcpts_sent"] <= 40
    assert spread["verdicts"] == local["verdicts"] and spread["reasons"] == local["reasons"]
    columns = ["EMAIL", "VERDICT", "SCORE", "REASON", "DUPLICATE"]
    expected = pl.read_parquet(tmp_path / "local.parquet").select(columns)
    assert pl.read_parquet(tmp_path / "dask.parquet").select(columns).equals(expected)
    # Every answer reached the driver's mailbox cache: a second run asks only about the
    # addresses the first one's budget did not reach, as a second local run does.
    local_again = clean(tmp_path, SAMPLE_CSV, "local2.parquet", "cache-local", *smtp)
    again = clean(tmp_path, SAMPLE_CSV, "again.parquet", "cache-dask", *smtp, *dask)
    assert 0 < again["rcpts_sent"] == local_again["rcpts_sent"]
    assert again["reasons"] == local_again["reasons"]
    assert (
        pl.read_parquet(tmp_path / "again.parquet")
        .select(columns)
        .equals(pl.read_parquet(tmp_path / "local2.parquet").select(columns))
    )


def test_a_remote_cluster_refuses_local_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "list.csv"
    messy_list(source, rows=10)
    args = ["clean", str(source), "-o", str(tmp_path / "o.parquet"), "--engine", "dask"]
    assert main([*args, "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "every machine of the cluster" in capsys.readouterr().err
    assert main(["clean", str(source), "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "--engine dask" in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists()


def test_consent_is_kept_by_the_dask_engine(cluster: Client, tmp_path: Path) -> None:
    """A Mailchimp export through both engines: the same rows held back, the same counts."""
    mailchimp_zip(tmp_path / "export.zip")
    local = clean(tmp_path, tmp_path / "export.zip", "local.parquet", "cache-local")
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address)
    spread = clean(tmp_path, tmp_path / "export.zip", "dask.parquet", "cache-dask", *dask)
    same(local, spread)
    assert spread["held_back"] == UNSUBSCRIBED + CLEANED and spread["safe_to_send"] == SUBSCRIBED
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)
    # A person held back on one row of a list is held back on every row, in both engines.
    repeated_person(tmp_path / "crm.csv")
    local = clean(tmp_path, tmp_path / "crm.csv", "local2.parquet", "cache-local")
    spread = clean(tmp_path, tmp_path / "crm.csv", "dask2.parquet", "cache-dask", *dask)
    same(local, spread)
    assert spread["held_back"] == 2
    expected = pl.read_parquet(tmp_path / "local2.parquet")
    assert pl.read_parquet(tmp_path / "dask2.parquet").equals(expected)


# The tasks that hold a part's rows (a run is recorded in its list's history by default, so its
# parts are decided by decide_remembering, which keeps their narrow table beside the rows).
ROW_TASKS = ("scan_part", "mark_part", "decide_remembering")


def test_one_domain_stays_in_the_input_parts(
    cluster: Client, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A list that is 90% gmail.com, over several input parts, gives the local output; no task
    holds more than one part's rows (gmail.com used to be one partition built in one task),
    a part is held without its own columns until the write reads them again, and the
    duplicate shuffle moves narrow (KEY, row) pairs, far smaller than the rows, into a bucket
    per BUCKET_ROWS rows of the list."""
    monkeypatch.setattr(dask_engine, "BUCKET_ROWS", 2_500)
    rng = random.Random(26)
    rows = 12_000
    people = [f"p{i}" for i in range(rows // 3)]  # repeats, most in another part
    emails = [
        f"{rng.choice(people)}@{'gmail.com' if rng.random() < 0.9 else rng.choice(OTHERS)}"
        for _ in range(rows)
    ]
    notes = [f"{i:07d}" * 300 for i in range(rows)]  # wide rows: a few thousand a part
    source = tmp_path / "list.parquet"
    pl.DataFrame({"email": emails, "notes": notes}).write_parquet(source, row_group_size=500)
    reader = open_list(str(source), source, tmp_path, None)
    planned = reader.parts(batch_rows(64, reader.bytes_per_row))
    assert planned is not None and len(planned) >= 4
    largest_part = max(p.rows for p in planned)
    assert largest_part < 0.5 * rows  # the one domain is far more than one part
    local = clean(tmp_path, source, "local.parquet", "cache-local", "--offline")
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address, "--offline")
    with get_task_stream(cluster) as stream:
        spread = clean(tmp_path, source, "dask.parquet", "cache-dask", *dask)
    same(local, spread)
    assert spread["duplicates"] > 0
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)
    sizes: dict[str, list[int]] = {}
    for task in stream.data:
        sizes.setdefault(str(task["key"]).split("-")[0], []).append(int(task["nbytes"]))
    for name in ROW_TASKS:  # one task per input part, each holding that part's rows only
        assert len(sizes[name]) == len(planned), name
    decided = sizes["decide_remembering"]  # a part's output rows, its own columns read again
    assert all(n <= 1.5 * max(decided) for name in ROW_TASKS for n in sizes[name])
    assert max(decided) < 0.5 * sum(decided)
    # From the read to the write a part is held without the list's own (wide) columns.
    assert max(sizes["scan_part"] + sizes["mark_part"]) < 0.5 * min(decided)
    # What crosses between parts is narrow: every bucket of pairs a small share of a part.
    assert len(sizes["settle_bucket"]) == 5  # 12,000 rows / 2,500
    assert max(sizes["key_pieces"]) < 0.1 * min(decided)


def test_bounce_flags_through_the_dask_engine(cluster: Client, tmp_path: Path) -> None:
    """The bounce ledger's flags reach every part: the sample list repeated to 3,000 rows
    (each address again in other parts), over several input parts, gives the local rows."""
    sample = Path(SAMPLE_CSV).parent
    for cache in ("cache-local", "cache-dask"):
        bounces = [str(sample / "bounces.csv"), str(sample / "bounces.mbox")]
        args = ["bounces", "import", *bounces, "--sandbox", "--cache-dir", str(tmp_path / cache)]
        assert main(args) == 0
    once = pl.read_csv(SAMPLE_CSV, infer_schema=False)
    frame = pl.concat([once] * -(-3_000 // once.height))
    notes = [f"{i:07d}" * 600 for i in range(frame.height)]  # wide rows: several parts
    source = tmp_path / "list.parquet"
    frame.with_columns(pl.Series("notes", notes)).write_parquet(source, row_group_size=100)
    reader = open_list(str(source), source, tmp_path, None)
    planned = reader.parts(batch_rows(64, reader.bytes_per_row))
    assert planned is not None and len(planned) > 1
    local = clean(tmp_path, source, "local.parquet", "cache-local")
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address)
    spread = clean(tmp_path, source, "dask.parquet", "cache-dask", *dask)
    same(local, spread)
    assert spread["reasons"]["known_bounce"] > 0 and spread["duplicates"] > 0
    expected = pl.read_parquet(tmp_path / "local.parquet")
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(expected)


def test_a_paid_verifier_has_one_owner(cluster: Client, tmp_path: Path) -> None:
    """With --verify zerobounce the driver asks the balance and shares out the credits, one
    task on one worker sends the requests, and each answer comes back to the driver's
    paid-answer cache: the same answers and the same bill as a local run, and a second run
    pays for nothing."""
    from worlds.vendors.base import GOOD_KEY
    from worlds.vendors.zerobounce import FakeZeroBounce

    config = tmp_path / "vendor.toml"  # short polls of the bulk job the sample list makes
    config.write_text(SANDBOX_SETTINGS.read_text() + "\n[vendor]\npoll_interval = 0.01\n")
    with FakeZeroBounce() as fake:
        paid = ("--verify", "zerobounce", "--api-key", GOOD_KEY, "--api-url", fake.url)
        paid += ("--config", str(config))
        local = clean(tmp_path, SAMPLE_CSV, "local.parquet", "cache-local", *paid)
        billed = fake.spent
        share_domains(tmp_path / "cache-local" / DOMAINS, tmp_path)
        dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address)
        with get_task_stream(cluster) as stream:
            spread = clean(tmp_path, SAMPLE_CSV, "dask.parquet", "cache-dask", *paid, *dask)
        owners = [t for t in stream.data if t["key"].startswith("ask_vendor")]
        assert len(owners) == 1  # one task asked the vendor
        assert spread["vendor_credits"] == local["vendor_credits"] == billed > 0
        assert fake.spent == 2 * billed
        assert spread["reasons"] == local["reasons"]
        again = clean(tmp_path, SAMPLE_CSV, "again.parquet", "cache-dask", *paid, *dask)
        assert again["vendor_requests"] == 0 and fake.spent == 2 * billed
    columns = ["EMAIL", "VERDICT", "SCORE", "REASON", "DETAIL"]
    expected = pl.read_parquet(tmp_path / "local.parquet").select(columns)
    assert pl.read_parquet(tmp_path / "dask.parquet").select(columns).equals(expected)


def test_the_workers_write_the_history(
    cluster: Client, tmp_path: Path, store_at: StoreAt, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two nights of one list through the cluster, the history in a SQLite file (one worker
    task writes it) or in PostgreSQL (each part's worker writes its part): the same changes as
    the local engine finds, and the driver never opens the history."""
    last, tonight = tmp_path / "crm-2026-11-26.csv", tmp_path / "crm-2026-11-27.csv"
    messy_list(last, rows=20_000)  # several input parts at --memory 64
    rows = pl.read_csv(last, infer_schema=False)
    added = pl.DataFrame({"id": ["n1", "n2"], "email": ["new.one@gmail.com", "new.two@gmail.com"]})
    pl.concat([rows.slice(500), added]).write_csv(tonight)
    where = store_at("history.sqlite")
    config = tmp_path / "history.toml"
    config.write_text(Path(SANDBOX).read_text() + f'\n[history]\ndb = "{where}"\n')
    local = tmp_path / "local.toml"
    local.write_text(Path(SANDBOX).read_text() + f'\n[history]\ndb = "{tmp_path / "l.sqlite"}"\n')
    expected = []
    for night in (last, tonight):
        summary = clean(
            tmp_path, night, f"l-{night.stem}.parquet", "cache", "--config", str(local),
            "--changes", str(tmp_path / f"l-{night.stem}.csv"),
        )  # fmt: skip
        expected.append(summary)
    monkeypatch.setattr(RunHistory, "__init__", _not_on_the_driver)
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address, "--config", str(config))
    got = []
    for night in (last, tonight):
        summary = clean(
            tmp_path, night, f"d-{night.stem}.parquet", "cache", *dask,
            "--changes", f"file://{tmp_path / f'd-{night.stem}.csv'}",
        )  # fmt: skip
        got.append(summary)
    monkeypatch.undo()
    assert got[0]["since_last_run"] is None and got[1]["list_name"] == "crm"
    since, wanted = got[1]["since_last_run"], expected[1]["since_last_run"]
    assert {**since, "previous_run_at": ""} == {**wanted, "previous_run_at": ""}
    assert since["new"] == 2 and since["gone"] > 0
    changed = pl.read_csv(tmp_path / "d-crm-2026-11-27.csv", infer_schema=False)
    local_changed = pl.read_csv(tmp_path / "l-crm-2026-11-27.csv", infer_schema=False)
    assert (
        changed.drop("learned_at")
        .sort("address")
        .equals(local_changed.drop("learned_at").sort("address"))
    )
    with RunHistory(where) as dask_runs, RunHistory(tmp_path / "l.sqlite") as local_runs:
        runs = dask_runs.runs("crm", sandbox=True)
        assert len(runs) == 2 and runs[1].addresses == expected[1]["distinct_addresses"]
        kept = dask_runs.kept(runs[1].run_id).sort("HASH")
        assert kept.equals(local_runs.kept(local_runs.runs("crm", True)[1].run_id).sort("HASH"))


def _not_on_the_driver(*args: object, **kwargs: object) -> None:
    raise AssertionError("the driver opened the run history")


def test_a_report_with_title_rows_gives_the_local_rows_and_rejects(
    cluster: Client, tmp_path: Path
) -> None:
    """A Salesforce report read in byte ranges: the title rows come from the head the driver
    reads, the ranges start below the header; rows, rejects and summary are the local run's."""
    source = tmp_path / "report.csv"
    salesforce_report(source, rows=3_000)
    local = clean(tmp_path, source, "local.parquet", "cache-local")
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address)
    spread = clean(tmp_path, source, "dask.parquet", "cache-dask", *dask)
    same(local, spread)
    assert spread["header_row"] == 5 and spread["rejects_by_reason"]["title_row"] == 3
    assert pl.read_parquet(tmp_path / "dask.parquet").equals(
        pl.read_parquet(tmp_path / "local.parquet")
    )
    rejects = [(tmp_path / f"{n}.rejects.csv").read_text() for n in ("local", "dask")]
    assert rejects[0] == rejects[1]


def test_the_workers_apply_the_lists_calibration(cluster: Client, tmp_path: Path) -> None:
    """A list's calibration (kept beside its history) reaches every part: the Dask run gives
    the local run's calibrated SCORE and names the calibration in its summary."""
    for cache in ("cache-local", "cache-dask"):
        (tmp_path / cache).mkdir()
        with CalibrationStore(tmp_path / cache / "sandbox-history.sqlite") as store:
            store.put(calibration_of_valid(0.8))
    named = ("--list-name", "crm")
    local = clean(tmp_path, Path(SAMPLE_CSV), "local.parquet", "cache-local", *named)
    dask = ("--engine", "dask", "--scheduler", cluster.scheduler.address, *named)
    spread = clean(tmp_path, Path(SAMPLE_CSV), "dask.parquet", "cache-dask", *dask)
    assert spread["run"]["calibration"]["id"] == local["run"]["calibration"]["id"] == "cal-1"
    rows = pl.read_parquet(tmp_path / "dask.parquet")
    valid = set(rows.filter(pl.col("VERDICT") == "Valid")["SCORE"])
    assert 0.8 in valid and 0.9 not in valid  # the level 0.90 calibrated, 0.81 (role) not
    assert rows.equals(pl.read_parquet(tmp_path / "local.parquet"))


def calibration_of_valid(observed: float) -> Calibration:
    """The list crm's calibration (sandbox): SCORE 0.90 delivered *observed* of the time."""
    level = Level(0.9, "Valid", 400, 80, observed, observed, observed, LevelStatus.APPLIED)
    return Calibration("cal-1", "crm", True, 1.0, 200, 400, (level,))
