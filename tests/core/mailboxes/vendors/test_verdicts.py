"""The vendors' mapping tables, read through the reason table: what each vendor's words make
of VERDICT, and the three rules every table keeps (unknown is never Invalid; traps, abuse and
do-not-mail are never Valid; words a vendor adds later are vendor_unknown)."""

from __future__ import annotations

import pytest

from pipeline.core.mailboxes.vendors.verdicts import (
    NEVERBOUNCE,
    SHARED,
    ZEROBOUNCE,
    count,
    flag,
    read_neverbounce,
    read_shared,
    read_zerobounce,
)
from pipeline.core.verdict import REASON_BITS, Reason, judge_one


def verdict(reason: Reason) -> str:
    return judge_one(REASON_BITS[reason])[0]


ZB = [
    ("valid", "", "api_verified", "Valid"),
    ("valid", "accept_all", "api_verified", "Valid"),
    ("valid", "ai_agent_mailbox", "api_verified", "Valid"),
    ("invalid", "mailbox_not_found", "no_such_user", "Invalid"),
    ("invalid", "no_dns_entries", "no_mail_host", "Invalid"),
    ("invalid", "mailbox_quota_exceeded", "mailbox_full", "Risky"),
    ("invalid", "possible_typo", "typo_suspected", "Risky"),
    ("catch-all", "", "catch_all", "Risky"),
    ("unknown", "greylisted", "greylisted", "Risky"),
    ("unknown", "mail_server_temporary_error", "vendor_unknown", "Risky"),
    ("unknown", "antispam_system", "smtp_blocked", "Risky"),
    ("spamtrap", "", "spamtrap", "Invalid"),
    ("abuse", "", "abuse", "Risky"),
    ("do_not_mail", "global_suppression", "do_not_mail", "Risky"),
    ("do_not_mail", "possible_trap", "do_not_mail", "Risky"),
    ("do_not_mail", "role_based", "do_not_mail", "Risky"),
    ("do_not_mail", "disposable", "disposable", "Risky"),
    ("valid", "blocked", "do_not_mail", "Risky"),  # the customer's own blocklist
    ("shiny_new", "", "vendor_unknown", "Risky"),  # a status added later
    ("valid", "shiny_new_sub", "vendor_unknown", "Risky"),  # a sub-status added later
]


@pytest.mark.parametrize(("status", "sub", "reason", "expected"), ZB)
def test_zerobounce(status: str, sub: str, reason: str, expected: str) -> None:
    answer = read_zerobounce(status, sub)
    assert (answer.reason.value, verdict(answer.reason)) == (reason, expected)
    assert answer.detail.startswith(f"zerobounce: {status}")
    assert answer.billed is (status != "unknown")  # ZeroBounce does not bill unknown


NB = [
    ("valid", ["has_dns", "has_dns_mx"], "api_verified", "Valid"),
    ("invalid", ["has_dns", "has_dns_mx"], "no_such_user", "Invalid"),
    ("invalid", ["bad_syntax"], "syntax_invalid", "Invalid"),
    ("invalid", ["bad_dns"], "no_domain", "Invalid"),
    ("invalid", ["has_dns"], "no_mail_host", "Invalid"),
    ("disposable", [], "disposable", "Risky"),
    ("catchall", ["accepts_all"], "catch_all", "Risky"),
    ("unknown", ["connect_fails"], "smtp_unreachable", "Risky"),
    ("unknown", [], "vendor_unknown", "Risky"),
    ("valid", ["spamtrap_network"], "do_not_mail", "Risky"),
    ("catchall", ["spamtrap_network"], "do_not_mail", "Risky"),
    ("inconclusive", [], "vendor_unknown", "Risky"),  # NeverBounceAPI-PHP#45
    (0, [], "api_verified", "Valid"),  # its SDKs' numeric codes
    (4, [], "vendor_unknown", "Risky"),
]


