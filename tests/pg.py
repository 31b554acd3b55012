"""A throwaway PostgreSQL cluster for the tests: started by the test run, on loopback only.

``initdb`` refuses to run as root, so when the tests run as root the cluster belongs to the
``postgres`` user (``runuser``). It listens on 127.0.0.1 on a free port, trusts local
connections (nobody else can reach it) and keeps its data in a temporary folder removed at the
end. ``fsync = off`` keeps the suite fast: the cluster is thrown away, so what a power loss
would take from it does not matter here; the stores still ask for ``synchronous_commit = on``.

Each test gets a database of its own, made from an empty template (``CREATE DATABASE ...
TEMPLATE``), which takes a few milliseconds.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def _bin() -> Path:
    """The newest server's binaries Debian's packages installed (/usr/lib/postgresql/N/bin)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else Path("/usr/lib/postgresql/15/bin")


BIN = _bin()
_USER = "postgres"


def available() -> str | None:
    """Why a cluster cannot be started here, or None when it can."""
    if not (BIN / "initdb").exists():
        return f"the PostgreSQL server binaries are not in {BIN} (apt-get install postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(_USER)
        except KeyError:
            return f"running as root and there is no {_USER} user to run initdb as"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """A running cluster; :meth:`database` makes a fresh database and returns its URL."""

    def __init__(self, root: Path, port: int) -> None:
        self.root = root
        self.port = port
        self._names = itertools.count()

    @property
    def data(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{_USER}@127.0.0.1:{self.port}/{database}"

    def _as_owner(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        prefix = ["runuser", "-u", _USER, "--"] if os.geteuid() == 0 else []
        return subprocess.run(
            [*prefix, *argv], check=check, capture_output=True, text=True, cwd=self.root
        )

    def sql(self, statement: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]

    def database(self) -> str:
        name = f"t{os.getpid()}_{next(self._names)}"
        self.sql(f"CREATE DATABASE {name} TEMPLATE template0")
        return self.url(name)

    def start(self) -> None:
        self._as_owner(
            str(BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.root / "log"),
            "-w", "-t", "30", "-o", f"-p {self.port}", "start",
        )  # fmt: skip

    def stop(self) -> None:
        self._as_owner(str(BIN / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")


@contextlib.contextmanager
def cluster() -> Iterator[Cluster]:
    """A running cluster, stopped and deleted on exit."""
    root = Path(tempfile.mkdtemp(prefix="listclean-pg-"))
    try:
        if os.geteuid() == 0:
            entry = pwd.getpwnam(_USER)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        root.chmod(0o700)
        running = Cluster(root, _free_port())
        running._as_owner(
            str(BIN / "initdb"), "-D", str(running.data), "-U", _USER, "-A", "trust",
            "-E", "UTF8", "--locale", "C.UTF-8", "--no-sync",
        )  # fmt: skip
        with (running.data / "postgresql.conf").open("a") as conf:
            conf.write(
                "listen_addresses = '127.0.0.1'\n"
                f"unix_socket_directories = '{root}'\n"
                "fsync = off\nfull_page_writes = off\nmax_connections = 200\n"
            )
        running.start()
        try:
            yield running
        finally:
            running._as_owner(
                str(BIN / "pg_ctl"), "-D", str(running.data), "-m", "immediate", "stop", check=False
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
