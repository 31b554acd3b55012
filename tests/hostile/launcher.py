"""Start the real command with a fault from outside its code, at a point chosen exactly:

    python launcher.py --file-size-limit BYTES -- clean ...   # writes past BYTES fail (EFBIG)
    python launcher.py --kill-at-rename -- clean ...          # SIGKILL just before a .tmp file
                                                              # is renamed onto its final name
    python launcher.py --signal-at WHEN:NAME:SIG -- clean ... # SIG (SIGINT, SIGTERM) sent to
                                   # itself when NAME (a glob) is opened for writing (WHEN is
                                   # open), is renamed (rename), or is imported (import)
    python launcher.py --no-space-for NAME -- clean ...       # opening NAME (a glob) to write
                                                              # fails with ENOSPC
    python launcher.py --change-at NAME:INPUT:HOW -- clean ... # when NAME is opened to write,
                  # INPUT is changed in place: its data lines reversed (rewrite: same size, its
                  # modification time put back), cut in half (truncate) or doubled (append)

Python ignores SIGXFSZ, so a write past RLIMIT_FSIZE fails with EFBIG, as one on a full disk
fails with ENOSPC. The kill uses the ``os.rename`` audit event (raised by ``os.replace`` too,
PEP 578): the temporary file is complete, its final name not yet taken. Then the command itself
runs unchanged, as ``python -m pipeline`` would run it.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import resource
import runpy
import signal
import sys
from collections.abc import Callable
from pathlib import Path

Hook = Callable[[str, tuple[object, ...]], None]


def _kill_at_rename(event: str, args: tuple[object, ...]) -> None:
    if event == "os.rename" and str(args[0]).endswith(".tmp"):
        os.kill(os.getpid(), signal.SIGKILL)


def _written(event: str, args: tuple[object, ...], pattern: str) -> bool:
    """An ``open`` for writing of a file whose name matches *pattern*."""
    if event != "open" or not isinstance(args[0], str | Path):
        return False
    mode = args[1] if isinstance(args[1], str) else ""
    flags = args[2] if isinstance(args[2], int) else 0
    writing = any(c in mode for c in "wax+") or bool(flags & (os.O_WRONLY | os.O_RDWR))
    return writing and fnmatch.fnmatch(Path(args[0]).name, pattern)


def _signal_at(spec: str) -> Hook:
    when, pattern, name = spec.split(":")
    sent: list[bool] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if sent:
            return
        renamed = event == "os.rename" and fnmatch.fnmatch(Path(str(args[0])).name, pattern)
        imported = event == "import" and args[0] == pattern
        opened = _written(event, args, pattern)
        if {"open": opened, "rename": renamed, "import": imported}[when]:
            sent.append(True)
            os.kill(os.getpid(), signal.Signals[name])

    return hook


def _no_space_for(pattern: str) -> Hook:
    def hook(event: str, args: tuple[object, ...]) -> None:
        if _written(event, args, pattern):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    return hook


def _change_at(spec: str) -> Hook:
    pattern, target, how = spec.split(":")
    done: list[bool] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if done or not _written(event, args, pattern):
            return
        done.append(True)
        path = Path(target)
        data, stamp = path.read_bytes(), path.stat()
        header, _, body = data.partition(b"\n")
        if how == "rewrite":
            lines = body.splitlines(keepends=True)
            changed = header + b"\n" + b"".join(reversed(lines))
        else:
            changed = data[: len(data) // 2] if how == "truncate" else data + body
        with path.open("r+b") as out:  # in place: the same file, as an editor saving over it
            out.write(changed)
            out.truncate()
        if how == "rewrite":
            os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))

    return hook


def main(argv: list[str]) -> None:
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    if "--file-size-limit" in options:
        size = int(options[options.index("--file-size-limit") + 1])
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    if "--kill-at-rename" in options:
        sys.addaudithook(_kill_at_rename)
    if "--signal-at" in options:
        sys.addaudithook(_signal_at(options[options.index("--signal-at") + 1]))
    if "--change-at" in options:
        sys.addaudithook(_change_at(options[options.index("--change-at") + 1]))
    if "--no-space-for" in options:
        sys.addaudithook(_no_space_for(options[options.index("--no-space-for") + 1]))
    sys.argv = ["listclean", *command]
    runpy.run_module("pipeline", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
