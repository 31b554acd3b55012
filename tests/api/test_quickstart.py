"""The docs' quick start (docs/python-api.md) runs as written, against the sample world's DNS
server on 127.0.0.1 instead of the real one, and says what it shows."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from pipeline.core.config import Config
from tests.conftest import REPO

PAGE = REPO / "docs" / "python-api.md"


def test_the_quick_start_runs_on_your_own_dataframe(config: Config, tmp_path: Path) -> None:
    text = PAGE.read_text()
    section = text.split("## Quick start: your own DataFrame", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    source = code.group(1).replace("clean(signups)", "clean(signups, config=config)")
    here = os.getcwd()
    os.chdir(tmp_path)  # the report is written beside the code that runs
    try:
        scope: dict[str, object] = {"config": config}
        exec(compile(source, str(PAGE), "exec"), scope)
    finally:
        os.chdir(here)
    cleaned = scope["cleaned"]
    assert isinstance(cleaned, pd.DataFrame)
    assert list(cleaned.columns[:3]) == ["id", "input_Email", "EMAIL"]
    assert scope["result"].summary.verdicts == {"Valid": 1, "Risky": 1, "Invalid": 1}  # type: ignore[attr-defined]
    assert (tmp_path / "signups.html").exists()
