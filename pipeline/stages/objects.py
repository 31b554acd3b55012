"""Object-store locations (``s3://bucket/key``) for a clean run's input and output, via fsspec.

A location is a local path, or a URL whose scheme we support: ``s3://`` through s3fs, with the
usual ``AWS_*`` settings (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``,
``AWS_PROFILE``, ``AWS_DEFAULT_REGION``, read by botocore itself) and ``[storage] endpoint_url``
for S3-compatible stores (MinIO, Ceph, R2, ...). ``file:///abs/path`` names a local path that
every machine of a cluster sees at the same place (a shared mount). Any other scheme is refused
before any work, never taken for a local folder named ``gs:``.

Writing is as atomic as the store allows. S3 has no rename, but one PUT (or one multipart upload,
which S3 makes visible only when it completes) replaces an object whole: readers see the old
object or the new one, never a part. So an output is written locally first (the same atomic
local write as always) and then uploaded object by object: the Parquet output (or each part of
a dataset, then the removal of parts an earlier run left beyond the new count), then the rejects
file, then the summary, last, so a summary newer than the run's start means the outputs are
complete. The Dask engine's workers write in the store itself instead, under a staging prefix
beside each target (``.list.clean.parquet.<pid>.tmp/``, the driver's process id); at the commit
point each staged object is copied to its key inside the store (S3's CopyObject: no byte
through the driver, the copy atomic like a PUT) and the staged keys are deleted, in the same
order, the summary still last.
"""

from __future__ import annotations

import contextlib
import logging
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Final, TypeVar

from pipeline.core.config import StorageConfig
from pipeline.core.errors import InputError, OutputError, UsageError
from pipeline.core.text import invalid_at

if TYPE_CHECKING:  # fsspec is imported when a run names a URL
    from fsspec import AbstractFileSystem

# RFC 3986 §3.1: scheme ":" then "//" for the URLs people paste (s3://, https://, gs://).
_URL: Final = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
OBJECT_SCHEMES: Final = ("s3",)
_GLOB: Final = ("*", "?", "[")
_COPY: Final = 1 << 22  # bytes copied at a time
_CHECK: Final = "Check the URL, the AWS_* settings and [storage] endpoint_url."
_log = logging.getLogger(__name__)


def scheme_of(text: str) -> str | None:
    """The URL scheme of *text*, lower case; None for a path."""
    found = _URL.match(text)
    return found.group(1).lower() if found else None


def is_object_url(text: str) -> bool:
    return scheme_of(text) in OBJECT_SCHEMES


def check_location(text: str, role: str) -> None:
    """Refuse a URL whose scheme we do not read or write, and a name that is not UTF-8 (a
    byte that is not reaches Python as a lone surrogate, which no reader or writer can
    encode): exit 2, nothing written."""
    at = invalid_at(text)
    if at is not None:
        byte = text[at].encode("utf-8", "surrogateescape")[0]
        raise UsageError(
            f"The {role} name {text!r} is not valid UTF-8 (byte 0x{byte:02x}); "
            "rename the file, or give a path that is UTF-8."
        )
    scheme = scheme_of(text)
    if scheme is None or scheme in (*OBJECT_SCHEMES, "file"):
        return
    raise UsageError(
        f"The {role} {text!r} is a URL of a scheme listclean does not support ({scheme}://). "
        "Give a local path, an s3:// URL (S3 or an S3-compatible store, see [storage] "
        "endpoint_url), or copy the list to one of those first."
    )


def local_path(text: str) -> str:
    """``file:///abs/path`` as ``/abs/path``; anything else unchanged."""
    return text[len("file://") :] if scheme_of(text) == "file" else text


def filesystem(url: str, storage: StorageConfig) -> AbstractFileSystem:
    """The fsspec filesystem of *url* (s3fs for ``s3://``), fresh: no cached listings."""
    try:
        import s3fs
    except ImportError as exc:
        raise UsageError(
            f"Reading or writing {url} needs s3fs: pip install 'listclean[s3]'."
        ) from exc
    options: dict[str, Any] = {"skip_instance_cache": True, "use_listings_cache": False}
    if storage.endpoint_url:
        options["client_kwargs"] = {"endpoint_url": storage.endpoint_url}
    fs: AbstractFileSystem = s3fs.S3FileSystem(**options)
    return fs


def is_glob(text: str) -> bool:
    """A pattern of shard names (``exports/part-*.parquet``), as glob and fsspec read it."""
    return any(c in text for c in _GLOB)


def is_remote_dataset(url: str, fs: AbstractFileSystem) -> bool:
    """A prefix (``s3://b/export/``, or one with objects under it) or a glob of shards."""
    return url.endswith("/") or is_glob(url) or _guard_in(url, fs.isdir, url)


def remote_shards(url: str, fs: AbstractFileSystem) -> list[str]:
    """The Parquet objects of a remote dataset, in name order, as URLs."""
    if is_glob(url):
        found = _guard_in(url, fs.glob, url)
    else:
        found = [p for p in _guard_in(url, fs.find, url) if p.endswith(".parquet")]
    shards = sorted(str(p) for p in found)
    if not shards:
        raise InputError(
            f"{url} holds no Parquet object (*.parquet). Pass a CSV or Parquet object, a "
            "prefix of Parquet shards, or a glob of them such as 's3://bucket/export/part-*'."
        )
    return [f"s3://{s}" if scheme_of(s) is None else s for s in shards]


