"""verify() and verify_many() from Python: the same answers, one engine for many values, and
the shipped lists (with the public suffix list) loaded once a process, not once a call."""

from __future__ import annotations

import time
from pathlib import Path

from pipeline import verify, verify_many
from pipeline.core.config import Config
from pipeline.core.lists import load_lists
from pipeline.core.schema import SPEC_COLUMNS

VALUES = ["John.Doe@gmial.com", "ann@gmail.com", "not an address", "ann@gmail.com", "x@yaho.com"]


def test_verify_many_answers_as_verify_does_in_order(config: Config) -> None:
    answers = verify_many(VALUES, config=config)
    assert [a["VERDICT"] for a in answers] == ["Risky", "Valid", "Invalid", "Valid", "Invalid"]
    assert [dict(a) for a in answers] == [dict(verify(v, config=config)) for v in VALUES]
    assert list(answers[0]) == [*SPEC_COLUMNS, "REASON", "DETAIL"]


def test_verify_many_of_domains_and_of_nothing(config: Config) -> None:
    answers = verify_many(iter(["gmail.com", "gmial.com"]), domain=True, config=config)
    assert [a["DOMAIN"] for a in answers] == ["gmail.com", "gmial.com"]
    assert answers[0]["EMAIL"] == "" and answers[1]["SUGGESTION"] == "gmail.com"
    assert verify_many([], config=config) == []


def test_the_lists_are_loaded_once_a_process() -> None:
    first, again = load_lists(), load_lists()
    assert first is again and first.psl is again.psl
    assert load_lists(extra_free=["corp.example"]).psl is first.psl  # parsed once, shared


def test_verify_offline_is_quick_after_the_first_call(tmp_path: Path) -> None:
    """The suffix list used to be parsed on every call (47-83 ms a call on this machine)."""
    verify("ann@gmail.com", offline=True, cache_dir=tmp_path)
    started = time.perf_counter()
    for n in range(10):
        assert verify(f"p{n}@gmial.com", offline=True, cache_dir=tmp_path)["VERDICT"] == "Risky"
    assert (time.perf_counter() - started) / 10 < 0.05
