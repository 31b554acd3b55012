"""What ``clean`` tells its user when the run is over: the summary table (business figures
first, then the breakdowns, then the technical counters and the files), the warnings that must
be seen even with ``--quiet``, and the exit code a scheduled job can act on
(``--fail-on-invalid``, ``--fail-on-rejected``)."""

from __future__ import annotations

import sys
from typing import Final, TextIO

from pipeline.cli.common import sender_hint
from pipeline.cli.log import Log, LogFormat
from pipeline.core.verdict import Verdict
from pipeline.stages.summary import RunSummary

FAILED_CHECK: Final = 4  # the exit code of a run whose results crossed a --fail-on-* share
_WIDTH: Final = 24


def tell(log: Log, summary: RunSummary, *, quiet: bool) -> None:
    """Warnings (always), then the summary: a table on standard output, or with
    ``--log-format json`` one ``summary`` record in the log (none with *quiet*)."""
    checked = set(summary.checks.warnings) if summary.checks else set()
    for warning in summary.warnings:
        log.warning("verify" if warning in checked else "input", warning)
    if hint := sender_hint(summary.reasons):
        log.warning("sender_refused", hint)
    if summary.rows_rejected:
        log.warning("rejected", rejected_text(summary), rows=summary.rows_rejected)
    if quiet:
        return
    if log.format is LogFormat.JSON:
        log.info("summary", headline(summary), **headline_fields(summary))
    else:
        print_summary(summary, sys.stdout)


def judge(log: Log, summary: RunSummary, invalid: float | None, rejected: float | None) -> int:
    """0, or :data:`FAILED_CHECK` with one line saying which share was crossed."""
    checks = (
        ("Invalid", "--fail-on-invalid", summary.verdicts.get(Verdict.INVALID.value, 0), invalid),
        ("rejected", "--fail-on-rejected", summary.rows_rejected, rejected),
    )
    for what, flag, rows, limit in checks:
        if limit is not None and summary.share(rows) > limit:
            log.error(
                "failed_check",
                f"{summary.share(rows):.1%} of the {summary.rows_in:,} input rows are {what} "
                f"({rows:,}), more than {flag} {limit:g} allows; every file was written.",
                check=flag,
                rows=rows,
                share=round(summary.share(rows), 6),
                limit=limit,
                exit_code=FAILED_CHECK,
            )
            return FAILED_CHECK
    return 0


def rejected_text(summary: RunSummary) -> str:
    kinds = ", ".join(f"{n:,}: {why}" for why, n in list(summary.rejects_by_reason.items())[:3])
    more = "; ..." if len(summary.rejects_by_reason) > 3 else ""
    return (
        f"{summary.rows_rejected:,} of {summary.rows_in:,} input rows were rejected "
        f"({kinds}{more}); they are in {summary.rejects_file}."
    )


def headline(summary: RunSummary) -> str:
    unique = summary.normalized.distinct_addresses
    return (
        f"{unique:,} unique addresses, {summary.safe_to_send:,} safe to send "
        f"({summary.safe_to_send_share:.1%}), {summary.held_back:,} held back; "
        f"{summary.rows_in:,} rows in, "
        f"{summary.rows_rejected:,} rejected; written to {summary.output}"
    )


def headline_fields(summary: RunSummary) -> dict[str, object]:
    record = summary.as_dict()
    keys = ("rows_in", "rows_out", "rows_rejected", "distinct_addresses", "duplicates")
    return {
        **{k: record[k] for k in keys},
        "safe_to_send": summary.safe_to_send,
        "safe_to_send_share": summary.safe_to_send_share,
        "held_back": summary.held_back,
        "member_rows": summary.member_rows,
        "verdicts_unique": summary.verdicts_unique,
        "verdicts": summary.verdicts,
        "files": summary.files,
    }


def print_summary(summary: RunSummary, out: TextIO) -> None:
    out.write("\n".join([*_business(summary), *_breakdown(summary), *_technical(summary)]) + "\n")


def _row(label: str, value: int, note: str = "") -> str:
    return f"{label:<{_WIDTH}}{value:>12,}" + (f"   {note}" if note else "")


def _business(summary: RunSummary) -> list[str]:
    unique = summary.normalized.distinct_addresses
    rows = summary.rows_out
    return [
        _row(
            "unique addresses",
            unique,
            f"in {rows:,} rows ({summary.normalized.duplicates:,} duplicate rows, "
            f"{summary.empty_rows:,} without an address)",
        ),
        _row(
            "safe to send",
            summary.safe_to_send,
            f"{summary.safe_to_send_share:.1%} of the unique addresses (SAFE_TO_SEND)",
        ),
        _row(
            "held back",
            summary.held_back,
            "rows the export marks unsubscribed, cleaned, opted out... (never safe to send)",
        ),
        _row("rows rejected", summary.rows_rejected, f"of {summary.rows_in:,} input rows"),
        "",
        *_since(summary),
        *_members(summary),
    ]


