"""The tests' own world: a real DNS server on 127.0.0.1 serving made-up zones."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pipeline.core.config import DnsConfig
from pipeline.core.lists import DomainLists, load_lists
from pipeline.sandbox.dns_server import SandboxDNS, load_world
from pipeline.sandbox.files import SANDBOX_WORLD
from tests import pg

REPO = Path(__file__).resolve().parent.parent
SAMPLE_WORLD = SANDBOX_WORLD
SAMPLE_CSV = REPO / "sample_data" / "list.csv"
SAMPLE_PARQUET = REPO / "sample_data" / "list.parquet"


@pytest.fixture(autouse=True)
def own_user_folders(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test has user cache and data folders of its own (``XDG_CACHE_HOME``,
    ``XDG_DATA_HOME``; the processes it starts inherit them): what a command writes there by
    default never lands in the user's folders, and what the user's hold decides no test."""
    folder = tmp_path_factory.mktemp("user")
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder / "cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(folder / "data"))


@pytest.fixture(scope="session")
def lists() -> DomainLists:
    return load_lists()


@pytest.fixture(scope="session")
def sample_dns() -> Iterator[SandboxDNS]:
    """The sample world (the one `--sandbox` serves), on a random port."""
    with SandboxDNS(load_world(SAMPLE_WORLD)) as server:
        yield server


def fast_dns(address: str, **overrides: object) -> DnsConfig:
    """Short timeouts so failure scenarios cost the suite little time."""
    settings: dict[str, object] = {
        "nameservers": (address,),
        "timeout": 0.2,
        "attempts": 2,
        "backoff": 0.01,
        "concurrency": 20,
    }
    settings.update(overrides)
    return DnsConfig(**settings)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[pg.Cluster]:
    """A PostgreSQL cluster of the test run's own, on 127.0.0.1 (see tests/pg.py)."""
    reason = pg.available()
    if reason is not None:
        if os.environ.get("CI"):  # CI installs the server (.ci/run): never skip there
            pytest.fail(f"PostgreSQL is needed: {reason}")
        pytest.skip(f"PostgreSQL tests skipped: {reason}")
    with pg.cluster() as running:
        yield running


@pytest.fixture
def pg_url(pg_cluster: pg.Cluster) -> str:
    """The URL of a fresh, empty database."""
    return pg_cluster.database()


StoreAt = Callable[[str], Path | str]


@pytest.fixture(params=["sqlite", "postgresql"])
def store_at(request: pytest.FixtureRequest, tmp_path: Path) -> StoreAt:
    """Where a store lives, once in a SQLite file and once in PostgreSQL: a function from a
    file name to that file in the test's folder, or to the test's database."""
    if request.param == "sqlite":
        return lambda name: tmp_path / name
    url: str = request.getfixturevalue("pg_url")
    return lambda name: url


def at_once(count: int, work: Callable[[], object]) -> list[Exception]:
    """*work* on *count* threads let go together; what each raised (none: [])."""
    gate = threading.Barrier(count)
    failures: list[Exception] = []

    def run() -> None:
        gate.wait()
        try:
            work()
        except Exception as exc:  # every failure is reported to the test
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return failures
