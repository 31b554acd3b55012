"""Which 8-bit encoding a text file that is not UTF-8 is in: the code pages Excel writes.

Excel saves "CSV" in the machine's ANSI code page: Windows-1252 in the Americas and Western
Europe, 1250 in Central Europe, 1251 for Cyrillic, 1253 Greek, 1254 Turkish, 1255 Hebrew, 1256
Arabic, 1257 Baltic, 1258 Vietnamese, 874 Thai, 932 Japanese (Shift JIS), 936 Simplified
Chinese (GBK), 949 Korean, 950 Traditional Chinese (Big5); Excel for Mac, Mac Roman; and
ISO 8859-1, which many other tools write (Microsoft: "Code Page Identifiers"; "Import or export
text (.txt or .csv) files"). UTF-8 and
UTF-16 are told by their own rules first (:mod:`pipeline.core.files.delimited`): valid UTF-8, and so
ASCII, is never in doubt.

For the rest, charset-normalizer (a maintained detector) decodes the lines that hold non-ASCII
bytes with each candidate and measures the mess (unlikely symbols, mixed scripts) and how well
the letters fit a language. We add what a contact list shows best: a wrong code page spells
words with letters no one language has together (Turkish ``Şükrü`` read as Windows-1252 is
``Þükrü``: a thorn, which only Icelandic spells, and a German umlaut; Icelandic is left out, so
a thorn or an eth counts as a misspelling), or scatters its letters over the alphabets of
several languages; and a small prior for Windows-1252, by far the most common. Candidates that
decode to the same text (German umlauts are the same in 1250, 1252 and 1257) are one answer.
When the two best answers spell the non-ASCII bytes differently and their scores are closer
than ``input.encoding_margin``, the file is refused as unsure
(:class:`~pipeline.core.errors.InputError`): the message lists the candidates and how each
spells a word, and ``--encoding`` says which it is. Reading on with a guess would write
mojibake into every output.
"""

from __future__ import annotations

import codecs
import itertools
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from pipeline.core.errors import InputError, UsageError

# In order of preference when two spell a text alike (Python's codec names).
EXCEL_ENCODINGS: Final = (
    "cp1252", "cp1250", "cp1251", "cp1253", "cp1254", "cp1255", "cp1256", "cp1257", "cp1258",
    "cp874", "cp932", "cp936", "cp949", "cp950", "mac_roman", "latin_1",
)  # fmt: skip
# Windows-1252 is the ANSI code page of most Excel installations.
_PRIOR: Final = {"cp1252": 0.1}
# charset-normalizer's names for the same code pages.
_ALIASES: Final = {
    "gbk": "cp936", "gb2312": "cp936", "shift_jis": "cp932", "big5": "cp950",
    "iso8859_1": "latin_1", "latin-1": "latin_1",
}  # fmt: skip
DEFAULT_MARGIN: Final = 0.05
SAMPLE_BYTES: Final = 1 << 18  # of lines holding non-ASCII bytes: enough to judge, fast

# The non-ASCII letters of the languages written in Latin script with these code pages. A word
# whose non-ASCII letters no one of them has together is misspelled by the decoding.
_LATIN_ALPHABETS: Final = tuple(
    frozenset(letters)
    for letters in (
        "äöüß",  # German
        "àâæçéèêëîïôœùûüÿ",  # French
        "áéíñóúü",  # Spanish
        "áâãàçéêíóôõú",  # Portuguese
        "àèéìíîòóùú",  # Italian
        "áéëíïóöúü",  # Dutch
        "åæéøó",  # Danish, Norwegian
        "åäöé",  # Swedish, Finnish
        "ąćęłńóśźż",  # Polish
        "áčďéěíňóřšťúůýž",  # Czech
        "áäčďéíĺľňóôŕšťúýž",  # Slovak
        "áéíóöőúüű",  # Hungarian
        "ăâîșțşţ",  # Romanian
        "čćđšž",  # Croatian, Slovenian, Bosnian, Serbian (Latin)
        "âçğıîöşüû",  # Turkish
        "ąčęėįšųūž",  # Lithuanian
        "āčēģīķļņšūž",  # Latvian
        "äõöüšž",  # Estonian
        "àáâãèéêìíòóôõùúýăđĩũơưạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ",  # Vietnamese
        "ëç",  # Albanian
    )
)
_WORD: Final = re.compile(r"\w+")
_NON_ASCII: Final = re.compile(rb"[\x80-\xff]")


@dataclass(frozen=True)
class Decoding:
    """How a text input's encoding is chosen: *encoding* names it (``--encoding``; "" detects
    it), *margin* is the least score lead of the best candidate over the next (see the
    module's doc)."""

    encoding: str = ""
    margin: float = DEFAULT_MARGIN


@dataclass(frozen=True)
class Candidate:
    encoding: str
    text: str  # the sample, decoded
    score: float


def codec_name(name: str) -> str:
    """*name* as Python's codec name (``Windows-1251`` -> ``cp1251``), or UsageError."""
    try:
        return codecs.lookup(name.strip()).name
    except LookupError:
        raise UsageError(
            f"--encoding {name!r} is not an encoding Python knows. Use a name such as cp1252, "
            "cp1251, cp932 (Shift JIS), cp936 (GBK), utf-8 or utf-16."
        ) from None


