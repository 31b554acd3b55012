"""The reply corpus: big enough, well formed, and every row sendable by the sandbox servers."""

from __future__ import annotations

import re

import pytest

from worlds.replies.corpus import CORPUS, Meaning, Stage, by_key, select
from worlds.replies.types import CorpusReply

_PLACEHOLDERS = {"rcpt", "local", "domain", "sender", "sender_domain", "helo", "client", "host"}


def test_corpus_size_and_unique_keys() -> None:
    assert len(CORPUS) >= 160
    assert len({reply.key for reply in CORPUS}) == len(CORPUS)


def test_families_cover_software_and_providers() -> None:
    families = {reply.family for reply in CORPUS}
    wanted = {"postfix", "exim", "sendmail", "qmail", "exchange", "outlook", "eop", "gmail",
              "yahoo", "icloud", "zoho", "gmx", "webde", "mailru", "yandex"}  # fmt: skip
    assert wanted <= families


def test_every_meaning_and_stage_is_represented() -> None:
    assert {reply.meaning for reply in CORPUS} == set(Meaning)
    assert {reply.stage for reply in CORPUS} == set(Stage)


@pytest.mark.parametrize("reply", CORPUS, ids=lambda reply: reply.key)
def test_rows_are_sendable_and_consistent(reply: CorpusReply) -> None:
    scripted = reply.scripted
    assert reply.source.strip()
    assert set(re.findall(r"\{(\w+)\}", reply.text)) <= _PLACEHOLDERS
    if reply.meaning is Meaning.ACCEPTED:
        assert scripted.code in (220, 250)
    else:
        assert scripted.code >= 400
    if reply.stage is Stage.GREETING:
        assert scripted.code in (220, 421) or scripted.code >= 500


def test_same_words_different_meanings() -> None:
    # The reason the corpus records the stage: one text, two truths.
    assert by_key("generic.user_unknown_rcpt").text == by_key("mailfrom.user_unknown").text
    assert by_key("mailfrom.user_unknown").meaning is Meaning.SENDER_REFUSED
    assert by_key("generic.user_unknown_rcpt").meaning is Meaning.NO_SUCH_USER


def test_select_and_lookup() -> None:
    greetings = select(stage=Stage.GREETING, meanings=[Meaning.ACCEPTED], families=["postfix"])
    assert {r.key for r in greetings} == {"postfix.greeting", "postfix.greeting_debian"}
    with pytest.raises(KeyError, match=r"no corpus reply 'nope\.nothing'"):
        by_key("nope.nothing")
