"""What the bounce wing's tests share: sample files, times and small builders."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from pipeline.core.bounces.types import BounceEvent, BounceKind
from tests.conftest import REPO

SAMPLE_CSV = REPO / "sample_data" / "bounces.csv"
SAMPLE_MBOX = REPO / "sample_data" / "bounces.mbox"
HARD, SOFT, DELIVERED = BounceKind.HARD, BounceKind.SOFT, BounceKind.DELIVERED
DAY = 86400.0
# The sample reports are dated 2026 and meant to be judged on this day.
SAMPLE_NOW = dt.datetime(2026, 11, 20, tzinfo=dt.UTC).timestamp()
MTIME = 1_790_000_000.0


def utc(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


def write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    os.utime(path, (MTIME, MTIME))
    return path


def event(key: str, kind: BounceKind, at: float, status: str = "", reason: str = "") -> BounceEvent:
    return BounceEvent(key, key, key.rpartition("@")[2], kind, status, at, reason, "test")
