"""What the report shows, read from a run's summary (``summary.json``) into typed values.

The summary grows over time and a report may be drawn from an older or a newer one, so every
key is optional here: a key that is missing, or that holds a value of the wrong shape, leaves
its figure, chart or fact out of the report instead of failing it. Nothing is computed that the
summary does not state, so every number on the page can be checked against ``summary.json``;
the one exception is a stacked bar's total when the summary gives none (the sum of its parts).

Keys read (``summary.json``): the counts ``rows_in``, ``rows_out``, ``rows_rejected``,
``distinct_addresses``, ``duplicates``, ``distinct_domains``, ``dns_queries``, ``cache_hits``,
``rcpts_sent``, ``smtp_sessions``, ``api_requests``, ``answers_due``, ``answers_refreshed``,
``runs_to_refresh_all``, ``safe_to_send`` and ``safe_to_send_share``; the breakdowns
``verdicts``, ``verdicts_unique``, ``reasons``, ``top_domains``, ``typo_fixes``, ``repairs``,
``rejects_by_reason`` and ``stages``; the facts ``input``, ``list_name``, ``output``,
``rejects_file``, ``email_column`` (with ``email_column_why``), ``encoding``, ``delimiter``,
``files`` and ``run``; what changed since the list's last run, ``since_last_run`` (its
``previous_run_at``, ``new``, ``gone``, ``unchanged`` and ``transitions``); and ``warnings``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from pipeline.core.verdict import Verdict

VERDICTS: Final = tuple(v.value for v in Verdict)
# How a delimiter is named on the page: a tab or a space would otherwise be invisible.
_DELIMITER_NAMES: Final = {",": "comma", ";": "semicolon", "\t": "tab", "|": "pipe", " ": "space"}


class Unit(enum.StrEnum):
    """What a number counts; it decides how the number is written."""

    ROWS = "rows"
    ADDRESSES = "addresses"
    SHARE = "share"  # 0..1, written as a percentage
    SECONDS = "seconds"


@dataclass(frozen=True)
class Figure:
    """One number of the summary: ``key`` is its name in ``summary.json``."""

    key: str
    title: str
    value: int | float
    unit: Unit = Unit.ROWS


@dataclass(frozen=True)
class Headline:
    """A headline card: its main figure and, for safe to send, the share beside it."""

    figure: Figure
    share: Figure | None = None


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: its parts follow the chart's ``series``; ``total`` is the summary's
    own total when it states one (a domain's rows), else the sum of the parts."""

    label: str  # the category as the summary spells it (a reason code, a domain)
    values: tuple[int | float, ...]
    name: str = ""  # what the page calls the bar, when it is not the label
    total: int | float | None = None

    @property
    def shown(self) -> str:
        return self.name or self.label

    @property
    def sum(self) -> int | float:
        return self.total if self.total is not None else sum(self.values)


@dataclass(frozen=True)
class Chart:
    """A bar chart and its table: ``key`` names the summary key it draws."""

    key: str
    title: str
    series: tuple[str, ...]  # the stacked parts of every bar (verdicts), or one measure
    bars: tuple[Bar, ...]
    unit: Unit = Unit.ROWS
    note: str = ""
    category: str = ""  # what a bar is (the table's first column): "Reason", "Domain"

    @property
    def stacked(self) -> bool:
        return len(self.series) > 1


@dataclass(frozen=True)
class Fact:
    """A run fact: ``key`` is its dotted path in the summary (``run.version``)."""

    key: str
    title: str
    value: str
    shown: str = ""  # how the page writes it, when not as is (a tab delimiter)
    note: str = ""


@dataclass(frozen=True)
class Since:
    """What changed since the list's last run: when it ran, the counts, the transitions."""

    list_name: str  # "" when the summary does not say
    previous_run_at: str | None  # None: the list's first run
    figures: tuple[Figure, ...]
    transitions: Chart


@dataclass(frozen=True)
class Report:
    title: str
    headline: tuple[Headline, ...]
    charts: tuple[Chart, ...]
    facts: tuple[Fact, ...]
    counters: tuple[Figure, ...]
    warnings: tuple[str, ...]
    sandbox: bool = False  # the run answered from the sandbox's made-up world
    since: Since | None = None


def read_summary(summary: Mapping[str, Any]) -> Report:
    """The report of *summary*, with whatever parts it holds."""
    return Report(
        title=text_of(summary.get("input")) or "",
        headline=headline(summary),
        charts=tuple(c for c in charts(summary) if c.bars),
        facts=facts(summary),
        counters=counters(summary),
        warnings=tuple(w for w in map(text_of, list_of(summary.get("warnings"))) if w),
        sandbox=summary.get("sandbox") is True,
        since=since_of(summary),
    )


