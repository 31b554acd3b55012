"""End to end: the `listclean` command over the sample list against the loopback DNS world."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.cli.common import effective_config, settings
from pipeline.core.config import DnsConfig
from pipeline.core.schema import OUTPUT_COLUMNS, SPEC_COLUMNS
from pipeline.sandbox.dns_server import SandboxDNS, world_from_dict
from pipeline.sandbox.files import SANDBOX_SETTINGS
from tests.conftest import REPO, SAMPLE_CSV, SAMPLE_PARQUET

FAST = str(SANDBOX_SETTINGS)
ORIGINAL = ["id", "first_name", "last_name", "Email Address", "company", "signup_date"]


def clean(tmp_path: Path, dns: SandboxDNS, *extra: str, source: Path = SAMPLE_CSV) -> int:
    return main(
        [
            "clean",
            str(source),
            "-o",
            str(tmp_path / "out.parquet"),
            "--resolver",
            dns.address,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--config",
            FAST,
            "--quiet",
            *extra,
        ]
    )


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory: pytest.TempPathFactory, sample_dns: SandboxDNS) -> pl.DataFrame:
    tmp = tmp_path_factory.mktemp("clean")
    assert clean(tmp, sample_dns) == 0
    return pl.read_parquet(tmp / "out.parquet")


def by_email(frame: pl.DataFrame, raw: str) -> dict[str, object]:
    rows = frame.filter(pl.col("Email Address") == raw)
    assert rows.height >= 1, raw
    return rows.row(0, named=True)


def test_columns_are_originals_then_spec_then_bookkeeping(cleaned: pl.DataFrame) -> None:
    assert cleaned.columns == ORIGINAL + list(OUTPUT_COLUMNS)
    for name, dtype in OUTPUT_COLUMNS.items():
        assert cleaned.schema[name] == dtype, name


def test_every_row_comes_out_in_input_order(cleaned: pl.DataFrame) -> None:
    source = pl.read_csv(SAMPLE_CSV, infer_schema=False)
    assert cleaned.height == source.height
    assert cleaned.select(ORIGINAL).equals(source)  # original columns unchanged


def test_verdict_and_score_agree_everywhere(cleaned: pl.DataFrame) -> None:
    bands = {"Invalid": (0.0, 0.29), "Risky": (0.3, 0.69), "Valid": (0.7, 1.0)}
    for verdict, score in cleaned.select("VERDICT", "SCORE").iter_rows():
        low, high = bands[verdict]
        assert low <= score <= high
    assert set(cleaned["DOMAIN_VERDICT"]) <= set(bands)


@pytest.mark.parametrize(
    ("raw", "verdict", "reason", "mx"),
    [
        (
            "thomas.robinson+lists@outlook.com",
            "Valid",
            "",
            "outlook-com.olc.protection.outlook.com",
        ),
        ("freebie@guerrillamail.com", "Risky", "disposable", None),
        ("owner@parkedsite.net", "Invalid", "null_mx", ""),
        ("tom@empty-records.com", "Invalid", "no_mail_host", ""),
        ("paul.green@gmai.com", "Invalid", "no_domain", ""),
        ("alice@broken-dns-co.com", "Risky", "dns_servfail", ""),
        ("bob.martin@lame-delegation.net", "Risky", "dns_servfail", ""),
        ("carol@slow-dns-co.com", "Risky", "dns_timeout", ""),
        ("orders@smallbiz-bakery.com", "Risky", "implicit_mx", "smallbiz-bakery.com"),
        ("jane@v6only-hosting.net", "Risky", "implicit_mx", "v6only-hosting.net"),
        ("info@acme-widgets.com", "Valid", "role", None),
        ('"john doe"@gmail.com', "Risky", "quoted_local", None),
        ("josé@web.de", "Valid", "smtputf8", None),
    ],
)
def test_sample_rows(
    cleaned: pl.DataFrame, raw: str, verdict: str, reason: str, mx: str | None
) -> None:
    row = by_email(cleaned, raw)
    assert row["VERDICT"] == verdict
    codes = str(row["REASON"]).split(";") if row["REASON"] else []
    assert (reason in codes) if reason else codes == []
    if mx is not None:
        assert row["MX"] == mx


def test_typos_get_a_full_address_suggestion(cleaned: pl.DataFrame) -> None:
    squatted = by_email(cleaned, "mike.jones@gmial.com")  # has its own MX, a known typo
    assert squatted["SUGGESTION"] == "mike.jones@gmail.com"
    assert squatted["VERDICT"] == "Risky" and "typo_suspected" in str(squatted["REASON"])
    missing = by_email(cleaned, "paul.green@gmai.com")
    assert missing["SUGGESTION"] == "paul.green@gmail.com"
    assert by_email(cleaned, "thomas.robinson+lists@outlook.com")["SUGGESTION"] == ""


def test_idn_domain_is_stored_in_ascii(cleaned: pl.DataFrame) -> None:
    row = by_email(cleaned, "kontakt@bücher-shop.de")
    assert row["DOMAIN"] == "xn--bcher-shop-9db.de"
    assert row["EMAIL"] == "kontakt@xn--bcher-shop-9db.de"
    assert row["VERDICT"] == "Valid"


def test_broken_and_blank_addresses_are_invalid_not_lost(cleaned: pl.DataFrame) -> None:
    empty = cleaned.filter(
        pl.col("Email Address").is_null() | (pl.col("Email Address").str.strip_chars() == "")
    )
    assert empty.height >= 1
    assert set(empty["VERDICT"]) == {"Invalid"}
    assert set(empty["REASON"]) == {"empty"}
    assert by_email(cleaned, "no-at-sign.com")["REASON"] == "syntax_invalid"


def test_duplicates_are_marked_and_share_the_first_verdict(cleaned: pl.DataFrame) -> None:
    keyed = cleaned.with_columns(key=pl.col("EMAIL").str.to_lowercase())
    dups = keyed.filter(pl.col("DUPLICATE"))
    assert dups.height >= 10
    firsts = keyed.filter(~pl.col("DUPLICATE") & pl.col("REASON").str.contains("empty").not_())
    merged = dups.join(firsts, on="key", how="left", suffix="_first")
    assert merged["VERDICT_first"].null_count() == 0  # every duplicate has an earlier original
    assert merged["VERDICT"].equals(merged["VERDICT_first"], check_names=False)
    assert merged["SCORE"].equals(merged["SCORE_first"], check_names=False)


def test_summary_and_rejects_files(tmp_path: Path, sample_dns: SandboxDNS) -> None:
    assert clean(tmp_path, sample_dns) == 0
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert summary["rows_in"] == summary["rows_out"] + summary["rows_rejected"] == 297
    assert sum(summary["verdicts"].values()) == 297
    assert summary["dns_queries"] > 0 and summary["cache_hits"] == 0
    assert [s["name"] for s in summary["stages"]] == [
        "read",
        "normalize",
        "domains",
        "verify",
        "write",
        "history",
    ]
    assert (tmp_path / "out.rejects.csv").read_text().splitlines() == ["line,reason,raw"]


def test_every_query_sent_is_counted_canaries_included(
    tmp_path: Path, sample_dns: SandboxDNS
) -> None:
    sample_dns.reset_counts()
    assert clean(tmp_path, sample_dns) == 0
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    # Every query that reached the server is counted; c-ares answers a repeated question from
    # its own cache, so the count (questions asked) may be a little higher than packets seen.
    assert summary["dns_queries"] >= sample_dns.query_count
    assert summary["dns_queries"] >= summary["distinct_domains"] + len(DnsConfig().canaries)


def test_second_run_sends_no_dns_queries(tmp_path: Path, sample_dns: SandboxDNS) -> None:
    assert clean(tmp_path, sample_dns) == 0
    first = pl.read_parquet(tmp_path / "out.parquet")
    sample_dns.reset_counts()
    assert clean(tmp_path, sample_dns) == 0
    assert sample_dns.query_count == 0
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert summary["dns_queries"] == 0
    assert summary["cache_hits"] == summary["distinct_domains"]
    assert pl.read_parquet(tmp_path / "out.parquet").equals(first)


def test_parquet_input_gives_the_same_answers(
    tmp_path: Path, sample_dns: SandboxDNS, cleaned: pl.DataFrame
) -> None:
    assert clean(tmp_path, sample_dns, source=SAMPLE_PARQUET) == 0
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out.select(list(SPEC_COLUMNS)).equals(cleaned.select(list(SPEC_COLUMNS)))


def test_offline_sends_nothing_and_says_so(tmp_path: Path, sample_dns: SandboxDNS) -> None:
    sample_dns.reset_counts()
    assert clean(tmp_path, sample_dns, "--offline") == 0
    assert sample_dns.query_count == 0
    out = pl.read_parquet(tmp_path / "out.parquet")
    checked = out.filter(pl.col("DOMAIN_VERDICT") != "Invalid")
    assert checked.height > 200
    assert checked["REASON"].str.contains("offline").all()
    well_formed = checked.filter(~pl.col("REASON").str.contains("syntax_invalid|comment"))
    assert set(well_formed["VERDICT"]) == {"Risky"}


def test_unhealthy_resolver_exits_3_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SandboxDNS(world_from_dict({"zones": {}})) as empty_world:
        code = clean(tmp_path, empty_world)
    assert code == 3
    err = capsys.readouterr().err
    assert empty_world.address in err and "--resolver" in err and "--offline" in err
    assert not (tmp_path / "out.parquet").exists()


def test_missing_email_column_exits_2_listing_columns(
    tmp_path: Path, sample_dns: SandboxDNS, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "people.csv"
    source.write_text("name,phone\nAnn,123\n")
    assert clean(tmp_path, sample_dns, source=source) == 2
    err = capsys.readouterr().err
    assert "'name', 'phone'" in err and "--email-column" in err


def test_unreadable_input_exits_2(
    tmp_path: Path, sample_dns: SandboxDNS, capsys: pytest.CaptureFixture[str]
) -> None:
    assert clean(tmp_path, sample_dns, source=tmp_path / "nope.csv") == 2
    assert "nope.csv" in capsys.readouterr().err


def test_bad_resolver_flag_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "clean",
            str(SAMPLE_CSV),
            "-o",
            str(tmp_path / "o.parquet"),
            "--resolver",
            "dns.example:53",
        ]
    )
    assert code == 2
    assert "192.0.2.53:5353" in capsys.readouterr().err


def test_ragged_rows_go_to_rejects_with_line_numbers(
    tmp_path: Path, sample_dns: SandboxDNS
) -> None:
    source = tmp_path / "ragged.csv"
    source.write_text(
        'name;email\nAnn;ann@gmail.com\nBob;bob@gmail.com;extra\nCy\n"D;d";d@yahoo.com\n'
    )
    assert clean(tmp_path, sample_dns, source=source) == 0
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out["name"].to_list() == ["Ann", "Cy", "D;d"]
    rejects = pl.read_csv(tmp_path / "out.rejects.csv")
    assert rejects.rows() == [
        (3, "row has 3 fields but the header has 2", "Bob;bob@gmail.com;extra")
    ]
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert (summary["rows_in"], summary["rows_out"], summary["rows_rejected"]) == (4, 3, 1)


def test_cp1252_input_is_read_with_a_warning(
    tmp_path: Path, sample_dns: SandboxDNS, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "legacy.csv"
    source.write_bytes("Name\tE-Mail\nRené Müller\trene@gmail.com\n".encode("cp1252"))
    assert clean(tmp_path, sample_dns, source=source) == 0
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out.row(0)[:2] == ("René Müller", "rene@gmail.com")
    assert "cp1252" in capsys.readouterr().err


def test_input_columns_named_like_outputs_are_kept(tmp_path: Path, sample_dns: SandboxDNS) -> None:
    source = tmp_path / "recleaned.csv"
    source.write_text("\ufeffEMAIL,VERDICT\nann@gmail.com,Valid\n")
    assert clean(tmp_path, sample_dns, "--email-column", "email", source=source) == 0
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out.columns[:2] == ["input_EMAIL", "input_VERDICT"]
    assert out.row(0, named=True)["input_VERDICT"] == "Valid"


def test_verify_prints_the_spec_object(
    sample_dns: SandboxDNS, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--resolver", sample_dns.address, "--cache-dir", str(tmp_path), "--config", FAST]
    assert main(["verify", " John.Doe@GMAIL.com ", *common]) == 0
    record = json.loads(capsys.readouterr().out)
    assert list(record) == [*SPEC_COLUMNS, "REASON", "DETAIL"]
    assert record["EMAIL"] == "John.Doe@gmail.com"
    assert (record["VERDICT"], record["LOCAL"], record["DOMAIN"]) == (
        "Valid",
        "John.Doe",
        "gmail.com",
    )
    assert record["MX"] == "gmail-smtp-in.l.google.com"

    assert main(["verify", "gmial.com", "--domain", *common]) == 0
    record = json.loads(capsys.readouterr().out)
    assert (record["EMAIL"], record["LOCAL"], record["DOMAIN"]) == ("", "", "gmial.com")
    assert record["SUGGESTION"] == "gmail.com"
    assert record["VERDICT"] == record["DOMAIN_VERDICT"] == "Risky"


def test_sandbox_flag_and_console_entry_point(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "verify",
            "x@parkedsite.net",
            "--sandbox",
            "--cache-dir",
            str(tmp_path),
            "--config",
            FAST,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["VERDICT"] == "Invalid"


def test_flags_win_over_environment_over_file(
    tmp_path: Path, sample_dns: SandboxDNS, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "c.toml"
    config.write_text("[run]\nmemory = 100\n[verify]\nbudget = 7\n")
    monkeypatch.setenv("LISTCLEAN_VERIFY_BUDGET", "8")
    monkeypatch.setenv("LISTCLEAN_RUN_MEMORY", "200")
    args = ["--verify", "smtp", "--budget", "9", "--config", str(config)]

    chosen = settings(argparse.Namespace(config=config, sandbox=False))
    assert chosen.verify.budget == 8 and chosen.run.memory == 200
    namespace = argparse.Namespace(
        config=config,
        resolver=[],
        verify="smtp",
        smtp_port=None,
        budget=[("", 9), ("zerobounce", 5)],  # --budget 9 --budget zerobounce=5, as parsed
        helo=None,
        mail_from=None,
        api_url=None,
        concurrency=None,
    )
    effective = effective_config(namespace)
    assert effective.verify.budget == 9 and effective.routing.budgets == ("zerobounce=5",)
    monkeypatch.setenv("LISTCLEAN_DNS_NOPE", "1")
    assert main(["clean", str(SAMPLE_CSV), "-o", str(tmp_path / "o.parquet"), *args]) == 2


@pytest.mark.parametrize("address", [b"\xff@gmail.com", b"a@\xed\xa0\x80.com", b"j\xe9@x.org"])
def test_verify_with_an_argument_that_is_not_utf8_says_so(tmp_path: Path, address: bytes) -> None:
    """A byte that is not UTF-8 in ADDRESS (an argument is bytes on POSIX) is a usage error
    that names the byte, never a traceback."""
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "verify", address, "--offline", "--cache-dir", tmp_path],
        capture_output=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PYTHONPATH": str(REPO)},
    )
    error = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, error
    assert "Traceback" not in error
    assert "error: argument ADDRESS: not valid UTF-8: byte 0x" in error, error
    assert done.stdout == b""


# Every other free-text argument of the other commands: a key's label and plan, a key id, a
# bounce address, an import's source name and file, the service's listening address.
OTHER_TEXT_ARGUMENTS = [
    ("--label", ["keys", "create", "--plan", "default", "--label", b"\xff"]),
    ("--plan", ["keys", "create", "--plan", b"st\xffrter"]),
    ("KEY_ID", ["keys", "revoke", b"k_\xff"]),
    ("--email", ["bounces", "list", "--email", b"\xff@gmail.com"]),
    (
        "--source",
        ["contacts", "import", REPO / "sample_data" / "contacts.csv", "--source", b"\xff"],
    ),
    ("--host", ["serve", "--host", b"\xff", "--port", "0", "--offline"]),
    ("FILE", ["contacts", "import", b"people\xff.csv"]),
    ("FILE", ["bounces", "import", b"bounces\xff.csv"]),
]


@pytest.mark.parametrize(
    ("argument", "command"),
    OTHER_TEXT_ARGUMENTS,
    ids=[f"{c[0]}-{c[1]}-{a}" for a, c in OTHER_TEXT_ARGUMENTS],
)
def test_other_text_arguments_that_are_not_utf8_say_so(
    tmp_path: Path, argument: str, command: list[str | bytes | Path]
) -> None:
    """Each becomes a usage error naming the argument, never a traceback (exit 1) from the
    store, the ledger or the socket that cannot encode a lone surrogate."""
    place = ["--db", tmp_path / "store.sqlite"] if command[0] in ("keys", "serve") else []
    place += ["--cache-dir", tmp_path / "cache"] if command[0] != "keys" else []
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", *command, *place],
        capture_output=True,
        check=False,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8", "PYTHONPATH": str(REPO)},
    )
    error = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, error
    assert "Traceback" not in error
    assert f"error: argument {argument}: not valid UTF-8: byte 0x" in error, error


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("-3", "is not a budget"),
        ("lots", "is not a budget"),
        ("pigeon=5", "'pigeon' is no method"),
        ("zerobounce=", "is not a budget"),
    ],
)
def test_a_budget_is_n_or_method_equals_n(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, said: str
) -> None:
    args = ["clean", str(SAMPLE_CSV), "-o", str(tmp_path / "o.parquet"), "--budget", value]
    with pytest.raises(SystemExit) as stopped:
        main(args)
    assert stopped.value.code == 2 and said in capsys.readouterr().err


def test_a_sandbox_run_says_so_in_its_summary_and_report(tmp_path: Path) -> None:
    out = tmp_path / "out.parquet"
    common = ["--cache-dir", str(tmp_path / "cache"), "--quiet"]
    assert main(["clean", str(SAMPLE_CSV), "-o", str(out), "--sandbox", *common]) == 0
    summary = json.loads((tmp_path / "out.summary.json").read_text())
    assert summary["sandbox"] is True
    assert "made-up world" in (tmp_path / "out.report.html").read_text()
    real = tmp_path / "real.parquet"
    assert main(["clean", str(SAMPLE_CSV), "-o", str(real), "--offline", *common]) == 0
    assert json.loads((tmp_path / "real.summary.json").read_text())["sandbox"] is False
    assert "made-up world" not in (tmp_path / "real.report.html").read_text()
