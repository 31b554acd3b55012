"""Make a synthetic list and its DNS world for the benchmarks (never committed).

    python bench/generate.py --rows 1000000 --domains 50000 --out bench/out
    python bench/generate.py --rows 100000000 --distinct 0.9 --out /big/disk   # 100M rows

Writes ``list.csv`` (id, email, first_name, country) and ``world.json``: about 90% of the
domains have an MX, the rest are absent (NXDOMAIN), null MX, A-only or record-less, so every
DNS path is exercised.

The list is written in chunks of ``--chunk`` rows, so its size is bounded by the disk, not by
memory (100M rows: about 4.6 GB of CSV, well under 1 GiB of memory while writing). Every value
is a function of its row number and the seed (polars' seeded hash, so the same list for the
same pinned polars version), computed a chunk at a time.

Addresses: a share ``--distinct`` of the rows introduce a new person; every other row repeats
the address of a person introduced earlier (uniformly among them), so the share of distinct
addresses is ``--distinct`` (minus the few messy rows below that carry no address). Domains are
skewed as consumer lists are: half the people are at six big providers (gmail alone a quarter),
the other half at company domains, with a Zipf-like head (a few domains hold many people) and a
long uniform tail. About 2% of the rows are messy: upper case and spaces (the same person, so a
duplicate after normalization), a doubled ``@`` (invalid) or an empty cell.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Iterator
from pathlib import Path

import polars as pl

PROVIDERS = ["gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "icloud.com", "aol.com"]
# Share of all people at each provider (sums to 0.50); roughly the order of consumer lists.
PROVIDER_SHARES = [0.25, 0.08, 0.05, 0.06, 0.04, 0.02]
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
SURNAMES = ["smith", "mueller", "garcia", "rossi", "dubois", "kowalski", "silva", "tanaka"]
COUNTRIES = ["US", "DE", "FR", "GB", "BR"]
CHUNK = 1_000_000


def make_world(domains: list[str], rng: random.Random) -> dict[str, object]:
    """Two thirds of the MX domains use one of 500 shared hosting mail hosts, the others two
    hosts of their own; every MX host has an address, as a working one must."""
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


def company_domains(count: int, rng: random.Random) -> list[str]:
    return [f"company{i}-{rng.randrange(10**6)}.com" for i in range(count)]


def _uniform(index: pl.Expr, salt: int) -> pl.Expr:
    """A uniform number in [0, 1) for each index, fixed by *salt* and the seed in it."""
    return (index.hash(salt) % (1 << 53)).cast(pl.Float64) / float(1 << 53)


def _pick(values: list[str], index: pl.Expr, salt: int) -> pl.Expr:
    return pl.lit(pl.Series(values)).gather((_uniform(index, salt) * len(values)).cast(pl.UInt32))


def _domain(person: pl.Expr, domains: list[str], seed: int) -> pl.Expr:
    u = _uniform(person, seed + 1)
    bounds = [sum(PROVIDER_SHARES[: i + 1]) for i in range(len(PROVIDERS))]
    provider = pl.lit(pl.Series(PROVIDERS)).gather(
        pl.sum_horizontal(*[(u >= b).cast(pl.UInt32) for b in bounds[:-1]])
    )
    # Company people: 60% log-uniform over the domains (Zipf-like, P(i) ~ 1/i), 40% uniform.
    v = _uniform(person, seed + 2)
    zipf = (pl.lit(float(len(domains))).pow(v) - 1).cast(pl.UInt32)
    flat = (v * len(domains)).cast(pl.UInt32)
    company = pl.lit(pl.Series(domains)).gather(
        pl.when(_uniform(person, seed + 3) < 0.6).then(zipf).otherwise(flat)
    )
    return pl.when(u < bounds[-1]).then(provider).otherwise(company)


def _fresh(row: pl.Expr, distinct: float, seed: int) -> pl.Expr:
    """Whether the row introduces a new person (row 0 always does: nobody is known yet)."""
    return (_uniform(row, seed) < distinct) | (row == 0)


def count_fresh(stop: int, distinct: float, seed: int, start: int = 0) -> int:
    """How many of the rows ``start .. stop - 1`` introduce a new person, a chunk at a time."""
    total = 0
    for first in range(start, stop, CHUNK):
        row = pl.int_range(first, min(first + CHUNK, stop), dtype=pl.UInt64)
        total += int(pl.select(_fresh(row, distinct, seed).sum()).item())
    return total


def _people(start: int, rows: int, distinct: float, seed: int, known: int) -> pl.DataFrame:
    """Each row's person: new people are numbered in order of arrival (*known* came before)."""
    frame = pl.select(row=pl.int_range(start, start + rows, dtype=pl.UInt64))
    frame = frame.with_columns(fresh=_fresh(pl.col("row"), distinct, seed))
    frame = frame.with_columns(
        known=known + pl.col("fresh").cast(pl.UInt64).cum_sum() - pl.col("fresh")
    )
    earlier = (_uniform(pl.col("row"), seed + 4) * pl.col("known")).cast(pl.UInt64)
    return frame.select(
        "row", person=pl.when(pl.col("fresh")).then(pl.col("known")).otherwise(earlier)
    )


