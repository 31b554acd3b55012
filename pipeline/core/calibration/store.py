"""The calibrations: one per list (and per kind of run: a ``--sandbox`` run's history has its
own), kept in the run history's database (``history.sqlite`` beside the caches,
``sandbox-history.sqlite`` for ``--sandbox``, or ``[history] db``), so whatever shares the
history (a later run of the list, the service) shares its calibration.

``calibrations``
    list_name, sandbox, the calibration's id, when it was made, and the calibration itself
    (JSON: its levels with their evidence). A new calibration of a list replaces the last.
"""

from __future__ import annotations

import json
from typing import Final

from pipeline.core.calibration.types import Calibration
from pipeline.core.db.database import OwnsDatabase, Where, dialect_of, exists, open_database

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS calibrations (
    list_name      TEXT NOT NULL,
    sandbox        INTEGER NOT NULL,
    calibration_id TEXT NOT NULL,
    created_at     REAL NOT NULL,
    body           TEXT NOT NULL,     -- the calibration, JSON
    PRIMARY KEY (list_name, sandbox)
);
"""
_PG_SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS calibrations (
        list_name TEXT NOT NULL, sandbox INTEGER NOT NULL, calibration_id TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (list_name, sandbox)
    )""",
)


class CalibrationStore(OwnsDatabase):
    """The lists' calibrations (SQLite file or PostgreSQL); see the module's doc."""

    def __init__(self, where: Where) -> None:
        self._db = open_database(
            where,
            what="the calibrations",
            remedy="Choose a writable file with history.db or --cache-dir.",
            broken_remedy="Remove the list's calibration with `listclean calibrate remove`, "
            "or choose another history with history.db.",
            sqlite_schema=_SCHEMA,
            postgres_schema=_PG_SCHEMA,
        )
        q = dialect_of(self._db).q
        self._put = (
            "INSERT INTO calibrations (list_name, sandbox, calibration_id, created_at, body) "
            f"VALUES ({q}, {q}, {q}, {q}, {q}) ON CONFLICT (list_name, sandbox) DO UPDATE SET "
            "calibration_id = excluded.calibration_id, created_at = excluded.created_at, "
            "body = excluded.body"
        )
        self._get = f"SELECT body FROM calibrations WHERE list_name = {q} AND sandbox = {q}"
        self._drop = f"DELETE FROM calibrations WHERE list_name = {q} AND sandbox = {q}"
        self.where = self._db.where

    def put(self, calibration: Calibration) -> None:
        """Keep *calibration* as its list's, in place of the last."""
        c = calibration
        body = json.dumps(c.as_dict())
        row = (c.list_name, int(c.sandbox), c.calibration_id, c.created_at, body)
        self._db.execute(self._put, row)

    def get(self, list_name: str, sandbox: bool) -> Calibration | None:
        """The list's calibration; None when it has none."""
        rows = self._db.query(self._get, (list_name, int(sandbox)))
        return Calibration.from_dict(json.loads(rows[0][0])) if rows else None

    def remove(self, list_name: str, sandbox: bool) -> bool:
        """Take the list's calibration away (its runs go back to the default SCORE); whether
        there was one."""
        return self._db.execute(self._drop, (list_name, int(sandbox))) > 0


def calibration_of(where: Where | None, list_name: str, sandbox: bool) -> Calibration | None:
    """The calibration runs of the list *list_name* apply, from the history at *where* (None,
    a history never made, or no list name: none). A run and the service both ask this."""
    if where is None or not list_name or not exists(where):
        return None
    with CalibrationStore(where) as store:
        return store.get(list_name, sandbox)
