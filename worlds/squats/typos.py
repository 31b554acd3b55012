"""Typo domains of a provider, made by dnstwist's keyboard fuzzers (not by listclean's own typing
model), each labelled with the typing operation that made it.

The operations, as the issue names them, and the dnstwist fuzzer behind each:

- ``adjacent key``: ``replacement``, a key replaced by a neighbour on a QWERTY, QWERTZ or
  AZERTY keyboard;
- ``insertion``: ``insertion`` (a neighbouring key typed before or after a letter) and
  ``addition`` (a letter or digit typed after the name);
- ``deletion``: ``omission``;
- ``doubling``: ``repetition``;
- ``transposition``: two neighbouring letters swapped;
- ``tld slip``: the same fuzzers run on each label of the public suffix (``con``, ``cim``,
  ``ocm``, ``comm``, ``nte``, ``co.uj``...).
"""

from __future__ import annotations

from types import ModuleType
from typing import Final

OPERATIONS: Final = (
    "adjacent key",
    "insertion",
    "deletion",
    "doubling",
    "transposition",
    "tld slip",
)
_FUZZERS: Final = {
    "replacement": "adjacent key",
    "insertion": "insertion",
    "addition": "insertion",
    "omission": "deletion",
    "repetition": "doubling",
    "transposition": "transposition",
}


def typo_forms(dnstwist: ModuleType, provider: str) -> dict[str, str]:
    """Every one-operation typo of *provider*: typo domain -> operation (the first that made it,
    in the order of :data:`OPERATIONS`)."""
    fuzzer = dnstwist.Fuzzer(provider)
    name, suffix = fuzzer.domain, fuzzer.tld
    forms: dict[str, str] = {}
    for variant, fuzzer_name in _fuzzed(dnstwist, name):
        forms.setdefault(f"{variant}.{suffix}", _FUZZERS[fuzzer_name])
    labels = suffix.split(".")
    for i, label in enumerate(labels):
        for variant, _ in _fuzzed(dnstwist, label):
            if len(variant) >= 2 and variant.isalpha():
                slipped = ".".join((*labels[:i], variant, *labels[i + 1 :]))
                forms.setdefault(f"{name}.{slipped}", "tld slip")
    forms.pop(provider, None)
    order = {op: i for i, op in enumerate(OPERATIONS)}
    return dict(sorted(forms.items(), key=lambda item: (order[item[1]], item[0])))


def _fuzzed(dnstwist: ModuleType, label: str) -> list[tuple[str, str]]:
    """(variant of *label*, fuzzer name) for each keyboard fuzzer's variants, in a fixed order."""
    fuzzer = dnstwist.Fuzzer(f"{label}.example")
    fuzzer.generate(fuzzers=list(_FUZZERS))
    found = []
    for permutation in fuzzer.domains:
        variant = permutation["domain"].rsplit(".example", 1)[0]
        if variant and variant != label and "." not in variant:
            found.append((variant, permutation["fuzzer"]))
    # a variant several fuzzers make keeps the first in _FUZZERS' order
    rank = {f: i for i, f in enumerate(_FUZZERS)}
    return sorted(found, key=lambda item: (item[0], rank[item[1]]))
