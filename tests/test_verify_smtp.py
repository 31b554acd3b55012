"""`clean --verify smtp` end to end: sample verdicts, the cache, budgets, kill -9 and resume."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from pipeline.sandbox.files import SANDBOX_SETTINGS
from pipeline.sandbox.smtp_server import SandboxSMTP
from tests.conftest import SAMPLE_CSV

FAST = str(SANDBOX_SETTINGS)


def clean_smtp(tmp_path: Path, *extra: str, output: str = "out.parquet") -> dict[str, object]:
    code = main(
        [
            "clean",
            str(SAMPLE_CSV),
            "-o",
            str(tmp_path / output),
            "--sandbox",
            "--config",
            FAST,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--verify",
            "smtp",
            "--quiet",
            "--helo",
            "probe.example.net",
            *extra,
        ]
    )
    assert code == 0
    stem = output.removesuffix(".parquet")
    summary: dict[str, object] = json.loads((tmp_path / f"{stem}.summary.json").read_text())
    return summary


@pytest.fixture(scope="module")
def verified(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, pl.DataFrame, dict[str, object]]:
    tmp = tmp_path_factory.mktemp("smtp")
    summary = clean_smtp(tmp)
    return tmp, pl.read_parquet(tmp / "out.parquet"), summary


@pytest.mark.parametrize(
    ("raw", "verdict", "reason"),
    [
        ("thomas.robinson+lists@outlook.com", "Valid", "mailbox_ok"),
        ("dlopez@gmail.com", "Invalid", "no_such_user"),
        ("olga.patel@hotmail.com", "Risky", "mailbox_full"),
        ("linda.sato1966@icloud.com", "Invalid", "mailbox_disabled"),
        ("admin@globex-corp.com", "Risky", "catch_all"),
        ("louis.khan@yahoo.com", "Risky", "provider_unverifiable"),
        ("lmuller@comcast.net", "Risky", "smtp_blocked"),
        ("support@initech.io", "Valid", "mailbox_ok"),  # greylisted, then accepted on retry
        ("dave.wilson@faraway-isp.com.au", "Risky", "smtp_unreachable"),
        ("jmiller@contoso-bank.co.uk", "Valid", "mailbox_ok"),  # host takes 3 RCPTs a session
        ("rsantos@orange.fr", "Valid", "mailbox_ok"),  # slow host
        ("orders@smallbiz-bakery.com", "Risky", "smtp_unreachable"),  # implicit MX, not loopback
        ("paul.green@gmai.com", "Invalid", "no_domain"),  # dead domains are not probed
    ],
)
def test_sample_rows(
    verified: tuple[Path, pl.DataFrame, dict[str, object]], raw: str, verdict: str, reason: str
) -> None:
    _, frame, _ = verified
    row = frame.filter(pl.col("Email Address") == raw).row(0, named=True)
    assert row["VERDICT"] == verdict
    assert reason in str(row["REASON"]).split(";")


def test_verified_mailboxes_score_higher(
    verified: tuple[Path, pl.DataFrame, dict[str, object]],
) -> None:
    _, frame, summary = verified
    ok = frame.filter(pl.col("REASON") == "mailbox_ok")
    assert ok.height > 50 and set(ok["SCORE"]) == {0.97}
    assert int(summary["rcpts_sent"]) > 100  # type: ignore[call-overload]


def test_second_run_probes_nothing(verified: tuple[Path, pl.DataFrame, dict[str, object]]) -> None:
    tmp, frame, _ = verified
    summary = clean_smtp(tmp, output="again.parquet")
    # Every domain and mailbox is answered from the caches: no query at all, canaries included.
    assert summary["rcpts_sent"] == 0 and summary["dns_queries"] == 0
    again = pl.read_parquet(tmp / "again.parquet")
    assert again.select("VERDICT", "SCORE", "REASON").equals(
        frame.select("VERDICT", "SCORE", "REASON")
    )


def test_budget_caps_the_run_and_the_next_run_goes_on(tmp_path: Path) -> None:
    first = clean_smtp(tmp_path, "--budget", "20")
    assert 0 < int(first["rcpts_sent"]) <= 20  # type: ignore[call-overload]
    out = pl.read_parquet(tmp_path / "out.parquet")
    left = out.filter(pl.col("REASON").str.contains("not_verified_budget"))
    assert left.height > 100
    assert set(left["VERDICT"]) <= {"Valid", "Risky"}  # they keep their domain-level verdict
    second = clean_smtp(tmp_path, "--budget", "20", output="next.parquet")
    assert 0 < int(second["rcpts_sent"]) <= 20  # type: ignore[call-overload]
    after = pl.read_parquet(tmp_path / "next.parquet")
    still = after.filter(pl.col("REASON").str.contains("not_verified_budget")).height
    assert still < left.height


def test_unreachable_port_25_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "clean",
            str(SAMPLE_CSV),
            "-o",
            str(tmp_path / "o.parquet"),
            "--sandbox",
            "--config",
            FAST,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--verify",
            "smtp",
            "--smtp-port",
            "9",
            "--quiet",
        ]
    )
    assert code == 3
    err = capsys.readouterr().err
    assert "SMTP checks cannot run from here" in err and "--verify none" in err
    assert not (tmp_path / "o.parquet").exists()
    assert not (tmp_path / "o.parquet.work").exists()  # nothing spent, nothing to resume


def test_doctor_reports_each_check(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["doctor", "--sandbox", "--config", FAST, "--helo", "gmail-smtp-in.l.google.com"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "ok    resolver" in out and "ok    outbound SMTP" in out and "ok    EHLO name" in out
    assert main(["doctor", "--sandbox", "--config", FAST, "--helo", "localhost"]) == 1


# -- kill -9 and resume -----------------------------------------------------------------------

DOMAINS = {
    "steady.test-mail.com": ("127.0.0.41", {}),
    "grey.test-mail.com": ("127.0.0.42", {"greylist_seconds": 0.2}),
}
PEOPLE = [f"user{i}" for i in range(40)]


def resume_world() -> dict[str, object]:
    zones: dict[str, object] = {
        c: {"mx": [[5, "mx.steady.test-mail.com"]]}
        for c in ("gmail.com", "outlook.com", "yahoo.com")
    }
    smtp: dict[str, object] = {}
    for domain, (address, settings) in DOMAINS.items():
        host = f"mx.{domain}"
        zones[domain] = {"mx": [[10, host]]}
        zones[host] = {"a": [address]}
        people = PEOPLE[:-5]  # the last five do not exist
        smtp[address] = {"name": host, "domains": {domain: {"mailboxes": people}}, **settings}
    steady = smtp["127.0.0.41"]["domains"]  # type: ignore[index]
    for canary in ("gmail.com", "outlook.com", "yahoo.com"):
        steady[canary] = {"mailboxes": ["postmaster"]}
    return {"zones": zones, "smtp": smtp}


def run_clean(
    tmp: Path, dns: SandboxDNS, smtp: SandboxSMTP, out: str, cache: str, per_session: int = 5
) -> subprocess.Popen[bytes]:
    config = tmp / "resume.toml"
    config.write_text(
        "[dns]\ntimeout = 0.3\nattempts = 2\nbackoff = 0.05\n"
        f"[verify]\ntimeout = 2.0\ngreylist_delays = [4.0]\nrcpts_per_session = {per_session}\n"
        "rcpts_per_minute_per_host = 60000\nrcpts_per_minute_per_provider = 60000\n"
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pipeline",
            "clean",
            str(tmp / "list.csv"),
            "-o",
            str(tmp / out),
            "--resolver",
            dns.address,
            "--smtp-port",
            str(smtp.port),
            "--config",
            str(config),
            "--cache-dir",
            str(tmp / cache),
            "--verify",
            "smtp",
            "--quiet",
            "--helo",
            "probe.example.net",
        ]
    )


def committed(cache_dir: Path) -> int:
    path = cache_dir / "mailboxes.sqlite"
    if not path.exists():
        return 0
    with sqlite3.connect(path) as db:
        try:
            return int(db.execute("SELECT count(*) FROM mailboxes").fetchone()[0])
        except sqlite3.OperationalError:
            return 0


def test_killed_run_resumes_without_probing_twice(tmp_path: Path) -> None:
    addresses = [f"{p}@{d}" for d in DOMAINS for p in PEOPLE]
    (tmp_path / "list.csv").write_text("email\n" + "\n".join(addresses) + "\n")
    steady = len(PEOPLE)  # answers that are final on the first ask
    w = world_from_dict(resume_world())
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        run = run_clean(tmp_path, dns, smtp, "out.parquet", "cache")
        deadline = time.monotonic() + 30
        # Wait until the first pass is committed; the run then sleeps before its greylist retry.
        while committed(tmp_path / "cache") < steady and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        run.send_signal(signal.SIGKILL)
        run.wait()
        assert committed(tmp_path / "cache") >= steady
        assert not (tmp_path / "out.parquet").exists()
        assert (tmp_path / "out.parquet.work").exists()  # the interrupted run's state
        assert run_clean(tmp_path, dns, smtp, "out.parquet", "cache").wait(timeout=60) == 0
        counts = Counter(rcpt for _, rcpt, _ in smtp.rcpts() if not rcpt.startswith("lc-probe"))
    assert not (tmp_path / "out.parquet.work").exists()  # a finished run cleans up
    for address in addresses:
        # A greylisting host defers every first ask, so its addresses are asked twice by
        # design (deferred, then answered); every other address exactly once.
        expected = 2 if address.endswith("grey.test-mail.com") else 1
        assert counts[address] == expected, address
    resumed = pl.read_parquet(tmp_path / "out.parquet")

    w = world_from_dict(resume_world())
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        assert run_clean(tmp_path, dns, smtp, "ref.parquet", "ref-cache").wait(timeout=60) == 0
    reference = pl.read_parquet(tmp_path / "ref.parquet")
    columns = ["EMAIL", "VERDICT", "SCORE", "REASON"]
    assert resumed.select(columns).equals(reference.select(columns))
    assert Counter(resumed["REASON"]) == Counter({"mailbox_ok": 70, "no_such_user": 10})


def test_answers_received_mid_session_survive_a_kill(tmp_path: Path) -> None:
    """Killed in the middle of long sessions, a run keeps every reply it had received: the
    rerun repeats at most the RCPTs that were in flight (one per open session)."""
    world = resume_world()
    for host in world["smtp"].values():  # type: ignore[attr-defined]
        host["delay_ms"] = 15  # every reply after the banner takes a moment
    addresses = [f"{p}@{d}" for d in DOMAINS if not d.startswith("grey") for p in PEOPLE]
    (tmp_path / "list.csv").write_text("email\n" + "\n".join(addresses) + "\n")
    w = world_from_dict(world)
    with SandboxDNS(w) as dns, SandboxSMTP(w.smtp) as smtp:
        run = run_clean(tmp_path, dns, smtp, "out.parquet", "cache", per_session=40)
        deadline = time.monotonic() + 30
        while len(smtp.rcpts()) < 30 and time.monotonic() < deadline:
            time.sleep(0.01)
        run.send_signal(signal.SIGKILL)
        run.wait()
        first = len([r for _, r, _ in smtp.rcpts() if not r.startswith("lc-probe")])
        assert 0 < first < len(addresses)  # killed mid-way, sessions still open
        assert run_clean(tmp_path, dns, smtp, "out.parquet", "cache", 40).wait(timeout=60) == 0
        counts = Counter(rcpt for _, rcpt, _ in smtp.rcpts() if not rcpt.startswith("lc-probe"))
    in_flight = 2 * 2  # hosts x sessions_per_host, one RCPT each at a time
    assert set(counts) == set(addresses)
    assert sum(1 for n in counts.values() if n > 1) <= in_flight


def test_due_answers_are_refreshed_oldest_first_within_the_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every answer of the first run falls due (a one-second lifetime, no jitter); the second
    run's budget refreshes some, says so before and after, and the rest keep their answer."""
    config = tmp_path / "short.toml"
    config.write_text(
        Path(FAST).read_text() + "\nttl_good = 1\nttl_temporary = 1\nttl_floor = 1.0\n"
    )  # appended to [verify], the file's last table
    first = clean_smtp(tmp_path, "--config", str(config))
    before = pl.read_parquet(tmp_path / "out.parquet")
    time.sleep(1.2)
    capsys.readouterr()
    code = main(
        ["clean", str(SAMPLE_CSV), "-o", str(tmp_path / "next.parquet"), "--sandbox",
         "--config", str(config), "--cache-dir", str(tmp_path / "cache"), "--verify", "smtp",
         "--helo", "probe.example.net", "--budget", "40"]
    )  # fmt: skip
    assert code == 0
    summary = json.loads((tmp_path / "next.summary.json").read_text())
    due, refreshed = summary["answers_due"], summary["answers_refreshed"]
    assert due > 100 and 0 < refreshed <= 40 and summary["rcpts_sent"] <= 40
    assert summary["runs_to_refresh_all"] == -(-due // 40)
    assert f"{due:,} cached answers are due again" in capsys.readouterr().err
    after = pl.read_parquet(tmp_path / "next.parquet")
    kept = after.filter(pl.col("DETAIL").str.contains("due again"))
    assert kept.height >= due - refreshed - 5  # duplicates of an address share its answer
    assert not after["REASON"].str.contains("not_verified_budget").any()
    # A due answer the budget did not reach keeps its last verdict.
    assert after.select("VERDICT").equals(before.select("VERDICT"))
    assert int(first["rcpts_sent"]) > 100  # type: ignore[call-overload]