@pytest.mark.parametrize(("result", "flags", "reason", "expected"), NB)
def test_neverbounce(result: object, flags: list[str], reason: str, expected: str) -> None:
    answer = read_neverbounce(result, flags)
    assert (answer.reason.value, verdict(answer.reason)) == (reason, expected)
    assert answer.billed  # NeverBounce bills every verification


SHARED_CASES = [
    ("kickbox", "deliverable", "accepted_email", {}, "api_verified", "Valid"),
    ("kickbox", "undeliverable", "rejected_email", {}, "no_such_user", "Invalid"),
    ("kickbox", "undeliverable", "invalid_domain", {}, "no_domain", "Invalid"),
    ("kickbox", "undeliverable", "invalid_smtp", {}, "smtp_rejected", "Risky"),
    ("kickbox", "risky", "low_deliverability", {"accept_all": True}, "catch_all", "Risky"),
    ("kickbox", "risky", "low_quality", {"role": True}, "low_quality", "Risky"),
    ("kickbox", "unknown", "timeout", {}, "smtp_timeout", "Risky"),
    ("kickbox", "questionable", "something_new", {}, "vendor_unknown", "Risky"),
    ("emailable", "risky", "low_deliverability", {"mailbox_full": True}, "mailbox_full", "Risky"),
    ("emailable", "undetermined", "", {}, "vendor_unknown", "Risky"),
    (
        "bouncer",
        "undeliverable",
        "rejected_email",
        {"disabled": "yes"},
        "mailbox_disabled",
        "Invalid",
    ),
    ("bouncer", "risky", "low_quality", {"disposable": "yes"}, "disposable", "Risky"),
    ("bouncer", "risky", "low_quality", {"disposable": "unknown"}, "low_quality", "Risky"),
    ("bouncer", "unknown", "timeout", {"retry_after": True}, "greylisted", "Risky"),
    ("bouncer", "unknown", "dns_error", {}, "dns_servfail", "Risky"),
    ("bouncer", "unknown", "unsupported", {}, "provider_unverifiable", "Risky"),
    ("bouncer", "unknown", "a_new_reason", {}, "vendor_unknown", "Risky"),
]


@pytest.mark.parametrize(("vendor", "result", "why", "flags", "reason", "expected"), SHARED_CASES)
def test_kickbox_emailable_bouncer(
    vendor: str, result: str, why: str, flags: dict[str, object], reason: str, expected: str
) -> None:
    answer = read_shared(vendor, result, why, flags)
    assert (answer.reason.value, verdict(answer.reason)) == (reason, expected)


def test_kickbox_refunds_unknown_and_the_others_are_counted_billed() -> None:
    assert not read_shared("kickbox", "unknown", "timeout", {}).billed
    assert read_shared("emailable", "unknown", "timeout", {}).billed
    assert read_shared("bouncer", "unknown", "timeout", {}).billed


def _every_entry() -> list[tuple[str, Reason]]:
    entries = [
        (f"zerobounce {s}/{sub}", r) for s, subs in ZEROBOUNCE.items() for sub, r in subs.items()
    ]
    entries += [(f"neverbounce {w}", r) for w, r in NEVERBOUNCE.items()]
    entries += [
        (f"shared {w}/{why}", r) for w, reasons in SHARED.items() for why, r in reasons.items()
    ]
    return entries


@pytest.mark.parametrize(("where", "reason"), _every_entry())
def test_every_entry_keeps_the_rules(where: str, reason: Reason) -> None:
    said = verdict(reason)
    if "unknown" in where:
        assert said != "Invalid", where
    if any(word in where for word in ("spamtrap", "abuse", "do_not_mail")):
        assert said != "Valid", where


def test_loose_types_are_read() -> None:
    assert [flag(v) for v in (True, "true", "yes", "1", 1)] == [True] * 5
    assert [flag(v) for v in (False, "no", "unknown", None, 0, "")] == [False] * 6
    assert [count(v) for v in ("1250", "-1", "100%", 7, None, "soon")] == [
        1250,
        -1,
        100,
        7,
        None,
        None,
    ]
