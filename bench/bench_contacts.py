"""Benchmark the contact store: ``ContactStore.search`` over a million made-up contacts.

    python bench/bench_contacts.py [--contacts 1000000] [--lookups 3000] [--out bench/out]

Generates --contacts people (fixed seed) into ``contacts_bench.parquet`` in --out, imports them
into a new ``contacts_bench.sqlite`` there with ``ContactStore.import_file`` (timed), then, in
this process and one thread, times ``ContactStore.search`` for --lookups terms of each kind,
taken from random stored people, after 200 unmeasured warm-up lookups of that kind:

* email: the address as stored;
* phone: the number in US national format, "(295) 734-1234";
* name + city: "First Last Town", the usual way to name one person;
* name: "First Last"; with about one person per full name, many are ambiguous;
* name, misspelt: "First Lsat Town" (two letters of the last name swapped): a misspelt name
  is another name, so these find no one; the search does the same work as any other.

Then it opts 1,200 people out and times 1,000 requests (search and audit record, after 200
warm-up) of each kind of 404 ``/api/find`` gives: no match, opted out, ambiguous, and a first
name alone that thousands of records hold. Their medians must lie within 20% of each other.

The people: about 400 first names x 2,500 last names x 1,000 towns x 2,000 employers, all made
of syllables, drawn uniformly; every person has a unique email at ``madeup-mail.net`` subdomains and
a unique phone number in one of the 80 North American area codes of the form N9X, which the
numbering plan keeps back for its own expansion and assigns to no one. Prints a Markdown table
and writes ``contacts.json`` to --out. Nothing here is committed: --out is bench/out/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sqlite3
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.config import ContactsConfig
from pipeline.core.contacts.store import ContactStore

HERE = Path(__file__).resolve().parent

SEED = 20240917
WARMUP = 200
TARGETS_MS = {"email": 20.0, "phone": 20.0, "name": 50.0}  # p99 on 2 cores

FIRST_STARTS = ("Al", "Bel", "Cor", "Dar", "El", "Fen", "Gar", "Hal", "Is", "Jor")
FIRST_STARTS += ("Kel", "Lor", "Mar", "Nor", "Or", "Per", "Ros", "Sel", "Tam", "Vel")
FIRST_ENDS = ("a", "an", "en", "ia", "ic", "id", "in", "is", "o", "on")
FIRST_ENDS += ("or", "ra", "ric", "rin", "ta", "ton", "us", "wyn", "y", "ys")
LAST_STARTS = tuple(
    f"{a}{b}"
    for a in ("Ash", "Black", "Bright", "Cold", "Dun", "East", "Fair", "Green", "Hart", "Kings")
    for b in ("", "er", "el", "ing", "en")
)
LAST_ENDS = tuple(
    f"{a}{b}"
    for a in ("brook", "bury", "combe", "field", "ford", "ham", "ley", "more", "ton", "wood")
    for b in ("", "s", "e", "er", "by")
)
TOWN_STARTS = tuple(f"{a}{b}" for a in ("Ox", "Wren", "Mill", "Stone") for b in ("", "en"))
TOWN_STARTS += ("Thorn", "Elder", "Copper", "Salt", "Moss", "Hazel", "Iron", "Lark")
TOWN_STARTS += ("Amber", "Birch", "Cinder", "Frost", "Gold", "Holly", "Juniper", "Linden")
TOWN_STARTS += ("Maple", "Nettle", "Oak", "Pebble", "Quarry", "Raven", "Silver", "Tansy")
TOWN_STARTS += ("Umber", "Willow", "Bramble", "Clover", "Dove", "Fern", "Heron", "Ivy")
TOWN_ENDS = ("bridge", "bury", "cliff", "dale", "field", "gate", "haven", "hollow", "marsh")
TOWN_ENDS += ("mere", "moor", "port", "stead", "ton", "vale", "wick", "worth", "ham", "ford")
TOWN_ENDS += ("ridge", "brook", "holm", "ley", "mouth", "shaw")
COMPANY_WORDS = tuple(f"{s}{e}" for s in TOWN_STARTS[:25] for e in ("wing", "gear", "leaf", "lane"))
COMPANY_KINDS = tuple(f"{k} {t}" for k in ("Paper", "Freight", "Optics", "Software", "Dairy")
                      for t in ("Co", "Ltd", "Group", "Works"))  # fmt: skip
STATES = ("IL", "OH", "PA", "OR", "VT", "CO", "WA", "NC", "MN", "AZ", "TN", "ME", "WI", "MI")
TITLES = ("Analyst", "Buyer", "Clerk", "Designer", "Engineer", "Manager", "Technician")
# NANP area codes N9X (second digit 9) are reserved for expanding the numbering plan.
AREA_CODES = tuple(f"{n}9{x}" for n in range(2, 10) for x in range(10))


def unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def generate(count: int, path: Path) -> None:
    """*count* made-up people as a Parquet file of text columns."""
    rng = random.Random(SEED)
    first_names = unique(s + e for s in FIRST_STARTS for e in FIRST_ENDS)
    last_names = unique(s + e for s in LAST_STARTS for e in LAST_ENDS)
    towns = unique(s + e for s in TOWN_STARTS for e in TOWN_ENDS)
    companies = unique(f"{w} {k}" for w in COMPANY_WORDS for k in COMPANY_KINDS)
    # Distinct phone numbers: a random permutation of the first `count` subscriber slots.
    slots = rng.sample(range(len(AREA_CODES) * 8_000_000), count)
    columns: dict[str, list[str]] = {
        k: []
        for k in ("first_name", "last_name", "street", "city", "state", "zip", "phone", "email")
    }
    columns |= {"company": [], "title": []}
    for i, slot in enumerate(slots):
        first, last = rng.choice(first_names), rng.choice(last_names)
        area, subscriber = divmod(slot, 8_000_000)
        exchange, line = divmod(subscriber, 10_000)
        columns["first_name"].append(first)
        columns["last_name"].append(last)
        columns["street"].append(f"{rng.randint(1, 9999)} {rng.choice(towns)} Rd")
        columns["city"].append(rng.choice(towns))
        columns["state"].append(rng.choice(STATES))
        columns["zip"].append(f"{rng.randint(10, 99):05d}")
        columns["phone"].append(f"+1 {AREA_CODES[area]} {exchange + 200} {line:04d}")
        columns["email"].append(f"{first}.{last}.{i}@m{i % 97}.madeup-mail.net".lower())
        employed = rng.random() < 0.7
        columns["company"].append(rng.choice(companies) if employed else "")
        columns["title"].append(rng.choice(TITLES) if employed else "")
    pl.DataFrame(columns).write_parquet(path)


def terms(path: Path, lookups: int) -> dict[str, list[str]]:
    """Search terms of each kind, for random people of the generated file."""
    frame = pl.read_parquet(path)
    rng = random.Random(SEED + 1)
    rows = frame.sample(n=lookups + WARMUP, seed=SEED).to_dicts()

    def national(phone: str) -> str:
        _, area, exchange, line = phone.split()
        return f"({area}) {exchange}-{line}"

    def misspelt(word: str) -> str:
        at = rng.randrange(1, len(word) - 2)
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]

    return {
        "email": [r["email"] for r in rows],
        "phone": [national(r["phone"]) for r in rows],
        "name + city": [f"{r['first_name']} {r['last_name']} {r['city']}" for r in rows],
        "name": [f"{r['first_name']} {r['last_name']}" for r in rows],
        "name, misspelt": [
            f"{r['first_name']} {misspelt(r['last_name'])} {r['city']}" for r in rows
        ],
    }


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(store: ContactStore, kind_terms: list[str]) -> dict[str, Any]:
    for term in kind_terms[:WARMUP]:
        store.search(term)
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    started = time.perf_counter()
    for term in kind_terms[WARMUP:]:
        before = time.perf_counter()
        lookup = store.search(term)
        latencies.append((time.perf_counter() - before) * 1000)
        outcomes[lookup.outcome.value] += 1
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "lookups": len(latencies),
        "lookups_per_second": len(latencies) / elapsed,
        "latency_ms": {
            "p50": percentile(ordered, 0.50),
            "p99": percentile(ordered, 0.99),
            "max": ordered[-1],
            "mean": statistics.fmean(ordered),
        },
        "outcomes": dict(outcomes),
    }


NOT_FOUND_LOOKUPS = 1000
NOT_FOUND_SPREAD = 0.20  # the 404 kinds' medians within 20% of each other


def not_found_terms(path: Path, store: ContactStore) -> dict[str, list[str]]:
    """Terms of each kind of 404 /api/find gives, WARMUP + NOT_FOUND_LOOKUPS of each: people
    opted out (by email, here) and searched by name and town; misspelt names; full names that
    fit two people or more; first names alone, each held by thousands of records."""
    frame = pl.read_parquet(path)
    rng = random.Random(SEED + 2)
    count = WARMUP + NOT_FOUND_LOOKUPS
    rows = frame.sample(n=3 * count, seed=SEED + 2).to_dicts()
    opted_out = rows[:count]
    for r in opted_out:
        store.suppress(email=r["email"])
    firsts, lasts = frame["first_name"].to_list(), frame["last_name"].to_list()
    full_names = Counter(zip(firsts, lasts, strict=True))
    shared = [f"{first} {last}" for (first, last), n in full_names.items() if n > 1]
    rng.shuffle(shared)

    def misspelt(word: str) -> str:
        at = rng.randrange(1, len(word) - 2)
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]

    return {
        "no match (misspelt name + town)": [
            f"{r['first_name']} {misspelt(r['last_name'])} {r['city']}" for r in rows[count:]
        ][:count],
        "opted out (name + town)": [
            f"{r['first_name']} {r['last_name']} {r['city']}" for r in opted_out
        ],
        "ambiguous (a full name two hold)": (shared * (count // max(1, len(shared)) + 1))[:count],
        "a first name alone": [r["first_name"] for r in rows[:count]],
    }


def measure_not_found(store: ContactStore, kind_terms: list[str]) -> dict[str, Any]:
    """What the /api/find handler does for each request (search, then its audit record), timed
    per request after WARMUP unmeasured ones."""

    def request(term: str) -> str:
        lookup = store.search(term)
        store.audit(key_id="k_bench", client_ip="", term=term, lookup=lookup)
        return lookup.outcome.value

    for term in kind_terms[:WARMUP]:
        request(term)
    latencies: list[float] = []
    outcomes: Counter[str] = Counter()
    for term in kind_terms[WARMUP:]:
        before = time.perf_counter()
        outcomes[request(term)] += 1
        latencies.append((time.perf_counter() - before) * 1000)
    ordered = sorted(latencies)
    return {
        "requests": len(ordered),
        "p50": statistics.median(ordered),
        "p99": percentile(ordered, 0.99),
        "outcomes": dict(outcomes),
    }


def not_found_table(results: dict[str, dict[str, Any]]) -> str:
    medians = [r["p50"] for r in results.values()]
    spread = max(medians) / min(medians) - 1
    lines = ["| 404 kind | p50 ms | p99 ms | outcomes |", "|---|---:|---:|---|"]
    for kind, r in results.items():
        outcomes = ", ".join(f"{k} {v:,}" for k, v in sorted(r["outcomes"].items()))
        lines.append(f"| {kind} | {r['p50']:.3f} | {r['p99']:.3f} | {outcomes} |")
    verdict = "met" if spread <= NOT_FOUND_SPREAD else "NOT met"
    lines += [
        "",
        f"Medians of {NOT_FOUND_LOOKUPS:,} requests of each kind (search and audit record, as "
        f"the handler does them) lie within {spread:.0%} of each other "
        f"(target {NOT_FOUND_SPREAD:.0%}: {verdict}); the fastest median is "
        f"{min(medians):.3f} ms.",
    ]
    return "\n".join(lines)


def target_of(kind: str) -> float:
    return TARGETS_MS["name"] if kind.startswith("name") else TARGETS_MS[kind]


def table(results: dict[str, dict[str, Any]], build: dict[str, Any]) -> str:
    lines = [
        "| term | lookups/s | p50 ms | p99 ms | p99 target | outcomes |",
        "|---|---:|---:|---:|---|---|",
    ]
    for kind, r in results.items():
        p99, target = r["latency_ms"]["p99"], target_of(kind)
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(r["outcomes"].items()))
        verdict = "met" if p99 < target else "NOT met"
        lines.append(
            f"| {kind} | {r['lookups_per_second']:,.0f} | {r['latency_ms']['p50']:.2f} | "
            f"{p99:.2f} | < {target:g} ms {verdict} | {outcomes} |"
        )
    lines += [
        "",
        f"{build['contacts']:,} contacts imported from Parquet in {build['import_seconds']:.1f} s "
        f"({build['contacts'] / build['import_seconds']:,.0f} rows/s), store "
        f"{build['store_mib']:,.0f} MiB; {build['lookups']:,} lookups per row after "
        f"{WARMUP} warm-up, one thread, in-process; {build['cpus']} CPUs, "
        f"Python {build['python']}, SQLite {build['sqlite']}.",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contacts", type=int, default=1_000_000)
    parser.add_argument("--lookups", type=int, default=3000, help="measured lookups per kind")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args()
    if not (1000 <= args.contacts <= 5_000_000 and 100 <= args.lookups <= args.contacts // 2):
        parser.error("need 1000 <= --contacts <= 5,000,000 and 100 <= --lookups <= contacts/2")
    args.out.mkdir(parents=True, exist_ok=True)
    source = args.out / "contacts_bench.parquet"
    db = args.out / "contacts_bench.sqlite"
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)

    started = time.perf_counter()
    print(f"generating {args.contacts:,} contacts ...", file=sys.stderr)
    generate(args.contacts, source)
    all_terms = terms(source, args.lookups)
    with ContactStore(db, ContactsConfig()) as store:
        print("importing ...", file=sys.stderr)
        before = time.perf_counter()
        report = store.import_file(source, source.name)
        import_seconds = time.perf_counter() - before
        if report.imported != args.contacts:
            sys.exit(f"expected {args.contacts:,} new records, the import says {report}")
        results = {}
        for kind, kind_terms in all_terms.items():
            print(f"searching: {kind} ...", file=sys.stderr)
            results[kind] = measure(store, kind_terms)
        print("opting people out, then the 404 kinds ...", file=sys.stderr)
        not_found = {
            kind: measure_not_found(store, kind_terms)
            for kind, kind_terms in not_found_terms(source, store).items()
        }
    build = {
        "contacts": args.contacts,
        "lookups": args.lookups,
        "import_seconds": import_seconds,
        "store_mib": db.stat().st_size / 2**20,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": platform.platform(),
    }
    markdown = table(results, build) + "\n\n" + not_found_table(not_found)
    document = {
        "build": build,
        "results": results,
        "not_found": not_found,
        "targets_ms": TARGETS_MS,
        "markdown": markdown,
    }
    (args.out / "contacts.json").write_text(json.dumps(document, indent=2))
    print(markdown)
    elapsed = time.perf_counter() - started
    print(f"\nrun took {elapsed:.1f} s; wrote {args.out / 'contacts.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
