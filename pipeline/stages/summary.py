"""What a run did: the figures the decide pass counts as it writes (:class:`Tally`), the typed
summary both engines build the same way (:func:`summarize`), and its two renderings written
beside the output, ``summary.json`` and the HTML report (:func:`stage_summaries`).

Rows and unique addresses are told apart everywhere: ``verdicts`` counts rows, and
``verdicts_unique`` counts each distinct address once (its first row), so it sums to
``distinct_addresses``. ``safe_to_send`` is the number of rows with SAFE_TO_SEND true (Valid,
the address's first row, not held back) and ``safe_to_send_share`` its share of the distinct
addresses. ``held_back`` counts the rows the list's own export holds back from sending
(unsubscribed, cleaned, opted out...: :func:`pipeline.core.decide.held_back`, the rule the split
files use too), and ``member_rows`` the rows each member of a zip gave, with those held back.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import polars as pl

from pipeline.core.addresses.repairs import Repair
from pipeline.core.decide import held_back
from pipeline.core.domains.step import DomainStats
from pipeline.core.mailboxes.types import CheckStats
from pipeline.core.schema import SCHEMA_VERSION, SOURCE_COLUMN
from pipeline.core.verdict import Reason, Verdict
from pipeline.report import render_report
from pipeline.stages.base import StageSummary
from pipeline.stages.history import Remembered
from pipeline.stages.provenance import RunFacts
from pipeline.stages.read.reader import SourceInfo
from pipeline.stages.write.outputs import OutputPaths, stage_summary, sweep_stale
from pipeline.stages.write.publish import Publication

if TYPE_CHECKING:
    from pipeline.stages.job import CleanJob
    from pipeline.stages.read.email_column import EmailColumn
    from pipeline.stages.read.reader import ListReader

TOP_DOMAINS: Final = 20  # domains listed in top_domains (and charted in the report)
TOP_TYPOS: Final = 20
_VERDICTS: Final = tuple(v.value for v in Verdict)
_REPAIRS: Final = frozenset(r.value for r in Repair)
_COMPACT_EVERY: Final = 32  # per-batch domain counts kept before they are summed together
_NUMBER: Final = re.compile(r"\d+")


@dataclass(frozen=True)
class NormalizeStats:
    distinct_addresses: int
    duplicates: int


class Tally:
    """What the decide pass counts in the output rows it writes, batch by batch."""

    def __init__(self) -> None:
        self.verdicts: Counter[str] = Counter()
        self.verdicts_unique: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()  # rows per REASON string
        self.safe_to_send = 0
        self.held_back = 0
        self.empty = 0  # rows whose email cell holds nothing
        # SOURCE_FILE value -> [rows, rows held back] (a zip's members)
        self.members: dict[str, list[int]] = {}
        self._domains: list[pl.DataFrame] = []
        self._typos: Counter[tuple[str, str]] = Counter()

    def add(self, rows: pl.DataFrame) -> None:
        """Count *rows*, output rows as written (VERDICT, REASON, DUPLICATE, SAFE_TO_SEND...)."""
        # One pass for the verdicts (of rows and of unique addresses), the reasons and the
        # safe-to-send count: a few hundred groups at most (verdict x REASON string x unique).
        unique = (~pl.col("DUPLICATE") & (pl.col("EMAIL") != "")).alias("unique")
        source = pl.col(SOURCE_COLUMN) if SOURCE_COLUMN in rows.columns else pl.lit(None, pl.String)
        groups = rows.group_by("VERDICT", "REASON", unique, source.alias("source")).agg(
            pl.len(),
            pl.col("SAFE_TO_SEND").sum(),
            held_back(pl.col("REASON")).first().alias("held"),
        )
        for verdict, reason, is_unique, member, n, safe, held in groups.iter_rows():
            self.verdicts[verdict] += n
            self.reasons[reason] += n
            if is_unique:
                self.verdicts_unique[verdict] += n
            self.safe_to_send += safe
            self.held_back += n if held else 0
            if member is not None:
                counts = self.members.setdefault(member, [0, 0])
                counts[0] += n
                counts[1] += n if held else 0
        self.empty += int((rows.get_column("EMAIL") == "").sum())
        per_verdict = ((pl.col("VERDICT") == v).sum().alias(v) for v in _VERDICTS)
        # The rows without a domain are one group, dropped after: a filter first would copy
        # every column of the batch (a third of this count's time).
        per_domain = rows.group_by("DOMAIN").agg(pl.len().alias("rows"), *per_verdict)
        self._domains.append(per_domain.filter(pl.col("DOMAIN") != ""))
        if len(self._domains) >= _COMPACT_EVERY:
            self._domains = [_summed(self._domains)]
        suggested = rows.filter(pl.col("SUGGESTION") != "")  # few rows: the text test after
        typos = suggested.filter(
            pl.col("REASON").str.contains(Reason.TYPO_SUSPECTED.value, literal=True)
        )
        fixed = typos.select("DOMAIN", pl.col("SUGGESTION").str.split("@").list.last())
        self._typos.update(fixed.iter_rows())

    def merge(self, other: Tally) -> None:
        """Count *other*'s rows too (a Dask worker's tally of the rows it wrote), as if
        :meth:`add` had seen them after these."""
        self.verdicts.update(other.verdicts)
        self.verdicts_unique.update(other.verdicts_unique)
        self.reasons.update(other.reasons)
        self.safe_to_send += other.safe_to_send
        self.held_back += other.held_back
        self.empty += other.empty
        for member, (rows, held) in other.members.items():
            counts = self.members.setdefault(member, [0, 0])
            counts[0] += rows
            counts[1] += held
        self._domains.extend(other._domains)
        if len(self._domains) >= _COMPACT_EVERY:
            self._domains = [_summed(self._domains)]
        self._typos.update(other._typos)

    def reason_counts(self) -> dict[str, int]:
        return reason_counts(self.reasons)

    def top_domains(self, limit: int = TOP_DOMAINS) -> list[dict[str, Any]]:
        """The *limit* domains with the most rows: rows, and rows of each verdict."""
        if not self._domains:
            return []
        top = top_domain_rows(self._domains, limit).rename({"DOMAIN": "domain"})
        return [{k: v for k, v in row.items()} for row in top.iter_rows(named=True)]

    def parted(self) -> tuple[Tally, pl.DataFrame | None]:
        """This tally without its rows per domain, and those rows (summed; None if none). A
        cluster sums the domains' rows where they are, by domain (a list's domains can be
        millions), and its driver merges only the rest and each bucket's
        :func:`top_domain_rows` (:meth:`add_domain_rows`)."""
        rest = copy.copy(self)
        rest._domains = []
        return rest, _summed(self._domains) if self._domains else None

    def add_domain_rows(self, rows: pl.DataFrame) -> None:
        """Count *rows* (rows per domain, as :meth:`parted` gives them) too."""
        self._domains.append(rows)

    def typo_fixes(self, limit: int = TOP_TYPOS) -> list[dict[str, Any]]:
        ranked = sorted(self._typos.items(), key=lambda item: (-item[1], item[0]))[:limit]
        return [{"domain": d, "suggestion": s, "rows": n} for (d, s), n in ranked]


def _summed(parts: list[pl.DataFrame]) -> pl.DataFrame:
    return pl.concat(parts).group_by("DOMAIN").agg(pl.all().sum())


def top_domain_rows(parts: list[pl.DataFrame], limit: int = TOP_DOMAINS) -> pl.DataFrame:
    """The *limit* domains with the most rows in *parts* (rows per domain, summed here), the
    name breaking ties: the top of domains split into buckets is the top of the buckets' tops."""
    ranked = _summed(parts).sort(["rows", "DOMAIN"], descending=[True, False])
    return ranked.head(limit)


