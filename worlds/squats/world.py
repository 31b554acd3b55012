"""The squat world: typo domains of every major provider, squatted (with a mail host) or plain
(no DNS at all), beside real domains near the providers and ordinary organisations' domains.

``generate(seed, half, sources)`` builds a sandbox world (DNS only, format in
:mod:`pipeline.sandbox.world`) and its truth, one listed address per domain:

* ``squat``: a typo domain (:mod:`worlds.squats.typos`) with an MX; at least half run a mail host
  of their own under the squatted name (``mx.<typo>``), the others point at a parking service's
  catch-all host. Truth: the intended provider.
* ``typo``: a typo domain that does not exist (NXDOMAIN). Truth: the intended provider.
* ``near``: a real domain near a provider (its name under another suffix, or two edits at most
  from it) from the free-mail lists and swot (:mod:`worlds.squats.sources`), with mail of its
  own, at the provider's exchanges (a provider's country domain) or at a host of its own or a
  mainstream one. Free-mail lists also hold domains users mistyped (gmial.com): an entry that
  the world's own typo generator makes from a provider is no near domain here and is left out;
  swot's entries are real organisations and are kept. Truth: no suggestion.
* ``business``: an ordinary organisation (swot's universities and colleges, and made-up
  companies). Truth: no suggestion.

``half`` keeps tuning and reporting apart: each provider's typo domains are split in two by a
hash of the name (a third for ``tune``, two thirds for ``report``), so no typo domain is in
both; the ``report`` half's near domains are the package lists', the ``tune`` half's are the
evaluation world's hand-picked ones (:data:`worlds.evaluation.names.NEAR_PROVIDER`).
"""

from __future__ import annotations

import csv
import json
import random
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from publicsuffixlist import PublicSuffixList
from rapidfuzz.distance import OSA

from worlds.evaluation.names import FIRST, LAST, NEAR_PROVIDER, company_domains, shipped_list
from worlds.squats.hosts import HOSTING, PARKING, provider_host
from worlds.squats.sources import Sources
from worlds.squats.typos import OPERATIONS, typo_forms

TRUTH_COLUMNS: Final = (
    "email",
    "domain",
    "class",
    "intended",
    "operation",
    "mail_host",
    "real_tld",
)
HALVES: Final = ("tune", "report")
# Per provider: squats, and plain typos at most (fewer where a short name has fewer typos).
_SIZES: Final = {"tune": (8, 30), "report": (15, 60)}
_OWN_HOST_SHARE: Final = 0.6  # squats with a mail host under their own name
_BUSINESSES: Final = {"tune": (300, 300), "report": (1100, 1000)}  # swot, made up


@dataclass(frozen=True)
class Row:
    email: str
    domain: str
    cls: str  # squat, typo, near, business
    intended: str = ""  # the provider meant, for a typo domain
    operation: str = ""  # the typing operation, for a typo domain
    mail_host: str = ""  # own, parking, provider, mainstream, hosting; "" without MX
    real_tld: bool = True


@dataclass(frozen=True)
class SquatWorld:
    world: dict[str, Any]
    rows: tuple[Row, ...]

    def write(self, directory: Path) -> None:
        """world.json, list.csv (one ``email`` column) and truth.csv in *directory*."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "world.json").write_text(json.dumps(self.world), encoding="utf-8")
        with (directory / "list.csv").open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(["email"])
            writer.writerows([row.email] for row in self.rows)
        with (directory / "truth.csv").open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(TRUTH_COLUMNS)
            for r in self.rows:
                real = "true" if r.real_tld else "false"
                writer.writerow(
                    [r.email, r.domain, r.cls, r.intended, r.operation, r.mail_host, real]
                )


def providers() -> tuple[str, ...]:
    """The major providers of listclean's curated list (``pipeline/data/mail_providers.txt``)."""
    return tuple(sorted(shipped_list("mail_providers.txt")))


def in_half(domain: str, half: str) -> bool:
    """Which half a domain belongs to: a third of all names to ``tune``, the rest ``report``."""
    tune = zlib.crc32(domain.encode()) % 3 == 0
    return tune if half == "tune" else not tune


class _World:
    def __init__(self, seed: int, half: str, sources: Sources) -> None:
        self.rng = random.Random(seed)
        self.half = half
        self.sources = sources
        self.psl = PublicSuffixList()
        self.zones: dict[str, dict[str, Any]] = {}
        self.rows: list[Row] = []
        self._addresses = 0

    def host(self, name: str) -> str:
        if name not in self.zones:
            self._addresses += 1
            block, offset = divmod(self._addresses, 250)
            self.zones[name] = {"a": [f"127.0.{block + 1}.{offset + 2}"]}
        return name

    def mx(self, domain: str, host: str) -> None:
        self.zones[domain] = {"mx": [[10, self.host(host)]]}

    def listed(self, domain: str, cls: str, **facts: Any) -> None:
        local = f"{self.rng.choice(FIRST)}.{self.rng.choice(LAST)}{self.rng.randrange(100)}"
        self.rows.append(Row(f"{local}@{domain}", domain, cls, **facts))

    def real_tld(self, domain: str) -> bool:
        tld = domain.rsplit(".", 1)[-1]
        return bool(self.psl.is_public(tld, accept_unknown=False))


