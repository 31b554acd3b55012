"""How each vendor's answers map onto our reason codes: one table per vendor, in one place.

A vendor's top-level word is not copied into VERDICT: its answer becomes a reason code, and the
reason table (:mod:`pipeline.core.verdict`) gives VERDICT and SCORE, as it does for SMTP, so a
row means the same whichever vendor answered. The vendor's own words stay in DETAIL.

Three rules hold for every vendor:

- "unknown" is Risky, never Invalid;
- spam traps, abuse and do-not-mail advice are never Valid (so never SAFE_TO_SEND);
- vocabulary a vendor adds later (a status, a sub-status, a result, a reason we have not seen)
  is read as ``vendor_unknown``, Risky: never an error, never ``api_error``. NeverBounce once
  answered an undocumented ``inconclusive`` that crashed its own PHP SDK (NeverBounceAPI-PHP#45);
  ZeroBounce added ``ai_agent_mailbox`` under ``valid`` in 2026.

Numbers and flags arrive loosely typed (ZeroBounce sends ``"true"`` strings, Bouncer
``"yes"/"no"/"unknown"``), so flags are read with :func:`flag`.

The sources: ZeroBounce's v2 status codes and its SDKs' enums; NeverBounce's result codes and
flags (its Node SDK's ``VerificationObject``); the result and reason vocabulary Kickbox,
Emailable and Bouncer share (docs.kickbox.com, help.emailable.com, docs.usebouncer.com).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from pipeline.core.mailboxes.vendors.types import UNDECIDED, VendorAnswer
from pipeline.core.verdict import REASON_BITS, RULES, Reason, Verdict, judge_one

R = Reason
ANY: Final = "*"  # a sub-status (or reason) not listed under its status

# --- ZeroBounce: status / sub_status --------------------------------------------------------

ZEROBOUNCE: Final[Mapping[str, Mapping[str, Reason]]] = {
    "valid": dict.fromkeys(
        (
            "",
            "alias_address",
            "leading_period_removed",
            "alternate",
            "gold",
            "accept_all",  # ZeroBounce resolved the catch-all domain for this address
            "role_based_accept_all",
            "ai_agent_mailbox",
            "allowed",  # the customer's own allowlist
        ),
        R.API_VERIFIED,
    ),
    "invalid": {
        "": R.NO_SUCH_USER,
        "mailbox_not_found": R.NO_SUCH_USER,
        "failed_syntax_check": R.SYNTAX_INVALID,
        "no_dns_entries": R.NO_MAIL_HOST,
        "does_not_accept_mail": R.NO_MAIL_HOST,
        "unroutable_ip_address": R.NO_MAIL_HOST,
        # ZeroBounce says invalid; a full mailbox is temporary, and a typo is ours to suggest.
        "mailbox_quota_exceeded": R.MAILBOX_FULL,
        "possible_typo": R.TYPO_SUSPECTED,
    },
    "catch-all": {"": R.CATCH_ALL, "ai_agent_mailbox": R.CATCH_ALL},
    "unknown": {
        "": R.VENDOR_UNKNOWN,
        "greylisted": R.GREYLISTED,
        "timeout_exceeded": R.SMTP_TIMEOUT,
        "mail_server_did_not_respond": R.SMTP_TIMEOUT,
        "failed_smtp_connection": R.SMTP_UNREACHABLE,
        "forcible_disconnect": R.SMTP_UNREACHABLE,
        "antispam_system": R.SMTP_BLOCKED,
        "mail_server_temporary_error": R.VENDOR_UNKNOWN,
        "exception_occurred": R.VENDOR_UNKNOWN,
    },
    "spamtrap": {ANY: R.SPAMTRAP},
    "abuse": {ANY: R.ABUSE},
    "do_not_mail": {
        ANY: R.DO_NOT_MAIL,  # role_based, global_suppression, possible_trap, toxic, mx_forward
        "disposable": R.DISPOSABLE,
        "role_based_catch_all": R.CATCH_ALL,
    },
}
# The customer's own blocklist, under whatever status.
ZEROBOUNCE_BLOCKED: Final = "blocked"


def read_zerobounce(status: str, sub_status: str, vendor: str = "zerobounce") -> VendorAnswer:
    """ZeroBounce's answer; it never charges for ``unknown`` (its v2 validate page)."""
    status, sub_status = status.strip().lower(), sub_status.strip().lower()
    subs = ZEROBOUNCE.get(status, {})
    reason = subs.get(sub_status, subs.get(ANY, R.VENDOR_UNKNOWN))
    if sub_status == ZEROBOUNCE_BLOCKED:
        reason = R.DO_NOT_MAIL
    words = f"{status}/{sub_status}" if sub_status else status
    return VendorAnswer(reason, words, vendor, billed=status != "unknown")