def reason_counts(per_string: Mapping[str, int]) -> dict[str, int]:
    """Rows per reason code, from rows per REASON string (split once per distinct string)."""
    codes: Counter[str] = Counter()
    for text, n in per_string.items():
        for code in text.split(";"):
            if code:
                codes[code] += n
    return _ranked(codes)


def reject_kind(reason: str) -> str:
    """A rejected record's reason with its numbers generalized, for counting like with like
    (``row has 5 fields but the header has 3`` -> ``row has N fields but the header has N``)."""
    return _NUMBER.sub("N", reason)


def _ranked(counts: Mapping[str, int]) -> dict[str, int]:
    return {k: n for k, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))}


@dataclass(frozen=True)
class RunSummary:
    """What a run did, from its stages' typed results; :meth:`as_dict` is ``summary.json``."""

    input: str
    files: dict[str, str]  # role (output, rejects, summary, report, valid...) -> name or URL
    rows_in: int
    rows_out: int
    rows_rejected: int
    normalized: NormalizeStats
    domains: DomainStats
    checks: CheckStats | None  # None: no address-level checker ran
    dns_queries: int  # every query the run sent: domains, mail hosts, canaries
    verdicts: dict[str, int]
    verdicts_unique: dict[str, int]
    reasons: dict[str, int]
    safe_to_send: int
    held_back: int  # rows the list's export holds back from sending (consent)
    empty_rows: int  # rows kept whose email cell holds nothing (Invalid, empty)
    member_rows: dict[str, dict[str, int]]  # zip member -> {"rows": n, "held_back": n}
    top_domains: list[dict[str, Any]]
    typo_fixes: list[dict[str, Any]]
    rejects_by_reason: dict[str, int]
    stages: list[StageSummary]
    run: RunFacts
    warnings: list[str] = field(default_factory=list)
    source: SourceInfo | None = None  # what the input turned out to be
    email: EmailColumn | None = None  # the column read, and why
    encoding: str = ""  # of a text input, as detected
    delimiter: str = ""
    output_format: str = "parquet"
    # The run answered from the sandbox's made-up world (--sandbox): its verdicts are not real.
    sandbox: bool = False
    header_row: int = 0  # the line (a sheet's row) the header starts on; 0: none (Parquet)
    further: list[str] = field(default_factory=list)  # further address columns checked
    others: list[str] = field(default_factory=list)  # other columns holding addresses, unchecked
    list_name: str = ""  # the list's name in the run history ("": not recorded)
    # What changed since the list's last run (None: its first, or not recorded): previous_run_at,
    # new, gone, unchanged (distinct addresses) and transitions ("Valid->Invalid": n).
    since_last_run: dict[str, Any] | None = None
    history: dict[str, Any] | None = None  # the run's id in the history, its settings' digest

    @property
    def output(self) -> str:
        return self.files.get("output", "")

    @property
    def rejects_file(self) -> str:
        return self.files.get("rejects", "")

    @property
    def safe_to_send_share(self) -> float:
        distinct = self.normalized.distinct_addresses
        return round(self.safe_to_send / distinct, 4) if distinct else 0.0

    @property
    def repairs(self) -> dict[str, int]:
        return {code: n for code, n in self.reasons.items() if code in _REPAIRS}

    def share(self, rows: int) -> float:
        """*rows* as a share of the input's rows (rejected ones included)."""
        return rows / self.rows_in if self.rows_in else 0.0

    def sent(self, kind: str) -> int:
        """Requests the *kind* ("smtp" or "api") checker sent."""
        return self.checks.requests if self.checks and self.checks.kind == kind else 0

    @property
    def smtp_sessions(self) -> int:
        return self.checks.sessions if self.checks else 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "list_name": self.list_name,
            "sandbox": self.sandbox,
            "output": self.output,
            "rejects_file": self.rejects_file,
            "files": self.files,
            "rows_in": self.rows_in,
            "distinct_addresses": self.normalized.distinct_addresses,
            "safe_to_send": self.safe_to_send,
            "safe_to_send_share": self.safe_to_send_share,
            "held_back": self.held_back,
            "member_rows": self.member_rows,
            "duplicates": self.normalized.duplicates,
            "empty_rows": self.empty_rows,
            "rows_out": self.rows_out,
            "rows_rejected": self.rows_rejected,
            "verdicts": self.verdicts,
            "verdicts_unique": self.verdicts_unique,
            "since_last_run": self.since_last_run,
            "reasons": self.reasons,
            "top_domains": self.top_domains,
            "typo_fixes": self.typo_fixes,
            "repairs": self.repairs,
            "rejects_by_reason": self.rejects_by_reason,
            **self._counters(),
            "stages": [dataclasses.asdict(s) for s in self.stages],
            "warnings": self.warnings,
            **self._described(),
            "history": self.history,
            "run": self.run.as_dict(),
        }

    def _counters(self) -> dict[str, int]:
        refresh = self.checks.refresh if self.checks else None
        return {
            "distinct_domains": self.domains.distinct_domains,
            "dns_queries": self.dns_queries,
            "cache_hits": self.domains.cache_hits,
            "rcpts_sent": self.sent("smtp"),
            "smtp_sessions": self.smtp_sessions,
            "api_requests": self.sent("api"),
            "vendor_requests": self.checks.vendor_requests if self.checks else 0,
            "vendor_credits": self.checks.credits if self.checks else 0,
            # Cached address answers past their lifetime, those this run's budget asked
            # again (oldest first), and the runs at this budget that refresh them all.
            "answers_due": refresh.due if refresh else 0,
            "answers_refreshed": refresh.refreshed if refresh else 0,
            "runs_to_refresh_all": refresh.runs if refresh else 0,
        }

    def _described(self) -> dict[str, Any]:
        """What was read and written, how: the input's kind, encoding, delimiter and email
        column (with the rule that chose it), the output's format and schema version."""
        source = self.source or SourceInfo("")
        email = self.email
        return {
            "schema_version": SCHEMA_VERSION,
            "output_format": self.output_format,
            "input_format": source.format,
            "compression": source.compression,
            "members": list(source.members),
            "sheet": source.sheet,
            "header_row": self.header_row,
            "encoding": self.encoding,
            "delimiter": self.delimiter,
            "email_column": email.name if email else "",
            "email_column_rule": email.rule if email else "",
            "email_column_why": email.why if email else "",
            "further_email_columns": self.further,
            "other_address_columns": self.others,
        }