def make_chunk(
    start: int,
    rows: int,
    domains: list[str],
    distinct: float,
    seed: int,
    known: int | None = None,
    exports: bool = False,
) -> pl.DataFrame:
    """Rows ``start .. start + rows - 1`` of the list; *known*: ``count_fresh(start, ...)``;
    *exports*: the messy mix of real exports (:func:`_exports_mess`) instead of the default."""
    if known is None:
        known = count_fresh(start, distinct, seed)
    person = pl.col("person")
    local = pl.concat_str(
        _pick(NAMES, person, seed + 5),
        pl.lit("."),
        _pick(SURNAMES, person, seed + 6),
        person.cast(pl.String),
    )
    domain = _domain(person, domains, seed)
    messy = _uniform(pl.col("row"), seed + 7)
    email = (_exports_mess if exports else _default_mess)(local, domain, messy)
    return _people(start, rows, distinct, seed, known).select(
        id=pl.col("row"),
        email=email,
        first_name=_pick(NAMES, person, seed + 5).str.to_titlecase(),
        country=_pick(COUNTRIES, pl.col("row"), seed + 8),
    )


def _default_mess(local: pl.Expr, domain: pl.Expr, messy: pl.Expr) -> pl.Expr:
    """About 2% messy: upper case and spaces, a doubled ``@`` (invalid) or an empty cell."""
    email = pl.concat_str(local, pl.lit("@"), domain)
    return (
        pl.when(messy < 0.01)
        .then(pl.concat_str(pl.lit("  "), email.str.to_uppercase(), pl.lit(" ")))
        .when(messy < 0.015)
        .then(email.str.replace("@", "@@", literal=True))
        .when(messy < 0.02)
        .then(pl.lit(""))
        .otherwise(email)
    )


def _exports_mess(local: pl.Expr, domain: pl.Expr, messy: pl.Expr) -> pl.Expr:
    """As real exports have it: 2% of the rows with a space before the ``@`` (invalid, with a
    repair to suggest) and 3% with the domain in upper case (valid)."""
    return (
        pl.when(messy < 0.02)
        .then(pl.concat_str(local, pl.lit(" @"), domain))
        .when(messy < 0.05)
        .then(pl.concat_str(local, pl.lit("@"), domain.str.to_uppercase()))
        .otherwise(pl.concat_str(local, pl.lit("@"), domain))
    )


def chunks(
    rows: int,
    domains: list[str],
    distinct: float,
    seed: int,
    chunk: int = CHUNK,
    exports: bool = False,
) -> Iterator[pl.DataFrame]:
    """The whole list, *chunk* rows at a time, in order; memory is one chunk."""
    known = 0
    for start in range(0, rows, chunk):
        stop = min(start + chunk, rows)
        yield make_chunk(start, stop - start, domains, distinct, seed, known, exports)
        known += count_fresh(stop, distinct, seed, start=start)


def write_list(path: Path, chunk_frames: Iterator[pl.DataFrame]) -> int:
    written = 0
    with path.open("wb") as out:
        for frame in chunk_frames:
            frame.write_csv(out, include_header=written == 0)
            written += frame.height
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--domains", type=int, default=50_000)
    parser.add_argument("--out", type=Path, default=Path("bench/out"))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--distinct", type=float, default=0.97, help="share of new people")
    parser.add_argument("--chunk", type=int, default=CHUNK, help="rows generated at a time")
    parser.add_argument(
        "--messy",
        action="store_true",
        help="messy as real exports: 2%% a space before the @, 3%% an upper-case domain",
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    domains = company_domains(args.domains, rng)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "world.json").write_text(json.dumps(make_world(domains, rng)))
    frames = chunks(args.rows, domains, args.distinct, args.seed, args.chunk, args.messy)
    write_list(args.out / "list.csv", frames)
    print(f"wrote {args.rows:,} rows over {args.domains:,} domains to {args.out}")


if __name__ == "__main__":
    main()
