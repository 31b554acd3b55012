"""`listclean contacts suppress / erase`: the person forgotten in every store that holds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.config import ContactsConfig
from pipeline.core.contacts.store import ContactStore
from tests.core.assembly.test_forget import ZOE, counts, stores


@pytest.mark.parametrize("action", ["suppress", "erase"])
def test_the_command_reaches_every_store(
    zoe_everywhere: Path, action: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert counts(zoe_everywhere) == (4, 2, 1)
    args = ["contacts", action, "--email", ZOE.upper(), "--cache-dir", str(zoe_everywhere)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "1 record(s) of the person" in out and "2 cached mailbox answer(s)" in out
    assert "1 bounce event(s)" in out and "1 audit record(s)" in out
    assert counts(zoe_everywhere) == (2, 1, 0)  # the other address keeps its answers and events
    with ContactStore(stores(zoe_everywhere)[0], ContactsConfig()) as store:
        assert store.search("Zoe Aberlund").outcome.value in ("suppressed", "no_match")


def test_the_command_needs_an_email_or_a_phone(
    zoe_everywhere: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["contacts", "erase", "--name", "Zoë Åberlund", "--cache-dir", str(zoe_everywhere)])
        == 2
    )
    assert "--email" in capsys.readouterr().err
