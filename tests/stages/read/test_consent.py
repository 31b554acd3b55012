"""Consent outranks deliverability: a Mailchimp audience export (the zip of its member files, as
Mailchimp writes it) and the CRM exports whose columns say a person unsubscribed, bounced or
opted out. Such rows are read whole, never SAFE_TO_SEND, held back from --split's ``.valid``
file, and counted alike in the headline, summary.json and the report."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.sandbox.files import SANDBOX_SETTINGS
from pipeline.stages.read.consent import consent_of
from tests.report.expected import Markers

# The columns of Mailchimp's member files ("Export audience"): every file has the audience's
# merge fields and Mailchimp's own columns; the unsubscribed and cleaned files add theirs.
_MERGE = ["Email Address", "First Name", "Last Name", "Address", "Phone Number"]
_OWN = [
    "MEMBER_RATING", "OPTIN_TIME", "OPTIN_IP", "CONFIRM_TIME", "CONFIRM_IP", "LATITUDE",
    "LONGITUDE", "GMTOFF", "DSTOFF", "TIMEZONE", "CC", "REGION", "LAST_CHANGED", "LEID", "EUID",
    "NOTES", "TAGS",
]  # fmt: skip
_UNSUB = ["UNSUB_TIME", "UNSUB_CAMPAIGN_TITLE", "UNSUB_CAMPAIGN_ID", "UNSUB_REASON"]
_CLEAN = ["CLEAN_TIME", "CLEAN_CAMPAIGN_TITLE", "CLEAN_CAMPAIGN_ID"]
EXPORT = "members_export_1a2b3c4d5e"
SUBSCRIBED, UNSUBSCRIBED, CLEANED = 40, 13, 6


def _member(people: list[str], extra: list[str], values: list[str]) -> str:
    """One member file as Mailchimp writes it: every field quoted, CRLF line ends."""
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow([*_MERGE, *_OWN, *extra])
    for i, address in enumerate(people):
        name = address.split("@")[0].title()
        own = ["2", "2023-01-05 10:00:00", "", "2023-01-05 10:01:00", "192.0.2.7"]
        own += ["", "", "", "", "", "", "", "2024-02-01 09:00:00", str(1000 + i), "e", "", ""]
        writer.writerow([address, name, "Doe", "", "", *own, *values])
    return out.getvalue()


def mailchimp_zip(path: Path) -> dict[str, list[str]]:
    """A Mailchimp audience export: subscribed, unsubscribed and cleaned members, most of them
    at domains the sandbox world answers Valid (gmail.com, outlook.com)."""
    domains = ["gmail.com", "outlook.com"]
    people = {
        "subscribed": [f"sub{i}@{domains[i % 2]}" for i in range(SUBSCRIBED)],
        "unsubscribed": [f"unsub{i}@{domains[i % 2]}" for i in range(UNSUBSCRIBED)],
        "cleaned": [f"gone{i}@{domains[i % 2]}" for i in range(CLEANED - 1)] + ["x@gmai.com"],
    }
    unsub = ["2024-03-04 12:00:00", "Spring sale", "abc123", "I no longer want these emails"]
    clean = ["2024-03-05 08:00:00", "Spring sale", "abc123"]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"subscribed_{EXPORT}.csv", _member(people["subscribed"], [], []))
        archive.writestr(
            f"unsubscribed_{EXPORT}.csv", _member(people["unsubscribed"], _UNSUB, unsub)
        )
        archive.writestr(f"cleaned_{EXPORT}.csv", _member(people["cleaned"], _CLEAN, clean))
    return people


def run(tmp: Path, dns: SandboxDNS, source: Path, *extra: str) -> dict[str, Any]:
    args = ["clean", str(source), "-o", str(tmp / "out.parquet"), "--resolver", dns.address]
    args += ["--config", str(SANDBOX_SETTINGS), "--cache-dir", str(tmp / "cache"), "--quiet"]
    assert main([*args, *extra]) == 0
    summary: dict[str, Any] = json.loads((tmp / "out.summary.json").read_text())
    return summary


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory, sample_dns: SandboxDNS) -> Path:
    tmp = tmp_path_factory.mktemp("mailchimp")
    mailchimp_zip(tmp / f"{EXPORT}.zip")
    run(tmp, sample_dns, tmp / f"{EXPORT}.zip", "--split")
    return tmp


def test_unsubscribed_and_cleaned_members_are_never_safe_to_send(exported: Path) -> None:
    out = pl.read_parquet(exported / "out.parquet")
    assert out.height == SUBSCRIBED + UNSUBSCRIBED + CLEANED  # read whole: rows in = rows out
    member = pl.col("SOURCE_FILE").str.split("_").list.first()
    held = out.filter(member != "subscribed")
    assert held.height == UNSUBSCRIBED + CLEANED
    assert not held.get_column("SAFE_TO_SEND").any()
    first = held.select(member.alias("file"), pl.col("REASON").str.split(";").list.first())
    assert (
        first.rows()
        == [("unsubscribed", "unsubscribed")] * UNSUBSCRIBED + [("cleaned", "cleaned")] * CLEANED
    )
    # Whatever their VERDICT: most are deliverable addresses, one is at a domain that is not.
    assert held.filter(pl.col("VERDICT") == "Valid").height == UNSUBSCRIBED + CLEANED - 1
    assert held.filter(pl.col("VERDICT") == "Invalid").height == 1
    subscribed = out.filter(member == "subscribed")
    assert subscribed.get_column("SAFE_TO_SEND").all()


def test_split_puts_held_back_rows_in_a_file_of_their_own(exported: Path) -> None:
    parts = {r: pl.read_parquet(exported / f"out.{r}.parquet") for r in SPLIT_ROLES}
    assert parts["valid"].height == SUBSCRIBED
    assert parts["valid"].get_column("SOURCE_FILE").str.starts_with("subscribed_").all()
    assert parts["suppressed"].height == UNSUBSCRIBED + CLEANED
    assert parts["risky"].height == parts["invalid"].height == 0  # written, if empty
    assert sum(p.height for p in parts.values()) == SUBSCRIBED + UNSUBSCRIBED + CLEANED


SPLIT_ROLES = ("valid", "risky", "invalid", "suppressed")


def test_headline_summary_and_report_agree(exported: Path) -> None:
    summary = json.loads((exported / "out.summary.json").read_text())
    assert summary["safe_to_send"] == SUBSCRIBED
    assert summary["held_back"] == UNSUBSCRIBED + CLEANED
    assert summary["reasons"]["unsubscribed"] == UNSUBSCRIBED
    assert summary["reasons"]["cleaned"] == CLEANED
    assert summary["member_rows"] == {
        f"subscribed_{EXPORT}.csv": {"rows": SUBSCRIBED, "held_back": 0},
        f"unsubscribed_{EXPORT}.csv": {"rows": UNSUBSCRIBED, "held_back": UNSUBSCRIBED},
        f"cleaned_{EXPORT}.csv": {"rows": CLEANED, "held_back": CLEANED},
    }
    assert set(summary["files"]) >= {f"{r}" for r in SPLIT_ROLES}
    page = Markers((exported / "out.report.html").read_text(encoding="utf-8"))
    assert page.figures["safe_to_send"][0] == str(SUBSCRIBED)
    assert page.figures["held_back"][0] == str(UNSUBSCRIBED + CLEANED)
    held = ("member_rows", f"unsubscribed_{EXPORT}.csv", "held back")
    assert page.cells[held][0] == str(UNSUBSCRIBED)


def test_the_summary_table_says_what_was_held_back(
    tmp_path: Path, sample_dns: SandboxDNS, capsys: pytest.CaptureFixture[str]
) -> None:
    mailchimp_zip(tmp_path / "export.zip")
    args = ["clean", str(tmp_path / "export.zip"), "-o", str(tmp_path / "out.csv")]
    args += ["--resolver", sample_dns.address, "--config", str(SANDBOX_SETTINGS)]
    assert main([*args, "--cache-dir", str(tmp_path / "cache")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:4] == ["safe", "to", "send", str(SUBSCRIBED)] for line in lines)
    assert any(line.split()[:3] == ["held", "back", str(UNSUBSCRIBED + CLEANED)] for line in lines)
    assert any(line.split() == ["13", "13", f"unsubscribed_{EXPORT}.csv"] for line in lines)


def _reasons(header: list[str], rows: list[list[str]]) -> list[str | None]:
    frame = pl.DataFrame(rows, schema=header, orient="row")
    return consent_of(frame).to_list()


@pytest.mark.parametrize(
    ("header", "rows", "expected"),
    [
        # HubSpot's contact export
        (
            ["Record ID", "Email", "Marketing contact status", "Unsubscribed from all email"],
            [
                ["1", "a@x.com", "Marketing contact", "false"],
                ["2", "b@x.com", "Marketing contact", "true"],
                ["3", "c@x.com", "Non-marketing contact", ""],
            ],
            [None, "unsubscribed", "non_marketing"],
        ),
        (
            ["Email", "Email hard bounce reason"],
            [["a@x.com", ""], ["b@x.com", "MAILBOX_FULL / 550 5.1.1"]],
            [None, "bounced"],
        ),
        # Salesforce's contact report
        (
            ["First Name", "Email", "Email Opt Out", "Email Bounced Reason"],
            [
                ["Ann", "a@x.com", "0", ""],
                ["Bob", "b@x.com", "1", ""],
                ["Cy", "c@x.com", "0", "550 5.1.1 user unknown"],
            ],
            [None, "opted_out", "bounced"],
        ),
        # Klaviyo's profile export
        (
            ["Email", "Email Marketing Consent", "Email Suppressions"],
            [
                ["a@x.com", "SUBSCRIBED", ""],
                ["b@x.com", "UNSUBSCRIBED", ""],
                ["c@x.com", "NEVER_SUBSCRIBED", ""],
                ["d@x.com", "SUBSCRIBED", "[{'reason': 'HARD_BOUNCE'}]"],
                ["e@x.com", "SUBSCRIBED", "[{'reason': 'SPAM_COMPLAINT'}]"],
            ],
            [None, "unsubscribed", "no_consent", "bounced", "opted_out"],
        ),
        # Brevo's contact export
        (
            ["EMAIL", "FIRSTNAME", "EMAIL_BLACKLISTED"],
            [["a@x.com", "Ann", "No"], ["b@x.com", "Bob", "Yes"]],
            [None, "opted_out"],
        ),
        # Shopify's customer export
        (
            ["First Name", "Email", "Accepts Email Marketing"],
            [["Ann", "a@x.com", "yes"], ["Bob", "b@x.com", "no"], ["Cy", "c@x.com", ""]],
            [None, "no_consent", None],
        ),
        # Mailchimp's status column (an API export, or member files combined by hand)
        (
            ["Email Address", "Status"],
            [["a@x.com", "subscribed"], ["b@x.com", "cleaned"], ["c@x.com", "Unsubscribed"]],
            [None, "cleaned", "unsubscribed"],
        ),
        # A list that says nothing about consent
        (["email", "status"], [["a@x.com", "active customer"]], [None]),
    ],
)
def test_export_columns_that_hold_rows_back(
    header: list[str], rows: list[list[str]], expected: list[str | None]
) -> None:
    assert _reasons(header, rows) == expected


def test_a_salesforce_opt_out_is_held_back_end_to_end(
    tmp_path: Path, sample_dns: SandboxDNS
) -> None:
    report = (
        '"First Name","Last Name","Email","Email Opt Out"\r\n'
        '"Ann","Lee","ann@gmail.com","0"\r\n'
        '"Bob","Roe","bob@gmail.com","1"\r\n'
    )
    (tmp_path / "report.csv").write_text(report, encoding="utf-8")
    summary = run(tmp_path, sample_dns, tmp_path / "report.csv")
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out.select("VERDICT", "REASON", "SAFE_TO_SEND").rows() == [
        ("Valid", "", True),
        ("Valid", "opted_out", False),
    ]
    assert (summary["safe_to_send"], summary["held_back"]) == (1, 1)
    assert summary["member_rows"] == {}


def repeated_person(path: Path) -> None:
    """A CRM export where one person is on two rows, opted out on the second only."""
    path.write_text(
        "Email,Status\r\n"
        "Ann.Lee@gmail.com,subscribed\r\n"
        "bob@gmail.com,subscribed\r\n"
        "ann.lee@gmail.com,unsubscribed\r\n",
        encoding="utf-8",
    )


def test_a_person_held_back_on_one_row_is_held_back_on_every_row(
    tmp_path: Path, sample_dns: SandboxDNS
) -> None:
    repeated_person(tmp_path / "crm.csv")
    summary = run(tmp_path, sample_dns, tmp_path / "crm.csv", "--split")
    out = pl.read_parquet(tmp_path / "out.parquet")
    assert out.select("REASON", "DUPLICATE", "SAFE_TO_SEND").rows() == [
        ("unsubscribed", False, False),
        ("", False, True),
        ("unsubscribed", True, False),
    ]
    assert (summary["safe_to_send"], summary["held_back"]) == (1, 2)
    assert pl.read_parquet(tmp_path / "out.valid.parquet").get_column("EMAIL").to_list() == [
        "bob@gmail.com"
    ]