@dataclass(frozen=True)
class Counts:
    """What the stages counted, as both engines hand it to :func:`summarize`."""

    rows: int  # rows read and written
    rejected: int
    normalized: NormalizeStats
    domains: DomainStats
    checks: CheckStats | None
    dns_queries: int
    tally: Tally
    rejects_by_reason: Mapping[str, int]


def summarize(
    job: CleanJob,
    reader: ListReader,
    counts: Counts,
    stages: list[StageSummary],
    run: RunFacts,
    paths: OutputPaths | None = None,
    sandbox: bool = False,
    remembered: Remembered | None = None,
) -> RunSummary:
    """The run's summary, the same way for every engine; *paths* are the files written when
    they are not the job's own (the Dask engine's, see :meth:`OutputPaths.in_parts`);
    *sandbox*: the run answered from the sandbox's made-up world; *remembered*: what the
    history step found (None: the run was not recorded)."""
    paths = paths or job.paths
    tally = counts.tally
    history = remembered or Remembered("", None)
    files = {role: paths.name(path) for role, path in paths.files(job.split).items()}
    if history.changes is not None:
        files["changes"] = str(history.changes)
    return RunSummary(
        input=job.name or str(job.input),
        files=files,
        rows_in=counts.rows + counts.rejected,
        rows_out=counts.rows,
        rows_rejected=counts.rejected,
        normalized=counts.normalized,
        domains=counts.domains,
        checks=counts.checks,
        dns_queries=counts.dns_queries,
        verdicts=_ranked(tally.verdicts),
        verdicts_unique=_ranked(tally.verdicts_unique),
        reasons=tally.reason_counts(),
        safe_to_send=tally.safe_to_send,
        held_back=tally.held_back,
        empty_rows=tally.empty,
        member_rows=member_rows(tally, reader.info.members),
        top_domains=tally.top_domains(),
        typo_fixes=tally.typo_fixes(),
        rejects_by_reason=_ranked(counts.rejects_by_reason),
        stages=stages,
        run=run,
        warnings=[
            *reader.warnings,
            *(counts.checks.warnings if counts.checks else ()),
            *history.warnings,
        ],
        sandbox=sandbox,
        **described(reader, job),
        list_name=history.list_name,
        since_last_run=history.since_last_run,
        history=history.as_dict() if remembered is not None else None,
    )


