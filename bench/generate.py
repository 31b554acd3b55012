"""Make a synthetic list and its DNS world for the benchmarks (never committed).

    python bench/generate.py --rows 1000000 --domains 50000 --out bench/out

Writes ``list.csv`` (id, email, first_name, country) and ``world.json``: about 90% of the
domains have an MX, the rest are absent (NXDOMAIN), null MX, A-only or record-less, so every
DNS path is exercised. Two thirds of the MX domains use one of 500 shared hosting mail hosts,
the others two hosts of their own; every MX host has an address, as a working one must.
Half the addresses are at six big providers; the rest spread over the company domains, a few
of which hold many addresses. About 2% of the addresses are messy (upper case, spaces, broken
syntax) and a few percent repeat earlier ones.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import polars as pl

PROVIDERS = ["gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "icloud.com", "aol.com"]
NAMES = [
    "anna",
    "ben",
    "chloe",
    "david",
    "emma",
    "felix",
    "grace",
    "hugo",
    "iris",
    "jack",
    "kate",
    "liam",
    "mia",
    "noah",
    "olga",
    "paul",
    "quinn",
    "rosa",
    "sam",
    "tina",
]


def make_world(domains: list[str], rng: random.Random) -> dict[str, object]:
    zones: dict[str, object] = {p: {"mx": [[10, f"mx.{p}"]]} for p in PROVIDERS}
    hosting = [(f"mx1.hosting{i}.net", f"mx2.hosting{i}.net") for i in range(500)]
    for domain in domains:
        k = rng.random()
        if k < 0.60:
            first, second = rng.choice(hosting)
            zones[domain] = {"mx": [[10, first], [20, second]]}
        elif k < 0.90:
            zones[domain] = {"mx": [[10, f"mx1.{domain}"], [20, f"mx2.{domain}"]]}
        elif k < 0.92:
            zones[domain] = {"mx": [[0, "."]]}
        elif k < 0.94:
            zones[domain] = {"a": ["203.0.114.1"]}  # routable: an implicit MX counts
        elif k < 0.96:
            zones[domain] = {}
        # else: absent from the world -> NXDOMAIN
    for zone in list(zones.values()):
        for _, host in zone.get("mx", []):  # type: ignore[attr-defined]
            if host != ".":
                zones.setdefault(host, {"a": ["203.0.114.25"]})
    return {"zones": zones}


def make_email(rng: random.Random, rows: int, domains: list[str]) -> str:
    if rng.random() < 0.5:
        domain = rng.choice(PROVIDERS)
    elif rng.random() < 0.3:  # a few company domains hold many addresses (Pareto-like)
        domain = domains[min(int(rng.paretovariate(0.6)) - 1, len(domains) - 1)]
    else:
        domain = rng.choice(domains)
    email = f"{rng.choice(NAMES)}.{rng.randrange(rows // 2)}@{domain}"  # repeats -> duplicates
    messy = rng.random()
    if messy < 0.01:
        return f"  {email.upper()} "
    if messy < 0.015:
        return email.replace("@", "@@")
    if messy < 0.02:
        return ""
    return email


def make_list(rows: int, domains: list[str], rng: random.Random) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": range(rows),
            "email": [make_email(rng, rows, domains) for _ in range(rows)],
            "first_name": [rng.choice(NAMES).title() for _ in range(rows)],
            "country": [rng.choice(("US", "DE", "FR", "GB", "BR")) for _ in range(rows)],
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--domains", type=int, default=50_000)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    domains = [f"company{i}-{rng.randrange(10**6)}.com" for i in range(args.domains)]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "world.json").write_text(json.dumps(make_world(domains, rng)))
    make_list(args.rows, domains, rng).write_csv(args.out / "list.csv")
    print(f"wrote {args.rows:,} rows over {args.domains:,} domains to {args.out}")


if __name__ == "__main__":
    main()