def since_of(summary: Mapping[str, Any]) -> Since | None:
    """The changes since the list's last run; None when the summary names no list and has
    no changes (a run not in a history)."""
    name = text_of(summary.get("list_name")) or ""
    found_since = summary.get("since_last_run")
    if not name and not isinstance(found_since, Mapping):
        return None
    since = mapping_of(found_since)
    named = [
        ("new", "New addresses"),
        ("gone", "Gone addresses"),
        ("unchanged", "In both runs"),
    ]
    found = [(key, title, count_of(since.get(key))) for key, title in named]
    shown = tuple(
        Figure(f"since_last_run.{key}", title, n, Unit.ADDRESSES)
        for key, title, n in found
        if n is not None
    )
    transitions = simple_chart(
        "transitions",
        "VERDICT changes",
        counts_of(since.get("transitions")),
        "Before → after",
        "Addresses in both runs whose VERDICT changed.",
    )
    at = text_of(since.get("previous_run_at"))
    chart = dataclasses.replace(transitions, series=("addresses",), unit=Unit.ADDRESSES)
    return Since(name, at, shown, chart)


def headline(summary: Mapping[str, Any]) -> tuple[Headline, ...]:
    share = figure(summary, "safe_to_send_share", "of unique addresses", Unit.SHARE)
    cards = [
        (figure(summary, "rows_in", "Rows in"), None),
        (figure(summary, "distinct_addresses", "Unique addresses", Unit.ADDRESSES), None),
        (figure(summary, "safe_to_send", "Safe to send", Unit.ADDRESSES), share),
        (figure(summary, "held_back", "Held back (consent)"), None),
        (figure(summary, "duplicates", "Duplicate rows"), None),
        (figure(summary, "rows_rejected", "Rejected rows"), None),
    ]
    return tuple(Headline(main, extra) for main, extra in cards if main is not None)


def counters(summary: Mapping[str, Any]) -> tuple[Figure, ...]:
    """The technical counters, after the business figures."""
    named = [
        ("rows_out", "Rows out", Unit.ROWS),
        ("distinct_domains", "Distinct domains", Unit.ROWS),
        ("dns_queries", "DNS queries sent", Unit.ROWS),
        ("cache_hits", "Domain cache hits", Unit.ROWS),
        ("smtp_sessions", "SMTP sessions", Unit.ROWS),
        ("rcpts_sent", "RCPT commands sent", Unit.ROWS),
        ("api_requests", "API requests", Unit.ROWS),
        ("answers_due", "Cached answers due again", Unit.ADDRESSES),
        ("answers_refreshed", "Due answers refreshed", Unit.ADDRESSES),
        ("runs_to_refresh_all", "Runs at this budget to refresh all", Unit.ROWS),
    ]
    found = (figure(summary, key, title, unit) for key, title, unit in named)
    return tuple(f for f in found if f is not None)


def figure(
    summary: Mapping[str, Any], key: str, title: str, unit: Unit = Unit.ROWS
) -> Figure | None:
    value = share_of(summary.get(key)) if unit is Unit.SHARE else count_of(summary.get(key))
    return None if value is None else Figure(key, title, value, unit)


def charts(summary: Mapping[str, Any]) -> list[Chart]:
    reasons = counts_of(summary.get("reasons"))
    return [
        verdict_chart(summary),
        simple_chart("reasons", "Reasons", reasons, "Reason", "A row may carry several codes."),
        domain_chart(summary),
        typo_chart(summary),
        simple_chart("repairs", "Repairs suggested", counts_of(summary.get("repairs")), "Repair"),
        simple_chart("rejects_by_reason", "Rejected rows", rejects_of(summary), "Why"),
        member_chart(summary),
        stage_chart(summary),
    ]


def verdict_chart(summary: Mapping[str, Any]) -> Chart:
    """Rows and unique addresses, each one bar stacked by verdict."""
    rows = counts_of(summary.get("verdicts"))
    unique = counts_of(summary.get("verdicts_unique"))
    series = ordered(VERDICTS, [*rows, *unique])
    bars = [
        Bar(label, tuple(counts.get(v, 0) for v in series), name=name)
        for label, name, counts in (("rows", "Rows", rows), ("unique", "Unique addresses", unique))
        if counts
    ]
    return Chart("verdicts", "Verdicts", series, tuple(bars), category="Counted")


def domain_chart(summary: Mapping[str, Any]) -> Chart:
    bars = []
    for item in records_of(summary.get("top_domains")):
        domain, rows = text_of(item.get("domain")), count_of(item.get("rows"))
        if domain is not None:
            values = tuple(count_of(item.get(v)) or 0 for v in VERDICTS)
            bars.append(Bar(domain, values, total=rows))
    note = "Rows by verdict, for the domains with the most rows."
    return Chart("top_domains", "Top domains", VERDICTS, tuple(bars), note=note, category="Domain")


def typo_chart(summary: Mapping[str, Any]) -> Chart:
    bars = []
    for item in records_of(summary.get("typo_fixes")):
        domain, fix = text_of(item.get("domain")), text_of(item.get("suggestion"))
        rows = count_of(item.get("rows"))
        if domain is not None and fix is not None and rows is not None:
            bars.append(Bar(typo_label(domain, fix), (rows,)))
    note = "Suggested in SUGGESTION; the addresses themselves are left as written."
    title, category = "Typo fixes suggested", "Domain → suggestion"
    return Chart("typo_fixes", title, ("rows",), tuple(bars), note=note, category=category)


