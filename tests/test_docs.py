"""The documentation covers every reason code, setting and output column, and its links resolve.

The tables live on the pages of ``docs/`` that a reader looks them up in: the reason codes in
``docs/verdicts.md``, the settings in ``docs/operations.md``, the output columns in
``docs/lists.md``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from pipeline.core.config import settings_table
from pipeline.core.schema import OUTPUT_COLUMNS
from pipeline.core.verdict import PENALTIES, RULES, Reason
from pipeline.service.settings import (
    AnonymousConfig,
    HttpConfig,
    JobsConfig,
    PlanConfig,
    ServiceConfig,
    load_service_config,
)
from tests.conftest import REPO

DOCS = REPO / "docs"


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


VERDICTS = _read(DOCS / "verdicts.md")
OPERATIONS = _read(DOCS / "operations.md")
LISTS = _read(DOCS / "lists.md")


@pytest.mark.parametrize("reason", list(Reason))
def test_every_reason_code_is_in_the_reason_table(reason: Reason) -> None:
    row = next(line for line in VERDICTS.splitlines() if line.startswith(f"| `{reason.value}` |"))
    if reason in RULES:
        rule = RULES[reason]
        assert f"| {rule.verdict.value} | ≤ {rule.cap:.2f} |" in row
    elif reason in PENALTIES:
        assert f"\u00d7 {PENALTIES[reason]}" in row


@pytest.mark.parametrize(("name", "default", "help_text"), list(settings_table()))
def test_every_setting_is_documented_with_its_default(
    name: str, default: object, help_text: str
) -> None:
    assert f"| `{name}` |" in OPERATIONS
    section, key = name.split(".")
    shipped = tomllib.loads((REPO / "configs" / "pipeline.toml").read_text())
    value = shipped[section][key]
    assert (tuple(value) if isinstance(value, list) else value) == default


SERVICE_SETTINGS = [
    *settings_table(HttpConfig, "service."),
    *settings_table(AnonymousConfig, "anonymous."),
    *settings_table(JobsConfig, "jobs."),
    *settings_table(PlanConfig, "plans.NAME."),
]


@pytest.mark.parametrize(("name", "default", "help_text"), SERVICE_SETTINGS)
def test_every_service_setting_is_documented(name: str, default: object, help_text: str) -> None:
    assert f"| `{name}` |" in OPERATIONS


def test_shipped_service_config_equals_the_defaults() -> None:
    assert load_service_config(REPO / "configs" / "service.toml") == ServiceConfig()


@pytest.mark.parametrize("column", list(OUTPUT_COLUMNS))
def test_every_output_column_is_documented(column: str) -> None:
    assert f"| `{column}` |" in LISTS


# Every page a reader may follow a link from: the README, the pages of docs/, the bench log.
PAGES = [
    REPO / "README.md",
    *sorted(DOCS.glob("*.md")),
    *sorted(DOCS.glob("vendors/*.md")),
    REPO / "bench" / "RESULTS.md",
]
FENCE = re.compile(r"^(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
# [text](target) and ![alt](target); a target ends at whitespace or the closing parenthesis
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _prose(text: str) -> list[str]:
    """*text*'s lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for *heading*: lower case, punctuation but - and _ dropped, spaces to -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of *path*'s headings, repeats numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for line in _prose(_read(path)):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> list[str]:
    """The relative link targets of *path* (no scheme, no mail address), in order."""
    text = "\n".join(_prose(_read(path)))
    text = re.sub(r"`[^`]*`", "", text)  # code spans hold no links
    return [
        target for target in LINK.findall(text) if not re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target)
    ]


def test_slug_follows_githubs_rules() -> None:
    assert slug("The HTTP service (`/api/email`)") == "the-http-service-apiemail"
    assert slug("Plans, quotas and rate-limit headers") == "plans-quotas-and-rate-limit-headers"
    assert slug("Set-up: the two commands") == "set-up-the-two-commands"
    assert slug("a_b  c") == "a_b--c"


def test_the_docs_are_split_by_reader() -> None:
    assert len(_read(REPO / "README.md").splitlines()) <= 400
    assert len(list(DOCS.glob("*.md"))) >= 5


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        file_part, _, anchor = target.partition("#")
        resolved = (page.parent / file_part).resolve() if file_part else page
        if not resolved.exists():
            broken.append(f"{target}: no file {resolved}")
        elif anchor and (resolved.suffix != ".md" or anchor not in anchors(resolved)):
            broken.append(f"{target}: no heading of {resolved.name} has the anchor #{anchor}")
    assert not broken, f"{page.relative_to(REPO)}: " + "; ".join(broken)
