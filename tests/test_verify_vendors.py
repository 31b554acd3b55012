"""`clean --verify <vendor>` end to end against the vendors' loopback fakes (worlds/vendors):
credits spent only where nothing else answers, exactly; a second run spends nothing; a refused
key stops the run before the list is spent; an empty balance leaves rows at their domain-level
verdict, said in a warning; budgets, routing, resumed bulk jobs; the key found nowhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.sandbox.files import SANDBOX_SETTINGS
from tests.conftest import REPO
from worlds.vendors.base import GOOD_KEY, FakeVendor
from worlds.vendors.bouncer import FakeBouncer
from worlds.vendors.emailable import FakeEmailable
from worlds.vendors.kickbox import FakeKickbox
from worlds.vendors.neverbounce import FakeNeverBounce
from worlds.vendors.zerobounce import FakeZeroBounce

FAKES: dict[str, type[FakeVendor]] = {
    "zerobounce": FakeZeroBounce,
    "neverbounce": FakeNeverBounce,
    "kickbox": FakeKickbox,
    "emailable": FakeEmailable,
    "bouncer": FakeBouncer,
}
CHECK_PATH = {
    "zerobounce": "/v2/validate",
    "neverbounce": "/v4.2/single/check",
    "kickbox": "/v2/verify",
    "emailable": "/v1/verify",
    "bouncer": "/v1.1/email/verify",
}
# Per vendor: four addresses its fake answers in four ways (address, REASON, VERDICT), and the
# credits they cost by the vendor's billing rule (ZeroBounce and Kickbox do not bill unknown).
ANSWERS: dict[str, tuple[list[tuple[str, str, str]], int]] = {
    "zerobounce": (
        [
            ("valid@gmail.com", "api_verified", "Valid"),
            ("invalid@gmail.com", "no_such_user", "Invalid"),
            ("spamtrap@gmail.com", "spamtrap", "Invalid"),
            ("unknown@gmail.com", "vendor_unknown", "Risky"),
        ],
        3,
    ),
    "neverbounce": (
        [
            ("anna.lee@gmail.com", "api_verified", "Valid"),
            ("invalid@gmail.com", "no_such_user", "Invalid"),
            ("trap@gmail.com", "do_not_mail", "Risky"),
            ("unknown@gmail.com", "vendor_unknown", "Risky"),
        ],
        4,
    ),
    "kickbox": (
        [
            ("anna.lee@gmail.com", "api_verified", "Valid"),
            ("rejected-email@gmail.com", "no_such_user", "Invalid"),
            ("accept-all@gmail.com", "catch_all", "Risky"),
            ("timeout@gmail.com", "smtp_timeout", "Risky"),
        ],
        3,
    ),
    "emailable": (
        [
            ("deliverable@gmail.com", "api_verified", "Valid"),
            ("undeliverable@gmail.com", "no_such_user", "Invalid"),
            ("mailbox-full@gmail.com", "mailbox_full", "Risky"),
            ("unknown@gmail.com", "smtp_timeout", "Risky"),
        ],
        4,
    ),
    "bouncer": (
        [
            ("anna.lee@gmail.com", "api_verified", "Valid"),
            ("disabled@gmail.com", "mailbox_disabled", "Invalid"),
            ("accept-all@gmail.com", "catch_all", "Risky"),
            ("timeout@gmail.com", "smtp_timeout", "Risky"),
        ],
        4,
    ),
}
# What no vendor is ever asked about: a repeat (any case of its local part), a malformed
# address, a domain that does not exist, a null MX, and a known bounce (imported first).
FREE = [
    "not-an-address",
    "someone@no-such-domain-zz.com",
    "x@parkedsite.net",
    "bounced@gmail.com",
]
SECRET = "sk-live-7d41c0ffee9b2a"


def write_config(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "vendors.toml"
    path.write_text(
        SANDBOX_SETTINGS.read_text()
        + "\n[vendor]\nretries = 1\nbackoff = 0.001\npoll_interval = 0.01\nper_minute = 600000\n"
        + extra
    )
    return path


def clean(
    tmp_path: Path,
    vendor: str,
    fake: FakeVendor,
    source: Path,
    *extra: str,
    out: str = "out",
    key: str = GOOD_KEY,
    config: Path | None = None,
) -> tuple[int, dict[str, object]]:
    code = main(
        [
            "clean",
            str(source),
            "-o",
            str(tmp_path / f"{out}.parquet"),
            "--sandbox",
            "--config",
            str(config or write_config(tmp_path)),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--verify",
            vendor,
            "--api-key",
            key,
            "--api-url",
            fake.url,
            *extra,
        ]
    )
    path = tmp_path / f"{out}.summary.json"
    return code, json.loads(path.read_text()) if path.exists() else {}


def write_list(tmp_path: Path, addresses: list[str], name: str = "list.csv") -> Path:
    path = tmp_path / name
    path.write_text("email\n" + "\n".join(addresses) + "\n")
    return path


def import_bounce(tmp_path: Path, address: str = "bounced@gmail.com") -> None:
    report = tmp_path / "bounces.csv"
    report.write_text(f"email,type,date\n{address},hard,2026-01-05\n")
    args = ["bounces", "import", str(report), "--sandbox", "--cache-dir", str(tmp_path / "cache")]
    assert main(args) == 0


@pytest.fixture(params=list(FAKES))
def vendor(request: pytest.FixtureRequest) -> Iterator[tuple[str, FakeVendor]]:
    with FAKES[request.param]() as fake:
        yield request.param, fake


def test_credits_go_only_where_nothing_else_answers(
    vendor: tuple[str, FakeVendor], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, fake = vendor
    answers, credits = ANSWERS[name]
    paid = [a for a, _, _ in answers]
    repeats = [paid[0], paid[1].capitalize(), paid[0]]
    import_bounce(tmp_path)
    source = write_list(tmp_path, [*paid, *repeats, *FREE])
    code, summary = clean(tmp_path, name, fake, source)
    assert code == 0
    assert sorted(fake.checked(CHECK_PATH[name])) == sorted(paid)  # each once, nothing else
    assert fake.spent == credits == summary["vendor_credits"]
    out = pl.read_parquet(tmp_path / "out.parquet")
    for address, reason, verdict in answers:
        row = out.filter(pl.col("EMAIL") == address).row(0, named=True)
        assert (row["REASON"].split(";")[0], row["VERDICT"]) == (reason, verdict), address
        assert row["DETAIL"].startswith(f"{name}: ")  # the vendor's own words
    bounced = out.filter(pl.col("EMAIL") == "bounced@gmail.com").row(0, named=True)
    assert bounced["VERDICT"] == "Invalid" and "known_bounce" in bounced["REASON"]
    assert "a third party" in capsys.readouterr().err  # the pre-flight line says so

    calls = len(fake.calls)
    code, again = clean(tmp_path, name, fake, source, out="again")
    assert code == 0 and len(fake.calls) == calls  # not even the balance is asked
    assert again["vendor_credits"] == 0 and again["vendor_requests"] == 0
    second = pl.read_parquet(tmp_path / "again.parquet")
    assert second.select("VERDICT", "REASON").equals(out.select("VERDICT", "REASON"))


def test_a_refused_key_stops_before_the_list_is_spent(
    vendor: tuple[str, FakeVendor], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    name, fake = vendor
    source = write_list(tmp_path, [a for a, _, _ in ANSWERS[name][0]])
    code, _ = clean(tmp_path, name, fake, source, key=SECRET)
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{name} refused the API key" in err[0]
    assert SECRET not in err[0]
    assert fake.checked(CHECK_PATH[name]) == [] and fake.spent == 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("out.")]  # no output


def test_an_empty_balance_mid_run_leaves_rows_at_the_domain_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeKickbox() as fake:
        fake.drain_to = 2  # the balance says 1,000; someone else spends it meanwhile
        addresses = [f"person{i}@gmail.com" for i in range(6)]
        code, summary = clean(
            tmp_path, "kickbox", fake, write_list(tmp_path, addresses), "--concurrency", "1"
        )
    assert code == 0 and fake.spent == 2
    out = pl.read_parquet(tmp_path / "out.parquet")
    left = out.filter(pl.col("REASON").str.contains("not_verified_credits"))
    assert left.height == 4
    assert (left["VERDICT"] == left["DOMAIN_VERDICT"]).all()
    err = capsys.readouterr().err
    assert "4 addresses were not verified" in err and "kickbox: out of credits" in err
    assert any("not_verified_credits" in w for w in summary["warnings"])  # type: ignore[union-attr]


def test_a_balance_below_the_need_is_spent_in_budget_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBouncer(credits=3) as fake:
        addresses = [f"person{i}@gmail.com" for i in range(5)]
        code, _ = clean(tmp_path, "bouncer", fake, write_list(tmp_path, addresses))
    assert code == 0 and fake.spent == 3
    assert fake.checked(CHECK_PATH["bouncer"]) == addresses[:3]  # the first, in order
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out["REASON"].str.contains("not_verified_credits").sum() == 2
    assert "balance of 3 credits covers 3 of the 5" in capsys.readouterr().err


def test_a_budget_caps_the_credits(tmp_path: Path) -> None:
    with FakeZeroBounce() as fake:
        addresses = [f"person{i}@gmail.com" for i in range(5)]
        code, summary = clean(
            tmp_path, "zerobounce", fake, write_list(tmp_path, addresses), "--budget", "2"
        )
    assert code == 0 and fake.spent == 2 == summary["vendor_credits"]
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out["REASON"].str.contains("not_verified_budget").sum() == 3


def test_routing_sends_google_to_the_vendor_and_the_rest_by_smtp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gmail and Google Workspace (acme-widgets.com's MX is Google's) to ZeroBounce, within a
    budget of its own; iCloud by SMTP, within its own."""
    addresses = [
        "valid@gmail.com",
        "invalid@gmail.com",
        "allen.a@acme-widgets.com",
        "barbara.young@icloud.com",
        "nobody.here@icloud.com",
    ]
    with FakeZeroBounce() as fake:
        routing = '[routing]\nroutes = ["google.com=zerobounce"]\n'
        config = write_config(tmp_path, f'urls = ["zerobounce={fake.url}"]\n\n{routing}')
        monkeypatch.setenv("LISTCLEAN_ZEROBOUNCE_API_KEY", GOOD_KEY)
        args = ["clean", str(write_list(tmp_path, addresses)), "-o", str(tmp_path / "out.parquet")]
        args += ["--sandbox", "--config", str(config), "--cache-dir", str(tmp_path / "cache")]
        args += ["--verify", "smtp", "--budget", "zerobounce=2", "--budget", "smtp=100", "--quiet"]
        assert main(args) == 0
    assert sorted(fake.checked(CHECK_PATH["zerobounce"])) == [
        "invalid@gmail.com",
        "valid@gmail.com",
    ]
    out = pl.read_parquet(tmp_path / "out.parquet")
    reason = dict(zip(out["EMAIL"], out["REASON"], strict=True))
    assert reason["valid@gmail.com"] == "api_verified"
    assert reason["invalid@gmail.com"] == "no_such_user"
    assert "not_verified_budget" in reason["allen.a@acme-widgets.com"]  # its budget was 2
    assert reason["barbara.young@icloud.com"] == "mailbox_ok"  # SMTP said so
    assert reason["nobody.here@icloud.com"] == "no_such_user"
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert summary["vendor_credits"] == 2 and summary["rcpts_sent"] > 0


