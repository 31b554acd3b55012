"""The hash the history keys an address by: the same value in every process, machine and
version (pinned by known answers and by a plain-Python reading of its definition), whatever
else a batch holds."""

from __future__ import annotations

import random

import polars as pl
import pytest

from pipeline.core.history.keys import HASH, address_hashes, hashes_of

MASK = 2**64 - 1
M = 0x9E3779B97F4A7C15


def reference(key: str) -> int:
    """The module's definition, step by step, in Python integers."""
    data = key.encode()
    h = len(data) * M & MASK
    padded = data + b"\0" * (-len(data) % 8)
    for i in range(0, len(padded), 8):
        h = (h ^ int.from_bytes(padded[i : i + 8], "little")) * M & MASK
        h ^= h >> 29
    h ^= h >> 33
    h = h * 0xFF51AFD7ED558CCD & MASK
    h ^= h >> 33
    h = h * 0xC4CEB9FE1A85EC53 & MASK
    return h ^ (h >> 33)


# Written down once: a change to the hash would orphan every history already kept.
KNOWN = {
    "john.doe@gmail.com": 2146028830015934489,
    "": 0,
    "josé@exämple.org": 513312898613969722,
    "aaaaaaaa@b.c": 4185127427142332116,
    "x@y.z": 1010369199817198651,
}


@pytest.mark.parametrize(("key", "value"), list(KNOWN.items()))
def test_known_answers(key: str, value: int) -> None:
    assert hashes_of([key]) == [value]
    assert reference(key) == value


def test_the_vectorized_hash_is_its_definition() -> None:
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789.+_-@éß文"
    keys = ["".join(rng.choices(alphabet, k=rng.randrange(0, 90))) for _ in range(2_000)]
    assert hashes_of(keys) == [reference(k) for k in keys]


def test_a_keys_hash_does_not_depend_on_its_neighbours() -> None:
    alone = hashes_of(["ann@example.org"])
    crowded = hashes_of(["x" * 200 + "@example.org", "ann@example.org", ""])
    assert crowded[1] == alone[0]


def test_nulls_stay_null_and_the_column_is_named() -> None:
    hashed = address_hashes(pl.Series(["a@b.c", None], dtype=pl.String))
    assert hashed.name == HASH and hashed.dtype == pl.UInt64
    assert hashed.to_list() == [reference("a@b.c"), None]


def test_no_two_of_a_hundred_thousand_addresses_share_a_hash() -> None:
    keys = pl.Series([f"person{i}@domain{i % 977}.example" for i in range(100_000)])
    assert address_hashes(keys).n_unique() == 100_000