def generate(seed: int, half: str, sources: Sources) -> SquatWorld:
    """The world of *half* (``tune`` or ``report``) for *seed*; the same arguments give the same
    world."""
    if half not in HALVES:
        raise ValueError(f"half must be one of {HALVES}, not {half!r}")
    w = _World(seed, half, sources)
    majors = providers()
    for provider in majors:
        w.mx(provider, provider_host(provider))
    real = _real_domains(sources, majors)
    forms, every_form = _typo_forms(sources, majors, real)
    squats, plain = _SIZES[half]
    for provider in majors:
        mine = [(d, op) for d, op in forms[provider].items() if in_half(d, half)]
        picked = _stratified(w.rng, mine, squats)
        for domain, op in picked:
            _squat(w, domain, provider, op)
        rest = [item for item in mine if item not in picked]
        for domain, op in w.rng.sample(rest, min(plain, len(rest))):
            w.listed(domain, "typo", intended=provider, operation=op, real_tld=w.real_tld(domain))
    _near(w, majors, every_form)
    _businesses(w, majors)
    w.rng.shuffle(w.rows)
    return SquatWorld({"latency_ms": 0, "zones": w.zones, "smtp": {}}, tuple(w.rows))


def _real_domains(sources: Sources, majors: tuple[str, ...]) -> frozenset[str]:
    """Names that are no typo domain in this world: listclean's lists and the world's sources."""
    listed = shipped_list("popular_domains.txt") | shipped_list("free_providers.txt")
    listed |= shipped_list("known_typos.txt")
    return frozenset(listed | sources.free_mail | sources.institutions | set(majors))


def _typo_forms(
    sources: Sources, majors: tuple[str, ...], real: frozenset[str]
) -> tuple[dict[str, dict[str, str]], frozenset[str]]:
    """Each provider's typo domains, without real ones and without those two providers share;
    and every typo form of every provider, real or not."""
    forms = {p: typo_forms(sources.dnstwist, p) for p in majors}
    seen: dict[str, int] = {}
    for per in forms.values():
        for domain in per:
            seen[domain] = seen.get(domain, 0) + 1
    kept = {
        p: {d: op for d, op in per.items() if seen[d] == 1 and d not in real}
        for p, per in forms.items()
    }
    return kept, frozenset(seen)


def _stratified(
    rng: random.Random, forms: list[tuple[str, str]], count: int
) -> list[tuple[str, str]]:
    """*count* typo domains taking the operations in turn, so that each is represented."""
    by_op = {op: [item for item in forms if item[1] == op] for op in OPERATIONS}
    for items in by_op.values():
        rng.shuffle(items)
    picked: list[tuple[str, str]] = []
    while len(picked) < count and any(by_op.values()):
        for op in OPERATIONS:
            if by_op[op] and len(picked) < count:
                picked.append(by_op[op].pop())
    return picked


def _squat(w: _World, domain: str, provider: str, op: str) -> None:
    own = w.rng.random() < _OWN_HOST_SHARE
    host = f"{w.rng.choice(('mx', 'mail', 'smtp'))}.{domain}" if own else w.rng.choice(PARKING)
    w.mx(domain, host)
    kind = "own" if own else "parking"
    facts = {"intended": provider, "operation": op, "real_tld": w.real_tld(domain)}
    w.listed(domain, "squat", mail_host=kind, **facts)


def _near(w: _World, majors: tuple[str, ...], forms: frozenset[str]) -> None:
    if w.half == "tune":
        pool = set(NEAR_PROVIDER) - set(majors)
    else:
        typed = {d for d in w.sources.free_mail if d in forms}  # mistyped, not near domains
        candidates = (w.sources.free_mail - typed) | w.sources.institutions
        listed = shipped_list("popular_domains.txt") | shipped_list("free_providers.txt")
        listed |= shipped_list("known_typos.txt")
        pool = {d for d in candidates if d not in listed and _is_near(w, d, majors)}
    for domain in sorted(pool):
        host, kind = _real_host(w, domain, majors)
        w.mx(domain, host)
        w.listed(domain, "near", mail_host=kind)


def _is_near(w: _World, domain: str, majors: tuple[str, ...]) -> bool:
    if w.psl.privatesuffix(domain) != domain or domain in majors:
        return False
    name = domain.split(".", 1)[0]
    if any(name == p.split(".", 1)[0] for p in majors):
        return True
    return any(
        abs(len(domain) - len(p)) <= 2 and OSA.distance(domain, p, score_cutoff=2) <= 2
        for p in majors
    )


def _real_host(w: _World, domain: str, majors: tuple[str, ...]) -> tuple[str, str]:
    """Where a real domain's mail goes: its provider's exchanges for a provider's own country
    domain, else a host of its own (most), Microsoft 365 or Google Workspace, or a hosting
    company's."""
    family = provider_host(domain, default="")
    if family:
        return family, "provider"
    roll = w.rng.random()
    if roll < 0.6:
        return f"mx.{domain}", "own"
    if roll < 0.75:
        return f"{domain.replace('.', '-')}.mail.protection.outlook.com", "mainstream"
    if roll < 0.9:
        return "aspmx.l.google.com", "mainstream"
    return w.rng.choice(HOSTING), "hosting"


def _businesses(w: _World, majors: tuple[str, ...]) -> None:
    from_swot, made_up = _BUSINESSES[w.half]
    taken = {row.domain for row in w.rows}
    institutions = sorted(
        d
        for d in w.sources.institutions
        if in_half(d, w.half) and d not in taken and not _is_near(w, d, majors)
    )
    chosen = w.rng.sample(institutions, min(from_swot, len(institutions)))
    chosen += company_domains(w.rng, made_up, taken | set(chosen))
    for domain in chosen:
        host, kind = _real_host(w, domain, majors)
        w.mx(domain, host)
        w.listed(domain, "business", mail_host=kind)
