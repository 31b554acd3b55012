"""``listclean calibrate``: SCORE calibrated on a list's own sends, shown, and removed
(:mod:`pipeline.core.calibration`).

    listclean calibrate [--list-name NAME] [--since DATE] [--format text|json]
    listclean calibrate show [--list-name NAME] [--format text|json]
    listclean calibrate remove [--list-name NAME]

The sends are the bounce ledger's (``bounces import``), the scores the run history's; the
calibration is kept in the history's database, where the list's next runs and the service
(sharing the history) find it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from pipeline.cli.common import bounce_ledger_path, cache_path, settings
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.calibration.fit import fit
from pipeline.core.calibration.sends import providers_of, sends_of
from pipeline.core.calibration.store import CalibrationStore
from pipeline.core.calibration.types import Calibration, Group, Report
from pipeline.core.config import Config
from pipeline.core.db.database import Where, is_url, shown, store_where
from pipeline.core.errors import UsageError
from pipeline.core.history.store import RunHistory
from pipeline.core.lists import load_lists


def history_where(args: argparse.Namespace, config: Config) -> Where:
    """The run history (and its calibrations): ``--db``, else ``[history] db``, else beside
    the cache (``sandbox-history.sqlite`` with ``--sandbox``)."""
    given: str | None = getattr(args, "db", None)
    if given:
        return given if is_url(given) else Path(given)
    return store_where(cache_path(args, config), "history", config.history.db)


def _list_name(args: argparse.Namespace, config: Config, history: RunHistory) -> str:
    """--list-name, else ``[history] list_name``, else the history's only list."""
    name: str = args.list_name or config.history.list_name
    if name:
        return name
    names = history.list_names(args.sandbox)
    if len(names) == 1:
        return names[0]
    known = ", ".join(repr(n) for n in names) or "none"
    raise UsageError(
        f"Name the list to calibrate with --list-name; the history holds these lists: {known}."
    )


def _since(text: str | None) -> float:
    if not text:
        return 0.0
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError as exc:
        raise UsageError(f"--since {text!r} is not an ISO date like 2026-11-01.") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp()


def command_calibrate(args: argparse.Namespace) -> int:
    config = settings(args)
    where = history_where(args, config)
    with RunHistory(where) as history:
        name = _list_name(args, config, history)
        with BounceLedger(bounce_ledger_path(args, config), config.bounces) as ledger:
            providers = providers_of(load_lists())
            sends = sends_of(ledger, history, name, args.sandbox, providers, _since(args.since))
    if sends.is_empty():
        raise UsageError(
            f"No send of the list {name!r} is known: import the sending service's deliveries "
            "and bounces (listclean bounces import) after a run of the list, then calibrate."
        )
    report = fit(sends, name, args.sandbox, config.calibration.min_sends, providers)
    with CalibrationStore(where) as store:
        store.put(report.calibration)
    if args.format == "json":
        json.dump({**report.as_dict(), "store": shown(where)}, sys.stdout, indent=2)
        print()
    else:
        print(report_text(report, shown(where)))
    return 0


def _named(args: argparse.Namespace) -> tuple[Where, str]:
    """Where the history lives, and the list's name (see :func:`_list_name`)."""
    config = settings(args)
    where = history_where(args, config)
    with RunHistory(where) as history:
        return where, _list_name(args, config, history)


def command_calibrate_show(args: argparse.Namespace) -> int:
    where, name = _named(args)
    with CalibrationStore(where) as store:
        found = store.get(name, args.sandbox)
    if args.format == "json":
        json.dump(found.as_dict() if found else None, sys.stdout, indent=2)
        print()
    elif found is None:
        print(f"The list {name!r} has no calibration: its runs give the rules' SCORE.")
    else:
        print(levels_text(found))
    return 0


def command_calibrate_remove(args: argparse.Namespace) -> int:
    where, name = _named(args)
    with CalibrationStore(where) as store:
        removed = store.remove(name, args.sandbox)
    if removed:
        print(f"Removed the calibration of the list {name!r}: its next runs give the rules' SCORE.")
    else:
        print(f"The list {name!r} had no calibration.")
    return 0


def levels_text(c: Calibration) -> str:
    when = dt.datetime.fromtimestamp(c.created_at, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"Calibration {c.calibration_id} of the list {c.list_name!r}"
        f"{' (sandbox)' if c.sandbox else ''}, made {when} from {c.sends:,} sends "
        f"(calibration.min_sends = {c.min_sends}):",
        f"  {'SCORE (REASON, provider)':<40}  {'VERDICT':<7}  {'sends':>7}  {'hard':>6}  "
        f"{'observed':>8}  {'calibrated':>10}  status",
    ]
    for lv in c.levels:
        status = {
            "applied": "applied",
            "few_sends": f"too few sends (< {c.min_sends}): default kept where order allows",
            "above_band": "observed above the band: the band's top edge",
            "below_band": "observed below the band: the band's bottom edge",
        }[lv.status.value]
        lines.append(
            f"  {lv.name:<40}  {lv.verdict:<7}  {lv.sends:>7,}  {lv.bounces:>6,}  "
            f"{lv.observed:>8.3f}  {lv.calibrated:>10.2f}  {status}"
        )
    return "\n".join(lines)


def _groups_text(groups: tuple[Group, ...], kind: str, title: str) -> list[str]:
    lines = [
        f"By {title}:",
        f"  {title:<24}  {'sends':>7}  {'hard':>6}  {'observed':>8}  {'predicted':>9}  "
        f"{'calibrated':>10}",
    ]
    for g in (g for g in groups if g.kind == kind):
        lines.append(
            f"  {g.name:<24}  {g.sends:>7,}  {g.bounces:>6,}  {g.observed:>8.3f}  "
            f"{g.predicted:>9.3f}  {g.calibrated:>10.3f}"
        )
    return lines


def report_text(report: Report, store: str) -> str:
    lines = [levels_text(report.calibration), ""]
    for kind, title in (("bin", "SCORE bin"), ("reason", "REASON"), ("provider", "provider")):
        lines += [*_groups_text(report.groups, kind, title), ""]
    lines.append(
        f"Expected calibration error over 10 SCORE bins: {report.ece_before:.4f} with the "
        f"rules' SCORE, {report.ece_after:.4f} calibrated (on these sends)."
    )
    if report.findings:
        lines += ["", "Findings:", *(f"  - {f}" for f in report.findings)]
    lines += [
        "",
        f"Stored in {store}: the list's next runs apply it "
        "(listclean calibrate show, listclean calibrate remove).",
    ]
    return "\n".join(lines)
