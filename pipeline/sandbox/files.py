"""The sandbox's own files, shipped inside the package so `--sandbox` works from any install:
the world the sample list is made for, and the settings that suit a loopback world (short DNS
timeouts, fast pacing, quick greylist retries)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Final

_DATA: Final = resources.files("pipeline.sandbox.data")
SANDBOX_WORLD: Final = Path(str(_DATA / "world.json"))
SANDBOX_SETTINGS: Final = Path(str(_DATA / "sandbox.toml"))
