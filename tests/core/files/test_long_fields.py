"""Records with a field over the limit, found in the bytes without reading them
(:mod:`pipeline.core.files.long_fields`), and a file read without them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from pipeline.core.files.long_fields import (
    RAW_PREFIX,
    SetAside,
    Without,
    long_records,
    size_without,
)

HEADER = b"name,email\n"
LONG = b"z" * 60  # over the limit of 40 these cases use
QUOTED = b'"' + b"x" * 30 + b"\n" + b"y" * 30 + b'"'  # 63 bytes over two lines

# (case, the lines after the header, [(line, lines spanned, longest field)])
CASES = [
    ("none", b"Ann,a@x.com\nBob,b@x.com\n", []),
    ("unquoted", b"Ann,a@x.com\n" + LONG + b",b@x.com\nCat,c@x.com\n", [(3, 1, 60)]),
    ("the email field", b"Ann,a@x.com\nBob," + LONG + b"@x.com\n", [(3, 1, 66)]),
    ("quoted over two lines", QUOTED + b",b@x.com\nCat,c@x.com\n", [(2, 2, 63)]),
    ("doubled quotes", b'"' + b"x" * 30 + b'""' + b"x" * 30 + b'",b@x.com\n', [(2, 1, 64)]),
    ("crlf", b"Ann,a@x.com\r\n" + QUOTED + b",b@x.com\r\nCat,c@x.com\r\n", [(3, 2, 63)]),
    ("lone cr", b"Ann,a@x.com\r" + LONG + b",b@x.com\rCat,c@x.com\r", [(3, 1, 60)]),
    ("no line end at the end", b"Ann,a@x.com\nBob," + LONG, [(3, 1, 60)]),
    ("two in a row", LONG + b",a@x.com\n" + QUOTED + b",b@x.com\n", [(2, 1, 60), (3, 2, 63)]),
    # A long record of short fields is a ragged row, not a long field: the readers judge it.
    ("many short fields", b"A" + b",b" * 40 + b"\nCat,c@x.com\n", []),
    # Stray quotes (text, to the readers) make a false quoted stretch from one to the next:
    # not RFC 4180 fields, so only a physical line over the limit inside it is set aside.
    (
        "stray quotes",
        b'Ja"ne,a@x.com\n' + b"B,b@x.com\n" * 5 + LONG + b',c@x.com\nO"Brien,o@x.com\n',
        [(8, 1, 68)],
    ),
    ("an unclosed quote", b"Ann,a@x.com\n" + b'"Bob,b@x.com\n' * 5, []),
]


@pytest.mark.parametrize("chunk", [7, 64, 1 << 24])
@pytest.mark.parametrize(("body", "expected"), [pytest.param(b, e, id=c) for c, b, e in CASES])
def test_records_with_a_long_field(
    tmp_path: Path, body: bytes, expected: list[tuple[int, int, int]], chunk: int
) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(HEADER + body)
    found = long_records(path, ",", 40, chunk)
    assert [(s.line, s.lines, s.field) for s in found] == expected
    for span in found:  # a span is the record's bytes, its line end left out
        text = path.read_bytes()[span.start : span.end]
        assert not text.endswith((b"\n", b"\r"))
        assert span.raw == text.decode()


def test_no_limit(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(HEADER + LONG + b",a@x.com\n")
    assert long_records(path, ",", 0) == []


def test_the_delimiter_ends_a_field(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(b"name;email\n" + b"x" * 30 + b";" + b"y" * 30 + b"\n")
    assert long_records(path, ";", 40) == []
    assert [s.field for s in long_records(path, ",", 40)] == [61]


def test_raw_text_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(HEADER + b"Ann," + b"z" * 5000 + b"\n")
    (span,) = long_records(path, ",", 100)
    assert span.raw == "Ann," + "z" * (RAW_PREFIX - 4) + "…"


@pytest.mark.parametrize("end", [b"\n", b"\r\n"])
def test_big_chunks_look_only_at_their_edges(tmp_path: Path, end: bytes) -> None:
    """With the limit over the chunk size only stretches crossing chunks can be long: found
    from each chunk's first and last bound, the same as from every bound."""
    rows = [b"N%d,user%d@x.com" % (i, i) for i in range(40_000)]
    rows[5_000] = b'"' + (b"q" * 99 + end) * 4_000 + b'",long@x.com'  # 400 kB over lines
    rows[20_000] = b"N," + b"e" * 450_000 + b"@x.com"  # one line
    rows[30_000] = b"N," + b"s" * 200_000 + b"@x.com"  # under the limit
    path = tmp_path / "list.csv"
    path.write_bytes(HEADER + end.join(rows) + end)
    edges = long_records(path, ",", 300_000, chunk=1 << 18)
    every = long_records(path, ",", 300_000, chunk=1 << 20)
    assert edges == every
    assert [(s.line, s.lines) for s in edges] == [(5_002, 4_001), (24_002, 1)]


@pytest.mark.parametrize("buffer", [1, 2, 3, 7, 4096])
def test_the_file_read_without_them_and_its_lines(tmp_path: Path, buffer: int) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(HEADER + QUOTED + b",a@x.com\nBob,b@x.com\n" + LONG + b",c@x.com\nD,d\n")
    spans = long_records(path, ",", 40)
    expected = HEADER + b'""\nBob,b@x.com\n""\nD,d\n'
    with io.BufferedReader(Without(path, spans), buffer) as stream:
        assert b"".join(iter(lambda: stream.read(buffer), b"")) == expected
    assert size_without(path, spans) == len(expected)
    aside = SetAside(spans)
    assert [aside.line_in_file(n) for n in range(1, 6)] == [1, 2, 4, 5, 6]
    assert [s.line for n in range(1, 6) if (s := aside.span_at(n))] == [2, 5]


def test_a_span_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(HEADER + b"Ann,a@x.com\nBob," + LONG)
    spans = long_records(path, ",", 40)
    with io.BufferedReader(Without(path, spans)) as stream:
        assert stream.read() == HEADER + b'Ann,a@x.com\n""'