# --- NeverBounce: result + flags ------------------------------------------------------------

NEVERBOUNCE: Final[Mapping[str, Reason]] = {
    "valid": R.API_VERIFIED,
    "invalid": R.NO_SUCH_USER,  # NeverBounce does not say why, unless a flag does (below)
    "disposable": R.DISPOSABLE,
    "catchall": R.CATCH_ALL,
    "unknown": R.VENDOR_UNKNOWN,
}
# Its SDKs' numeric result codes, which some answers carry instead of the words.
NEVERBOUNCE_CODES: Final[Mapping[int, str]] = dict(enumerate(NEVERBOUNCE))
# Flags that explain an invalid or unknown result; the first one present wins.
NEVERBOUNCE_FLAGS: Final[Mapping[str, tuple[tuple[str, Reason], ...]]] = {
    "invalid": (("bad_syntax", R.SYNTAX_INVALID), ("bad_dns", R.NO_DOMAIN)),
    "unknown": (("temporary_dns_error", R.DNS_TIMEOUT), ("connect_fails", R.SMTP_UNREACHABLE)),
}
NEVERBOUNCE_TRAP: Final = "spamtrap_network"  # never Valid, whatever the result


def read_neverbounce(
    result: Any, flags: Iterable[str], vendor: str = "neverbounce"
) -> VendorAnswer:
    """NeverBounce's answer; it bills every verification, unknown included."""
    word = NEVERBOUNCE_CODES.get(result, "") if isinstance(result, int) else str(result).lower()
    present = {str(f).lower() for f in flags}
    reason = NEVERBOUNCE.get(word, R.VENDOR_UNKNOWN)
    for name, explained in NEVERBOUNCE_FLAGS.get(word, ()):
        if name in present:
            reason = explained
            break
    else:
        if word == "invalid" and "has_dns" in present and "has_dns_mx" not in present:
            reason = R.NO_MAIL_HOST
    if NEVERBOUNCE_TRAP in present and not _invalid(reason):
        reason = R.DO_NOT_MAIL
    shown = f"{word or result} ({', '.join(sorted(present))})" if present else str(word or result)
    return VendorAnswer(reason, shown, vendor, billed=True)


# --- Kickbox, Emailable, Bouncer: result/state/status + reason + flags ----------------------

SHARED: Final[Mapping[str, Mapping[str, Reason]]] = {
    "deliverable": {ANY: R.API_VERIFIED},
    "undeliverable": {
        "invalid_email": R.SYNTAX_INVALID,
        "invalid_domain": R.NO_DOMAIN,
        "rejected_email": R.NO_SUCH_USER,
        # An unexplained refusal: our own SMTP reading calls it Risky too.
        "invalid_smtp": R.SMTP_REJECTED,
        ANY: R.VENDOR_UNKNOWN,
    },
    # The vendor calls it risky; a flag may say why (SHARED_RISKY_FLAGS), else low_quality.
    "risky": {ANY: R.LOW_QUALITY},
    "unknown": {
        "no_connect": R.SMTP_UNREACHABLE,
        "unavailable_smtp": R.SMTP_UNREACHABLE,
        "timeout": R.SMTP_TIMEOUT,
        "unexpected_error": R.VENDOR_UNKNOWN,
        "dns_error": R.DNS_SERVFAIL,  # Bouncer
        "unsupported": R.PROVIDER_UNVERIFIABLE,  # Bouncer
        ANY: R.VENDOR_UNKNOWN,
    },
}
# Flags (read into these names by each adapter) that explain a risky answer; first one wins.
SHARED_RISKY_FLAGS: Final = (
    ("accept_all", R.CATCH_ALL),
    ("mailbox_full", R.MAILBOX_FULL),
    ("disposable", R.DISPOSABLE),
)
# What each of the three bills: Kickbox refunds unknown (its docs); Emailable and Bouncer do
# not say, so their unknowns are counted as billed.
SHARED_BILLS_UNKNOWN: Final[Mapping[str, bool]] = {
    "kickbox": False,
    "emailable": True,
    "bouncer": True,
}


