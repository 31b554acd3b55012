"""Records counted without parsing (the check on the fast reader's row count), against a plain
byte-by-byte count, over chunks cut anywhere; and a file's lines, and the text of a few, as
Python's own line splitting gives them."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest

from pipeline.core.files import delimited
from pipeline.core.files.delimited import count_records, count_records_in, lines_of


def counted_byte_by_byte(data: bytes) -> int | None:
    """Line ends (LF, CRLF, lone CR) outside double quotes, plus an unended last line; None
    when the quotes do not pair up."""
    ends, inside, i = 0, False, 0
    while i < len(data):
        byte = data[i : i + 1]
        if byte == b'"':
            inside = not inside
        elif byte in (b"\n", b"\r") and not inside:
            ends += 1
            if data[i : i + 2] == b"\r\n":
                i += 1
        i += 1
    if inside:
        return None
    return ends + (bool(data) and data[-1:] not in (b"\n", b"\r"))


def texts(seed: int, count: int) -> list[bytes]:
    """Short texts of the bytes that matter: quotes, LF, CR, CRLF, delimiters, letters."""
    pieces = [b'"', b"\n", b"\r", b"\r\n", b",", b"a", b"bc", b'""', b"\r\r\n"]
    rng = random.Random(seed)
    return [b"".join(rng.choices(pieces, k=rng.randint(0, 40))) for _ in range(count)]


def cut(data: bytes, rng: random.Random) -> list[bytes]:
    bounds = sorted(rng.sample(range(len(data) + 1), min(len(data) + 1, rng.randint(0, 4))))
    return [data[a:b] for a, b in itertools.pairwise([0, *bounds, len(data)])]


def test_records_are_counted_as_byte_by_byte() -> None:
    rng = random.Random(7)
    for data in texts(seed=3, count=3000):
        expected = counted_byte_by_byte(data)
        assert count_records(data) == expected, data
        assert count_records_in(cut(data, rng)) == expected, data


def test_a_crlf_split_between_chunks_inside_quotes_is_one_line_end() -> None:
    data = b'a,"x\r\ny"\r\nb,c\r\n'
    for at in range(len(data) + 1):
        assert count_records_in([data[:at], data[at:]]) == 2


def test_a_quoted_field_spanning_chunks_hides_its_line_ends() -> None:
    data = b'email,note\na@b.com,"one\ntwo\rthree\r\nfour"\nc@d.com,x\n'
    assert count_records_in([data[i : i + 5] for i in range(0, len(data), 5)]) == 3


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 24])
def test_lines_and_their_text_over_chunks_cut_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(delimited, "_LINES_CHUNK", chunk)
    rng = random.Random(chunk)
    for number in range(40):
        pieces = ["a,b", "", " ", "é,x", "Total: 3,"]
        lines = [rng.choice(pieces) for _ in range(rng.randint(0, 12))]
        end = rng.choice(["\n", "\r\n"])
        text = end.join(lines) + (end if lines and rng.random() < 0.7 else "")
        path = tmp_path / f"list{number}.csv"
        path.write_bytes(text.encode())
        expected = [line.removesuffix("\r") for line in text.split("\n")]
        if text.endswith("\n") or not text:
            expected.pop()
        wanted = {n for n in range(1, len(expected) + 2) if rng.random() < 0.4}
        counted = lines_of(path, wanted)
        assert counted is not None
        assert counted[0] == len(expected)
        assert counted[1] == {n: expected[n - 1] for n in wanted if n <= len(expected)}


@pytest.mark.parametrize("text", [b"a\rb\n", b"a\nb\r", b"a\r\r\nb\n"])
def test_a_cr_outside_a_crlf_has_no_lines(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "list.csv"
    path.write_bytes(text)
    assert lines_of(path, {1}) is None
