"""The fast reader, where it reads a file, gives what the exact reader gives: the same rows,
and the same rejects (titles, empty rows, footers) with the same lines and text. Random small
files of exports' shapes: blank lines, lines of spaces or delimiters, footers, titles above the
header, short rows, quoted delimiters and line ends, LF and CRLF, with a line end at the end of
the file or not, and quoted empty fields (``""``, null in both, as an empty field is).
Whichever reader a file needs, the result must be one, on a second read too (a run's second
pass)."""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl
import pytest

from pipeline.core.errors import InputError
from pipeline.stages.read.reader import open_list, read_list

_CELLS = ["", '""', " ", "a@b.com", "x", '"q"', '"a,b"', '"line\nend"', "Total: 3", "é", "p@q.org"]
_FILES = 300


def _export(rng: random.Random) -> str:
    width = rng.randint(1, 4)
    lines = ["Report title"] if rng.random() < 0.2 else []
    lines += [""] if rng.random() < 0.2 else []
    lines.append(",".join(["email", *(f"c{i}" for i in range(1, width))]))
    for i in range(rng.randint(0, 30)):
        kind = rng.random()
        if kind < 0.15:
            lines.append("")
        elif kind < 0.2:
            lines.append(" " * rng.randint(1, 3))
        elif kind < 0.25:
            lines.append("," * rng.randint(1, width))
        elif kind < 0.28:
            lines.append("Grand Totals (12 records)" + "," * rng.randint(0, width - 1))
        else:
            row = [rng.choice(_CELLS) for _ in range(rng.randint(max(1, width - 1), width))]
            row[0] = f"p{i}@example.org" if rng.random() < 0.7 else row[0]
            lines.append(",".join(row))
    end = rng.choice(["\n", "\r\n"])
    last = end if rng.random() < 0.8 else ""  # a line end at the end, or not
    return end.join(lines) + last + (end if rng.random() < 0.1 else "")


def _exactly(path: Path, spill: Path) -> tuple[pl.DataFrame, list[tuple[object, ...]]]:
    reader = open_list(str(path), path, spill, "email")
    reader.read_exactly()
    read = list(reader.batches(3))
    frames = [batch.frame for batch in read] or [pl.DataFrame(schema=reader.schema)]
    return pl.concat(frames), [row for batch in read for row in batch.rejects.rows()]


@pytest.mark.parametrize("seed", [1, 2])
def test_both_readers_give_one_result(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    fast = 0
    for number in range(_FILES // 2):
        path = tmp_path / f"list{number}.csv"
        path.write_bytes(_export(rng).encode())
        try:
            found = read_list(path, tmp_path, "email")
        except InputError:  # refused when opened (no email column found): by both, then
            with pytest.raises(InputError):
                _exactly(path, tmp_path)
            continue
        frame, rejects = _exactly(path, tmp_path)
        fast += not found.reader._source.exact  # type: ignore[attr-defined]
        assert found.frame.equals(frame), path.read_bytes()
        assert found.rejects.rows() == rejects, path.read_bytes()
        # A run's second pass reads the file again, its batches cut elsewhere: the same.
        again = list(found.reader.batches(2))
        frames = [batch.frame for batch in again] or [pl.DataFrame(schema=found.reader.schema)]
        assert pl.concat(frames).equals(frame), path.read_bytes()
        assert [row for batch in again for row in batch.rejects.rows()] == rejects
    assert fast >= _FILES // 10  # the fast reader read a good share of them