def non_ascii_lines(chunks: Iterable[bytes], limit: int = SAMPLE_BYTES) -> bytes:
    """The first lines of *chunks* that hold a non-ASCII byte, up to about *limit* bytes (a
    line cut by a chunk's end counts as two)."""
    kept: list[bytes] = []
    size = 0
    for chunk in chunks:
        at = 0
        while (found := _NON_ASCII.search(chunk, at)) is not None:
            start = chunk.rfind(b"\n", 0, found.start()) + 1
            end = chunk.find(b"\n", found.start())
            at = len(chunk) if end < 0 else end + 1
            kept.append(chunk[start:at])
            size += at - start
            if size >= limit:
                return b"".join(kept)
    return b"".join(kept)


def detect(sample: bytes, margin: float, where: str) -> str:
    """The Excel code page *sample* (non-ASCII lines of a file that is not UTF-8) is in, or
    InputError when unsure (see the module's doc)."""
    ranked = candidates(sample)
    if not ranked:
        raise InputError(
            f"{where} is not UTF-8, and no code page Excel writes decodes it. Say which "
            "encoding it is with --encoding NAME, or save it as UTF-8."
        )
    best = ranked[0]
    if len(ranked) > 1 and best.score - ranked[1].score < margin:
        raise InputError(_unsure(where, ranked[:3]))
    return best.encoding


def candidates(sample: bytes) -> list[Candidate]:
    """Each distinct decoding of *sample* by the Excel code pages, best first."""
    from charset_normalizer import from_bytes  # here: the settings import this module

    found: dict[str, Candidate] = {}
    for match in from_bytes(sample, cp_isolation=list(EXCEL_ENCODINGS), threshold=0.5):
        names = {_ALIASES.get(e, e) for e in [match.encoding, *match.could_be_from_charset]}
        encoding = next((e for e in EXCEL_ENCODINGS if e in names), None)
        if encoding is None:
            continue
        text = str(match)
        fit = consistency(text) + coverage(text)
        score = match.coherence - match.chaos + fit + _PRIOR.get(encoding, 0.0)
        if text not in found or found[text].score < score:
            found[text] = Candidate(encoding, text, score)
    order = {e: i for i, e in enumerate(EXCEL_ENCODINGS)}
    return sorted(found.values(), key=lambda c: (-c.score, order[c.encoding]))


def consistency(text: str) -> float:
    """The share of words with non-ASCII letters that one language could spell: their Latin
    letters all in one alphabet of :data:`_LATIN_ALPHABETS`, any other letters all of one
    script. 1.0 when no word has a non-ASCII letter."""
    judged = fitting = 0
    for word in _WORD.findall(text):
        letters = {c for c in word.lower() if ord(c) > 127 and c.isalpha()}
        if letters:
            judged += 1
            latin = any(c.isascii() and c.isalpha() for c in word)
            fitting += _spellable(letters, latin) and not _mixed_case(word)
    return fitting / judged if judged else 1.0


def coverage(text: str) -> float:
    """The largest share of the non-ASCII letters of *text* that one language has (one Latin
    alphabet, or one other script): a list is mostly of one country, and a wrong code page
    scatters its letters over several. 1.0 when it has none."""
    letters = Counter(c for c in text.lower() if ord(c) > 127 and c.isalpha())
    total = sum(letters.values())
    if not total:
        return 1.0
    scripts: Counter[str] = Counter()
    for char, n in letters.items():
        scripts[_script(char)] += n
    latin = max(sum(n for c, n in letters.items() if c in a) for a in _LATIN_ALPHABETS)
    other = max((n for script, n in scripts.items() if script != "LATIN"), default=0)
    return max(latin, other) / total


def _mixed_case(word: str) -> bool:
    """A capital after a small letter: names are rarely so spelled (McDonald is), the double
    bytes of Chinese or Japanese read one byte a letter often are."""
    return any(a.islower() and b.isupper() for a, b in itertools.pairwise(word))


def _spellable(letters: set[str], latin: bool) -> bool:
    """Whether one language spells a word with these non-ASCII *letters* (and, when *latin*,
    ASCII letters too)."""
    scripts = {_script(c) for c in letters} | ({"LATIN"} if latin else set())
    if scripts != {"LATIN"}:
        return len(scripts) == 1
    return any(letters <= alphabet for alphabet in _LATIN_ALPHABETS)


def _script(char: str) -> str:
    """The first word of the character's Unicode name (LATIN, CYRILLIC, CJK, HIRAGANA...),
    with the Japanese and Chinese ones counted as one script."""
    name = unicodedata.name(char, "UNKNOWN").split()[0]
    return "CJK" if name in ("HIRAGANA", "KATAKANA", "HALFWIDTH", "FULLWIDTH") else name


def _unsure(where: str, ranked: Sequence[Candidate]) -> str:
    spelled = "; ".join(f"{c.encoding}: {_example(c, ranked)!r}" for c in ranked)
    names = " or ".join(c.encoding for c in ranked)
    return (
        f"Cannot tell the encoding of {where}: it is not UTF-8, and {names} spell its "
        f"non-ASCII letters differently, with no clear winner ({spelled}). Say which it is "
        "with --encoding NAME (e.g. --encoding " + ranked[0].encoding + "), or save the file "
        "as UTF-8."
    )


def _example(candidate: Candidate, ranked: Sequence[Candidate]) -> str:
    """The first word that *candidate* spells differently from the others."""
    others: list[list[str]] = [_WORD.findall(c.text) for c in ranked if c is not candidate]
    words: list[str] = _WORD.findall(candidate.text)
    for index, word in enumerate(words):
        if not word.isascii() and any(index >= len(o) or o[index] != word for o in others):
            return word
    return candidate.text.strip()[:30]