def test_the_key_is_found_nowhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Neither in the outputs, the summary, the report, the caches, the work folder nor the
    log lines, whether the run goes well, runs out of credits or is refused."""
    with FakeNeverBounce(credits=3) as fake:
        fake.balances[SECRET] = fake.balances.pop(GOOD_KEY)
        source = write_list(tmp_path, [f"person{i}@gmail.com" for i in range(5)])
        assert (
            clean(tmp_path, "neverbounce", fake, source, "--log-format", "json", key=SECRET)[0] == 0
        )
        fake.balances.pop(SECRET)  # now refused: its auth_failure quotes the key back
        source = write_list(tmp_path, ["someone.else@gmail.com"], "more.csv")
        assert clean(tmp_path, "neverbounce", fake, source, out="more", key=SECRET)[0] == 2
    seen = capsys.readouterr()
    assert SECRET not in seen.out + seen.err
    assert "not_verified_credits" in seen.err  # the run did run out of credits
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "out.report.html" for p in written)
    assert not [p for p in written if SECRET.encode() in p.read_bytes()]


def test_neverbounce_never_walks_a_list_through_single_check(tmp_path: Path) -> None:
    with FakeNeverBounce() as fake:
        addresses = [f"person{i}@gmail.com" for i in range(101)]
        code, summary = clean(tmp_path, "neverbounce", fake, write_list(tmp_path, addresses))
    assert code == 0
    assert fake.count("/v4.2/single/check") == 0 and fake.count("/v4.2/jobs/create") == 1
    assert fake.spent == 101 == summary["vendor_credits"]
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert (out["REASON"] == "api_verified").all()


def test_a_job_past_its_time_limit_is_collected_by_the_next_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path, "single_max = 2\njob_timeout = 0.05\n")
    with FakeKickbox(polls=None) as fake:
        source = write_list(tmp_path, [f"person{i}@gmail.com" for i in range(4)])
        code, _ = clean(tmp_path, "kickbox", fake, source, config=config)
        assert code == 0 and fake.count("/v2/verify-batch") == 1
        first = pl.read_parquet(tmp_path / "out.parquet")
        assert first["REASON"].str.contains("not_verified_budget").all()
        assert "did not finish within vendor.job_timeout" in capsys.readouterr().err
        next(iter(fake.jobs.values())).polls_left = 1  # it finishes on its next poll
        code, _ = clean(tmp_path, "kickbox", fake, source, out="again", config=config)
    assert code == 0 and fake.count("/v2/verify-batch") == 1  # collected, not submitted again
    assert fake.spent == 4
    again = pl.read_parquet(tmp_path / "again.parquet")
    assert (again["REASON"] == "api_verified").all()


def test_a_killed_run_resumes_its_bulk_job(tmp_path: Path) -> None:
    """kill -9 while the job runs: the next run collects the job, never submits it again."""
    config = write_config(tmp_path, "single_max = 2\n")
    source = write_list(tmp_path, [f"person{i}@gmail.com" for i in range(5)])
    with FakeNeverBounce(polls=None) as fake:
        args = ["clean", str(source), "-o", str(tmp_path / "out.parquet"), "--sandbox"]
        args += ["--config", str(config), "--cache-dir", str(tmp_path / "cache")]
        args += ["--verify", "neverbounce", "--api-url", fake.url, "--quiet"]
        env = {**os.environ, "LISTCLEAN_API_KEY": GOOD_KEY}
        cli = [sys.executable, "-m", "pipeline.cli", *args]
        run = subprocess.Popen(cli, cwd=REPO, env=env, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while fake.count("/v4.2/jobs/status") < 2 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert fake.count("/v4.2/jobs/create") == 1
        finally:
            run.send_signal(signal.SIGKILL)
            run.communicate()
        assert not (tmp_path / "out.parquet").exists()
        next(iter(fake.jobs.values())).polls_left = 1
        code, _ = clean(tmp_path, "neverbounce", fake, source, config=config)
    assert code == 0
    assert fake.count("/v4.2/jobs/create") == 1 and fake.spent == 5
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert (out["REASON"] == "api_verified").all()


def test_doctor_asks_the_vendor_for_the_key_and_its_balance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeEmailable() as fake:
        base = ["doctor", "--sandbox", "--config", str(write_config(tmp_path))]
        base += ["--verify", "emailable", "--api-url", fake.url]
        assert main([*base, "--api-key", GOOD_KEY]) == 0
        good = capsys.readouterr().out
        assert "emailable accepts the key; balance 1,000 credits" in good
        assert "outbound SMTP" not in good  # a vendor method needs no port 25
        assert main([*base, "--api-key", SECRET]) == 1
        bad = capsys.readouterr().out
        assert "FAIL  emailable key" in bad and SECRET not in bad


def test_plain_http_is_refused_off_this_machine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_list(tmp_path, ["person@gmail.com"])
    with FakeBouncer() as fake:
        fake_url = fake.url
    args = ["clean", str(source), "-o", str(tmp_path / "out.parquet"), "--sandbox"]
    args += ["--cache-dir", str(tmp_path / "cache"), "--verify", "bouncer", "--api-key", SECRET]
    assert main([*args, "--api-url", "http://verifier.example.net:8080"]) == 2
    assert "plain http is accepted only on this machine" in capsys.readouterr().err
    assert fake_url.startswith("http://127.0.0.1")


def test_a_postgresql_cache_serves_a_host_with_an_empty_disk(tmp_path: Path, pg_url: str) -> None:
    """Two hosts (two cache folders) that share the paid-answer cache in PostgreSQL: what
    the first paid for, the second does not pay for again."""
    config = write_config(tmp_path, f'db = "{pg_url}"\n')
    source = write_list(tmp_path, [f"person{i}@gmail.com" for i in range(3)])
    with FakeZeroBounce() as fake:
        for host in ("first", "second"):
            args = ["clean", str(source), "-o", str(tmp_path / f"{host}.parquet"), "--sandbox"]
            args += ["--config", str(config), "--cache-dir", str(tmp_path / host)]
            args += ["--verify", "zerobounce", "--api-key", GOOD_KEY, "--api-url", fake.url]
            assert main([*args, "--quiet"]) == 0
    assert fake.spent == 3 and len(fake.checked(CHECK_PATH["zerobounce"])) == 3
    second = pl.read_parquet(tmp_path / "second.parquet")
    assert (second["REASON"] == "api_verified").all()
    assert not list((tmp_path / "second").glob("*vendor-answers*"))  # nothing on its disk


def test_a_vendor_that_does_not_answer_stops_the_run_before_anything_is_spent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeEmailable() as fake:
        fake.fail_next = [503, 503]  # the balance, and its one retry
        code, _ = clean(tmp_path, "emailable", fake, write_list(tmp_path, ["a.person@gmail.com"]))
    assert code == 3 and fake.spent == 0
    assert "emailable could not tell its balance (emailable: HTTP 503" in capsys.readouterr().err
    assert not (tmp_path / "out.parquet").exists()


def test_verify_takes_the_same_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeZeroBounce() as fake:
        args = [
            "verify",
            "spamtrap@gmail.com",
            "--sandbox",
            "--config",
            str(write_config(tmp_path)),
        ]
        args += ["--cache-dir", str(tmp_path / "cache"), "--verify", "zerobounce"]
        assert main([*args, "--api-key", GOOD_KEY, "--api-url", fake.url]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["VERDICT"], answer["REASON"]) == ("Invalid", "spamtrap")
    assert fake.spent == 1
