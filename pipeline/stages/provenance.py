"""Where a run's answers came from: when it ran, which listclean, which input bytes, which
settings. Written into ``summary.json`` (``run``) and into the Parquet output's key-value
metadata (the ``listclean`` key), so a file found months later says how it was made.

The input's SHA-256 is computed in a thread while the stages read the list (hashlib releases
the GIL on large buffers), so it costs a second read of the input's bytes but little time. What
the hash covers depends on the input, and the summary says so (``input_hash_covers``):

- a file: its bytes as stored (a compressed or zipped list: the archive's bytes);
- standard input or a stream: the bytes read from it (the run's private copy of them);
- a folder or glob of Parquet shards: ``sha256sum``'s listing of the shards in name order
  (``<hash>  <name>`` lines), hashed again;
- an object-store URL: the object's bytes as read from the store, a second download; for a
  prefix of shards, the listing of each object's hash as for a local folder.

Settings are recorded as the run used them, with any credentials that a URL setting carries
(``user:password@``, a query string) removed; the API key is never a setting and never
recorded.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit, urlunsplit

from pipeline.core.clock import now
from pipeline.core.config import Config, StorageConfig
from pipeline.core.lists import shipped_versions
from pipeline.stages.objects import (
    filesystem,
    is_object_url,
    is_remote_dataset,
    local_path,
    remote_shards,
)
from pipeline.stages.read.parquet_source import is_dataset, shards
from pipeline.version import __version__

if TYPE_CHECKING:
    from pipeline.stages.job import CleanJob

_CHUNK: Final = 1 << 20
STDIN: Final = "-"


@dataclass(frozen=True)
class InputDigest:
    sha256: str  # "" when the input could not be read a second time
    covers: str  # what the hash is of, in words


@dataclass(frozen=True)
class RunFacts:
    """The run's provenance, for ``summary.json``'s ``run`` and the Parquet metadata."""

    started_at: str
    finished_at: str
    version: str
    input_sha256: str
    input_hash_covers: str
    settings: dict[str, Any]
    # the shipped lists the typo rules decide with, and their versions ({file: version})
    lists: dict[str, str] = dataclasses.field(default_factory=dict)
    # the list's calibration of SCORE the run applied (pipeline.core.calibration); None: none
    calibration: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class RunRecord:
    """The run's provenance as it goes: started when made, its input hashed alongside the
    stages (:meth:`close` stops the hash of a run that ends early)."""

    def __init__(
        self,
        job: CleanJob,
        config: Config,
        elsewhere: Digest | None = None,
        calibration: dict[str, Any] | None = None,
    ) -> None:
        """*elsewhere*: where the input is hashed instead of this process (a Dask run has a
        worker read it); the hash is the same. *calibration*: the one the run applies."""
        self.started_at = now()
        self._calibration = calibration
        self._settings = recorded_settings(config)
        given = job.name or str(job.input)
        self._hash = InputHash(job.input, given, config.storage, elsewhere)

    def facts(self) -> RunFacts:
        """The provenance as of now (waits for the input's hash)."""
        digest = self._hash.result()
        return RunFacts(
            self.started_at,
            now(),
            __version__,
            digest.sha256,
            digest.covers,
            self._settings,
            dict(shipped_versions()),
            self._calibration,
        )

    def close(self) -> None:
        self._hash.cancel()

    def __enter__(self) -> RunRecord:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Cancelled(Exception):
    """The run ended before the hash did."""


Digest = Callable[[Path | str, str, StorageConfig], InputDigest]


def input_digest(source: Path | str, given: str, storage: StorageConfig) -> InputDigest:
    """The input's digest, computed by the caller (a Dask worker: see :class:`RunRecord`)."""
    return _Hasher(threading.Event()).digest(source, given, storage)


class InputHash:
    """The input's digest, computed in a daemon thread from the moment the object is made
    (so a run that fails early neither waits for it nor is kept alive by it), here or by
    *elsewhere*."""

    def __init__(
        self,
        source: Path | str,
        given: str,
        storage: StorageConfig,
        elsewhere: Digest | None = None,
    ) -> None:
        self._stop = threading.Event()
        self._digest = InputDigest("", "not computed: the run ended first")
        self._elsewhere = elsewhere
        self._thread = threading.Thread(
            target=self._run, args=(source, given, storage), name="listclean-hash", daemon=True
        )
        self._thread.start()

    def _run(self, source: Path | str, given: str, storage: StorageConfig) -> None:
        try:
            if self._elsewhere is not None:
                self._digest = self._elsewhere(source, given, storage)
            else:
                self._digest = _Hasher(self._stop).digest(source, given, storage)
        except Cancelled:
            pass
        except (OSError, ValueError) as exc:  # the input went away, or the store failed
            self._digest = InputDigest("", f"not computed: {getattr(exc, 'strerror', '') or exc}")

    def result(self) -> InputDigest:
        self._thread.join()
        return self._digest

    def cancel(self) -> None:
        self._stop.set()


class _Hasher:
    def __init__(self, stop: threading.Event) -> None:
        self._stop = stop

    def digest(self, source: Path | str, given: str, storage: StorageConfig) -> InputDigest:
        """The digest of the input read from *source*; *given* is how the user named it."""
        if isinstance(source, str) and is_object_url(source):
            return self._object(source, storage)
        if is_dataset(str(source)):
            files = shards(str(source))
            listing = self._listing((p.name, functools.partial(self._file, p)) for p in files)
            return InputDigest(listing, f"sha256sum's listing of the {len(files)} Parquet files")
        digest = self._file(Path(source))
        if given == STDIN or not _is_file(local_path(given), Path(source)):
            what = "standard input" if given == STDIN else given
            return InputDigest(digest, f"the bytes read from {what}")
        return InputDigest(digest, "the bytes of the input file")

    def _object(self, url: str, storage: StorageConfig) -> InputDigest:
        fs = filesystem(url, storage)
        if not is_remote_dataset(url, fs):
            with fs.open(url, "rb") as handle:
                digest = self._stream(handle)
            return InputDigest(digest, "the object's bytes as read from the store")
        found = remote_shards(url, fs)

        def one(shard: str) -> Callable[[], str]:
            def read() -> str:
                with fs.open(shard, "rb") as handle:
                    return self._stream(handle)

            return read

        listing = self._listing((shard.rsplit("/", 1)[-1], one(shard)) for shard in found)
        return InputDigest(listing, f"sha256sum's listing of the {len(found)} Parquet objects")

    @staticmethod
    def _listing(files: Iterable[tuple[str, Callable[[], str]]]) -> str:
        lines = "".join(f"{digest()}  {name}\n" for name, digest in files)
        return hashlib.sha256(lines.encode()).hexdigest()

    def _file(self, path: Path) -> str:
        with path.open("rb") as handle:
            return self._stream(handle)

    def _stream(self, handle: IO[bytes]) -> str:
        digest = hashlib.sha256()
        while chunk := handle.read(_CHUNK):
            if self._stop.is_set():
                raise Cancelled
            digest.update(chunk)
        return digest.hexdigest()


def _is_file(given: str, source: Path) -> bool:
    """*given* names *source* itself (not a stream the run copied to *source*)."""
    try:
        return Path(given).is_file() and os.path.samefile(given, source)
    except OSError:
        return False


def recorded_settings(config: Config) -> dict[str, Any]:
    """*config* as a plain mapping, URL credentials removed."""
    return {
        section.name: {k: _without_secrets(v) for k, v in dataclasses.asdict(value).items()}
        for section in dataclasses.fields(config)
        if dataclasses.is_dataclass(value := getattr(config, section.name))
        and not isinstance(value, type)
    }


def _without_secrets(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return [_without_secrets(v) for v in value]
    if not isinstance(value, str) or "://" not in value:
        return value
    parts = urlsplit(value)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
