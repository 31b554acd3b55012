"""A list's identity across runs, and a digest of the settings a run used.

A nightly job cleans the export of one list under a new file name each night
(``hubspot-crm-exports-all-contacts-2025-11-26.csv``, then ``...-2025-11-27.csv``). Its runs
belong together, so by default a list is named after its input's file name with every date and
time part taken out: the folders, the format and compression suffixes, then dates (2025-11-26,
2025_11_26, 20251126, 26.11.2025, 11-26-2025, 2025-11), times (09-30-00, 093000, 09:30),
ISO timestamps (2025-11-26T09:30:00Z) and Unix timestamps (10 or 13 digits), lower-cased, the
separators they leave folded. ``--list-name`` (``[history] list_name``) names it outright.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any, Final

# Suffixes of the lists listclean reads, as many as a name stacks (list.csv.gz).
_SUFFIXES: Final = re.compile(
    r"(\.(csv|tsv|txt|tab|parquet|pq|xlsx|xls|zip|gz|gzip|bz2|zst|zstd|xz))+$", re.IGNORECASE
)
_SEP: Final = r"[-_.\s]"
_Y: Final = r"(?:19|20)\d\d"
_MD: Final = r"(?:0[1-9]|1[0-2])"
_D: Final = r"(?:0[1-9]|[12]\d|3[01])"
_HMS: Final = r"(?:[01]\d|2[0-3])[-_:.h]?[0-5]\d(?:[-_:.m]?[0-5]\d(?:\.\d+)?s?)?"
# Longest first: a timestamp before the date inside it, a date before its year-month.
_PATTERNS: Final = (
    rf"{_Y}-?{_MD}-?{_D}[tT_ ]?{_HMS}(?:[zZ]|[+-]\d\d:?\d\d)?",  # ISO date-time
    r"1\d{12}|1\d{9}",  # Unix time, milliseconds or seconds (2001 to 2286)
    rf"{_Y}{_SEP}?{_MD}{_SEP}?{_D}",  # 2025-11-26, 2025_11_26, 20251126
    rf"{_D}{_SEP}{_MD}{_SEP}{_Y}",  # 26.11.2025
    rf"{_MD}{_SEP}{_D}{_SEP}{_Y}",  # 11-26-2025
    rf"{_Y}{_SEP}{_MD}",  # 2025-11
    r"(?:[01]\d|2[0-3])[-_:h][0-5]\d(?:[-_:m][0-5]\d)?",  # 09-30-00, 09:30
    r"(?:[01]\d|2[0-3])[0-5]\d[0-5]\d",  # 093000 (a six-digit time)
)
# A date or time stands alone, between separators: not inside a longer number or a word
# (orders123456 keeps its digits).
_DATED: Final = re.compile(rf"(?<![0-9A-Za-z])(?:{'|'.join(_PATTERNS)})(?![0-9A-Za-z])")
_RUNS: Final = re.compile(r"([-_.\s])[-_.\s]+")
_FALLBACK: Final = "list"


def list_name_of(given: str) -> str:
    """The default list name of an input named *given* (a path, a URL, ``-``): see the module's
    doc. Standard input is ``stdin``; a name that is nothing but dates keeps its stem."""
    if given in ("", "-"):
        return "stdin"
    last = given.rstrip("/").replace("\\", "/").rsplit("/", 1)[-1]
    stem = _SUFFIXES.sub("", last) or last
    # Globs of shards (part-*.parquet) name their folder instead.
    if any(ch in stem for ch in "*?[") or re.fullmatch(r"part-\d+", stem):
        parent = given.rstrip("/").replace("\\", "/").rsplit("/", 2)
        stem = _SUFFIXES.sub("", parent[-2]) if len(parent) > 1 else stem
    undated = _DATED.sub("", stem)
    name = _RUNS.sub(r"\1", undated).strip("-_. ").lower()
    return name or stem.strip().lower() or _FALLBACK


# Settings that say where things are or how a run goes, not what it decides: a sandbox's
# servers listen on a new port each run, and a run's memory changes no answer.
_WHERE: Final = frozenset({"run", "storage", "history"})
_WHERE_KEYS: Final = frozenset({("dns", "nameservers"), ("cache", "dir"), ("verify", "port")})


def settings_digest(settings: Mapping[str, Any]) -> str:
    """A short digest of *settings* (as a run records them, section by section), so runs
    decided under different settings can be told apart: the first 16 hex digits of the
    SHA-256 of their canonical JSON, leaving out where things are (the resolvers, the caches'
    folder, the SMTP port, the history itself) and how the run goes (``[run]``)."""
    kept = {
        section: {k: v for k, v in values.items() if (section, k) not in _WHERE_KEYS}
        if isinstance(values, Mapping)
        else values
        for section, values in settings.items()
        if section not in _WHERE
    }
    text = json.dumps(kept, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
