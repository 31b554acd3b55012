"""Errors in the Python caller's words: keyword arguments and settings, not command-line flags.

The engine and the stages write their messages once, for both fronts, in the command line's
words ("pass --email-column NAME", "run with --offline"). Raised through the Python API, the same
error (same class, same traceback) says it the way a Python caller fixes it: ``email_column=NAME``,
``offline=True``, or the setting behind a flag the API has no keyword for (``[dns]
nameservers``), with where settings come from. This table is the one place that knows which
flag is which keyword; a test holds it to the command line's real flags.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from pipeline.core.errors import ListcleanError


@dataclass(frozen=True)
class Word:
    """How the API says a flag: a keyword argument, or a setting ``section.key``."""

    name: str
    takes_value: bool = True
    setting: bool = False

    def said(self, value: str | None) -> str:
        if self.setting:
            section, key = self.name.split(".")
            text = f"the setting [{section}] {key}"
            return f"{text} = {_literal(value)}" if value else text
        if not self.takes_value:
            return f"{self.name}=True"
        return f"{self.name}={_literal(value) if value else ''}"


# Flag -> the API's word for it. A flag missing here has no meaning for the API (``-o``,
# ``--split``, ``--work-dir``: the API keeps its output in memory) and is left as written.
WORDS: Final[dict[str, Word]] = {
    "--email-column": Word("email_column"),
    "--encoding": Word("encoding"),
    "--member": Word("member"),
    "--sheet": Word("sheet"),
    "--cache-dir": Word("cache_dir"),
    "--config": Word("config"),
    "--api-key": Word("api_key"),
    "--offline": Word("offline", takes_value=False),
    "--domain": Word("domain", takes_value=False),
    "--resolver": Word("dns.nameservers", setting=True),
    "--memory": Word("run.memory", setting=True),
    "--verify": Word("verify.mode", setting=True),
    "--budget": Word("verify.budget", setting=True),
    "--helo": Word("verify.helo", setting=True),
    "--mail-from": Word("verify.mail_from", setting=True),
    "--smtp-port": Word("verify.port", setting=True),
    "--api-url": Word("api.url", setting=True),
    "--concurrency": Word("api.concurrency", setting=True),
}
SETTINGS_NOTE: Final = (
    " (Settings come from config=, a TOML file or a Config, or from LISTCLEAN_<SECTION>_<KEY> "
    "environment variables.)"
)
# A flag, then perhaps its value: a quoted text, a placeholder (NAME, HOST[:PORT], METHOD=N) or a
# plain word (cp1251, api). Whether a value belongs to the flag is the table's to say.
_FLAG: Final = re.compile(
    r"(?<![\w-])(--[a-z][a-z-]*[a-z])(?:[ =]('[^']*'|\"[^\"]*\"|[A-Z][A-Z0-9_\[\]:=|.]*"
    r"|[a-z0-9][\w.-]*[\w]|[a-z0-9]))?"
)


def in_api_words(text: str) -> str:
    """*text* with each flag the table knows said as the API says it."""
    named_setting = False

    def replace(match: re.Match[str]) -> str:
        nonlocal named_setting
        flag, value = match.group(1), match.group(2)
        word = WORDS.get(flag)
        if word is None:
            return match.group(0)
        named_setting |= word.setting
        if word.takes_value:
            return word.said(value)
        tail = match.group(0)[len(flag) :]  # a word after a flag without a value is prose
        return word.said(None) + tail

    said = _FLAG.sub(replace, text)
    return said + SETTINGS_NOTE if named_setting else said


def reworded(exc: ListcleanError) -> ListcleanError:
    """*exc* itself, its message in the API's words (its class and traceback kept)."""
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (in_api_words(exc.args[0]), *exc.args[1:])
    return exc


def _literal(value: str | None) -> str:
    """A flag's value as Python writes it: quoted text stays, a placeholder stays, a word is
    quoted."""
    if not value:
        return ""
    if value[0] in "'\"" or value[0].isupper() or value.isdigit():
        return value
    return repr(value)