def member_rows(tally: Tally, members: tuple[str, ...]) -> dict[str, dict[str, int]]:
    """Rows and rows held back per member of a zip input, in the archive's order (every member
    read, one that gave no row too); empty for any other input, whose SOURCE_FILE column, if it
    has one, is its own."""
    counts = {m: tally.members.get(m, [0, 0]) for m in members}
    return {m: {"rows": rows, "held_back": held} for m, (rows, held) in counts.items()}


def described(reader: ListReader, job: CleanJob) -> dict[str, Any]:
    """The summary's fields about what was read and written."""
    return {
        "source": reader.info,
        "email": reader.email,
        # A sheet is read through a CSV of our own making: its encoding says nothing.
        "encoding": reader.encoding if reader.info.format != "xlsx" else "",
        "delimiter": reader.delimiter if reader.info.format != "xlsx" else "",
        "output_format": job.format.value,
        "header_row": reader.header_row,
        "further": [prefix for _, prefix in reader.further.columns],
        "others": list(reader.others),
    }


def stage_summaries(summary: RunSummary, paths: OutputPaths, into: Publication) -> None:
    """The report drawn from the summary, then ``summary.json``, staged for the commit point:
    published after every other file, the summary last."""
    record = summary.as_dict()
    sweep_stale(paths.report)
    into.write_text(paths.report, render_report(record))
    stage_summary(record, paths.summary, into)


def provenance_of(job: CleanJob, reader: ListReader, run: RunFacts) -> dict[str, Any]:
    """What the Parquet output's ``listclean`` key-value metadata records: the input, the email
    column as ``summary.json`` names it, the schema version and the run's provenance."""
    email = reader.email
    return {
        "input": job.name or str(job.input),
        "email_column": email.name,
        "email_column_rule": email.rule,
        "email_column_why": email.why,
        "schema_version": SCHEMA_VERSION,
        **run.as_dict(),
    }
