"""The input, pinned while a run reads it.

A run reads its list more than once (sniffing, the scan, the second pass, the hash recorded in
``summary.json``), so a file rewritten in place while it runs would pair one version's rows
with another's answers, and a truncated one would fail deep in a reader. The pin notes what
identifies the input's bytes when reading starts and compares it after the last read and again
before the commit point; any difference, or a read that fails while the input differs, is
exit 2 "the input changed while it was read", and nothing is published.

What identifies the bytes: for a local file its device and inode (the same file, not another
one renamed over it), size, modification time and status-change time (which no program can set
back, so a rewrite that restores the modification time still shows); for a folder or glob of
Parquet shards the same of every shard, and which shards there are; for an object-store object
its ETag, version and size, asked of the store afresh.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from pipeline.core.config import StorageConfig
from pipeline.core.errors import InputError
from pipeline.stages.objects import filesystem, is_object_url, is_remote_dataset, remote_shards
from pipeline.stages.read.parquet_source import is_dataset, shards

Stamp = tuple[tuple[object, ...], ...]


def input_changed(name: str, what: str) -> InputError:
    """Exit 2: the input *name* ("": the run's) changed while it was read, as *what* shows."""
    named = f" {name}" if name else ""
    return InputError(
        f"The input{named} changed while it was read ({what}), so its rows could be paired "
        "with answers for other rows; nothing was written. "
        "Run again once whatever writes the file has finished, or clean a copy of it."
    )


class InputPin:
    """What the input was when the run began to read it; :meth:`check` compares with now."""

    def __init__(self, source: Path | str, name: str, storage: StorageConfig) -> None:
        self._source = source
        self._name = name
        self._storage = storage
        self._first = self._stamp()

    def check(self) -> None:
        """Exit 2 unless the input is as it was when pinned."""
        now = self._stamp()
        if now != self._first:
            raise input_changed(self._name, _what_changed(self._first, now))

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """A pass over the input: checked at its end, and a failure inside it blamed on a change
        of the input when the input did change (a truncated file fails in the reader)."""
        try:
            yield
        except Exception as exc:
            try:
                self.check()
            except InputError as changed:
                raise changed from exc
            except Exception:  # the input cannot be looked at now: the first failure says more
                pass
            raise
        self.check()

    def _stamp(self) -> Stamp:
        source = self._source
        if isinstance(source, str) and is_object_url(source):
            return _objects(source, self._storage)
        if is_dataset(str(source)):
            return tuple((p.name, *_file(p)) for p in shards(str(source)))
        return ((str(source), *_file(Path(source))),)


def _file(path: Path) -> tuple[object, ...]:
    try:
        info = os.stat(path)
    except OSError as exc:
        return ("missing", exc.strerror)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _objects(url: str, storage: StorageConfig) -> Stamp:
    try:
        return _object_stamps(url, storage)
    except FileNotFoundError:
        return ((url, "missing"),)
    except InputError:
        raise
    except Exception as exc:  # botocore's errors have no common base with OSError
        raise InputError(f"Cannot check the input {url} in its store: {exc}.") from exc


def _object_stamps(url: str, storage: StorageConfig) -> Stamp:
    fs = filesystem(url, storage)
    fs.invalidate_cache()  # s3fs keeps listings: the store itself must answer
    found = remote_shards(url, fs) if is_remote_dataset(url, fs) else [url]
    stamps: list[tuple[object, ...]] = []
    for key in found:
        try:
            info = fs.info(key)
        except FileNotFoundError:
            stamps.append((key, "missing"))
            continue
        stamps.append((key, info.get("ETag"), info.get("VersionId"), info.get("size")))
    return tuple(stamps)


def _what_changed(before: Stamp, after: Stamp) -> str:
    """In words, for the message: what differs first."""
    if len(before) != len(after) or [s[0] for s in before] != [s[0] for s in after]:
        return "its files are not the same ones"
    for old, new in zip(before, after, strict=True):
        if old == new:
            continue
        if "missing" in new:
            return f"{new[0]} is gone"
        if len(old) == 6 and old[:3] != new[:3]:
            return "it was replaced by another file"
        if len(old) == 6 and old[3] != new[3]:
            return f"its size went from {old[3]:,} to {new[3]:,} bytes"
        return "it was written to"
    return "it was written to"
