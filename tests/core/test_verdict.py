"""The verdict table: VERDICT and SCORE never contradict, whatever reasons combine."""

from __future__ import annotations

import itertools

import polars as pl
import pytest

from pipeline.core.schema import FEW_ROWS
from pipeline.core.verdict import (
    BANDS,
    FLAGS_ONLY,
    PENALTIES,
    RULES,
    Partial,
    Reason,
    Verdict,
    flag_bits,
    judge,
    judge_one,
)

ALL = list(Reason)
BITS = flag_bits({r: pl.col(r.value) for r in ALL})


def decide(*reasons: Reason) -> dict[str, object]:
    frame = pl.DataFrame({r.value: [r in reasons] for r in ALL})
    return judge(frame, BITS).select("VERDICT", "SCORE", "REASON").row(0, named=True)


@pytest.mark.parametrize(
    ("reasons", "verdict", "score"),
    [
        ((), "Valid", 0.9),
        ((Reason.ROLE,), "Valid", 0.81),
        ((Reason.ROLE, Reason.SMTPUTF8), "Valid", 0.73),
        ((Reason.FIXABLE_MAILTO,), "Valid", 0.9),
        ((Reason.DISPOSABLE,), "Risky", 0.35),
        ((Reason.DNS_TIMEOUT,), "Risky", 0.5),
        ((Reason.OFFLINE, Reason.DISPOSABLE, Reason.ROLE), "Risky", 0.32),
        ((Reason.IMPLICIT_MX,), "Risky", 0.55),
        ((Reason.NO_DOMAIN, Reason.TYPO_SUSPECTED), "Invalid", 0.02),
        ((Reason.SYNTAX_INVALID,), "Invalid", 0.0),
        ((Reason.NULL_MX,), "Invalid", 0.01),
    ],
)
def test_table(reasons: tuple[Reason, ...], verdict: str, score: float) -> None:
    result = decide(*reasons)
    assert (result["VERDICT"], result["SCORE"]) == (verdict, score)


def test_temporary_dns_trouble_is_never_invalid() -> None:
    others = [r for r in ALL if r not in RULES or RULES[r].verdict is not Verdict.INVALID]
    for reason in (Reason.DNS_TIMEOUT, Reason.DNS_SERVFAIL, Reason.OFFLINE):
        assert decide(reason, *others)["VERDICT"] == "Risky"


def test_score_is_always_inside_the_band_of_the_verdict() -> None:
    # Every combination of up to three reasons.
    combos = [c for n in range(4) for c in itertools.combinations(ALL, n)]
    frame = pl.DataFrame({r.value: [r in c for c in combos] for r in ALL})
    out = judge(frame, BITS)
    assert out.height == len(combos)
    for verdict, score in out.select("VERDICT", "SCORE").iter_rows():
        low, high = BANDS[Verdict(verdict)]
        assert low <= score <= high, (verdict, score)


def test_an_empty_frame_keeps_the_columns_types() -> None:
    """A batch of no rows (a stretch of a list that was all rejects) is judged too."""
    frame = pl.DataFrame({r.value: pl.Series([], dtype=pl.Boolean) for r in ALL})
    out = judge(frame, BITS).select("VERDICT", "SCORE", "REASON")
    assert out.schema == {"VERDICT": pl.String, "SCORE": pl.Float64, "REASON": pl.String}


def test_reason_lists_codes_in_table_order() -> None:
    assert decide(Reason.ROLE, Reason.SMTPUTF8, Reason.NO_DOMAIN)["REASON"] == (
        "no_domain;role;smtputf8"
    )
    assert decide()["REASON"] == ""


def test_every_reason_has_exactly_one_role() -> None:
    assert set(RULES).isdisjoint(PENALTIES)
    assert {r for r in ALL if r not in RULES and r not in PENALTIES} == set(FLAGS_ONLY)


def test_an_accepted_mailbox_raises_the_score_and_nothing_else() -> None:
    assert decide(Reason.MAILBOX_OK) == {"VERDICT": "Valid", "SCORE": 0.97, "REASON": "mailbox_ok"}
    assert decide(Reason.MAILBOX_OK, Reason.ROLE)["SCORE"] == 0.87
    # A 5.1.1 is Invalid whatever the role or disposable flags say.
    assert decide(Reason.NO_SUCH_USER, Reason.ROLE, Reason.DISPOSABLE)["VERDICT"] == "Invalid"
    # The budget flag keeps the domain-level verdict.
    assert decide(Reason.NOT_VERIFIED_BUDGET)["SCORE"] == 0.9


def test_each_distinct_reason_set_is_judged_once_and_rows_keep_their_order() -> None:
    reasons = [(Reason.ROLE,), (), (Reason.NO_DOMAIN,), (Reason.ROLE,), ()] * 1000
    frame = pl.DataFrame({r.value: [r in c for c in reasons] for r in ALL})
    judge_one.cache_clear()
    out = judge(frame, BITS)
    assert judge_one.cache_info().misses == 3
    assert out.get_column("REASON").to_list()[:5] == ["role", "", "no_domain", "role", ""]


def test_a_remote_answer_replaces_the_ceiling_but_not_local_hard_facts() -> None:
    frame = pl.DataFrame(
        {
            **{r.value: [r is Reason.NULL_MX, False, r is Reason.ROLE] for r in ALL},
            "RV": ["Valid", "Risky", "Valid"],
            "RS": [0.95, 0.6, 0.95],
        }
    )
    out = judge(frame, BITS, remote=("RV", "RS")).select("VERDICT", "SCORE").rows()
    # A null MX stays Invalid; the remote score is the ceiling; penalties do not apply again.
    assert out == [("Invalid", 0.01), ("Risky", 0.6), ("Valid", 0.95)]


def test_a_few_rows_and_a_list_are_judged_alike() -> None:
    """Up to FEW_ROWS rows each row's answer is looked up in Python (a service batch), beyond
    that with expressions (a list): the same answers, and the partial verdicts too."""
    combos = [c for n in range(3) for c in itertools.combinations(ALL, n)]
    reasons = (combos * (FEW_ROWS // len(combos) + 1))[: FEW_ROWS + 1]
    frame = pl.DataFrame(
        {
            **{r.value: [r in c for c in reasons] for r in ALL},
            "GIVEN": [1, None] * (len(reasons) // 2) + [1],
        }
    )
    partial = {
        "PART": Partial(frozenset({Reason.NO_DOMAIN, Reason.DISPOSABLE}), "GIVEN", Verdict.INVALID)
    }
    columns = ["VERDICT", "SCORE", "REASON", "PART"]
    listed = judge(frame, BITS, partial=partial).select(columns)
    few = judge(frame.head(FEW_ROWS), BITS, partial=partial).select(columns)
    assert few.equals(listed.head(FEW_ROWS))
    assert judge(frame.head(0), BITS, partial=partial).select(columns).schema == listed.schema