def read_shared(vendor: str, result: str, reason: str, flags: Mapping[str, Any]) -> VendorAnswer:
    """A Kickbox, Emailable or Bouncer answer; *flags* hold ``accept_all``, ``mailbox_full``,
    ``disposable``, ``disabled`` and ``retry_after`` as the adapter read them."""
    result, why = result.strip().lower(), reason.strip().lower()
    reasons = SHARED.get(result, {})
    code = reasons.get(why, reasons.get(ANY, R.VENDOR_UNKNOWN))
    if result == "risky":
        code = next((c for name, c in SHARED_RISKY_FLAGS if flag(flags.get(name))), code)
    if code is R.NO_SUCH_USER and flag(flags.get("disabled")):
        code = R.MAILBOX_DISABLED  # Bouncer's account.disabled
    if code is R.SMTP_TIMEOUT and flag(flags.get("retry_after")):
        code = R.GREYLISTED  # Bouncer: the answer can improve once greylisting lets go
    shown = [name for name, _ in SHARED_RISKY_FLAGS if flag(flags.get(name))]
    words = f"{result}/{why}" if why else result
    words += f" ({', '.join(shown)})" if shown else ""
    billed = result != "unknown" or SHARED_BILLS_UNKNOWN.get(vendor, True)
    return VendorAnswer(code, words, vendor, billed=billed)


def _invalid(reason: Reason) -> bool:
    rule = RULES.get(reason)
    return rule is not None and rule.verdict is Verdict.INVALID


def flag(value: Any) -> bool:
    """A vendor's yes/no, however it is spelt: true, "true", "yes", 1, "1" (anything else,
    "unknown" included, is no)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value == 1
    return isinstance(value, str) and value.strip().lower() in ("true", "yes", "1")


def part(record: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The object *record* holds under *name* ({} when it holds something else or nothing)."""
    value = record.get(name)
    return value if isinstance(value, dict) else {}


def count(value: Any) -> int | None:
    """A number however a vendor sends it: 1250, "1250", "100%" (None when it is none)."""
    try:
        return int(float(str(value).strip().rstrip("%")))
    except (TypeError, ValueError):
        return None


def is_undecided(answer: VendorAnswer) -> bool:
    """Whether the answer could not decide (kept in the cache for vendor.ttl_unknown)."""
    return answer.reason in UNDECIDED


def mapping_rows(vendor: str) -> list[tuple[str, Reason]]:
    """The table of *vendor* as (its words, our reason) rows: what the docs' pages show
    (``make docs``), so the pages cannot drift from the tables."""
    if vendor == "zerobounce":
        rows = [
            (f"{status} / {sub or '(none)'}" if sub != ANY else f"{status} / (any other)", reason)
            for status, subs in ZEROBOUNCE.items()
            for sub, reason in subs.items()
        ]
        rows.append((f"(any) / {ZEROBOUNCE_BLOCKED}", R.DO_NOT_MAIL))
    elif vendor == "neverbounce":
        rows = [(word, reason) for word, reason in NEVERBOUNCE.items()]
        rows += [
            (f"{word} + {flag_name}", reason)
            for word, flags in NEVERBOUNCE_FLAGS.items()
            for flag_name, reason in flags
        ]
        rows.append(("invalid + has_dns without has_dns_mx", R.NO_MAIL_HOST))
        rows.append((f"valid, catchall, disposable or unknown + {NEVERBOUNCE_TRAP}", R.DO_NOT_MAIL))
    else:
        rows = [
            (f"{word} / {why}" if why != ANY else f"{word} / (any other)", reason)
            for word, reasons in SHARED.items()
            for why, reason in reasons.items()
        ]
        rows += [(f"risky + {name}", reason) for name, reason in SHARED_RISKY_FLAGS]
        if vendor == "bouncer":
            rows.append(("undeliverable / rejected_email + account.disabled", R.MAILBOX_DISABLED))
            rows.append(("unknown / timeout + retryAfter", R.GREYLISTED))
    rows.append(("a word not listed here (added later)", R.VENDOR_UNKNOWN))
    return rows


def markdown_mapping(vendor: str) -> str:
    """*vendor*'s table as the docs' Markdown: its words, our REASON, the VERDICT it gives."""
    lines = ["| the vendor says | REASON | VERDICT |", "|---|---|---|"]
    for words, reason in mapping_rows(vendor):
        lines.append(f"| `{words}` | `{reason.value}` | {judge_one(REASON_BITS[reason])[0]} |")
    return "\n".join(lines)
