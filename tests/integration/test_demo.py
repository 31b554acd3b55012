"""`make demo` is light: into a fresh environment it installs what running needs (the package
and its dask, s3 and postgres extras) and no development tool, runs the demo, and says how to
put `listclean` on PATH."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration

DEV_TOOLS = ("pytest", "ruff", "mypy", "lint-imports", "cog", "schemathesis")


def test_make_demo_installs_what_running_needs_and_nothing_more(tmp_path: Path) -> None:
    venv, demo = tmp_path / "venv", tmp_path / "demo"
    done = subprocess.run(
        ["make", "-C", str(REPO), "demo", f"VENV={venv}", f"DEMO={demo}"],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
        env={k: v for k, v in os.environ.items() if k != "MAKEFLAGS"},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"source {venv}/bin/activate" in done.stdout
    assert (venv / "bin" / "listclean").exists()
    assert not [tool for tool in DEV_TOOLS if (venv / "bin" / tool).exists()]
    python = venv / "bin" / "python"
    extras = "import dask.distributed, s3fs, psycopg, psycopg_pool"
    subprocess.run([python, "-c", extras], check=True, timeout=120)
    summary = json.loads((demo / "list.clean.summary.json").read_text())
    assert summary["rows_in"] == 297 and summary["sandbox"] is True
