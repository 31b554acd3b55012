"""Running the real `listclean clean` command for a case, and looking at what it left."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO
from tests.hostile.cases import Run

# What a path in a case directory was: a regular file's bytes, or the kind of other entry.
Entry = bytes | str
Snapshot = dict[str, Entry]
LAUNCHER = Path(__file__).with_name("launcher.py")


@dataclass(frozen=True)
class Outcome:
    code: int | None  # None: still running at the timeout, so it was killed
    stdout: str
    stderr: str


def execute(
    run: Run,
    where: Path,
    cache: Path,
    world: Sequence[str] = ("--offline",),
    *,
    umask: int = 0o022,
    kill_at_rename: bool = False,
) -> Outcome:
    """Run the command for *run* in *where*. Nothing leaves the machine: *world* is
    ``--offline`` or ``--sandbox``. Safe to call from several threads at once (no preexec
    function: faults are set up by :mod:`.launcher` inside the child)."""
    tail = [*run.args, *world, "--quiet", "--cache-dir", str(cache)]
    env = {**os.environ, "HOME": str(cache.parent), "XDG_CACHE_HOME": str(cache.parent)}
    env["PYTHONPATH"] = str(REPO)
    with _feeding(where, run.feeds):
        process = subprocess.Popen(
            _command(run, tail, kill_at_rename),
            cwd=where,
            env=env,
            stdin=subprocess.DEVNULL if run.stdin is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            umask=umask,
        )
        return _wait(process, run)


def _command(run: Run, tail: list[str], kill_at_rename: bool) -> list[str]:
    if run.substitute:  # bash hands the command a pipe at /dev/fd/N
        script = '"$0" -m pipeline clean <(cat "$1") "${@:2}"'
        return ["bash", "-c", script, sys.executable, run.input, *tail]
    faults = ["--kill-at-rename"] if kill_at_rename else []
    faults += run.faults
    if run.file_size_limit is not None:
        faults += ["--file-size-limit", str(run.file_size_limit)]
    if faults:
        return [sys.executable, str(LAUNCHER), *faults, "--", "clean", run.input, *tail]
    return [sys.executable, "-m", "pipeline", "clean", run.input, *tail]


def _wait(process: subprocess.Popen[bytes], run: Run) -> Outcome:
    try:
        out, err = process.communicate(run.stdin, timeout=run.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        return Outcome(None, out.decode(errors="replace"), err.decode(errors="replace"))
    return Outcome(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


@contextmanager
def _feeding(where: Path, feeds: tuple[tuple[str, str], ...]) -> Iterator[None]:
    """A writer per named pipe, as another program would be; stopped when the run ends."""
    writers = [
        subprocess.Popen(
            ["sh", "-c", 'exec cat "$1" > "$2"', "sh", source, fifo],
            cwd=where,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for fifo, source in feeds
    ]
    try:
        yield
    finally:
        for writer in writers:
            if writer.poll() is None:  # blocked opening the pipe nobody reads any more
                os.killpg(writer.pid, signal.SIGKILL)
            writer.wait()


def snapshot(where: Path) -> Snapshot:
    """Every path below *where*, without following links or opening pipes."""
    found: Snapshot = {}
    for directory, dirs, files in os.walk(where):
        for name in (*dirs, *files):
            path = Path(directory, name)
            found[str(path.relative_to(where))] = _entry(path)
    return found


def _entry(path: Path) -> Entry:
    mode = path.lstat().st_mode
    if stat.S_ISREG(mode):
        return path.read_bytes()
    if stat.S_ISDIR(mode):
        return "directory"
    return "fifo" if stat.S_ISFIFO(mode) else "other"
