"""The wheel carries everything `--sandbox` needs: built, installed into a fresh virtual
environment, and run from a folder that is not the repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.conftest import REPO, SAMPLE_CSV

pytestmark = pytest.mark.integration


def run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in command], cwd=cwd, capture_output=True, text=True, check=True
    )


def test_an_installed_wheel_cleans_and_verifies_in_the_sandbox(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", wheels, REPO)
    wheel = next(wheels.glob("listclean-*.whl"))
    env = tmp_path / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    lock = REPO / "requirements.lock"
    run(python, "-m", "pip", "install", "--quiet", "-c", lock, wheel)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(SAMPLE_CSV, elsewhere / "list.csv")
    listclean = env / "bin" / "listclean"
    run(
        listclean,
        "clean",
        "list.csv",
        "--sandbox",
        "--quiet",
        "--cache-dir",
        "cache",
        cwd=elsewhere,
    )
    summary = json.loads((elsewhere / "list.clean.summary.json").read_text())
    assert summary["rows_in"] == 297 and summary["dns_queries"] > 0
    answer = run(listclean, "verify", "John.Doe@gmial.com", "--sandbox", cwd=elsewhere)
    assert json.loads(answer.stdout)["SUGGESTION"] == "John.Doe@gmail.com"
    run(listclean, "clean", "list.csv", "-o", "list.xlsx", "--sandbox", "--quiet", cwd=elsewhere)
    assert (elsewhere / "list.xlsx").stat().st_size > 0
    api = run(python, "-c", API, cwd=elsewhere)
    assert api.stdout.split() == ["John.Doe@gmail.com", "John.Doe@gmail.com", "297"]
    assert not (elsewhere / "pipeline").exists()  # nothing was read from a checkout
    shipped = run(python, "-c", SHIPPED, cwd=elsewhere).stdout.split()
    assert shipped == ["True", "Apache-2.0", "True"]  # typed (PEP 561), licensed, with its text


# What a company's approval reads off the installed package: py.typed, the licence and its text.
SHIPPED = """
from importlib import metadata, resources
dist = metadata.distribution("listclean")
print(resources.files("pipeline").joinpath("py.typed").is_file())
print(dist.metadata["License-Expression"])
print(any(str(f).endswith("LICENSE") for f in dist.files or ()))
"""


# The Python API of the installed package (offline: the known-typo rule needs no DNS).
API = """
import polars as pl
from pipeline import clean, verify
frame = pl.DataFrame({"email": ["John.Doe@gmial.com"]})
print(clean(frame, offline=True, cache_dir="cache").frame.item(0, "SUGGESTION"))
print(verify("John.Doe@gmial.com", offline=True, cache_dir="cache")["SUGGESTION"])
print(clean("list.csv", offline=True, cache_dir="cache").summary.rows_in)
"""
