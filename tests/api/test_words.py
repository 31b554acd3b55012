"""Errors raised through the Python API name keyword arguments and settings, not flags; the
table that says how is held to the command line's real flags and the API's real keywords."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from pathlib import Path

import polars as pl
import pytest

from pipeline import clean, verify, verify_many
from pipeline.api.words import SETTINGS_NOTE, WORDS, in_api_words
from pipeline.cli import _parser
from pipeline.core.config import Config
from pipeline.core.errors import InputError, ResolverUnhealthyError, UsageError


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    flags: set[str] = set()
    for action in parser._actions:
        flags.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags |= _flags(sub)
    return flags


def test_every_flag_of_the_table_is_a_flag_of_the_command_line() -> None:
    assert set(WORDS) <= _flags(_parser())


def test_every_keyword_of_the_table_is_a_keyword_of_the_api() -> None:
    keywords = {
        name for call in (clean, verify, verify_many) for name in inspect.signature(call).parameters
    }
    said = {word.name for word in WORDS.values() if not word.setting}
    assert said <= keywords


def test_every_setting_of_the_table_is_a_setting() -> None:
    for word in WORDS.values():
        if word.setting:
            section, key = word.name.split(".")
            table = {f.name: f.type for f in dataclasses.fields(Config)}
            assert section in table, word
            assert key in {f.name for f in dataclasses.fields(getattr(Config(), section))}, word


@pytest.mark.parametrize(
    ("flagged", "said"),
    [
        ("Pass one of them with --email-column.", "Pass one of them with email_column=."),
        (
            "or pick one member with --member.",
            "or pick one member with member=.",
        ),
        ("--encoding 'x' is not an encoding", "encoding='x' is not an encoding"),
        ("(e.g. --encoding cp1251), or save", "(e.g. encoding='cp1251'), or save"),
        ("say which with --encoding NAME, or", "say which with encoding=NAME, or"),
        (
            "or run with --offline to skip DNS checks.",
            "or run with offline=True to skip DNS checks.",
        ),
        ("choose another --cache-dir.", "choose another cache_dir=."),
        ("pass --api-key KEY or LISTCLEAN_API_KEY", "pass api_key=KEY or LISTCLEAN_API_KEY"),
        (
            "Point listclean at a working resolver with --resolver HOST[:PORT], or",
            "Point listclean at a working resolver with the setting [dns] nameservers = "
            "HOST[:PORT], or" + SETTINGS_NOTE,
        ),
        (
            "--verify api needs the service's address: pass --api-url URL.",
            "the setting [verify] mode = 'api' needs the service's address: pass the setting "
            "[api] url = URL." + SETTINGS_NOTE,
        ),
        ("Choose another output with -o.", "Choose another output with -o."),
        ("a --split run", "a --split run"),
    ],
)
def test_flags_are_said_as_a_python_caller_says_them(flagged: str, said: str) -> None:
    assert in_api_words(flagged) == said


def test_a_real_error_names_the_keyword(tmp_path: Path) -> None:
    frame = pl.DataFrame({"name": ["Ann"], "contact": ["not an address"]})
    with pytest.raises(InputError) as caught:
        clean(frame, offline=True, cache_dir=tmp_path)
    assert "email_column=" in str(caught.value) and "--email-column" not in str(caught.value)


def test_an_unhealthy_resolver_names_the_setting_and_offline(
    config: Config, tmp_path: Path
) -> None:
    dead = dataclasses.replace(config.dns, nameservers=("127.0.0.1:9",), timeout=0.1, attempts=1)
    broken = dataclasses.replace(config, dns=dead)
    with pytest.raises(ResolverUnhealthyError) as caught:
        verify("ann@gmail.com", config=broken)
    text = str(caught.value)
    assert "[dns] nameservers" in text and "offline=True" in text and "--" not in text


def test_a_value_that_is_no_text_is_refused_naming_the_keyword() -> None:
    with pytest.raises(UsageError, match=r"verify\(value=\.\.\.\) got 42 \(int\)"):
        verify(42)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"verify_many\(values=\.\.\.\) got None"):
        verify_many(["ann@gmail.com", None])  # type: ignore[list-item]