def _since(summary: RunSummary) -> list[str]:
    """The list's name in the run history, and what changed since its last run."""
    if not summary.list_name:
        return []
    lines = [f"{'list':<{_WIDTH}}{summary.list_name}"]
    since = summary.since_last_run
    if summary.history is None or not summary.history.get("run_id"):
        return [*lines, f"{'since the last run':<{_WIDTH}}not recorded ([history] record)", ""]
    if since is None:
        return [*lines, f"{'since the last run':<{_WIDTH}}none: the list's first run", ""]
    lines.append(f"{'since the last run':<{_WIDTH}}{since['previous_run_at']}")
    lines += [
        _row("  new", since["new"], "distinct addresses not in the last run"),
        _row("  gone", since["gone"], "in the last run, not in this one"),
        _row("  unchanged", since["unchanged"], "in both runs, whatever their VERDICT"),
    ]
    lines += [_row(f"  {pair}", n) for pair, n in since["transitions"].items()]
    return [*lines, ""]


def _members(summary: RunSummary) -> list[str]:
    """Rows each member of a zip gave, and how many of them are held back."""
    if not summary.member_rows:
        return []
    lines = [f"{'member files':<{_WIDTH}}{'rows':>12}{'held back':>12}"]
    for name, counts in summary.member_rows.items():
        rows, held = counts["rows"], counts["held_back"]
        lines.append(f"{'':<{_WIDTH}}{rows:>12,}{held:>12,}   {name}")
    return [*lines, ""]


def _breakdown(summary: RunSummary) -> list[str]:
    lines = [f"{'VERDICT':<{_WIDTH}}{'unique':>12}{'rows':>12}"]
    for verdict in (v.value for v in Verdict):
        unique = summary.verdicts_unique.get(verdict, 0)
        rows = summary.verdicts.get(verdict, 0)
        lines.append(f"  {verdict:<{_WIDTH - 2}}{unique:>12,}{rows:>12,}")
    lines.append("REASON (rows)")
    lines += [f"  {k:<{_WIDTH - 2}}{v:>12,}" for k, v in summary.reasons.items()]
    return [*lines, ""]


def _technical(summary: RunSummary) -> list[str]:
    lines = [
        _row("distinct domains", summary.domains.distinct_domains),
        _row("DNS queries sent", summary.dns_queries),
        _row("domain cache hits", summary.domains.cache_hits),
        _row("SMTP RCPTs sent", summary.sent("smtp")),
        _row("SMTP sessions", summary.smtp_sessions),
        _row("API requests", summary.sent("api")),
        *_vendor_rows(summary),
        *_refresh_rows(summary),
        "seconds per stage",
        *(f"  {s.name:<{_WIDTH - 2}}{s.seconds:>12.3f}" for s in summary.stages),
        "",
        *_read_as(summary),
        "files",
        *(f"  {role:<10}{name}" for role, name in summary.files.items()),
    ]
    return lines


def _refresh_rows(summary: RunSummary) -> list[str]:
    """The cached answers due again, when there are any."""
    checks = summary.checks
    if checks is None or not checks.refresh.due:
        return []
    refresh = checks.refresh
    return [
        _row("answers due", refresh.due, "cached answers past their lifetime"),
        _row("answers refreshed", refresh.refreshed, "asked again within the budget"),
        _row("runs to refresh all", refresh.runs, "at this budget"),
    ]


def _vendor_rows(summary: RunSummary) -> list[str]:
    checks = summary.checks
    if checks is None or not (checks.vendor_requests or checks.credits):
        return []
    return [
        _row("vendor requests", checks.vendor_requests),
        _row("vendor credits", checks.credits, "answers the paid verifier bills"),
    ]


def _read_as(summary: RunSummary) -> list[str]:
    """How the input was read: its kind, encoding and delimiter, and the email column's why."""
    described = summary.as_dict()
    kind = " ".join(filter(None, [described["compression"], described["input_format"]]))
    if described["encoding"]:
        kind += f", {described['encoding']}, delimiter {described['delimiter']!r}"
    lines = [f"read as     {kind}"]
    if summary.header_row > 1:
        above = summary.header_row - 1
        lines.append(
            f"header      row {summary.header_row}; the {above:,} rows above it (a report's "
            "title) are in the rejects"
        )
    if summary.email is not None:
        lines.append(f"email       {summary.email.name!r}: {summary.email.why}")
    if summary.further:
        lines.append(f"also        {', '.join(repr(c) for c in summary.further)}: --email-column")
    if summary.others:
        lines.append(f"unchecked   {', '.join(repr(c) for c in summary.others)} hold addresses too")
    return lines