def read_head(url: str, fs: AbstractFileSystem, size: int) -> bytes:
    def head() -> bytes:
        with fs.open(url, "rb") as handle:
            data: bytes = handle.read(size)
            return data

    return _guard_in(url, head)


def download(url: str, fs: AbstractFileSystem, folder: Path) -> Path:
    """*url* copied once, streamed, into *folder* (the run's spill folder)."""
    copy = folder / ("input" + PurePosixPath(url).suffix)

    def fetch() -> None:
        with fs.open(url, "rb") as source, copy.open("wb") as target:
            shutil.copyfileobj(source, target, _COPY)

    _guard_in(url, fetch)
    return copy


def check_output_url(url: str, fs: AbstractFileSystem, dataset: bool) -> None:
    """Before any work: the bucket can be reached, and an object output is not a prefix."""
    bucket = url.split("://", 1)[1].split("/", 1)[0]
    try:
        reachable = fs.exists(bucket)
    except Exception as exc:  # botocore's errors have no common base with OSError
        raise OutputError(f"Cannot reach {url}: {exc}. {_CHECK}") from exc
    if not reachable:
        raise OutputError(f"Cannot write {url}: the bucket {bucket!r} does not exist.")
    if not dataset and fs.isdir(url):
        raise UsageError(
            f"The output {url} is a prefix holding objects; name an object such as "
            f"{url.rstrip('/')}/list.parquet, or ask for a dataset with --output-format dataset."
        )


@dataclass(frozen=True)
class Upload:
    """Where the files of a run's output go once each is complete: written locally and
    uploaded, or (the Dask engine's workers) staged in the store beside their keys."""

    fs: AbstractFileSystem
    targets: dict[Path, str]  # staged local file (or dataset folder) -> its URL

    def name(self, path: Path) -> str:
        return self.targets.get(path, str(path))

    def publish(self, path: Path) -> None:
        """Upload the finished local *path* to its URL, then remove the local copy."""
        url = self.targets.get(path)
        if url is None:
            return
        if path.is_dir():
            names = sorted(p.name for p in path.iterdir())
            self._fill(url, names, lambda name, to: self.fs.put_file(str(path / name), to))
            shutil.rmtree(path, ignore_errors=True)
        else:
            _guard_out(url, self.fs.put_file, str(path), url)
            path.unlink(missing_ok=True)

    def adopt(self, staged: str, final: Path) -> None:
        """What workers staged at *staged* (an object, or a prefix of parts ending in ``/``)
        copied to *final*'s URL inside the store (no byte passes through this process), then
        the staged keys deleted."""
        url = self.targets[final]
        if staged.endswith("/"):
            found = _guard_in(staged, self.fs.find, staged)
            names = sorted(str(p).rsplit("/", 1)[-1] for p in found)
            self._fill(url, names, lambda name, to: self.fs.copy(staged + name, to))
        else:
            _guard_out(url, self.fs.copy, staged, url)
        self.remove(staged)

    def remove(self, staged: str) -> None:
        """A staged object or prefix deleted; nothing to do when it is not there. It runs on
        the way out of a run too, so a failure is a warning naming what is left, not an error
        in place of the run's own."""
        try:
            self.fs.rm(staged, recursive=staged.endswith("/"))
        except FileNotFoundError:
            pass
        except Exception as exc:  # botocore's errors have no common base with OSError
            _log.warning("Cannot delete %s (%s); it is no output: remove it by hand.", staged, exc)

    def _fill(self, url: str, names: list[str], send: Callable[[str, str], object]) -> None:
        """A dataset's parts sent to *url* one by one (each atomically), then the parts an
        earlier run left beyond the new ones deleted."""
        base = url.rstrip("/")
        for name in names:
            _guard_out(url, send, name, f"{base}/{name}")
        with contextlib.suppress(FileNotFoundError):
            stale = [p for p in self.fs.ls(base, detail=False) if p.rsplit("/", 1)[-1] not in names]
            for old in stale:
                _guard_out(url, self.fs.rm_file, old)


T = TypeVar("T")


def _guard_in(url: str, work: Callable[..., T], *args: Any) -> T:
    try:
        return work(*args)
    except FileNotFoundError as exc:
        raise InputError(f"Cannot read {url}: no such object. Check the URL.") from exc
    except (InputError, UsageError):
        raise
    except Exception as exc:  # botocore's errors have no common base with OSError
        raise InputError(f"Cannot read {url}: {exc}. {_CHECK}") from exc


def _guard_out(url: str, work: Callable[..., object], *args: Any) -> None:
    try:
        work(*args)
    except Exception as exc:  # botocore's errors have no common base with OSError
        raise OutputError(f"Cannot upload {url}: {exc}. {_CHECK}") from exc


@contextlib.contextmanager
def staged(folder: Path) -> Iterator[Path]:
    """A local folder where an object-store output is written before it is uploaded."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
