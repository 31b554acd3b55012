"""What the run history keys an address by: a 64-bit hash of its dedupe key (the normalized
address, :mod:`pipeline.core.addresses`), never the address itself.

The hash has to be the same in every process, on every machine and in every later version,
because a history outlives the code that wrote it: polars' own ``Series.hash`` is stable only
within one polars version, so it will not do. This one is written here, in polars expressions
over the key's UTF-8 bytes, and pinned by known answers in the tests:

1. the key's bytes, padded with zero bytes to a multiple of 8, read as little-endian 64-bit
   words (whatever the machine's byte order: polars reads them as asked);
2. ``h = len * M``, then for each word ``w``: ``h = (h ^ w) * M; h ^= h >> 29``;
3. MurmurHash3's 64-bit finalizer (``fmix64``) over ``h``,

with every product taken modulo 2**64 (polars' unsigned arithmetic wraps) and ``M`` the 64-bit
golden-ratio constant. It is no cryptographic hash: it keeps the history compact (8 bytes an
address) and lets an erasure find the address again. Among a million addresses, two share a
hash with a probability of about 3 in 100 million (the birthday bound, n**2 / 2**65).

It costs about 0.11 s per million distinct addresses on one thread (the bench's 10M-row list,
2026-11-27; 0.16 s before each word's product became a column of its own); the work is
vectorized, two expression passes per word of the longest key.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import polars as pl

HASH: Final = "HASH"  # the column name of an address's hash wherever the history holds one
_M: Final = 0x9E3779B97F4A7C15  # 2**64 / the golden ratio, odd
_F1: Final = 0xFF51AFD7ED558CCD  # fmix64's constants (MurmurHash3, Austin Appleby)
_F2: Final = 0xC4CEB9FE1A85EC53


def _u64(value: int) -> pl.Expr:
    return pl.lit(value, pl.UInt64)


def _xor_shift(h: pl.Expr, bits: int) -> pl.Expr:
    """``h ^ (h >> bits)``; a right shift is a floor division of an unsigned number."""
    return h ^ (h // _u64(1 << bits))


def address_hashes(keys: pl.Series) -> pl.Series:
    """The hash of each dedupe key in *keys* (UInt64, named :data:`HASH`); null stays null."""
    length = pl.col("k").str.len_bytes()
    # Seven zero bytes after every key: its last word, if it started one, reads as 8 bytes
    # padded with zeros, and a word it did not start reads short of 8 (null, left out).
    padded = pl.col("k") + pl.lit("\0" * 7)
    frame = pl.DataFrame({"k": keys.cast(pl.String)}).select(
        padded.cast(pl.Binary).alias("b"), length.cast(pl.UInt64).alias("n")
    )
    longest = frame.get_column("n").max()
    words = -(-int(longest) // 8) if isinstance(longest, int) else 0
    frame = frame.with_columns(h=pl.col("n") * _u64(_M))
    for i in range(words):
        word = pl.col("b").bin.slice(8 * i, 8).bin.reinterpret(dtype=pl.UInt64, endianness="little")
        # The product is a column of its own: written into the shift below, it (and the word)
        # would be worked out twice (a third of the whole hash's time).
        frame = frame.with_columns(m=(pl.col("h") ^ word) * _u64(_M))
        # A key shorter than this word has no such word (null): its hash is left as it is.
        frame = frame.with_columns(h=pl.coalesce(_xor_shift(pl.col("m"), 29), pl.col("h")))
    frame = frame.with_columns(h=_xor_shift(pl.col("h"), 33) * _u64(_F1))
    frame = frame.with_columns(h=_xor_shift(pl.col("h"), 33) * _u64(_F2))
    return frame.select(_xor_shift(pl.col("h"), 33).alias(HASH)).get_column(HASH)


def hashes_of(keys: Iterable[str]) -> list[int]:
    """The hashes of a few dedupe keys (an erasure's), as Python integers."""
    return address_hashes(pl.Series(list(keys), dtype=pl.String)).to_list()