def typo_label(domain: str, suggestion: str) -> str:
    return f"{domain} → {suggestion}"


def stage_chart(summary: Mapping[str, Any]) -> Chart:
    bars = []
    for item in records_of(summary.get("stages")):
        name, seconds = text_of(item.get("name")), seconds_of(item.get("seconds"))
        if name is not None and seconds is not None:
            bars.append(Bar(name, (seconds,)))
    series = ("seconds",)
    return Chart("stages", "Stage timings", series, tuple(bars), Unit.SECONDS, category="Stage")


def simple_chart(
    key: str, title: str, counts: Mapping[str, int], category: str, note: str = ""
) -> Chart:
    """One bar per key, largest first (ties by name, so the page is stable)."""
    ranked = tuple(Bar(k, (n,)) for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    return Chart(key, title, ("rows",), ranked, note=note, category=category)


MEMBER_SERIES = ("not held back", "held back")


def member_chart(summary: Mapping[str, Any]) -> Chart:
    """Rows each member of a zip gave, and how many of them its export holds back."""
    bars = []
    for member, item in mapping_of(summary.get("member_rows")).items():
        counts = mapping_of(item)
        rows, held = count_of(counts.get("rows")), count_of(counts.get("held_back"))
        if isinstance(member, str) and rows is not None:
            held = min(held or 0, rows)
            bars.append(Bar(member, (rows - held, held), total=rows))
    note = "Held back: rows the export marks unsubscribed, cleaned, opted out... (never safe)."
    series = MEMBER_SERIES
    return Chart("member_rows", "Member files", series, tuple(bars), note=note, category="File")


def rejects_of(summary: Mapping[str, Any]) -> dict[str, int]:
    return counts_of(summary.get("rejects_by_reason"))


def facts(summary: Mapping[str, Any]) -> tuple[Fact, ...]:
    run = mapping_of(summary.get("run"))
    found = [
        fact("input", "Input", summary.get("input")),
        fact("list_name", "List (run history)", summary.get("list_name") or None),
        fact(
            "since_last_run.previous_run_at",
            "Last run of the list",
            mapping_of(summary.get("since_last_run")).get("previous_run_at"),
        ),
        fact(
            "email_column",
            "Email column",
            summary.get("email_column"),
            text_of(summary.get("email_column_why")) or "",
        ),
        fact("encoding", "Encoding", summary.get("encoding")),
        delimiter_fact(summary.get("delimiter")),
        *files(summary),
        fact("run.version", "listclean version", run.get("version")),
        fact("run.started_at", "Started", run.get("started_at")),
        fact("run.finished_at", "Finished", run.get("finished_at")),
        fact("run.input_sha256", "Input SHA-256", run.get("input_sha256")),
    ]
    return tuple(f for f in found if f is not None)


def files(summary: Mapping[str, Any]) -> list[Fact | None]:
    """Every file written, when the summary lists them; else the output and rejects file."""
    written = mapping_of(summary.get("files"))
    if not written:
        return [
            fact("output", "Output", summary.get("output")),
            fact("rejects_file", "Rejects file", summary.get("rejects_file")),
        ]
    return [fact(f"files.{kind}", f"Written: {kind}", path) for kind, path in written.items()]


def fact(key: str, title: str, value: object, note: str = "") -> Fact | None:
    text = text_of(value)
    return None if text is None else Fact(key, title, text, note=note)


def delimiter_fact(value: object) -> Fact | None:
    text = text_of(value)
    if text is None:
        return None
    name = _DELIMITER_NAMES.get(text)
    shown = f"{name} ({text})" if name and text.strip() else (name or text)
    return Fact("delimiter", "Delimiter", text, shown=shown)


def ordered(known: Iterable[str], found: Iterable[str]) -> tuple[str, ...]:
    """*known* names first, in their order, then any others *found*, sorted."""
    first = tuple(known)
    return first + tuple(sorted(set(found) - set(first)))


# Tolerant readers: a value of the wrong shape reads as missing (None, or empty).


def count_of(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def seconds_of(value: object) -> int | float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if value >= 0 else None


def share_of(value: object) -> float | None:
    number = seconds_of(value)
    return float(number) if number is not None and number <= 1 else None


def text_of(value: object) -> str | None:
    if isinstance(value, str):
        return value
    return str(value) if count_of(value) is not None else None


def counts_of(value: object) -> dict[str, int]:
    """A ``{name: count}`` mapping; entries that are not one are left out."""
    found = mapping_of(value)
    return {k: n for k, v in found.items() if isinstance(k, str) and (n := count_of(v)) is not None}


def mapping_of(value: object) -> Mapping[Any, Any]:
    return value if isinstance(value, Mapping) else {}


def list_of(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def records_of(value: object) -> list[Mapping[str, Any]]:
    return [item for item in list_of(value) if isinstance(item, Mapping)]
