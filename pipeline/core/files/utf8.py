"""A text file as UTF-8: whether it is (the first byte that is not), and a UTF-8 copy of one
that is in another encoding.

A UTF-8 file (BOM or not) is read as it is; UTF-16, text in the encoding ``--encoding`` names,
or text that is not valid UTF-8 (then in the Excel code page :mod:`pipeline.core.files.encodings`
detects, with a warning naming the first bad byte; refused when unsure) is transcoded once into
a UTF-8 copy in the run's spill folder (:func:`as_utf8`).
"""

from __future__ import annotations

import codecs
import contextlib
import struct
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import BinaryIO, Final

import pyarrow as pa

from pipeline.core.errors import InputError
from pipeline.core.files.delimited import utf16_encoding
from pipeline.core.files.encodings import Decoding, detect, non_ascii_lines

CHUNK: Final = 1 << 24  # bytes read at a time
SNIFF: Final = 1 << 16  # bytes a file's head is judged on
BOM: Final = b"\xef\xbb\xbf"


def as_utf8(
    path: Path, spill: Path, label: str, decoding: Decoding
) -> tuple[Path, str, tuple[str, ...]]:
    """*path* if it is UTF-8, else a UTF-8 copy of it in *spill*; the encoding; warnings."""
    if decoding.encoding:
        if decoding.encoding in ("utf-8", "utf-8-sig") and first_bad_utf8(path) is None:
            return path, "utf-8", ()
        return _transcode(path, spill, decoding.encoding, label), decoding.encoding, ()
    with path.open("rb") as handle:
        head = handle.read(SNIFF)
    utf16 = utf16_encoding(head[: len(head) - len(head) % 2])
    if utf16 is not None:
        return _transcode(path, spill, utf16), utf16, ()
    bad = first_bad_utf8(path)
    if bad is None:
        return path, "utf-8", ()
    encoding = detect(non_ascii_lines(chunks(path)), decoding.margin, label)
    warning = not_utf8(label, bad, encoding)
    return _transcode(path, spill, encoding, label), encoding, (warning,)


def not_utf8(label: str, bad: int, encoding: str) -> str:
    """The warning for a list read in the code page *encoding* it was found to be in."""
    return (
        f"{label} is not valid UTF-8 (first bad byte at offset {bad}); read it as {encoding}, "
        "the code page it is written in. Save the file as UTF-8, or say --encoding "
        f"{encoding}, to silence this warning."
    )


def not_valid(label: str, encoding: str, byte: int, offset: int) -> InputError:
    """The error for a byte at *offset* that is not a character of *encoding*."""
    return InputError(
        f"{label} is not valid {encoding}: the byte 0x{byte:02x} at offset {offset} is not a "
        "character of it. Name the file's encoding with --encoding NAME, or save it as UTF-8."
    )


def first_bad_utf8(path: Path) -> int | None:
    """The offset of the first byte of *path* that is not UTF-8; None when all are."""
    return first_bad_utf8_in(chunks(path))


def first_bad_utf8_in(chunks: Iterable[bytes]) -> int | None:
    """The offset of the first byte of consecutive *chunks* that is not UTF-8; None when all
    are. A chunk of ASCII is passed over (``bytes.isascii``); any other is validated by Arrow,
    a quarter of the time decoding takes, and only one that fails is decoded, to find the byte.
    A character cut at a chunk's end is carried into the next."""
    offset, carried = 0, b""
    for chunk in chunks:
        data = carried + chunk if carried else chunk
        carried = b""
        if data.isascii():
            offset += len(data)
            continue
        whole = _whole_characters(data)
        view = memoryview(data)[:whole]
        if not _valid_utf8(view) and (bad := first_bad(bytes(view))) is not None:
            return offset + bad
        offset, carried = offset + whole, data[whole:]
    bad = first_bad(carried) if carried else None
    return None if bad is None else offset + bad


def _whole_characters(data: bytes) -> int:
    """The length of *data* less a character its end cuts (a lead byte missing some of its
    continuation bytes); bytes that are no character at all are left for validation to find."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # not a continuation byte: where the last character starts
            needs = 1 if byte < 0xC0 else 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) - back if needs > back else len(data)
    return len(data)


def _valid_utf8(data: memoryview) -> bool:
    offsets = pa.py_buffer(struct.pack("<2q", 0, len(data)))
    text = pa.LargeStringArray.from_buffers(1, offsets, pa.py_buffer(data))
    try:
        text.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def first_bad(data: bytes) -> int | None:
    """The offset of the first byte of *data* that is not UTF-8; None when all are."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start
    return None


def _transcode(path: Path, spill: Path, encoding: str, strict: str = "") -> Path:
    """A UTF-8 copy of *path* in *spill*. With *strict* (how messages name the file) a byte
    the encoding cannot decode is an InputError, never a replacement character in the output;
    without, UTF-16's stray bytes are replaced."""
    target = spill / f"{path.name}.utf8.csv"  # one per file: an archive's members are several
    decoder = codecs.getincrementaldecoder(encoding)(errors="strict" if strict else "replace")
    offset = 0
    with target.open("wb") as out:
        try:
            for chunk in chunks(path):
                out.write(decoder.decode(chunk).encode("utf-8"))
                offset += len(chunk)
            out.write(decoder.decode(b"", final=True).encode("utf-8"))
        except UnicodeDecodeError as exc:
            raise not_valid(strict, encoding, exc.object[exc.start], offset + exc.start) from exc
    return target


def chunks(source: Path | BinaryIO) -> Generator[bytes]:
    """The bytes of a file (or of a stream, left open), a chunk at a time, without a leading
    UTF-8 BOM."""
    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(source.open("rb")) if isinstance(source, Path) else source
        first = True
        while chunk := handle.read(CHUNK):
            yield chunk.removeprefix(BOM) if first else chunk
            first = False
