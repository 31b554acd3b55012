"""What every hostile run must satisfy, accepted or refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl

from tests.hostile.cases import Accept, Expect, Refuse, Run
from tests.hostile.runner import Outcome, Snapshot, snapshot

ERROR = "listclean: error: "
WARNING = "listclean: warning: "


def check(expect: Expect, run: Run, where: Path, before: Snapshot, outcome: Outcome) -> None:
    assert outcome.code is not None, f"still running after {run.timeout} s, killed"
    assert "Traceback" not in outcome.stdout + outcome.stderr, outcome.stderr[-3000:]
    after = snapshot(where)
    for name, entry in before.items():
        assert after.get(name) == entry, f"{name} was changed or removed by the run"
    new = sorted(set(after) - set(before))
    if isinstance(expect, Refuse):
        _refused(expect, outcome, before)
        assert new == [], f"a refused run wrote {new}"
    else:
        assert run.output is not None
        _accepted(expect, outcome, where / run.output)
        assert new == sorted(outputs(run.output)), f"the run left {new}"


def outputs(output: str) -> tuple[str, ...]:
    """The files a run writes for ``-o OUTPUT``, as docs/lists.md names them."""
    stem = output.removesuffix(".parquet")
    return output, f"{stem}.rejects.csv", f"{stem}.summary.json", f"{stem}.report.html"


def _refused(expect: Refuse, outcome: Outcome, before: Snapshot) -> None:
    assert outcome.code == expect.code, f"exit {outcome.code}, stderr: {outcome.stderr[-2000:]}"
    lines = outcome.stderr.strip().splitlines()
    assert len(lines) == 1, f"not one line: {outcome.stderr[-2000:]!r}"
    line = lines[0]
    assert line.startswith(ERROR), line
    assert line.isprintable() and "\ufffd" not in line, f"binary noise: {line!r}"
    message = line.removeprefix(ERROR)
    for name in sorted(before, key=len, reverse=True):  # the case's own file names
        message = message.replace(name, "")
    assert re.search(expect.pattern, message), f"{message!r} does not say {expect.pattern!r}"


def _accepted(expect: Accept, outcome: Outcome, output: Path) -> None:
    assert outcome.code == 0, f"exit {outcome.code}, stderr: {outcome.stderr[-2000:]}"
    _, rejects_name, summary_name, _ = outputs(output.name)
    summary = json.loads((output.parent / summary_name).read_text(encoding="utf-8"))
    counts = {k: summary[k] for k in ("rows_in", "rows_out", "rows_rejected")}
    assert summary["rows_in"] == expect.records, counts
    assert summary["rows_out"] + summary["rows_rejected"] == expect.records, counts
    frame = pl.read_parquet(output)
    assert frame.height == summary["rows_out"]
    rejects = pl.read_csv(output.parent / rejects_name, infer_schema=False)
    assert rejects.height == summary["rows_rejected"]
    # A blank line's raw text is empty; any other reject keeps the record as the file spells it.
    lost = rejects.filter((pl.col("raw").fill_null("") == "") & (pl.col("reason") != "empty_row"))
    assert lost.height == 0, f"a reject lost its text: {lost.rows()}"
    if expect.rejected is not None:
        assert tuple(rejects.get_column("reason")) == expect.rejected, rejects.rows()
    missing = set(expect.kept) - set(frame.get_column("EMAIL"))
    assert not missing, f"addresses lost: {sorted(missing)}"
    for value in expect.cells:
        assert _holds(frame, value), f"no cell reads {value!r}"
    if expect.warns is not None:
        warnings = [w for w in outcome.stderr.splitlines() if w.startswith(WARNING)]
        assert any(re.search(expect.warns, w) for w in warnings), outcome.stderr


def _holds(frame: pl.DataFrame, value: str) -> bool:
    text = frame.select(pl.col(pl.String))
    return any(text.get_column(name).eq(value).any() for name in text.columns)
