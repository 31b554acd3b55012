"""`listclean clean` over the hostile corpus, run as the real command, one process per case.

Each case states the correct behaviour (see :mod:`tests.hostile.cases`). Where today's code
falls short, the case is a strict xfail whose reason says what happens instead, so fixing the
code flips exactly that case (and the suite then asks for the mark to go).
"""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.hostile.cases import Case, Run, csv_text
from tests.hostile.checks import check, outputs
from tests.hostile.corpus import CASES
from tests.hostile.corpus_paths import CSV
from tests.hostile.runner import Outcome, Snapshot, execute, snapshot

# What today's code does with the cases it gets wrong: each a strict xfail naming what happens.
TODAY: dict[str, str] = {}


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=TODAY[case.name])] if case.name in TODAY else []
    return pytest.param(case, id=case.name, marks=marks)


@dataclass(frozen=True)
class Ran:
    run: Run
    where: Path
    before: Snapshot
    outcome: Outcome


class Runs:
    """Each case's run, made on first demand. Without pytest-xdist, the first demand runs
    every selected case at once, one process per core: each is a fresh interpreter, so the
    corpus costs its slowest cases rather than the sum of its start-ups."""

    def __init__(self, root: Path, selected: list[Case]) -> None:
        self._root = root
        self._selected = selected
        self._done: dict[str, Ran] = {}

    def get(self, case: Case) -> Ran:
        if case.name not in self._done:
            batch = [c for c in self._selected if c.name not in self._done] or [case]
            prepared = [self._prepare(c) for c in batch]  # builds stay on this thread
            with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
                ran = pool.map(self._execute, prepared)
                self._done.update(zip([c.name for c in batch], ran, strict=True))
        return self._done[case.name]

    def _prepare(self, case: Case) -> tuple[Run, Path, Snapshot]:
        where = self._root / case.name / "case"
        where.mkdir(parents=True)
        run = case.build(where)
        return run, where, snapshot(where)

    @staticmethod
    def _execute(prepared: tuple[Run, Path, Snapshot]) -> Ran:
        run, where, before = prepared
        return Ran(run, where, before, execute(run, where, where.parent / "cache"))


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    selected: list[Case] = []
    if not hasattr(request.config, "workerinput"):  # under xdist, each worker runs its own
        for item in request.session.items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            if isinstance(params.get("case"), Case):
                selected.append(params["case"])
    return Runs(tmp_path_factory.mktemp("hostile"), selected)


def test_the_corpus_is_what_it_says() -> None:
    names = [case.name for case in CASES]
    assert len(names) >= 45
    assert len(set(names)) == len(names)
    assert set(TODAY) <= set(names)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_clean(case: Case, runs: Runs) -> None:
    ran = runs.get(case)
    check(case.expect, ran.run, ran.where, ran.before, ran.outcome)


def test_stores_are_private(tmp_path: Path) -> None:
    """The caches hold addresses (personal data): owner-only files whatever the umask."""
    where = tmp_path / "case"
    where.mkdir()
    addresses = ("ashleycarter@fastmail.com", "nobody@fastmail.com")
    (where / "list.csv").write_text(csv_text("email", addresses))
    config = str(REPO / "configs" / "sandbox.toml")
    run = Run("list.csv", ("-o", "out.parquet", "--verify", "smtp", "--config", config))
    outcome = execute(run, where, tmp_path / "cache", ("--sandbox",), umask=0o022)
    assert outcome.code == 0, outcome.stderr
    stores = sorted((tmp_path / "cache").iterdir())
    assert {p.name for p in stores} >= {"sandbox-domains.sqlite", "sandbox-mailboxes.sqlite"}
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in stores}
    assert all(mode == "0o600" for mode in modes.values()), modes


def _killed_mid_write(tmp_path: Path) -> Path:
    """A run killed (SIGKILL) when its enriched Parquet is written in full under the
    temporary name and about to be renamed: the last moment a kill can catch the write."""
    where = tmp_path / "case"
    where.mkdir()
    (where / "list.csv").write_bytes(CSV)
    outcome = execute(Run("list.csv"), where, tmp_path / "cache", kill_at_rename=True)
    assert outcome.code == -signal.SIGKILL, (outcome.code, outcome.stderr)
    return where


def test_a_run_killed_mid_write_leaves_no_output(tmp_path: Path) -> None:
    where = _killed_mid_write(tmp_path)
    assert not (where / "out.parquet").exists()


def test_the_next_run_leaves_no_temporary_files(tmp_path: Path) -> None:
    where = _killed_mid_write(tmp_path)
    outcome = execute(Run("list.csv"), where, tmp_path / "cache")
    assert outcome.code == 0, outcome.stderr
    left = sorted(p.name for p in where.iterdir())
    assert left == sorted(["list.csv", *outputs("out.parquet")])
